"""SPEC §11 dynamics: the paper scenario unchanged, the laws of the new processes, what a
server may observe (issue: dynamics and partial observability)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats

import gymnasium as gym
import msenv  # noqa: F401
from msenv import SystemConfig
from msenv import acceptance, channel, functional as F
from msenv.env import MultiSpinEnv, info_keys
from msenv.vector import MultiSpinVectorEnv

GOLDEN = Path(__file__).parent / "data" / "golden_paper.npz"


# ---------------------------------------------------------------------- paper scenario unchanged
def test_paper_scenario_bit_identical_to_golden():
    """Every obs, reward and info key of the default ids (and [R] variants) equals the
    trajectories recorded before the dynamics were added (tests/make_golden.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_golden", Path(__file__).parent / "make_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gold = np.load(GOLDEN)
    for name, (env_id, kw) in mod.CASES.items():
        now = mod.record(env_id, kw)
        keys = {k.split("/", 1)[1] for k in gold.files if k.startswith(name + "/")}
        assert keys == set(now), name
        for key in keys:
            np.testing.assert_array_equal(now[key], gold[f"{name}/{key}"], err_msg=f"{name}/{key}")


def test_dynamic_step_matches_the_numpy_implementation():
    """The compiled SPEC §11 step against trajectories of the numpy implementation it replaced
    (tests/make_golden_dynamic.py, 6 configs: every id's dynamics, the random policy, statistical
    CSI, the chain filter, fixed hidden α): every obs, reward and info key bit-identical."""
    import importlib.util
    import sys

    here = Path(__file__).parent
    sys.path.insert(0, str(here))
    try:
        spec = importlib.util.spec_from_file_location("make_golden_dynamic", here / "make_golden_dynamic.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(here))
    gold = np.load(here / "data" / "golden_dynamic.npz")
    for name, (env_id, kw) in mod.CASES.items():
        now = mod.record(env_id, kw)
        assert {k.split("/", 1)[1] for k in gold.files if k.startswith(name + "/")} == set(now), name
        for key, val in now.items():
            ref = gold[f"{name}/{key}"]
            np.testing.assert_array_equal(val, ref, err_msg=f"{name}/{key}")


# ---------------------------------------------------------------------- channel
@pytest.mark.parametrize("rho", [0.95, 0.5, -0.12, 0.0])
def test_gauss_markov_lag_correlation_is_rho_squared_and_marginal_exp1(rho):
    rng = np.random.default_rng(1)
    n = 200_000
    h = channel.complex_gain_from_uniform(rng.random(n), rng.random(n))
    w = channel.complex_gain_from_uniform(rng.random(n), rng.random(n))
    h2 = channel.evolve_gain(h, rho, w)
    x, y = np.abs(h) ** 2, np.abs(h2) ** 2
    r = np.corrcoef(x, y)[0, 1]
    se = 1.0 / np.sqrt(n) * 3  # ≈ 3 standard errors of a correlation estimate (≤ 1/√n · (1 + r²))
    assert abs(r - rho**2) < 2 * se + 1e-3
    assert stats.kstest(y, "expon").pvalue > 1e-3  # the marginal stays Exp(1)
    assert np.mean(h2.real * h.real + h2.imag * h.imag) == pytest.approx(rho, abs=0.01)  # E[h2·conj(h)] = ρ


def test_jakes_correlation_values_from_the_spec():
    fd = channel.doppler_hz(1.0, 3.5e9)
    assert fd == pytest.approx(11.67, abs=0.01)
    assert channel.jakes_correlation(fd, 0.3) == pytest.approx(special.j0(2 * np.pi * fd * 0.3))
    assert channel.jakes_correlation(0.5, 0.3) == pytest.approx(0.79, abs=0.01)


def test_env_correction_gains_follow_the_lag_law():
    """Batched env, deterministic T_cmp (no drafting spread): corr(|h_decision|², |h_correction|²)
    across many envs equals J0(2π f_D T_cmp)²; with speed 0 the gains never change."""
    v = 0.3
    cfg = SystemConfig(num_devices=3, channel_dynamics="gauss_markov", csi="decision", speed_range_mps=(v, v),
                       draft_scale_range=(1.0, 1.0), episode_length=5)
    n = 20_000
    venv = MultiSpinVectorEnv(n, cfg)
    venv.reset(seed=0)
    gamma = np.full((n, 3), 4)
    beta = venv.state.beta
    x = venv.state.g_ul / beta
    _, _, _, _, info = venv.step(gamma)
    y = info["g_ul_corr"] / beta
    t_cmp = 4 * cfg.t_draft_ref_s + cfg.t_verify_base_s + 3 * cfg.t_verify_per_device_s
    rho = special.j0(2 * np.pi * channel.doppler_hz(v, cfg.carrier_hz) * t_cmp)
    r = np.corrcoef(x.ravel(), y.ravel())[0, 1]
    assert abs(r - rho**2) < 0.03
    static = MultiSpinEnv(cfg.replace(speed_range_mps=(0.0, 0.0)))
    static.reset(seed=1)
    g0 = static.state.g_ul.copy()
    for _ in range(4):
        _, _, _, _, inf = static.step(np.array([2, 0, 5]))
        np.testing.assert_allclose(inf["g_ul_corr"], g0[0], rtol=1e-12)
        np.testing.assert_allclose(static.state.g_ul, g0, rtol=1e-12)


def test_oracle_context_predicts_the_correction_gains():
    cfg = SystemConfig(num_devices=4, channel_dynamics="gauss_markov", csi="decision", speed_range_mps=(1.0, 1.0),
                       episode_length=5)
    env = MultiSpinEnv(cfg)
    env.reset(seed=2)
    oracle, seen = env.oracle_context, env.context
    assert seen.w_ul is None and oracle.w_ul is not None  # decision CSI: no innovations for the server
    gamma = np.array([3, 1, 0, 6])
    from msenv.latency import compute_latency

    g_ul, g_dl = oracle.correction_gains(compute_latency(gamma, oracle.t_draft, cfg))
    _, _, _, _, info = env.step(gamma)
    np.testing.assert_allclose(info["g_ul_corr"], g_ul, rtol=1e-12)
    np.testing.assert_allclose(info["g_dl_corr"], g_dl, rtol=1e-12)
    stat = MultiSpinEnv(cfg.replace(csi="statistical"))
    stat.reset(seed=2)
    np.testing.assert_array_equal(stat.context.g_ul, stat.state.beta[0])  # β only
    assert stat.context.h_ul is None


# ---------------------------------------------------------------------- acceptance
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


def test_grid_filter_equals_brute_force_over_chain_paths():
    from msenv import acceptance

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


def test_bayes_saa_draws_alpha_from_the_filters_predictive():
    from msenv.saa import DynamicSAAEstimator

    cfg = SystemConfig(num_devices=4, alpha_dynamics="markov", alpha_observed=False, alpha_grid_size=16)
    env = MultiSpinEnv(cfg)
    env.reset(seed=1)
    for _ in range(5):
        env.step(np.array([4, 2, 6, 3]))
    ctx = env.context
    est = DynamicSAAEstimator(ctx, np.random.default_rng(0), 20000)
    support = ctx.alpha_support
    for k in range(4):  # χ² of the drawn cells against the predictive probabilities
        counts = np.array([(est.alpha[:, k] == v).sum() for v in np.unique(support)])
        probs = np.array([ctx.alpha_weights[k][support == v].sum() for v in np.unique(support)])
        keep = probs * 20000 >= 5
        assert counts.sum() == 20000  # every draw is a support point
        stat, p = stats.chisquare(counts[keep], probs[keep] / probs[keep].sum() * counts[keep].sum())
        assert p > 1e-4, (k, p)


def test_request_lengths_tasks_and_alpha_follow_their_laws():
    from msenv import acceptance

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


def test_tokens_past_a_requests_end_are_never_counted():
    cfg = SystemConfig(num_devices=6, alpha_dynamics="request", acceptance_rates=(0.99, 0.99, 0.99, 0.99),
                       alpha_concentration=1000.0, request_mean_tokens=(3.0, 3.0, 3.0, 3.0), episode_length=50)
    env = MultiSpinEnv(cfg)
    env.reset(seed=1)
    wasted = 0
    for _ in range(40):
        left = env.state.remaining[0].copy()
        _, r, _, _, info = env.step(np.full(6, 10))
        generated = info["accepted"] + 1
        np.testing.assert_array_equal(info["tokens"], np.minimum(generated, left))
        assert r == pytest.approx(np.minimum(generated, left).sum() / info["latency"], rel=1e-12)
        wasted += int(np.sum(generated - info["tokens"]))
        assert np.all(info["request_done"] == (generated >= left))
    assert wasted > 0  # long drafts past short requests do waste tokens


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


# ---------------------------------------------------------------------- shells
DYNAMIC = [
    dict(channel_dynamics="gauss_markov", csi="decision", speed_range_mps=(0.5, 1.5)),
    dict(channel_dynamics="gauss_markov", csi="oracle", speed_range_mps=(0.0, 0.05), fading="reciprocal",
         alpha_dynamics="request", alpha_observed=False),
    dict(channel_dynamics="gauss_markov", csi="statistical", speed_range_mps=(1.0, 2.0), alpha_dynamics="markov",
         alpha_observed=False, mode_policy="random", request_mean_tokens=(20.0, 30.0, 25.0, 10.0)),
    dict(alpha_dynamics="request", alpha_observed=False, alpha_belief="grid", alpha_grid_size=16,
         request_mean_tokens=(20.0, 30.0, 25.0, 10.0)),
]


@pytest.mark.parametrize("over", DYNAMIC)
def test_dynamic_configs_pass_the_env_checkers_and_bound_the_obs(over):
    import warnings

    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = gym.make("msenv/MultiSpin-v0", num_devices=5, episode_length=30, **over).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=False)
        sb3_check(MultiSpinEnv(num_devices=5, episode_length=30, **over), warn=True)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs, r, _, _, info = env.step(rng.integers(0, 21, 5))
        assert env.observation_space.contains(obs) and np.isfinite(r) and r >= 0
        assert set(info) == set(info_keys(env.config))


@pytest.mark.parametrize("over", DYNAMIC)
def test_dynamic_vector_env_equals_sync_vector_env(over):
    cfg = SystemConfig(num_devices=4, episode_length=6, **over)
    n = 3
    batched = MultiSpinVectorEnv(n, cfg)
    sync = gym.vector.SyncVectorEnv([lambda: MultiSpinEnv(cfg) for _ in range(n)])
    o1, _ = batched.reset(seed=11)
    o2, _ = sync.reset(seed=11)
    np.testing.assert_array_equal(o1, o2)
    rng = np.random.default_rng(1)
    for _ in range(15):
        a = rng.integers(0, 21, (n, 4))
        r1 = batched.step(a)
        r2 = sync.step(a)
        for x, y in zip(r1[:4], r2[:4]):
            np.testing.assert_array_equal(x, y)
        live = r1[4]["_tokens"]  # the step after an episode's end is a reset step (no info)
        assert np.array_equal(live, r2[4].get("_tokens", np.zeros(n, bool)))
        for key in info_keys(cfg):
            if live.any():
                np.testing.assert_array_equal(r1[4][key][live], r2[4][key][live], err_msg=key)


def test_pettingzoo_local_obs_grows_with_the_extras():
    from pettingzoo.test import parallel_api_test

    from msenv.marl import MultiSpinParallelEnv

    env = MultiSpinParallelEnv(num_devices=3, episode_length=5, **DYNAMIC[2])
    assert env.observation_space("device_0").shape == (F.device_features(env.config) + 2 + 3,)
    parallel_api_test(env, num_cycles=10)


# ---------------------------------------------------------------------- controllers
def _est_pair(cfg, seed=0, n=400):
    from msenv.saa import DynamicSAAEstimator

    env = MultiSpinEnv(cfg)
    env.reset(seed=seed)
    return env, DynamicSAAEstimator(env.context, np.random.default_rng(1), n), DynamicSAAEstimator(
        env.oracle_context, np.random.default_rng(1), n)


def test_dynamic_estimator_equals_a_plain_per_sample_computation():
    """Bayesian SAA value of a candidate = a scalar loop over its samples: α from the posterior,
    gains from the conditional fading law at ρ(T_cmp(γ)), T_com from the reactive solver."""
    from msenv.goodput import communication_time
    from msenv.latency import compute_latency
    from msenv.acceptance import expected_tokens

    cfg = SystemConfig(num_devices=4, channel_dynamics="gauss_markov", csi="decision", speed_range_mps=(1.0, 1.0),
                       alpha_dynamics="request", alpha_observed=False, p_dl_dbm=15.0)
    env, est, _ = _est_pair(cfg, n=60)
    ctx = env.context
    gamma = np.array([3, 0, 5, 2])
    t = compute_latency(gamma, ctx.t_draft, cfg)
    rho = special.j0(2 * np.pi * ctx.doppler_hz * t)
    t_com, tokens = [], []
    for s in range(60):
        hu = rho * ctx.h_ul + np.sqrt(1 - rho**2) * est._w_ul[s]
        hd = rho * ctx.h_dl + np.sqrt(1 - rho**2) * est._w_dl[s]
        gu, gd = ctx.beta * np.abs(hu) ** 2, ctx.beta * np.abs(hd) ** 2
        rej = est.samples[s] <= gamma
        t_com.append(float(communication_time(rej[None], gu, gd, cfg, p_ul_w=ctx.p_ul_w, p_dl_w=ctx.p_dl_w).t_com[0])
                     if rej.any() else 0.0)
        tokens.append(expected_tokens(est.alpha[s], gamma).sum())
    want = np.mean(tokens) / (t + np.mean(t_com))
    assert est.evaluate(gamma) == pytest.approx(want, rel=1e-10)
    # the posterior draws have the posterior's mean
    assert np.allclose(est.alpha.mean(0), ctx.alpha_a / (ctx.alpha_a + ctx.alpha_b), atol=0.05)


def test_oracle_estimator_prices_the_true_correction_gains():
    from msenv.goodput import expected_goodput
    from msenv.latency import compute_latency

    cfg = SystemConfig(num_devices=4, channel_dynamics="gauss_markov", csi="decision", speed_range_mps=(1.5, 1.5),
                       p_dl_dbm=12.0)
    env, _, oracle = _est_pair(cfg)
    octx = env.oracle_context
    for gamma in (np.array([1, 1, 1, 1]), np.array([6, 2, 0, 9])):
        g_ul, g_dl = octx.correction_gains(compute_latency(gamma, octx.t_draft, cfg))
        want = expected_goodput(gamma[None], oracle.samples, octx.alpha, octx.t_draft, g_ul, g_dl, cfg,
                                p_ul_w=octx.p_ul_w, p_dl_w=octx.p_dl_w)[0]
        assert oracle.evaluate(gamma) == pytest.approx(want, rel=1e-12)


def test_paper_scenario_bayes_equals_greedy_estimates_and_oracle_is_greedy():
    """With exact α and block fading the dynamic estimator is the plain SAA on the same samples."""
    from msenv.goodput import expected_goodput

    env, est, oracle = _est_pair(SystemConfig(num_devices=5))
    ctx = env.context
    for gamma in (np.zeros(5, int), np.full(5, 4), np.array([1, 7, 0, 3, 2])):
        want = expected_goodput(gamma[None], est.samples, ctx.alpha, ctx.t_draft, ctx.g_ul, ctx.g_dl, cfg := ctx.config,
                                p_ul_w=ctx.p_ul_w, p_dl_w=ctx.p_dl_w)[0]
        assert est.evaluate(gamma) == pytest.approx(want, rel=1e-12)
        assert oracle.evaluate(gamma) == pytest.approx(want, rel=1e-12)
    assert cfg.is_paper_scenario


def test_harness_hands_the_oracle_context_only_to_oracle_controllers():
    from baselines import BayesianSAA, OracleGreedy, PlugInGreedy
    from baselines.base import Controller, controller_context

    seen = {}

    class Spy(Controller):
        def act(self, context, obs=None):
            seen[self.name] = context
            return np.zeros(3, dtype=int)

    cfg = SystemConfig(num_devices=3, alpha_dynamics="request", alpha_observed=False)
    env = MultiSpinEnv(cfg)
    env.reset(seed=0)
    spy, ospy = Spy(), Spy()
    ospy.name, ospy.oracle = "o", True
    spy.act(controller_context(spy, env))
    ospy.act(controller_context(ospy, env))
    assert seen["controller"].alpha_a is not None and not seen["controller"].oracle
    assert seen["o"].oracle and seen["o"].alpha_a is None
    np.testing.assert_array_equal(seen["o"].alpha, env.state.alpha[0])
    assert OracleGreedy.oracle and not BayesianSAA.oracle and not PlugInGreedy.oracle


def test_dynamic_ids_are_registered_and_pass_check_env():
    import warnings

    from gymnasium.utils.env_checker import check_env

    for env_id in msenv.DYNAMIC_IDS:
        env = gym.make(env_id)
        assert not env.unwrapped.config.is_paper_scenario
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped, skip_render_check=False)
    small = gym.make("msenv/MultiSpin-Dynamic-Small-v0").unwrapped.config
    assert (small.num_devices, small.p_dl_dbm, small.alpha_concentration) == (6, 15.0, 5.0)


