"""Verification-latency readings (model §4 [R]) against hand computation."""

import numpy as np
import pytest

from msenv import SystemConfig
from msenv.model.latency import compute_latency, verify_latency


@pytest.mark.parametrize("batch", ["all", "drafting"])
def test_every_term_of_the_verification_model(batch):
    cfg = SystemConfig(num_devices=4, t_verify_base_s=0.04, t_verify_per_device_s=0.007, t_verify_per_token_s=0.001,
                       t_verify_per_padded_token_s=0.0005, verify_batch=batch)
    gamma = np.array([[0, 3, 5, 1], [0, 0, 0, 0], [2, 2, 2, 2]])
    t_draft = np.array([0.015, 0.016, 0.017, 0.018])
    for row, g in enumerate(gamma):
        kb = 4 if batch == "all" else int(np.count_nonzero(g))
        want = 0.04 + 0.007 * kb + 0.001 * g.sum() + 0.0005 * kb * (g.max() + 1)
        assert verify_latency(gamma, cfg)[row] == pytest.approx(want, rel=1e-14)
        assert compute_latency(gamma, t_draft, cfg)[row] == pytest.approx(want + max(g * t_draft), rel=1e-14)


def test_drafting_only_batch_serves_no_token_to_idle_devices():
    """verify_batch="drafting": a device with γ_k = 0 is not verified, so it gets no token (env,
    SAA ratio objective and mean-of-ratios objective agree with a hand count)."""
    from msenv.envs.env import MultiSpinEnv
    from msenv.model.acceptance import expected_tokens
    from msenv.model.goodput import expected_goodput

    cfg = SystemConfig(num_devices=3, verify_batch="drafting")
    env = MultiSpinEnv(cfg)
    env.reset(seed=0)
    _, r, *_ = env.step(np.array([0, 2, 0]))
    info = env._last
    assert info["tokens"][0] == 0 and info["tokens"][2] == 0 and info["tokens"][1] >= 1
    assert r == pytest.approx(info["tokens"].sum() / info["latency"])
    ctx = env.context
    f = np.full((4, 3), cfg.gamma_max + 1)  # nobody is ever rejected
    g = np.array([[0, 2, 0], [0, 0, 0]])
    for obj in ("ratio", "mean_of_ratios"):
        v = expected_goodput(g, f, ctx.alpha, ctx.t_draft, ctx.g_ul, ctx.g_dl, cfg, objective=obj)
        t = compute_latency(g, ctx.t_draft, cfg)
        want0 = (expected_tokens(ctx.alpha[1], 2) if obj == "ratio" else 3.0) / t[0]
        assert v[0] == pytest.approx(want0, rel=1e-12)
        assert v[1] == 0.0
