"""What a controller sees (msenv.engine.context): the oracle context's correction-time gains."""

from __future__ import annotations

import numpy as np

import msenv  # noqa: F401
from msenv import SystemConfig
from msenv.envs.env import MultiSpinEnv


def test_oracle_context_predicts_the_correction_gains():
    cfg = SystemConfig(num_devices=4, channel_dynamics="gauss_markov", csi="decision", speed_range_mps=(1.0, 1.0),
                       episode_length=5)
    env = MultiSpinEnv(cfg)
    env.reset(seed=2)
    oracle, seen = env.oracle_context, env.context
    assert seen.w_ul is None and oracle.w_ul is not None  # decision CSI: no innovations for the server
    gamma = np.array([3, 1, 0, 6])
    from msenv.model.latency import compute_latency

    g_ul, g_dl = oracle.correction_gains(compute_latency(gamma, oracle.t_draft, cfg))
    _, _, _, _, info = env.step(gamma)
    np.testing.assert_allclose(info["g_ul_corr"], g_ul, rtol=1e-12)
    np.testing.assert_allclose(info["g_dl_corr"], g_dl, rtol=1e-12)
    stat = MultiSpinEnv(cfg.replace(csi="statistical"))
    stat.reset(seed=2)
    np.testing.assert_array_equal(stat.context.g_ul, stat.state.beta[0])  # β only
    assert stat.context.h_ul is None
