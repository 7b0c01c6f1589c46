"""Reference policies: fixed, random, and the paper's optimal-uniform baseline (§VI-A4)."""

from __future__ import annotations

import numpy as np

from baselines.saa import SAAEstimator, check_saa_args
from msenv.engine.functional import RoundContext

from .base import Controller


class Fixed(Controller):
    """γ_k = γ for every device, every round."""

    def __init__(self, gamma: int = 4) -> None:
        super().__init__()
        if isinstance(gamma, bool) or not isinstance(gamma, (int, np.integer)) or gamma < 0:
            raise ValueError(f"Fixed gamma={gamma!r} is invalid; allowed: an integer ≥ 0 (and ≤ the env's gamma_max)")
        self.gamma = int(gamma)
        self.name = f"fixed-{self.gamma}"

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        if not 0 <= self.gamma <= context.config.gamma_max:
            raise ValueError(f"Fixed gamma={self.gamma} is invalid; allowed: integers in [0, "
                             f"{context.config.gamma_max}]")
        return np.full(len(context.alpha), self.gamma, dtype=np.int64)


class RandomLengths(Controller):
    """γ_k uniform on {0, …, γ_max}, independently per device and round."""

    name = "random"

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        return self.rng.integers(0, context.config.gamma_max + 1, len(context.alpha))


class OptimalUniform(Controller):
    """Paper baseline: one common γ, chosen by exhaustive search over 0..γ_max on the SAA
    expected goodput (same samples for every γ)."""

    name = "optimal-uniform"

    def __init__(self, n_samples: int | None = None, objective: str | None = None, policy: str | None = None) -> None:
        super().__init__()
        self.n_samples, self.objective, self.policy = check_saa_args(type(self).__name__, n_samples, objective, policy)

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        est = SAAEstimator(context, self.rng, self.n_samples, self.policy, self.objective)
        return best_uniform(est)[0]


def best_uniform(est: SAAEstimator) -> tuple[np.ndarray, float]:
    """Best common draft length on an estimator's samples: (vector, SAA value)."""
    k, gmax = len(est.context.alpha), est.config.gamma_max
    cands = np.repeat(np.arange(gmax + 1)[:, None], k, axis=1)
    vals = est.evaluate(cands)
    i = int(np.argmax(vals))
    return cands[i].copy(), float(vals[i])
