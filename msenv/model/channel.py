"""Radio channel: geometry, path loss, Rayleigh fading, Shannon rates, UL delays (model §2, §4).

All functions are pure numpy and broadcast over any leading batch axes.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..config.system import SystemConfig
from .numeric import scipy_special, ufunc

_LN2 = math.log(2.0)


def large_scale_gain(distance_m: np.ndarray, ref_gain: float, exponent: float) -> np.ndarray:
    """β_k = β_ref · d_k^(−exponent); paper: β_ref = −30 dB at 1 m, exponent 3.5 (model §2)."""
    return ref_gain * np.power(distance_m, -exponent)


def distances_from_uniform(u: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """Device-to-server distances d_k ~ U[d_min, d_max] (model §2) from uniforms u ∈ [0, 1)."""
    lo, hi = cfg.channel.distance_range_m
    return lo + (hi - lo) * u


#: smallest Exp(1) value a 53-bit uniform resolves: a gain is never exactly 0
MIN_FADING = 2.0**-53


def _exp1_from_uniform(u):
    return max(-math.log1p(-u), MIN_FADING)


#: ∣h∣² ~ Exp(1) from a uniform u ∈ [0, 1) by inverse CDF, floored at MIN_FADING — compiled scalar
exp1_scalar = njit(cache=True)(_exp1_from_uniform)


@njit(cache=True)
def block_fading_scalar(u_row, start, i, k, beta, independent):
    """(g_ul, g_dl) of device i from a row of uniforms (UL draws at ``start``, DL at ``start + K``
    when independent; one shared draw when reciprocal) — :func:`fading_from_uniform`, compiled."""
    g_ul = beta * exp1_scalar(u_row[start + i])
    return g_ul, (beta * exp1_scalar(u_row[start + k + i]) if independent else g_ul)
_exp1_ufunc = ufunc(["f8(f8)"], _exp1_from_uniform)


def fading_from_uniform(u: np.ndarray, beta: np.ndarray, cfg: SystemConfig) -> tuple[np.ndarray, np.ndarray]:
    """UL and DL power gains β·∣h∣², ∣h∣² ~ Exp(1) by inverse CDF from uniforms (model §2).

    ``u`` [..., 2K] for ``cfg.fading == "independent"`` [R] (UL draws first), [..., K] for
    ``"reciprocal"`` (one draw serves both directions).
    """
    h = _exp1_ufunc(u)
    if cfg.channel.fading == "independent":
        k = beta.shape[-1]
        return beta * h[..., :k], beta * h[..., k:]
    g = beta * h
    return g, g


def _rate_from_snr(bandwidth_hz, snr):
    return bandwidth_hz * math.log1p(snr) / _LN2


def _transmission_delay(bits, rate):
    return bits / rate if rate != 0.0 else math.inf


#: compiled scalar forms of the rate and delay formulas, called by the compiled reactive solver;
#: the array forms below are numpy ufuncs built from the same source
rate_scalar = njit(cache=True)(_rate_from_snr)
delay_scalar = njit(cache=True)(_transmission_delay)

#: r = b·log2(1 + snr) bits/s (log1p keeps tiny SNRs exact); a numpy ufunc (broadcasts)
rate_from_snr = ufunc(["f8(f8, f8)"], _rate_from_snr)
#: delay of ``bits`` at ``rate`` (inf when the rate is 0); a numpy ufunc
transmission_delay = ufunc(["f8(f8, f8)"], _transmission_delay)


def shannon_rate(power_w, gain, n0_w_hz: float, bandwidth_hz) -> np.ndarray:
    """r = b·log2(1 + p·g / (N0·b)) bits/s (model §4)."""
    return rate_from_snr(bandwidth_hz, power_w * gain / (n0_w_hz * bandwidth_hz))


def ul_delay(g_ul, p_ul_w, n0_w_hz: float, bandwidth_hz, bits: float) -> np.ndarray:
    """τ_k^ul = L / r_k^ul at full power P_ul (model §4: max power is optimal for UL)."""
    return transmission_delay(bits, shannon_rate(p_ul_w, g_ul, n0_w_hz, bandwidth_hz))


# ---------------------------------------------------------------------- dynamics (model §11)
def complex_links(u: np.ndarray, k: int, n_links: int) -> np.ndarray:
    """Complex gains [B, L, K] from 2·K·L uniforms per row (magnitudes first, then phases; UL before
    DL; L = 1, one shared gain, when reciprocal)."""
    n = k * n_links
    h = complex_gain_from_uniform(u[:, :n], u[:, n : 2 * n])
    return h.reshape(len(u), n_links, k)


def doppler_hz(speed_mps, carrier_hz: float) -> np.ndarray:
    """Maximum Doppler shift f_D = v·f_c / c."""
    from ..config.groups import SPEED_OF_LIGHT

    return np.asarray(speed_mps) * (carrier_hz / SPEED_OF_LIGHT)


_j0 = scipy_special("j0", 1)


def _jakes(doppler, dt):
    return _j0(2.0 * math.pi * doppler * dt, 0)


#: ρ = J0(2π f_D Δt) of one device, compiled (the dynamic step kernel's)
jakes_scalar = njit(cache=True)(_jakes)
#: Clarke/Jakes lag correlation of the complex gain, ρ = J0(2π f_D Δt) (may be negative); a numpy
#: ufunc of (f_D, Δt), the same values as ``scipy.special.j0`` bit for bit
jakes_correlation = ufunc(["f8(f8, f8)"], _jakes)


def _complex_gain(u_mag, u_phase):
    r, phase = math.sqrt(-math.log1p(-u_mag)), 2.0 * math.pi * u_phase
    return complex(r * math.cos(phase), r * math.sin(phase))  # r·e^{iφ}


def _evolve(h, rho, w):
    return rho * h + math.sqrt(max(1.0 - rho * rho, 0.0)) * w


def _power_gain(h, beta):
    re, im = h.real, h.imag
    return beta * max(re * re + im * im, MIN_FADING)


#: compiled scalar forms (the dynamic step kernel's)
complex_gain_scalar = njit(cache=True)(_complex_gain)
evolve_scalar = njit(cache=True)(_evolve)
power_gain_scalar = njit(cache=True)(_power_gain)
#: h ~ CN(0, 1) from two uniforms: ∣h∣² = −ln(1 − u_mag) ~ Exp(1) (the same inverse CDF as
#: :func:`fading_from_uniform`), phase 2π·u_phase uniform and independent (a numpy ufunc)
complex_gain_from_uniform = ufunc(["c16(f8, f8)"], _complex_gain)
#: Gauss–Markov step h' = ρ·h + √(1 − ρ²)·w, w ~ CN(0, 1): keeps h' ~ CN(0, 1) and corr(h, h') = ρ,
#: corr(∣h∣², ∣h'∣²) = ρ² (a numpy ufunc of (h, ρ, w))
evolve_gain = ufunc(["c16(c16, f8, c16)"], _evolve)
#: g = β·∣h∣² (∣h∣² floored at :data:`MIN_FADING`, as for i.i.d. fading; a numpy ufunc of (h, β))
power_gain = ufunc(["f8(c16, f8)"], _power_gain)
