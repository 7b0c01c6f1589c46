"""The adaptive rules (baselines.adaptive) and the survival-profile SAA, against hand computations,
closed forms and brute force."""

from __future__ import annotations

import numpy as np
import pytest

import msenv
from baselines import make_controller
from baselines.adaptive import (
    Clairvoyant,
    HFHeuristic,
    KaplanMeierGreedy,
    LastOutcome,
    UCBBudget,
    UCBLengths,
    budget_lengths,
)
from baselines.saa import SAAEstimator
from msenv.engine.kinds.traces import TraceContext
from msenv.model import acceptance, latency


def _context(k=4, gamma_max=12, t_draft=None, **extra) -> TraceContext:
    cfg = msenv.SystemConfig(num_devices=k, gamma_max=gamma_max)
    t = np.full(k, cfg.t_draft_ref_s) if t_draft is None else np.asarray(t_draft, float)
    g = np.full(k, 1e-11)
    return TraceContext(np.full(k, 0.7), t, g, g, cfg.p_ul_w, cfg.p_dl_w, cfg, beta=g, **extra)


def _info(accepted, rejected, tokens=None, latency_s=0.1, done=None):
    accepted = np.asarray(accepted)
    info = {"accepted": accepted, "rejected": np.asarray(rejected, bool),
            "tokens": accepted + 1 if tokens is None else np.asarray(tokens), "latency": latency_s,
            "goodput": float((accepted + 1).sum() / latency_s)}
    if done is not None:
        info["request_done"] = np.asarray(done, bool)
    return info


def test_hf_heuristic_is_plus_two_after_a_full_draft_minus_one_otherwise_floor_one_restart_per_request():
    hf = HFHeuristic()
    hf.reset(0)
    ctx = _context(k=3)
    assert list(hf.act(ctx)) == [5, 5, 5]  # HF's start value
    hf.observe(np.array([5, 5, 5]), _info([5, 2, 0], [False, True, True]))
    assert list(hf.act(ctx)) == [7, 4, 4]
    for _ in range(6):
        g = hf.act(ctx)
        hf.observe(g, _info([0, 0, 0], [True, True, True]))
    assert list(hf.act(ctx)) == [1, 1, 1]  # the floor
    g = hf.act(ctx)
    hf.observe(g, _info([1, 0, 1], [False, True, False], done=[False, False, True]))
    assert list(hf.act(ctx)) == [3, 1, 5]  # device 2's request ended: it restarts at 5
    for _ in range(10):
        g = hf.act(ctx)
        hf.observe(g, _info(g, [False] * 3))
    assert hf.act(ctx).max() == ctx.config.gamma_max  # capped at γ_max


def test_budget_lengths_fit_the_common_drafting_time():
    ctx = _context(k=3, t_draft=[0.0152, 0.0304, 0.0152 * 1.5])
    assert list(budget_lengths(4.0, ctx)) == [4, 2, 2]
    assert list(budget_lengths(100.0, ctx)) == [12, 12, 12]
    clipped = make_controller("hf-budget", budget=2.0)
    clipped.reset(0)
    assert list(clipped.act(ctx)) == [2, 1, 1]


def test_last_outcome_drafts_nothing_after_a_rejection_and_the_budget_after_a_full_round():
    rule = LastOutcome(budget=3.0)
    rule.reset(0)
    ctx = _context(k=3)
    assert list(rule.act(ctx)) == [3, 3, 3]
    rule.observe(np.array([3, 3, 3]), _info([1, 3, 0], [True, False, True], done=[False, False, True]))
    assert list(rule.act(ctx)) == [0, 3, 3]  # device 2: a new request starts with the budget


def test_ucb_lengths_tries_every_arm_then_exploits_the_best_rate_and_restarts_per_request():
    ucb = UCBLengths(arms=(1, 2, 3), exploration=0.0)
    ucb.reset(0)
    ctx = _context(k=2)
    seen = []
    for _ in range(3):
        g = ucb.act(ctx)
        seen.append(g.copy())
        rate = {1: 10.0, 2: 30.0, 3: 20.0}
        ucb.observe(g, _info(g - 1, [False, False], tokens=[rate[int(x)] for x in g], latency_s=1.0))
    assert sorted(int(x[0]) for x in seen) == [1, 2, 3]  # each arm once
    assert list(ucb.act(ctx)) == [2, 2]  # then the best mean (no exploration bonus)
    ucb.observe(np.array([2, 2]), _info([1, 1], [False, False], tokens=[30.0, 30.0], latency_s=1.0,
                                        done=[True, False]))
    assert ucb.act(ctx)[0] == 1 and ucb.act(ctx)[1] == 2  # device 0's new request tries every arm again


