"""SAA estimators (baselines.saa) under model §11: against plain per-sample computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

import msenv
from msenv import SystemConfig
from msenv.envs.env import MultiSpinEnv


def test_bayes_saa_draws_alpha_from_the_filters_predictive():
    from baselines.saa import DynamicSAAEstimator

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


def _est_pair(cfg, seed=0, n=400):
    from baselines.saa import DynamicSAAEstimator

    env = MultiSpinEnv(cfg)
    env.reset(seed=seed)
    return env, DynamicSAAEstimator(env.context, np.random.default_rng(1), n), DynamicSAAEstimator(
        env.oracle_context, np.random.default_rng(1), n)


def test_dynamic_estimator_equals_a_plain_per_sample_computation():
    """Bayesian SAA value of a candidate = a scalar loop over its samples: α from the posterior,
    gains from the conditional fading law at ρ(T_cmp(γ)), T_com from the reactive solver."""
    from msenv.model.acceptance import expected_tokens
    from msenv.model.goodput import communication_time
    from msenv.model.latency import compute_latency

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
    from msenv.model.goodput import expected_goodput
    from msenv.model.latency import compute_latency

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
    from msenv.model.goodput import expected_goodput

    env, est, oracle = _est_pair(SystemConfig(num_devices=5))
    ctx = env.context
    for gamma in (np.zeros(5, int), np.full(5, 4), np.array([1, 7, 0, 3, 2])):
        want = expected_goodput(gamma[None], est.samples, ctx.alpha, ctx.t_draft, ctx.g_ul, ctx.g_dl, cfg := ctx.config,
                                p_ul_w=ctx.p_ul_w, p_dl_w=ctx.p_dl_w)[0]
        assert est.evaluate(gamma) == pytest.approx(want, rel=1e-12)
        assert oracle.evaluate(gamma) == pytest.approx(want, rel=1e-12)
    assert cfg.is_paper_scenario


def _reference_greedy(est):
    """The paper's greedy written plainly: every candidate scored from scratch (no base vector,
    no incremental re-solve, no cache of the last batch)."""
    k, gmax = len(est.context.alpha), est.config.gamma_max
    gamma = np.zeros(k, dtype=np.int64)
    value = float(est.evaluate(gamma))
    while True:
        cand = np.minimum(gamma + 1, gmax)
        if np.array_equal(cand, gamma):
            break
        v = float(est.evaluate(cand))
        if v <= value:
            break
        gamma, value = cand, v
    while True:
        idx = np.flatnonzero(gamma < gmax)
        if len(idx) == 0:
            break
        cands = np.repeat(gamma[None], len(idx), axis=0)
        cands[np.arange(len(idx)), idx] += 1
        vals = np.array([float(est.evaluate(c)) for c in cands])
        best = int(np.argmax(vals))
        if vals[best] <= value:
            break
        gamma, value = cands[best], float(vals[best])
    return gamma, value


@pytest.mark.parametrize("k,over", [(6, {}), (30, {}), (30, dict(draft_scale_range=(1.0, 2.0), p_dl_dbm=10.0)),
                                    (12, dict(mode_policy="random")), (12, dict(mode_policy="all_ul"))])
def test_greedy_decisions_equal_a_from_scratch_greedy(k, over):
    """The incremental SAA scoring (re-solve only the samples whose rejected set changed, reuse
    the last batch's T_com) gives the same decisions and values as scoring every candidate alone."""
    from baselines.greedy import greedy_search
    from baselines.saa import SAAEstimator

    cfg = msenv.preset("qwen2.5", num_devices=k, **over)
    env = MultiSpinEnv(cfg)
    for seed in range(3):
        env.reset(seed=seed)
        ctx = env.context
        fast = greedy_search(SAAEstimator(ctx, np.random.default_rng(seed), 300))
        slow = _reference_greedy(SAAEstimator(ctx, np.random.default_rng(seed), 300))
        np.testing.assert_array_equal(fast[0], slow[0])
        assert fast[1] == slow[1]
        est = SAAEstimator(ctx, np.random.default_rng(seed), 300)
        base = fast[0]
        cands = np.clip(base[None] + np.random.default_rng(seed).integers(-2, 3, (8, k)), 0, cfg.gamma_max)
        np.testing.assert_array_equal(est.evaluate(cands, base=base), est.evaluate(cands))


# ---------------------------------------------------------------------- the SAA controllers' settings
def test_the_saa_settings_are_the_controllers_with_the_defaults_of_0_6():
    from baselines.saa import SAAConfig
    from msenv.config.deprecation import SAA_FIELDS

    assert SAAConfig() == SAAConfig(n_saa=1000, saa_objective="ratio")
    assert {name: getattr(SAAConfig(), name) for name in SAA_FIELDS} == SAA_FIELDS  # the deprecated path's
    for field, value in (("n_saa", 0), ("n_saa", 1.0), ("saa_objective", "median")):
        with pytest.raises(ValueError, match=rf"{field}={value!r} is invalid; allowed"):
            SAAConfig(**{field: value})


def test_a_config_given_the_old_saa_fields_warns_and_still_sets_the_controllers_defaults():
    import warnings

    from baselines import GreedySAA, OptimalUniform
    from baselines.saa import saa_config

    with pytest.warns(DeprecationWarning) as record:
        old = msenv.preset("qwen2.5", num_devices=5, n_saa=37, saa_objective="mean_of_ratios")
    assert len(record) == 1 and record[0].filename == __file__  # said once, of the line that set it
    said = str(record[0].message)
    assert "SystemConfig(n_saa=…, saa_objective=…)" in said and "removed in msenv 0.7" in said
    assert "baselines.saa.SAAConfig / the controller's n_samples, objective" in said
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a copy, or the defaults given: no second word
        again = old.replace(p_dl_dbm=20.0)
        plain = SystemConfig.from_dict(SystemConfig().to_dict())
    with pytest.warns(DeprecationWarning):  # a saved config that holds them: said again
        assert SystemConfig.from_dict(again.to_dict()) == again
    assert (again.n_saa, again.saa_objective) == (37, "mean_of_ratios") and plain == SystemConfig()
    assert saa_config(again).n_saa == 37 and saa_config(plain).n_saa == 1000
    env = MultiSpinEnv(old)
    env.reset(seed=3)
    greedy, told = GreedySAA(), GreedySAA(n_samples=37, objective="mean_of_ratios")
    for c in (greedy, told):
        c.reset(seed=0)
    est = greedy.estimator(env.context)
    assert est.samples.shape == (37, 5) and est.objective == "mean_of_ratios"
    assert GreedySAA(n_samples=12).estimator(env.context).samples.shape == (12, 5)  # the argument wins
    np.testing.assert_array_equal(greedy.act(env.context), told.act(env.context))
    with pytest.warns(DeprecationWarning) as record:
        gym_env = __import__("gymnasium").make("msenv/MultiSpin-v0", n_saa=40)
    assert [w.filename for w in record] == [__file__]
    uniform = OptimalUniform()
    uniform.reset(seed=0)
    gym_env.reset(seed=0)
    assert uniform.act(gym_env.unwrapped.context).shape == (20,)
