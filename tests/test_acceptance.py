"""Verification-outcome model (model §3) against closed forms and Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

import msenv  # noqa: F401
from msenv import SystemConfig
from msenv.engine import functional as F
from msenv.envs.env import MultiSpinEnv
from msenv.envs.vector import MultiSpinVectorEnv
from msenv.model import acceptance
from msenv.model.acceptance import (
    accepted_tokens,
    expected_tokens,
    first_rejection_from_uniform,
    rejected,
    rejection_probability,
    sample_first_rejection,
)

N = 400_000


@pytest.mark.parametrize("alpha", [0.3, 0.62, 0.85, 0.97])
@pytest.mark.parametrize("gamma", [0, 1, 4, 12])
def test_expected_tokens_monte_carlo(alpha, gamma):
    rng = np.random.default_rng(int(alpha * 100) + gamma)
    f = sample_first_rejection(rng, np.full(N, alpha), cap=21)
    n = accepted_tokens(f, gamma) + 1
    # independent Monte Carlo: count accepted tokens with Bernoulli draws directly
    closed = sum(alpha**j for j in range(gamma + 1))
    assert expected_tokens(np.array(alpha), np.array(gamma)) == pytest.approx(closed, rel=1e-12)
    se = n.std() / np.sqrt(N)
    assert abs(n.mean() - closed) < 5 * se + 1e-12
    rej = rejected(f, gamma)
    p = 1 - alpha**gamma
    assert rejection_probability(np.array(alpha), np.array(gamma)) == pytest.approx(p)
    assert abs(rej.mean() - p) < 5 * np.sqrt(p * (1 - p) / N) + 1e-12


def test_bernoulli_distribution_of_accepted_count():
    rng = np.random.default_rng(7)
    alpha, gamma = 0.7, 5
    f = sample_first_rejection(rng, np.full(N, alpha), cap=21)
    a = accepted_tokens(f, gamma)
    bern = rng.random((N, gamma)) < alpha  # token-by-token simulation
    a_ref = np.where(bern.all(1), gamma, np.argmin(bern, axis=1))
    for j in range(gamma + 1):
        assert abs((a == j).mean() - (a_ref == j).mean()) < 0.006
        pj = alpha**j * (1 - alpha) if j < gamma else alpha**gamma
        assert abs((a == j).mean() - pj) < 0.004


def test_gamma_zero_never_rejected_and_alpha_one_never_rejected(rng):
    f = sample_first_rejection(rng, rng.uniform(0.01, 1.0, 10_000), cap=21)
    assert f.min() >= 1 and f.max() <= 21
    assert not rejected(f, 0).any()
    f1 = sample_first_rejection(rng, np.ones(1000), cap=21)
    assert np.all(f1 == 21) and not rejected(f1, 20).any()
    assert expected_tokens(np.array(1.0), np.array(7)) == 8.0


def test_first_rejection_edges():
    # u = 1 → first token rejected; tiny u with α near 1 → capped, no overflow
    assert first_rejection_from_uniform(np.array([1.0]), np.array([0.5]), 21)[0] == 1
    assert first_rejection_from_uniform(np.array([1e-300]), np.array([1 - 1e-15]), 21)[0] == 21


def test_common_random_numbers_monotone(rng):
    """With one draw, a longer draft accepts at least as many tokens and is rejected whenever
    a shorter draft is."""
    f = sample_first_rejection(rng, rng.uniform(0.5, 0.95, (1000, 8)), cap=21)
    for g in range(20):
        assert np.all(accepted_tokens(f, g + 1) >= accepted_tokens(f, g))
        assert np.all(rejected(f, g + 1) >= rejected(f, g))


@pytest.mark.slow
def test_beta_posterior_equals_a_hand_computed_update():
    cfg = SystemConfig(num_devices=3, alpha_dynamics="request", alpha_observed=False,
                       request_mean_tokens=(1e6,) * 4, episode_length=20)
    env = MultiSpinEnv(cfg)
    obs, _ = env.reset(seed=4)
    m = np.asarray(cfg.acceptance_rates)[env.state.task[0]]
    a, b = cfg.alpha_concentration * m, cfg.alpha_concentration * (1 - m)
    ctx = env.context
    np.testing.assert_allclose(ctx.alpha_a, a) and np.testing.assert_allclose(ctx.alpha_b, b)
    rng = np.random.default_rng(0)
    for _ in range(10):
        gamma = rng.integers(0, 6, 3)
        obs, _, _, _, info = env.step(gamma)
        a = a + np.where(gamma > 0, info["accepted"], 0)
        b = b + info["rejected"]
        ctx = env.context
        np.testing.assert_allclose(ctx.alpha_a, a, rtol=0, atol=0)
        np.testing.assert_allclose(ctx.alpha_b, b, rtol=0, atol=0)
        np.testing.assert_allclose(ctx.alpha, a / (a + b))
        dev = obs[: 6 * 3].reshape(3, 6)  # 5 + posterior spread
        np.testing.assert_allclose(dev[:, 0], a / (a + b), rtol=1e-6)
        sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
        np.testing.assert_allclose(dev[:, 5], np.minimum(2 * sd, 1), rtol=1e-6)
        # the truth is in info, never in the observation
        assert not np.any(np.isclose(dev[:, 0], info["alpha"], rtol=0, atol=1e-9) & (info["alpha"] != a / (a + b)))


def _brute_force_chain_posterior(prior, cells, stay, rounds):
    """Posterior over (α bin, chain state of the next round) by summing over every path of the
    chain: prior(α)·½·Π P(h_t → h_t+1)·Π α_e^A (1 − α_e)^rejected — no recursion."""
    import itertools

    t = len(rounds)
    post = np.zeros_like(cells)
    for path in itertools.product((0, 1), repeat=t + 1):
        w = 0.5 * prior.copy()
        for i, (acc, rej) in enumerate(rounds):
            a = cells[:, path[i]]
            w = w * a**acc * (1 - a) ** rej
            w = w * (stay if path[i + 1] == path[i] else 1 - stay)
        post[:, path[-1]] += w
    return post / post.sum()


@pytest.mark.slow
def test_grid_filter_equals_brute_force_over_chain_paths():

    cfg = SystemConfig(num_devices=3, alpha_dynamics="markov", alpha_observed=False, alpha_grid_size=8,
                       request_mean_tokens=(1e9,) * 4, markov_stay=0.7, episode_length=50)
    assert cfg.belief == "grid"
    env = MultiSpinEnv(cfg)
    env.reset(seed=5)
    task = env.state.task[0].copy()
    cells = acceptance.grid_alpha(8, cfg.markov_delta)
    rng = np.random.default_rng(2)
    rounds = [[] for _ in range(3)]
    for _ in range(7):
        gamma = rng.integers(0, 7, 3)
        obs, _, _, _, info = env.step(gamma)
        for k in range(3):
            rounds[k].append((int(info["accepted"][k]) if gamma[k] else 0, int(info["rejected"][k])))
    ctx = env.context
    for k in range(3):
        m = cfg.acceptance_rates[task[k]]
        edges = np.linspace(0, 1, 9)
        prior = np.diff(special.betainc(cfg.alpha_concentration * m, cfg.alpha_concentration * (1 - m), edges))
        want = _brute_force_chain_posterior(prior / prior.sum(), cells, 0.7, rounds[k])
        np.testing.assert_allclose(env.state.belief[0, k], want, rtol=1e-10, atol=1e-15)
        # context and observation carry the filter's predictive law, never the truth
        np.testing.assert_allclose(ctx.alpha[k], (want * cells).sum(), rtol=1e-12)
        np.testing.assert_allclose(ctx.alpha_weights[k], want.reshape(-1), rtol=1e-10, atol=1e-15)
        dev = obs[: F.device_features(cfg) * 3].reshape(3, -1)
        assert dev[k, 0] == pytest.approx((want * cells).sum(), rel=1e-6)
        assert dev[k, 6] == pytest.approx(2 * want[:, 1].sum() - 1, abs=1e-6)
    assert ctx.alpha_a is None


def test_grid_filter_is_calibrated_and_beats_the_beta_posterior_under_the_chain():
    """Monte Carlo over 4000 devices: the filter's P(hard) matches the frequency of the hard
    state, its predictive mean is unbiased for the coming round's α, and its squared error is
    below the request-level Beta posterior's on the same trajectories."""
    grid = SystemConfig(num_devices=1, alpha_dynamics="markov", alpha_observed=False,
                        request_mean_tokens=(1e9,) * 4, episode_length=100)
    beta = grid.replace(alpha_belief="beta")
    n = 4000
    rng = np.random.default_rng(0)
    sg = F.reset_state(u := rng.random((n, F.reset_draws(grid))), grid)
    sb = F.reset_state(u, beta)
    gamma = np.full((n, 1), 4)
    err_g, err_b, p_hard, hard = [], [], [], []
    for t in range(12):
        u = rng.random((n, F.step_draws(grid)))
        sg, _ = F.step_state(u, sg, gamma, grid)
        sb, _ = F.step_state(u, sb, gamma, beta)
        np.testing.assert_array_equal(sg.alpha, sb.alpha)  # same dynamics, different beliefs
        if t >= 4:
            mean_g = F.context(sg, grid).alpha
            mean_b = F.context(sb, beta).alpha
            err_g.append(mean_g - sg.alpha)
            err_b.append(mean_b - sb.alpha)
            p_hard.append(sg.belief[..., 1].sum(-1))
            hard.append(sg.hard)
    err_g, err_b = np.concatenate(err_g), np.concatenate(err_b)
    p_hard, hard = np.concatenate(p_hard).ravel(), np.concatenate(hard).ravel()
    se = err_g.std() / np.sqrt(err_g.size / 8)  # rounds of a device are correlated: be conservative
    assert abs(err_g.mean()) < 3 * se + 2e-3
    for lo, hi in ((0.0, 0.3), (0.3, 0.7), (0.7, 1.0)):
        sel = (p_hard >= lo) & (p_hard < hi)
        freq, pred = hard[sel].mean(), p_hard[sel].mean()
        assert abs(freq - pred) < 3 * np.sqrt(pred * (1 - pred) / (sel.sum() / 8)) + 0.01, (lo, freq, pred)
    assert np.mean(err_g**2) < 0.9 * np.mean(err_b**2)