def test_dynamics_experiment_quick(tmp_path):
    import csv

    from experiments.dynamics import run_dynamics

    rows = run_dynamics(tmp_path, drops=2, rounds=4, workers=1, quick=True, progress=False)
    schemes = {r["scheme"] for r in rows}
    assert schemes == {"oracle-greedy", "plug-in-greedy", "bayes-saa", "optimal-uniform", "fixed-4"}
    with open(tmp_path / "dynamics_gaps.csv") as fh:
        gaps = list(csv.DictReader(fh))
    drops = list(csv.DictReader(open(tmp_path / "dynamics_drops.csv")))
    g = gaps[0]
    pick = lambda s: np.array([float(d["throughput"]) for d in drops  # noqa: E731
                               if d["panel"] == g["panel"] and float(d["x"]) == float(g["x"]) and d["scheme"] == s])
    assert float(g["oracle_gap"]) == pytest.approx(np.mean(pick("oracle-greedy") / pick("plug-in-greedy") - 1), rel=1e-9)
    assert (tmp_path / "dynamics.png").stat().st_size > 10_000


def test_the_jth_request_is_the_same_whatever_the_controller():
    """Common random numbers: request j of a device has the same task, length and α under
    different draft lengths, although it starts at different rounds."""
    cfg = SystemConfig(num_devices=5, alpha_dynamics="markov", request_mean_tokens=(6.0, 8.0, 5.0, 7.0),
                       episode_length=200)
    seen = []
    for g in (1, 9):
        env = MultiSpinEnv(cfg)
        env.reset(seed=12)
        reqs = {}
        for _ in range(60):
            s = env.state
            for k in range(5):
                reqs.setdefault((k, int(s.req_index[0, k])), (int(s.task[0, k]), float(s.alpha_req[0, k])))
            env.step(np.full(5, g))
        seen.append(reqs)
    common = {key for key in set(seen[0]) & set(seen[1]) if key[1] <= F.REQUEST_POOL}  # later: step draws
    assert len([j for (_, j) in common if j >= 1]) >= 10
    for key in common:
        assert seen[0][key] == seen[1][key], key


