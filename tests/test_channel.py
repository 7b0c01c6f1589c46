"""Channel model (model §2, §11): the Gauss–Markov process's lag law and Jakes correlation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

import msenv  # noqa: F401
from msenv import SystemConfig
from msenv.envs.env import MultiSpinEnv
from msenv.envs.vector import MultiSpinVectorEnv
from msenv.model import channel


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


@pytest.mark.slow
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