def test_ucb_budget_scores_each_budget_by_the_rounds_goodput():
    ucb = UCBBudget(arms=(1.0, 4.0), exploration=0.0)
    ucb.reset(0)
    ctx = _context(k=2)
    for good in (10.0, 40.0):
        g = ucb.act(ctx)
        ucb.observe(g, {**_info(g, [False, False]), "goodput": good if g[0] == 1 else 50.0})
    assert list(ucb.act(ctx)) == [4, 4]


def _km_bruteforce(rounds, depth):
    """Kaplan–Meier hazards from (γ, A, rejected) rounds, one depth at a time by definition."""
    events, risk = np.zeros(depth), np.zeros(depth)
    for _gamma, acc, rej in rounds:
        for d in range(depth):
            if d < acc:
                risk[d] += 1
            elif d == acc and rej:
                risk[d] += 1
                events[d] += 1
    return events, risk


def test_kaplan_meier_counts_censor_full_drafts_and_match_a_brute_force():
    rng = np.random.default_rng(5)
    km = KaplanMeierGreedy(prior=0.0, n_samples=64)
    km.reset(0)
    ctx = _context(k=1, gamma_max=6)
    km.act(ctx)
    rounds = []
    for _ in range(200):
        gamma = int(rng.integers(0, 7))
        f = int(rng.integers(1, 9))
        acc, rej = min(f - 1, gamma), f <= gamma
        rounds.append((gamma, acc, rej))
        km.observe(np.array([gamma]), _info([acc], [rej]))
    events, risk = _km_bruteforce(rounds, 6)
    np.testing.assert_array_equal(km._events[0], events)
    np.testing.assert_array_equal(km._risk[0], risk)
    s = km.survival(6)[0]
    expected = np.cumprod(np.r_[1.0, 1.0 - events / np.maximum(risk, 1)])
    np.testing.assert_allclose(s, expected)


def test_survival_sampling_and_expected_tokens_match_the_iid_closed_form():
    alpha = np.array([0.3, 0.7, 0.95])
    gmax = 10
    survival = alpha[:, None] ** np.arange(gmax + 1)[None]
    gammas = np.array([[0, 3, 10], [5, 1, 2]])
    np.testing.assert_allclose(acceptance.expected_tokens_from_survival(survival, gammas),
                               acceptance.expected_tokens(alpha, gammas))
    u = 1.0 - np.random.default_rng(1).random((200_000, 3))
    f = acceptance.first_rejection_from_survival(u, survival)
    for j in (1, 2, 5):
        np.testing.assert_allclose((f > j).mean(axis=0), alpha ** j, atol=4e-3)
    assert f.max() <= gmax + 1 and f.min() >= 1


def test_the_saa_on_a_survival_profile_prices_the_profile():
    """A depth profile with a low first-token acceptance (n-gram-like): the SAA's token estimate is
    the profile's, not an α's; with α's survival it agrees with the i.i.d. SAA in expectation."""
    ctx = _context(k=2, gamma_max=8)
    depth = np.array([0.2] + [0.9] * 7)
    surv = np.cumprod(np.r_[1.0, depth])[None].repeat(2, axis=0)
    est = SAAEstimator(ctx.__class__(**{**ctx.__dict__, "survival": surv}), np.random.default_rng(0), 4000)
    np.testing.assert_allclose((est.samples > 1).mean(), 0.2, atol=0.02)
    np.testing.assert_allclose((est.samples > 3).mean(), 0.2 * 0.81, atol=0.02)


def test_clairvoyant_picks_the_best_rejection_free_budget_by_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(20):
        k = 4
        t = 0.0152 * rng.uniform(1.0, 2.0, k)
        f = rng.integers(1, 10, k)
        ctx = _context(k=k, gamma_max=8, t_draft=t, first_rejection=np.minimum(f, 9))
        gamma = Clairvoyant().act(ctx)
        assert np.all(gamma <= np.minimum(f - 1, 8))  # never a rejection
        best = -1.0
        for tau in np.linspace(0, 9 * t.max(), 2000):  # brute force over a fine grid of budgets
            g = np.minimum(np.floor(tau / t + 1e-9), np.minimum(f - 1, 8)).astype(int)
            best = max(best, (g + 1).sum() / latency.compute_latency(g[None], t, ctx.config)[0])
        got = (gamma + 1).sum() / latency.compute_latency(gamma[None], t, ctx.config)[0]
        assert got == pytest.approx(best, rel=1e-12) or got > best


def test_the_clairvoyant_needs_a_trace_and_bad_settings_are_refused():
    with pytest.raises(ValueError, match="first_rejection"):
        Clairvoyant().act(_context())
    with pytest.raises(ValueError, match=r"UCBLengths exploration=-1"):
        UCBLengths(exploration=-1)
    with pytest.raises(ValueError, match=r"LastOutcome budget=nan"):
        LastOutcome(budget=float("nan"))
    with pytest.raises(ValueError, match=r"UCBLengths arms=\(\)"):
        UCBLengths(arms=())
