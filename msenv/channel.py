"""Radio channel: geometry, path loss, Rayleigh fading, Shannon rates, UL delays (SPEC §2, §4).

All functions are pure numpy and broadcast over any leading batch axes.
"""

from __future__ import annotations

import numpy as np

from .config import SystemConfig

_LN2 = float(np.log(2.0))


def large_scale_gain(distance_m: np.ndarray, ref_gain: float, exponent: float) -> np.ndarray:
    """β_k = β_ref · d_k^(−exponent); paper: β_ref = −30 dB at 1 m, exponent 3.5 (SPEC §2)."""
    return ref_gain * np.power(distance_m, -exponent)


def sample_distances(rng: np.random.Generator, size: tuple[int, ...], cfg: SystemConfig) -> np.ndarray:
    """Device-to-server distances d_k ~ U[d_min, d_max] (SPEC §2), drawn per episode."""
    lo, hi = cfg.distance_range_m
    return rng.uniform(lo, hi, size)


def sample_fading(rng: np.random.Generator, size: tuple[int, ...], cfg: SystemConfig) -> tuple[np.ndarray, np.ndarray]:
    """Rayleigh small-scale power gains |h|² ~ Exp(1) for UL and DL (SPEC §2).

    ``cfg.fading == "independent"`` [R]: UL and DL drawn independently;
    ``"reciprocal"``: one draw serves both directions.
    """
    if cfg.fading == "independent":
        h = rng.standard_exponential((2, *size))
        return h[0], h[1]
    h = rng.standard_exponential(size)
    return h, h


def rate_from_snr(bandwidth_hz, snr) -> np.ndarray:
    """r = b·log2(1 + snr) bits/s; log1p keeps tiny SNRs exact."""
    return bandwidth_hz * np.log1p(snr) / _LN2


def shannon_rate(power_w, gain, n0_w_hz: float, bandwidth_hz) -> np.ndarray:
    """r = b·log2(1 + p·g / (N0·b)) bits/s (SPEC §4)."""
    return rate_from_snr(bandwidth_hz, power_w * gain / (n0_w_hz * bandwidth_hz))


def transmission_delay(bits: float, rate) -> np.ndarray:
    """Delay of ``bits`` at ``rate`` (inf when the rate is 0)."""
    return bits / rate


def ul_delay(g_ul, p_ul_w, n0_w_hz: float, bandwidth_hz, bits: float) -> np.ndarray:
    """τ_k^ul = L / r_k^ul at full power P_ul (SPEC §4: max power is optimal for UL)."""
    return transmission_delay(bits, shannon_rate(p_ul_w, g_ul, n0_w_hz, bandwidth_hz))


def gain_db(g) -> np.ndarray:
    """Linear power gain → dB."""
    return 10.0 * np.log10(g)
