"""Verification outcome: i.i.d. token acceptance with common random numbers (SPEC §3).

Each drafted token of device k is accepted independently with probability α_k [R].
The outcome of a round is summarised by F_k, the position of the first rejection if the
device drafted forever: F_k = ⌊ln U / ln α_k⌋ + 1, U ~ U(0, 1]. Every candidate draft length
then shares that draw (common random numbers):

    A_k = min(F_k − 1, γ_k)  accepted tokens,   rejected iff F_k ≤ γ_k,   N_k = A_k + 1.

F_k > γ_max behaves exactly like F_k = ∞ for every allowed γ, so samples are stored capped at
``cap = γ_max + 1`` (an exact representation, not an approximation).
"""

from __future__ import annotations

import numpy as np


def first_rejection_from_uniform(u: np.ndarray, alpha: np.ndarray, cap: int) -> np.ndarray:
    """F = min(⌊ln u / ln α⌋ + 1, cap) for u ∈ (0, 1]; α = 1 gives F = cap (never rejected)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(u) / np.log(alpha)
    # α = 1: ln α = 0 → ±inf or nan (u = 1); all mean "never rejected".
    x = np.where(np.isnan(x) | (alpha >= 1.0), np.inf, x)
    return np.minimum(np.floor(x) + 1.0, cap).astype(np.int32)


def sample_first_rejection(rng: np.random.Generator, alpha: np.ndarray, cap: int, size=None) -> np.ndarray:
    """Draw F (shape ``size``, default ``alpha.shape``) with P(F > j) = α^j, capped at ``cap``."""
    alpha = np.asarray(alpha, dtype=float)
    shape = alpha.shape if size is None else size
    u = 1.0 - rng.random(shape)  # U(0, 1]
    return first_rejection_from_uniform(u, alpha, cap)


def accepted_tokens(first_rejection: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """A_k = min(F_k − 1, γ_k)."""
    return np.minimum(first_rejection - 1, gamma)


def rejected(first_rejection: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """Device k needs a correction iff F_k ≤ γ_k (never when γ_k = 0)."""
    return first_rejection <= gamma


def rejection_probability(alpha: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """P(rejected) = 1 − α^γ."""
    return 1.0 - np.power(alpha, gamma)


def expected_tokens(alpha: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """E[N_k] = (1 − α^(γ+1)) / (1 − α), and γ + 1 when α = 1 (SPEC §3)."""
    alpha = np.asarray(alpha, dtype=float)
    gamma = np.asarray(gamma)
    one = alpha >= 1.0
    safe = np.where(one, 0.5, alpha)
    val = -np.expm1((gamma + 1) * np.log(safe)) / (1.0 - safe)
    return np.where(one, gamma + 1.0, val)
