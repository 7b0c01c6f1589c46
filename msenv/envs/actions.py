"""Action types: other action spaces for the same environments, which the environment side maps to
draft lengths (as HighwayEnv's ``action_type`` owns its space and its ``act``).

:class:`BudgetAction` — a cell's draft lengths as one drafting-time budget and a device set. The
round waits for its slowest drafter, so a device whose draft ends before the slowest one's could
draft more tokens for free: every model-based controller's answer gives each drafting device as
many tokens as fit in one common time budget τ, γ_k = ⌊τ / T_k^dft⌋, and switches some devices off.
The action is one level ℓ ∈ {0, …, L − 1} per cell (τ = ℓ / ``per_token`` tokens of the fastest
device, L = ``per_token``·γ_max + 1) and one bit per device slot (on: ⌊τ / T_k^dft⌋ tokens, at most
γ_max; off: 0). The map reads each device's exact drafting time T_k^dft — the context's
``t_draft``, or a cell generator's ``draft_times`` — never a value rebuilt from the observation.

:class:`CappedAction` — a cell-level budget level and each device's own length under it. The action
is [ℓ, γ_1 … γ_K] (``MultiDiscrete([γ_max + 1] * (K + 1))``): the budget τ = ℓ · max_k T_k^dft (the
slowest device's time per token) and device k drafts γ_k^eff = min(γ_k, ⌊τ / T_k^dft⌋). The round's
drafting time is one cell-level choice; a device's entry only decides how much of the budget it uses
(0: off). Every draft-length vector is representable — ℓ = max_k ⌈γ_k T_k^dft / T_max⌉ plays γ
exactly (:meth:`CappedAction.encode`) — so a rule's decisions can be cloned exactly; the budget action
is the special case γ_k ∈ {0, ≥ the cap}, which cannot give two devices of one speed different
non-zero lengths. A padded slot (``t_draft`` 0) drafts 0 whatever its entry.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

#: budget levels per token of the fastest device (the grid of τ)
LEVELS_PER_TOKEN = 4


class BudgetAction(NamedTuple):
    """The budget action type of cells whose longest draft is ``gamma_max`` (module docstring)."""

    gamma_max: int  #: the longest draft
    per_token: int = LEVELS_PER_TOKEN  #: levels per token of the fastest device

    @property
    def n_levels(self) -> int:
        """L = per_token·γ_max + 1 budget levels."""
        return self.per_token * self.gamma_max + 1

    def space(self, slots: int) -> spaces.MultiDiscrete:
        """``MultiDiscrete([L] + [2] * slots)``: the level, then one bit per device slot."""
        return spaces.MultiDiscrete([self.n_levels] + [2] * slots)

    def lengths(self, level, on, t_draft) -> np.ndarray:
        """Draft lengths [B, K] of levels ``level`` [B] and device bits ``on`` [B, K] in cells whose
        devices draft at ``t_draft`` [B, K] seconds per token (a padded slot: 0). A device on drafts
        ⌊τ / T_k^dft⌋ tokens (at most γ_max), τ = level / per_token × the fastest device's time; a
        device off and a padded slot draft 0."""
        t = np.asarray(t_draft, dtype=np.float64)
        t = t.reshape(-1, t.shape[-1])
        device = t > 0
        fastest = np.where(device, t, np.inf).min(axis=1, keepdims=True)
        fastest = np.where(np.isfinite(fastest), fastest, 1.0)
        tau = np.asarray(level, dtype=np.float64).reshape(-1, 1) / self.per_token * fastest
        with np.errstate(divide="ignore", invalid="ignore"):
            gamma = np.minimum(np.floor(np.where(device, tau / np.where(device, t, 1.0), 0.0) + 1e-9), self.gamma_max)
        on = np.asarray(on).reshape(gamma.shape) > 0
        return np.where(on & device, gamma, 0).astype(np.int64)


def _check_entries(name: str, values: np.ndarray, gamma_max: int) -> np.ndarray:
    """``values`` as int64 when every entry is an integer in 0 … γ_max, else ``ValueError`` naming it."""
    a = np.asarray(values)
    if a.dtype.kind not in "biuf" or a.dtype.kind == "b":
        raise ValueError(f"{name} has dtype {a.dtype}; allowed: integers in 0..{gamma_max}")
    bad = ~((a >= 0) & (a <= gamma_max) & (np.floor(a) == a)) if a.size else np.zeros(0, bool)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}{list(at)}={a[at].item()!r} is invalid; allowed: integers in 0..{gamma_max}")
    return a.astype(np.int64)


def _slowest(t_draft) -> tuple[np.ndarray, np.ndarray]:
    """(times [B, K] as float64, the slowest real device's time per token [B, 1]; 1 where none)."""
    t = np.asarray(t_draft, dtype=np.float64)
    t = t.reshape(-1, t.shape[-1])
    if not np.all(np.isfinite(t)) or (t < 0).any():
        raise ValueError("t_draft holds a negative or non-finite drafting time; allowed: seconds per token ≥ 0 "
                         "(0: a padded slot)")
    slowest = t.max(axis=1, keepdims=True)
    return t, np.where(slowest > 0, slowest, 1.0)


class CappedAction(NamedTuple):
    """The capped action type of cells whose longest draft is ``gamma_max`` (module docstring)."""

    gamma_max: int  #: the longest draft (and the highest level)

    def space(self, slots: int) -> spaces.MultiDiscrete:
        """``MultiDiscrete([γ_max + 1] * (slots + 1))``: the level, then one length per device slot."""
        return spaces.MultiDiscrete([self.gamma_max + 1] * (slots + 1))

    def lengths(self, action, t_draft) -> np.ndarray:
        """Draft lengths [B, K] of capped actions ``action`` [B, K + 1] (or [K + 1]) in cells whose
        devices draft at ``t_draft`` [B, K] seconds per token (0: a padded slot, which drafts 0):
        γ_k^eff = min(γ_k, ⌊ℓ · max_j T_j^dft / T_k^dft⌋). ``ValueError`` naming the entry for a
        value outside 0 … γ_max or a shape that does not fit."""
        t, slowest = _slowest(t_draft)
        a = np.asarray(action)
        a = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
        if a.shape != (t.shape[0], t.shape[1] + 1):
            raise ValueError(f"capped action shape {np.shape(action)} is invalid; allowed: (B, K + 1) = "
                             f"({t.shape[0]}, {t.shape[1] + 1}) for t_draft of shape {np.shape(t_draft)}: a level, "
                             "then one length per device slot")
        a = _check_entries("capped action", a, self.gamma_max)
        level, gamma = a[:, :1], a[:, 1:]
        device = t > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            cap = np.floor(level * slowest / np.where(device, t, 1.0) + 1e-9)
        cap = np.minimum(cap, self.gamma_max).astype(np.int64)
        return np.where(device, np.minimum(gamma, cap), 0)

    def encode(self, gamma, t_draft) -> np.ndarray:
        """The capped action [B, K + 1] that plays draft lengths ``gamma`` [B, K] exactly: the
        smallest level whose caps admit every device's length, ℓ = max_k ⌈γ_k T_k^dft / T_max⌉, and
        each device's own length (a padded slot's: 0)."""
        t, slowest = _slowest(t_draft)
        g = _check_entries("draft length", np.asarray(gamma).reshape(t.shape), self.gamma_max)
        device = t > 0
        g = np.where(device, g, 0)
        need = np.ceil(g * t / slowest - 1e-9).astype(np.int64)
        level = np.minimum(need.max(axis=1), self.gamma_max)
        for _ in range(2):  # rounding: the cap ⌊ℓ · T_max / T_k⌋ must admit γ_k
            with np.errstate(divide="ignore", invalid="ignore"):
                cap = np.floor(level[:, None] * slowest / np.where(device, t, 1.0) + 1e-9)
            short = ((cap < g) & device).any(axis=1) & (level < self.gamma_max)
            level = level + short
        return np.concatenate([level[:, None], g], axis=1)


__all__ = ["BudgetAction", "CappedAction", "LEVELS_PER_TOKEN"]