def test_request_lengths_tasks_and_alpha_follow_their_laws():

    rng = np.random.default_rng(5)
    u = rng.random(300_000)
    for mean in (2.0, 40.0, 400.0):
        n = acceptance.geometric_from_uniform(u, mean)
        assert n.min() >= 1
        assert n.mean() == pytest.approx(mean, rel=0.02)
        p = 1 / mean
        assert np.mean(n == 1) == pytest.approx(p, abs=0.005)
    a0, b0 = acceptance.beta_prior(0.8, 20.0)
    x = acceptance.beta_from_uniform(u, a0, b0)
    assert stats.kstest(x, stats.beta(a0, b0).cdf).pvalue > 1e-3
    # env level: tasks of new requests are uniform over the four tasks; lengths geometric per task
    cfg = SystemConfig(num_devices=50, alpha_dynamics="request", request_mean_tokens=(3.0, 5.0, 8.0, 4.0),
                       episode_length=1000)
    venv = MultiSpinVectorEnv(20, cfg)
    venv.reset(seed=9)
    new_tasks, lengths = [], []
    for _ in range(30):
        before = venv.state
        _, _, _, _, info = venv.step(np.full((20, 50), 2))
        done = info["request_done"]
        new_tasks += list(venv.state.task[done])
        lengths += list(zip(venv.state.task[done], venv.state.remaining[done]))
    counts = np.bincount(new_tasks, minlength=4)
    assert stats.chisquare(counts).pvalue > 1e-3
    for t, mean in enumerate(cfg.request_mean_tokens):
        ls = np.array([n for tk, n in lengths if tk == t])
        assert ls.mean() == pytest.approx(mean, rel=0.1)
    assert before is not None


def test_markov_chain_modulates_alpha_and_switches_at_its_rate():
    cfg = SystemConfig(num_devices=40, alpha_dynamics="markov", request_mean_tokens=(1e9,) * 4, episode_length=500)
    venv = MultiSpinVectorEnv(10, cfg)
    venv.reset(seed=3)
    s = venv.state
    step = cfg.markov_delta * np.minimum(s.alpha_req, 1 - s.alpha_req)
    np.testing.assert_allclose(s.alpha, np.where(s.hard, s.alpha_req - step, s.alpha_req + step))
    assert np.all((s.alpha > 0) & (s.alpha <= 1))
    flips, n = 0, 0
    for _ in range(50):
        before = venv.state.hard.copy()
        venv.step(np.full((10, 40), 1))
        flips += np.sum(before != venv.state.hard)
        n += before.size
    assert flips / n == pytest.approx(1 - cfg.markov_stay, abs=0.01)
    assert venv.state.hard.mean() == pytest.approx(0.5, abs=0.05)
