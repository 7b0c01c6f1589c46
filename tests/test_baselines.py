"""Draft-length controllers and the SAA estimator (model §6–7) against independent
computations."""

import math
import re

import numpy as np
import pytest

from baselines import (
    ComputationOnly,
    ContextPredictor,
    ExactSAA,
    Fixed,
    GreedySAA,
    LocalSearch,
    OptimalUniform,
    best_uniform,
    greedy_search,
    local_search,
)
from baselines.saa import SAAConfig, SAAEstimator
from evaluation.evaluate import main as evaluate_main
from evaluation.harness import ControllerFactory
from msenv import SystemConfig
from msenv.engine.functional import RoundContext
from msenv.envs.env import MultiSpinEnv
from msenv.model.goodput import expected_goodput


def _context(seed=0, **overrides):
    env = MultiSpinEnv(**overrides)
    env.reset(seed=seed)
    return env.context


# --------------------------------------------------------------- independent scalar model
def scalar_t_com(rejected, g_ul, g_dl, p_ul, p_dl, cfg):
    """Per-sample T_com by brute force over UL/DL assignments, plain Python floats."""
    idx = [k for k, r in enumerate(rejected) if r]
    m = len(idx)
    if m == 0:
        return 0.0
    b = cfg.bandwidth_hz / m
    L = cfg.payload_bits

    def rate(p, g, n0):
        return b * math.log1p(p * g / (n0 * b)) / math.log(2)

    best = math.inf
    for bits in range(2**m):
        ul = [idx[j] for j in range(m) if bits >> j & 1]
        dl = [idx[j] for j in range(m) if not bits >> j & 1]
        t_ul = max((L / rate(p_ul, g_ul[k], cfg.n0_server_w_hz) for k in ul), default=0.0)
        t_dl = 0.0
        if dl:
            s = sum(1 / g_dl[k] for k in dl)
            t_dl = L / rate(p_dl, 1 / s, cfg.n0_device_w_hz)
        best = min(best, max(t_ul, t_dl))
    return best


def scalar_saa(gamma, samples, ctx, objective):
    cfg = ctx.config
    k = len(gamma)
    t_cmp = max(gamma[i] * ctx.t_draft[i] for i in range(k)) + cfg.t_verify_base_s + cfg.t_verify_per_device_s * k
    tcs, ratios = [], []
    for f in samples:
        rej = [f[i] <= gamma[i] for i in range(k)]
        tc = scalar_t_com(rej, ctx.g_ul, ctx.g_dl, ctx.p_ul_w, ctx.p_dl_w, cfg)
        tcs.append(tc)
        tokens = sum(min(f[i] - 1, gamma[i]) + 1 for i in range(k))
        ratios.append(tokens / (t_cmp + tc))
    if objective == "ratio":
        exp_tokens = sum(sum(ctx.alpha[i] ** j for j in range(gamma[i] + 1)) for i in range(k))
        return exp_tokens / (t_cmp + sum(tcs) / len(tcs))
    return sum(ratios) / len(ratios)


@pytest.mark.parametrize("objective", ["ratio", "mean_of_ratios"])
def test_saa_equals_scalar_per_sample_computation(objective):
    ctx = _context(3, num_devices=5, gamma_max=8)
    est = SAAEstimator(ctx, np.random.default_rng(1), n_samples=150, objective=objective)
    rng = np.random.default_rng(2)
    cands = rng.integers(0, 9, (6, 5))
    vals = est.evaluate(cands, base=cands[0])
    for c, v in zip(cands, vals):
        assert v == pytest.approx(scalar_saa(list(c), est.samples.tolist(), ctx, objective), rel=1e-10)
    plain = expected_goodput(cands, est.samples, ctx.alpha, ctx.t_draft, ctx.g_ul, ctx.g_dl, ctx.config,
                             p_ul_w=ctx.p_ul_w, p_dl_w=ctx.p_dl_w, objective=objective)
    np.testing.assert_allclose(vals, plain, rtol=1e-12)


def test_common_random_numbers_and_sample_size():
    ctx = _context(0)
    a, b = np.full(20, 3), np.full(20, 5)
    crn_diff, ind_diff, small, large = [], [], [], []
    for s in range(30):
        est = SAAEstimator(ctx, np.random.default_rng(s), n_samples=200)
        va, vb = est.evaluate(np.stack([a, b]))
        # scored on the same samples: identical to scoring each alone on this estimator
        assert va == est.evaluate(a) and vb == est.evaluate(b, base=a)
        crn_diff.append(va - vb)
        other = SAAEstimator(ctx, np.random.default_rng(1000 + s), n_samples=200)
        ind_diff.append(va - other.evaluate(b))
        small.append(SAAEstimator(ctx, np.random.default_rng(2000 + s), n_samples=100).evaluate(a))
        large.append(SAAEstimator(ctx, np.random.default_rng(3000 + s), n_samples=1600).evaluate(a))
    assert np.std(crn_diff) < 0.7 * np.std(ind_diff)
    assert np.std(large) < 0.5 * np.std(small)  # ≈ 1/4 expected for 16× the samples


