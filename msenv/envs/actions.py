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


__all__ = ["BudgetAction", "LEVELS_PER_TOKEN"]
