"""The observation as a feature table (msenv.engine.observation): a row is the whole of a feature —
its entries in the layout, their documentation and the values — and the posterior rows of the
Traces id are the exact filter's summaries."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import msenv
from baselines import make_controller
from msenv.engine.kinds.paper import DEVICES, ROUND_ROWS, PaperEngine, RoundView
from msenv.engine.observation import GLOBALS, Feature, Observation, round_writer, squash_db

CFG = msenv.SystemConfig(num_devices=6)


def _alpha_squared(state, cfg):
    return state.alpha ** 2


class WithRow(PaperEngine):
    """The paper kind with one more row: a demonstration feature, α² (per episode)."""

    devices = DEVICES + (Feature("alpha_squared", "α², the square of the device's α", _alpha_squared,
                                 per="episode"),)


def test_adding_a_feature_row_changes_the_observation_its_docs_and_its_layout_together():
    """One row more in a kind's table: one entry more per device in the layout (names, width,
    spaces), its documentation beside the others', and its values in every observation — computed
    by the row's writer, the other entries where they were."""
    plain, more = PaperEngine(CFG), WithRow(CFG)
    k, nf = CFG.num_devices, plain.layout.row
    assert more.layout.device == plain.layout.device + ("alpha_squared",)
    assert more.layout.obs_size == plain.layout.obs_size + k
    assert more.layout.spaces()[1].shape == (plain.layout.obs_size + k,)
    assert more.observation.docs[0] == plain.observation.docs[0] + ["α², the square of the device's α"]
    assert more.observation.docs[1] == plain.observation.docs[1]
    rng = np.random.default_rng(0)
    u = rng.random((3, plain.reset_draws))
    a, b = plain.reset(u), more.reset(u)
    for _ in range(3):
        oa, ob = plain.observe(a), more.observe(b)
        dev_a, dev_b = oa[:, : k * nf].reshape(3, k, nf), ob[:, : k * (nf + 1)].reshape(3, k, nf + 1)
        np.testing.assert_array_equal(dev_b[..., :nf], dev_a)
        np.testing.assert_array_equal(dev_b[..., nf], (a.alpha ** 2).astype(np.float32))
        np.testing.assert_array_equal(ob[:, k * (nf + 1):], oa[:, k * nf:])
        step_u, gamma = rng.random((3, plain.step_draws)), rng.integers(0, 21, (3, k))
        (a, ra), (b, rb) = plain.step(step_u, a, gamma), more.step(step_u, b, gamma)
        np.testing.assert_array_equal(ra.goodput, rb.goodput)


@njit(cache=True)
def _write_db(out, nf, col, view):
    """A demonstration per-round row: the UL gain in dB over 100."""
    b, k = view.g_ul.shape
    for r in range(b):
        for i in range(k):
            out[r, nf * i + col] = 10.0 * np.log10(view.g_ul[r, i]) / 100.0


