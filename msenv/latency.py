"""Computation latency of a round: drafting and batched verification (SPEC §4).

T_cmp(γ) = max_k γ_k T_k^dft + T_ver, with the verification fit [R]
T_ver = T0 + T1·K_batch + T2·Σ_k γ_k + T3·K_batch·(max_k γ_k + 1), where K_batch = K
(``verify_batch="all"``: every device, γ_k = 0 included) or the number of devices with γ_k > 0
(``"drafting"``). T2 (per drafted token) and T3 (per padded position: every sequence of the batch
padded to the longest draft plus the bonus position) default to 0.
"""

from __future__ import annotations

import numpy as np

from .config import SystemConfig


def draft_latency(gamma: np.ndarray, t_draft: np.ndarray) -> np.ndarray:
    """max_k γ_k · T_k^dft: the server waits for the slowest device (last axis = devices)."""
    return np.max(gamma * t_draft, axis=-1)


def verify_latency(gamma: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """T_ver = T0 + T1·K_batch + T2·Σγ + T3·K_batch·(max γ + 1) (SPEC §4 [R], pluggable through
    the config)."""
    gamma = np.asarray(gamma)
    if cfg.verify_batch == "all":
        batch = np.full(gamma.shape[:-1], gamma.shape[-1], dtype=float)
    else:
        batch = np.count_nonzero(gamma, axis=-1).astype(float)
    t = cfg.t_verify_base_s + cfg.t_verify_per_device_s * batch
    if cfg.t_verify_per_token_s:
        t = t + cfg.t_verify_per_token_s * gamma.sum(axis=-1)
    if cfg.t_verify_per_padded_token_s:
        t = t + cfg.t_verify_per_padded_token_s * batch * (gamma.max(axis=-1) + 1)
    return t


def compute_latency(gamma: np.ndarray, t_draft: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """T_cmp(γ) = drafting + verification."""
    return draft_latency(gamma, t_draft) + verify_latency(gamma, cfg)