def _reference_greedy(est):
    """Independent two-phase greedy on the plain batched estimator (model §7)."""
    ctx, cfg = est.context, est.config

    def score(g):
        return float(expected_goodput(np.array([g]), est.samples, ctx.alpha, ctx.t_draft, ctx.g_ul, ctx.g_dl, cfg,
                                      p_ul_w=ctx.p_ul_w, p_dl_w=ctx.p_dl_w, objective=est.objective)[0])

    k = len(ctx.alpha)
    g = [0] * k
    v = score(g)
    while min(g) < cfg.gamma_max:
        c = [min(x + 1, cfg.gamma_max) for x in g]
        vc = score(c)
        if vc <= v:
            break
        g, v = c, vc
    phase1 = list(g)
    while True:
        best, best_v = None, v
        for i in range(k):
            if g[i] < cfg.gamma_max:
                c = list(g)
                c[i] += 1
                vc = score(c)
                if vc > best_v:
                    best, best_v = c, vc
        if best is None:
            return phase1, g, v
        g, v = best, best_v


@pytest.mark.parametrize("seed", range(4))
def test_greedy_matches_independent_two_phase_reference(seed):
    ctx = _context(seed, num_devices=6, gamma_max=12)
    est = SAAEstimator(ctx, np.random.default_rng(seed), n_samples=300)
    trace = []
    g, v = greedy_search(est, trace)
    p1, ref_g, ref_v = _reference_greedy(est)
    assert g.tolist() == ref_g and v == pytest.approx(ref_v, rel=1e-12)
    last_p1 = [t for t in trace if t[0] <= 1][-1][1]
    assert last_p1.tolist() == p1
    # phase 2 moves each raise exactly one device by one
    steps = [t[1] for t in trace if t[0] == 2]
    for prev, nxt in zip([last_p1] + steps[:-1], steps):
        assert np.abs(nxt - prev).sum() == 1 and np.all(nxt >= prev)


def test_phase2_raises_exactly_one_device_hand_built():
    """Computation-only scoring (closed form): device 0 drafts 3× faster than device 1, so after
    the synchronized phase it can draft more at no latency cost; only device 0 rises."""
    cfg = SystemConfig(num_devices=2, gamma_max=20)
    ctx = RoundContext(alpha=np.array([0.8, 0.8]), t_draft=np.array([0.01, 0.03]), g_ul=np.array([1e-10, 1e-10]),
                       g_dl=np.array([1e-10, 1e-10]), p_ul_w=cfg.p_ul_w, p_dl_w=cfg.p_dl_w, config=cfg)
    t_ver = cfg.t_verify_base_s + 2 * cfg.t_verify_per_device_s

    def value(g):  # closed form, T_com ≡ 0
        n = sum((1 - 0.8 ** (x + 1)) / 0.2 for x in g)
        return n / (max(g[0] * 0.01, g[1] * 0.03) + t_ver)

    u = 0
    while u < 20 and value([u + 1, u + 1]) > value([u, u]):
        u += 1
    g0 = u
    while g0 < 20 and value([g0 + 1, u]) > value([g0, u]) and value([g0 + 1, u]) >= value([g0, u + 1]):
        g0 += 1
    assert g0 > u  # the case is non-trivial
    ctrl = ComputationOnly(n_samples=10)
    ctrl.reset(0)
    out = ctrl.act(ctx)
    assert out.tolist() == [g0, u]
    phase1 = [t for t in ctrl.last_trace if t[0] == 1][-1][1]
    assert phase1.tolist() == [u, u]


def test_greedy_respects_gamma_max_and_hopeless_communication():
    ctx = _context(0, gamma_max=3, acceptance_rates=(0.99, 0.99, 0.99, 0.99), p_ul_dbm=40.0, p_dl_dbm=50.0)
    g = GreedySAA(n_samples=200)
    g.reset(0)
    assert g.act(ctx).tolist() == [3] * 20
    hopeless = _context(0, p_ul_dbm=-30.0, p_dl_dbm=-30.0, distance_range_m=(5000.0, 20000.0))
    g.reset(0)
    assert g.act(hopeless).tolist() == [0] * 20
    u = OptimalUniform(n_samples=200)
    u.reset(0)
    assert u.act(hopeless).tolist() == [0] * 20