def test_a_per_round_row_is_written_by_the_kinds_compiled_driver():
    """A per-round row joins the kind's compiled driver: the driver writes each shown row's columns
    (and skips a row the config does not show)."""
    extra = Feature("g_ul_db", "g_ul [dB] / 100", _write_db)
    hidden = Feature("never", "a row no config shows", _write_db, shown=lambda cfg: False)
    rows = DEVICES + (extra, hidden)
    obs = Observation(CFG, CFG.num_devices, rows, GLOBALS, ROUND_ROWS + (extra, hidden))
    assert obs.layout.device[-1] == "g_ul_db" and "never" not in obs.layout.device
    assert obs.cols.tolist()[-2:] == [len(DEVICES), -1]
    driver = round_writer(tuple(f.write for f in ROUND_ROWS + (extra, hidden)))
    state = PaperEngine(CFG).reset(np.random.default_rng(1).random((2, PaperEngine(CFG).reset_draws)))
    out = obs.episode(state)
    driver(out, obs.layout.row, obs.cols, RoundView(state.g_ul, state.g_dl))
    dev = out[:, : CFG.num_devices * obs.layout.row].reshape(2, CFG.num_devices, obs.layout.row)
    np.testing.assert_allclose(dev[..., -1], 10 * np.log10(state.g_ul) / 100, rtol=1e-6)
    np.testing.assert_allclose(dev[..., obs.layout.device.index("beta")], squash_db(state.beta), rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("source", ["sharegpt-ngram", "gsm8k-eagle"])
def test_the_posterior_rows_are_the_exact_filters_summaries(source):
    """``trace_posterior``: the context's posterior equals the filter that TraceFilterSAA keeps
    itself (the same model and grid), after every round of random drafts, and the rows show its
    survival at the listed depths, its P(high), its mean level, and the globals the episode's
    throughput so far."""
    env = msenv.make_env(msenv.env_config("msenv/MultiSpin-Traces-v0", trace_source=source, trace_posterior=True,
                                          num_devices=5, trace_split="validation"))
    env.reset(seed=4)
    ctrl = make_controller("trace-filter-saa", n_samples=64)
    ctrl.reset(seed=0)
    lay = msenv.layout_of(env.unwrapped.config)
    rng = np.random.default_rng(2)
    g = env.unwrapped.config.gamma_max
    for _ in range(30):
        ctx = env.unwrapped.context
        ctrl.act(ctx)
        np.testing.assert_allclose(ctx.posterior, ctrl.survival(g), rtol=0, atol=1e-12)
        action = rng.integers(0, g + 1, 5)
        obs, _, _, _, info = env.step(action)
        assert env.observation_space.contains(obs)
        ctrl.observe(action, info)
        post = env.unwrapped.context.posterior
        dev = obs[: 5 * lay.row].reshape(5, lay.row)
        depths = [j for j in (1, 2, 3, 4, 6, 8, 12) if j <= g]
        at = lay.device.index("survival_1")
        np.testing.assert_allclose(dev[:, at: at + len(depths)], post[:, depths], rtol=1e-6)
        belief = env.unwrapped.state.belief[0]
        np.testing.assert_allclose(dev[:, lay.device.index("p_high")], belief[:, :, 1].sum(axis=-1), rtol=1e-6)
        z = np.polynomial.hermite_e.hermegauss(24)[0]
        np.testing.assert_allclose(dev[:, lay.device.index("level")], np.tanh(0.5 * (belief.sum(-1) * z).sum(-1)),
                                   rtol=1e-5, atol=1e-7)
    tokens, time = info["episode_tokens"], info["episode_time"]
    lam = (tokens + 100.0) / (time + 1.0)
    assert obs[lay.obs_size - 1] == pytest.approx(np.tanh((lam - 100.0) / 20.0), rel=1e-6)


def test_the_correction_cost_row_is_the_reactive_stage_of_a_lone_rejection():
    """``correction_cost``: tanh(c_k / 10 ms), c_k the T_com of a round that rejects device k alone —
    the shared reactive solver's answer for each one-device rejected set."""
    from msenv.model.goodput import communication_time

    cfg = msenv.env_config("msenv/MultiSpin-Traces-v0", trace_posterior=True, num_devices=6, p_dl_dbm=12.0)
    env = msenv.make_env(cfg)
    obs, _ = env.reset(seed=9)
    lay = msenv.layout_of(cfg)
    for _ in range(3):
        ctx = env.unwrapped.context
        lone = communication_time(np.eye(6, dtype=bool), ctx.g_ul, ctx.g_dl, cfg, p_ul_w=ctx.p_ul_w, p_dl_w=ctx.p_dl_w,
                                  policy="optimal").t_com
        dev = obs[: 6 * lay.row].reshape(6, lay.row)
        np.testing.assert_allclose(dev[:, lay.device.index("correction_cost")], np.tanh(lone / 0.010), rtol=1e-5)
        obs, *_ = env.step(np.full(6, 2))


def test_a_posterior_needs_a_fitted_model():
    with pytest.raises(ValueError, match="trace_posterior=True is invalid for trace_source=.*no fitted model"):
        msenv.make_env(msenv.env_config("msenv/MultiSpin-Traces-v0", trace_source="mix:cnn-ngram,gsm8k-eagle",
                                        trace_posterior=True))