@pytest.mark.parametrize("over", [dict(alpha_dynamics="request", alpha_observed=False, alpha_belief="beta"),
                                  dict(alpha_dynamics="markov", alpha_observed=False),
                                  dict(alpha_dynamics="markov", alpha_observed=False, alpha_belief="beta"),
                                  dict(alpha_dynamics="request", channel_dynamics="gauss_markov", csi="statistical")])
def test_request_renewals_in_and_past_the_pool(over):
    """Short requests exhaust the reset pool: every renewal starts the pool's next request (or, past
    it, one from the step's draws) with its task's prior belief and the chain's α, and the step's
    cached observation equals the one recomputed from the state's fields."""
    from msenv import acceptance

    cfg = SystemConfig(num_devices=4, request_mean_tokens=(2.0, 3.0, 2.0, 2.0), episode_length=200, **over)
    venv = MultiSpinVectorEnv(3, cfg)
    venv.reset(seed=4)
    in_pool = past = 0
    grid = acceptance.grid_belief(cfg) if cfg.belief == "grid" else None
    for t in range(40):
        before = venv.state
        obs, _, _, _, info = venv.step(np.full((3, 4), 1 + t % 4))
        s = venv.state
        np.testing.assert_array_equal(obs, F.observe(s.evolve(obs=None), cfg))
        done = info["request_done"]
        np.testing.assert_array_equal(s.req_index, before.req_index + done)
        for r, i in zip(*np.nonzero(done)):
            j = s.req_index[r, i]
            if j <= F.REQUEST_POOL:
                in_pool += 1
                task, length, u_alpha = before.req_pool[r, i, j - 1]
                a0, b0 = acceptance.beta_prior(cfg.acceptance_rates[int(task)], cfg.alpha_concentration)
                assert s.alpha_req[r, i] == pytest.approx(stats.beta(a0, b0).ppf(u_alpha), rel=1e-9)
                assert (s.task[r, i], s.remaining[r, i]) == (task, length)
            else:
                past += 1
                assert s.remaining[r, i] >= 1 and 0 < s.alpha_req[r, i] <= 1
            want = (acceptance.markov_alpha(s.alpha_req[r, i], s.hard[r, i], cfg.markov_delta)
                    if cfg.alpha_dynamics == "markov" else s.alpha_req[r, i])
            assert s.alpha[r, i] == want
            mean = cfg.acceptance_rates[s.task[r, i]]
            if cfg.belief == "beta":
                assert (s.post_a[r, i], s.post_b[r, i]) == acceptance.beta_prior(mean, cfg.alpha_concentration)
            elif grid is not None:
                np.testing.assert_array_equal(s.belief[r, i], grid["prior"][s.task[r, i]])
        not_done = ~done
        np.testing.assert_array_equal(s.task[not_done], before.task[not_done])
    assert in_pool > 20 and past > 20


def test_dynamic_id_in_spawned_subprocesses_matches_in_process():
    """A fresh (spawned) process binds SciPy's J0 and betaincinv for the cached kernels: SB3's
    SubprocVecEnv on a dynamic id gives the in-process env's observations and rewards."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    env_id = "msenv/MultiSpin-Dynamic-Small-v0"
    venv = make_vec_env("msenv:" + env_id, n_envs=2, seed=7, vec_env_cls=SubprocVecEnv,
                        vec_env_kwargs=dict(start_method="spawn"))
    try:
        obs = venv.reset()
        refs = [gym.make(env_id) for _ in range(2)]
        np.testing.assert_array_equal(obs, np.stack([e.reset(seed=7 + i)[0] for i, e in enumerate(refs)]))
        for t in range(12):
            actions = np.array([[1 + (t + i) % 6] * 6 for i in range(2)])
            obs, rew, _, _ = venv.step(actions)
            for i, e in enumerate(refs):
                o, r, *_ = e.step(actions[i])
                np.testing.assert_array_equal(obs[i], o)
                assert rew[i] == pytest.approx(r, rel=1e-6)  # SB3 stores rewards as float32
    finally:
        venv.close()