@pytest.mark.parametrize("seed", range(6))
def test_local_search_dominates_and_exact_dominates_all(seed):
    ctx = _context(seed, p_dl_dbm=float(10 + 5 * seed))
    est = SAAEstimator(ctx, np.random.default_rng(seed), n_samples=300)
    g, vg = greedy_search(est)
    u, vu = best_uniform(est)
    start, v0 = (g, vg) if vg >= vu else (u, vu)
    ls, vls = local_search(est, start, v0)
    assert vls >= vg and vls >= vu
    small = _context(seed, num_devices=3, gamma_max=8, p_dl_dbm=float(5 + 5 * seed))
    est = SAAEstimator(small, np.random.default_rng(seed), n_samples=300)
    ex, vex = ExactSAA().solve(est)
    assert vex == pytest.approx(float(est.evaluate(ex)), rel=1e-12)
    for cand_v in (greedy_search(est)[1], best_uniform(est)[1]):
        assert vex >= cand_v - 1e-12
    # brute force over the grid with the estimator itself
    grid = np.stack(np.meshgrid(*[np.arange(9)] * 3, indexing="ij"), -1).reshape(-1, 3)
    assert vex == pytest.approx(est.evaluate(grid).max(), rel=1e-12)


def test_exact_refuses_large_problems():
    with pytest.raises(ValueError, match="num_devices or gamma_max"):
        ExactSAA().solve(SAAEstimator(_context(0), np.random.default_rng(0), n_samples=10))


def test_context_predictor_adapter():
    env = MultiSpinEnv(num_devices=4)
    obs, _ = env.reset(seed=0)
    pred = ContextPredictor(Fixed(2), env)
    act, state = pred.predict(obs)
    assert act.tolist() == [2] * 4 and state is None
    assert isinstance(ControllerFactory("local-search")(), LocalSearch)


# ---------------------------------------------------------------------- input defects (issue: ecosystem)
@pytest.mark.parametrize("make,msg", [
    (lambda: GreedySAA(n_samples=0), "n_samples=0"),
    (lambda: GreedySAA(n_samples=2.5), "n_samples=2.5"),
    (lambda: OptimalUniform(n_samples=-3), "n_samples=-3"),
    (lambda: ComputationOnly(objective="median"), "objective='median'"),
    (lambda: GreedySAA(policy="sideways"), "policy='sideways'"),
    (lambda: Fixed(-1), "gamma=-1"),
    (lambda: Fixed(2.5), "gamma=2.5"),
])
def test_controller_arguments_are_checked_at_construction(make, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        make()


def test_zero_verification_time_is_rejected_so_goodput_stays_finite():
    with pytest.raises(ValueError, match="t_verify_base_s=0"):
        SystemConfig(t_verify_base_s=0.0, t_verify_per_device_s=0.0)
    env = MultiSpinEnv(SystemConfig(t_verify_base_s=1e-9, t_verify_per_device_s=0.0))
    env.reset(seed=0)
    _, r, *_ = env.step(np.zeros(20, dtype=int))
    assert np.isfinite(r) and r == pytest.approx(20 / 1e-9)  # 20 bonus tokens in T0


@pytest.mark.slow
def test_evaluate_cli_takes_dynamic_ids_and_agents(tmp_path, capsys):
    rows = evaluate_main(["--env-id", "msenv/MultiSpin-Dynamic-Small-v0", "--controllers", "oracle-greedy", "fixed-2",
                          "--episodes", "2", "--rounds", "3", "--no-progress", "--out", str(tmp_path / "e.csv")])
    assert [r["controller"] for r in rows] == ["oracle-greedy", "fixed-2"]
    assert rows[1]["mean_gamma"] == 2.0
    with pytest.raises(SystemExit):
        evaluate_main(["--env-id", "msenv/Nope-v0", "--no-progress"])
    assert "not registered" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        evaluate_main(["--agent", str(tmp_path), "--no-progress"])
    assert "no saved agent" in capsys.readouterr().err


def test_budgeted_greedy_is_the_greedy_without_a_budget_and_cuts_its_samples_with_one():
    from baselines import BudgetedGreedy

    cfg = SystemConfig(num_devices=8, episode_length=6)
    env = MultiSpinEnv(cfg)
    env.reset(seed=4)
    free, greedy = BudgetedGreedy(budget_ms=1e7), GreedySAA()
    free.reset(9)
    greedy.reset(9)
    for _ in range(5):  # an unbounded budget: the same samples, the same passes, the same decisions
        ctx = env.context
        g = greedy.act(ctx)
        assert np.array_equal(free.act(ctx), g)
        env.step(g)
    tight = BudgetedGreedy(budget_ms=0.05)  # far below one pass of 1000 samples on any machine
    tight.reset(1)
    env.reset(seed=5)
    for _ in range(5):
        gamma = tight.act(env.context)
        assert gamma.shape == (8,) and gamma.min() >= 0 and gamma.max() <= cfg.gamma_max
        env.step(gamma)
    assert 16 <= tight._n < SAAConfig().n_saa
    with pytest.raises(ValueError, match="budget_ms=0"):
        BudgetedGreedy(budget_ms=0)
