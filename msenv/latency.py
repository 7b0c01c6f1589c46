"""Computation latency of a round: drafting and batched verification (SPEC §4).

T_cmp(γ) = max_k γ_k T_k^dft + T_ver, with the verification fit [R]
T_ver = T0 + T1·K_batch + T2·Σ_k γ_k, where K_batch = K (``verify_batch="all"``: every device,
γ_k = 0 included) or the number of devices with γ_k > 0 (``"drafting"``). T2 defaults to 0.
"""

from __future__ import annotations

import numpy as np

from .config import SystemConfig


def draft_latency(gamma: np.ndarray, t_draft: np.ndarray) -> np.ndarray:
    """max_k γ_k · T_k^dft: the server waits for the slowest device (last axis = devices)."""
    return np.max(gamma * t_draft, axis=-1)


def verify_latency(gamma: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """T_ver = T0 + T1·K_batch + T2·Σγ (SPEC §4 [R], pluggable through the config)."""
    gamma = np.asarray(gamma)
    if cfg.verify_batch == "all":
        batch = np.full(gamma.shape[:-1], gamma.shape[-1], dtype=float)
    else:
        batch = np.count_nonzero(gamma, axis=-1).astype(float)
    t = cfg.t_verify_base_s + cfg.t_verify_per_device_s * batch
    if cfg.t_verify_per_token_s:
        t = t + cfg.t_verify_per_token_s * gamma.sum(axis=-1)
    return t


def compute_latency(gamma: np.ndarray, t_draft: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """T_cmp(γ) = drafting + verification."""
    return draft_latency(gamma, t_draft) + verify_latency(gamma, cfg)
