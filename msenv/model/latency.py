"""Computation latency of a round: drafting and batched verification (model §4).

T_cmp(γ) = max_k γ_k T_k^dft + T_ver, with the verification fit [R]
T_ver = T0 + T1·K_batch + T2·Σ_k γ_k + T3·K_batch·(max_k γ_k + 1), where K_batch = K
(``verify_batch="all"``: every device, γ_k = 0 included) or the number of devices with γ_k > 0
(``"drafting"``). T2 (per drafted token) and T3 (per padded position: every sequence of the batch
padded to the longest draft plus the bonus position) default to 0.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..config.system import SystemConfig
from .numeric import as_rows


@njit(cache=True, error_model="numpy")
def latency_rows(gamma, t_draft, t0, t1, t2, t3, drafting_only, t_d, t_v):
    """Drafting max_k γ_k T_k^dft and verification T0 + T1·K_b + T2·Σγ + T3·K_b·(max γ + 1) of
    each row (compiled; a t_draft of one row is shared by every row)."""
    n, k = gamma.shape
    for r in range(n):
        td = t_draft[r if t_draft.shape[0] > 1 else 0]
        worst = -math.inf
        total, top, batch = 0, 0, 0
        for i in range(k):
            g = gamma[r, i]
            worst = max(worst, g * td[i])
            total += g
            top = max(top, g)
            batch += 1 if (g != 0 or not drafting_only) else 0
        t = t0 + t1 * batch
        if t2 != 0.0:
            t = t + t2 * total
        if t3 != 0.0:
            t = t + t3 * batch * (top + 1)
        t_d[r] = worst
        t_v[r] = t


def verify_args(cfg: SystemConfig | None) -> tuple:
    """The verification fit's terms as the compiled kernels take them (None: all 0)."""
    if cfg is None:
        return (0.0, 0.0, 0.0, 0.0, False)
    return (cfg.compute.t_verify_base_s, cfg.compute.t_verify_per_device_s, cfg.compute.t_verify_per_token_s,
            cfg.compute.t_verify_per_padded_token_s, cfg.compute.verify_batch == "drafting")


def _latencies(gamma, t_draft, cfg: SystemConfig | None) -> tuple[np.ndarray, np.ndarray]:
    gamma = np.asarray(gamma)
    lead, k = gamma.shape[:-1], gamma.shape[-1]
    g = as_rows(gamma, lead, k, np.int64)
    t_d, t_v = np.empty(len(g)), np.empty(len(g))
    latency_rows(g, as_rows(t_draft, lead, k), *verify_args(cfg), t_d, t_v)
    return t_d.reshape(lead), t_v.reshape(lead)


def verify_latency(gamma: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """T_ver = T0 + T1·K_batch + T2·Σγ + T3·K_batch·(max γ + 1) (model §4 [R], pluggable through
    the config)."""
    gamma = np.asarray(gamma)
    return _latencies(gamma, np.zeros(gamma.shape[-1]), cfg)[1]


def compute_latency(gamma: np.ndarray, t_draft: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """T_cmp(γ) = drafting + verification (one compiled pass)."""
    t_d, t_v = _latencies(gamma, t_draft, cfg)
    return t_d + t_v
