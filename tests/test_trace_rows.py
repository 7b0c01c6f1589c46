"""The trace observation's per-round rows after a step are the state's (a regression: a stale compiled
writer chain once left them unwritten, or in other columns, after the first round)."""

from __future__ import annotations

import numpy as np

from msenv import env_config, layout_of
from msenv.envs.cells import make_env


def test_after_every_step_the_rows_show_the_history_progress_and_the_filter_s_survival():
    cfg = env_config("msenv/MultiSpin-Traces-v0", trace_source="cnn-ngram", trace_split="validation",
                     episode_length=6, trace_posterior=True)
    lay = layout_of(cfg)
    f, k = lay.row, cfg.num_devices
    col = {name: i for i, name in enumerate(lay.device)}
    env = make_env(cfg)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(4):
        obs, *_ = env.step(rng.integers(0, 6, k))
        rows = obs[: k * f].reshape(k, f)
        ctx = env.unwrapped.round_context()
        for j in (1, 2, 4, 8):
            np.testing.assert_allclose(rows[:, col[f"survival_{j}"]], ctx.posterior[:, j], atol=1e-6)
        np.testing.assert_allclose(rows[:, col["h1_gamma"]], ctx.history[:, 0, 0] / cfg.gamma_max, atol=1e-6)
        np.testing.assert_allclose(rows[:, col["progress"]], np.tanh(ctx.request_tokens / 256.0), atol=1e-6)
        np.testing.assert_allclose(rows[:, col["g_ul"]], np.tanh((10 * np.log10(ctx.g_ul) + 115) / 15), atol=1e-5)
