"""Calibration of the generative model by simulation: generate whole banks, measure them with
:mod:`.stats`, and move the parameters until the figures meet their targets.

The objective is Σ ((figure − target) / tolerance)² over the targets present (:data:`TOLERANCES`:
the preset tests' tolerances; tokens per round relative). Every evaluation draws its bank from
the same per-request streams (:class:`CommonDraws`: common random numbers), so the objective is a
deterministic function of the parameters, minimised by Nelder–Mead (adaptive, in unconstrained
coordinates: logits, tanh) from several starts. The length law is set in closed form from the
targets' length median and p90 (a log-normal's quantiles), the other eleven parameters are fitted.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize

from .bank import TraceBank
from .model import DRAWS_PER_POSITION, ModelParams, fill_bank, lengths_of
from .stats import N_DEPTHS, TARGET_GAMMAS, key, measure

#: the figures a fit matches and the tolerance of each (absolute; tokens per round: relative)
TOLERANCES: dict[str, float] = {
    **{key(f"alpha_{d}"): 0.04 for d in range(N_DEPTHS)},
    "at_cap": 0.01,
    **{key(s, g): t for g in TARGET_GAMMAS for s, t in
       (("tokens", 0.03), ("p_nothing", 0.04), ("after_full", 0.04), ("after_rejected", 0.04), ("lag1", 0.08))},
    "alpha0_p10": 0.04, "alpha0_median": 0.04, "alpha0_p90": 0.04,
}
#: figures whose tolerance is relative to the target
RELATIVE = frozenset(key("tokens", g) for g in TARGET_GAMMAS)
#: z of the standard normal's 0.9 quantile (a log-normal's p90 / median = exp(Z90 · s))
Z90 = 1.2815515655446004
#: the fitted parameters, in the order of the optimiser's vector
FITTED = ("stay", "stay_spread", "high_share", "high_spread", "first_low", "first_high", "cont_low", "cont_high",
          "level_spread", "tail", "length_level_corr")
#: the initial simplex's step along each unconstrained coordinate
SIMPLEX_STEP = 0.4
_LOGIT = frozenset({"stay", "high_share", "first_low", "first_high", "cont_low", "cont_high", "tail"})


def _sig(x: float) -> float:
    """The logistic function (argument clipped to ±30)."""
    return 1.0 / (1.0 + math.exp(-max(min(x, 30.0), -30.0)))


def to_vector(params: ModelParams) -> np.ndarray:
    """The fitted parameters as unconstrained coordinates (logit of probabilities, atanh of ρ)."""
    out = []
    for name in FITTED:
        v = getattr(params, name)
        if name in _LOGIT:
            v = min(max(v, 1e-6), 1.0 - 1e-6)
            out.append(math.log(v / (1.0 - v)))
        elif name == "length_level_corr":
            out.append(math.atanh(min(max(v, -0.999), 0.999)))
        else:
            out.append(v)
    return np.array(out)


def from_vector(x: np.ndarray, length_median: float, length_sigma: float) -> ModelParams:
    """The parameters at unconstrained coordinates ``x`` (inverse of :func:`to_vector`)."""
    values = {}
    for name, v in zip(FITTED, x):
        if name in _LOGIT:
            v = _sig(float(v))
            if name == "tail":
                v = max(v, 1e-6)
            else:
                v = min(max(v, 1e-6), 1.0 - 1e-6)
        elif name == "length_level_corr":
            v = math.tanh(float(v))
        else:
            v = max(min(float(v), 10.0), -10.0)
        values[name] = v
    return ModelParams(length_median=length_median, length_sigma=length_sigma, **values)


def length_law(median: float, p90: float) -> tuple[float, float]:
    """(median, log-spread s) of the log-normal with that median and p90."""
    if not (1.0 <= median <= p90):
        raise ValueError(f"length median={median!r}, p90={p90!r} are invalid; allowed: 1 ≤ median ≤ p90")
    return float(median), math.log(p90 / median) / Z90


class CommonDraws:
    """The draws of ``generate_bank(·, requests, seed)`` kept for reuse: the levels and ε, and per
    request its uniform stream, extended on demand (a longer request reads the same first values),
    in one buffer. :meth:`bank_arrays` gives (acc_len, offsets) for any parameters."""

    def __init__(self, requests: int, seed: int):
        """Draw the levels, ε and the requests' streams of ``generate_bank(·, requests, seed)``."""
        rng = np.random.default_rng(seed)
        self.children = rng.spawn(requests)
        normals = rng.standard_normal((requests, 2))  # as model.draw_levels_and_lengths
        self.z, self.eps = normals[:, 0].copy(), normals[:, 1].copy()
        self.start = np.zeros(requests, dtype=np.int64)
        self.filled = np.zeros(requests, dtype=np.int64)
        self.buffer = np.empty(0)
        self.used = 0

    def _ensure(self, lengths: np.ndarray) -> None:
        """Extend the streams of requests longer than their stored uniforms (same first values)."""
        need = DRAWS_PER_POSITION * lengths
        short = np.flatnonzero(need > self.filled)
        if not short.size:
            return
        room = int(np.sum(2 * need[short]))
        if self.used + room > self.buffer.size:
            grown = np.empty(max(2 * self.buffer.size, self.used + room))
            grown[:self.used] = self.buffer[:self.used]
            self.buffer = grown
        for r in short:
            new_start, old, n = self.used, int(self.filled[r]), int(2 * need[r])
            self.buffer[new_start:new_start + old] = self.buffer[self.start[r]:self.start[r] + old]
            self.buffer[new_start + old:new_start + n] = self.children[r].random(n - old)
            self.start[r], self.filled[r] = new_start, n
            self.used += n

    def bank_arrays(self, params: ModelParams, cap: int) -> tuple[np.ndarray, np.ndarray]:
        """(acc_len, offsets) of the bank these draws give with ``params``."""
        lengths = lengths_of(params, self.z, self.eps)
        self._ensure(lengths)
        return fill_bank(params, self.buffer, self.start, self.z, lengths, cap)


def objective(figures: dict[str, float], targets: dict[str, float]) -> float:
    """Σ ((figure − target) / tolerance)² over the targets with a tolerance (NaN figure: 1e6)."""
    total = 0.0
    for k, tol in TOLERANCES.items():
        if k not in targets or not math.isfinite(targets[k]):
            continue
        scale = tol * abs(targets[k]) if k in RELATIVE else tol
        v = figures.get(k, math.nan)
        total += ((v - targets[k]) / scale) ** 2 if math.isfinite(v) else 1e6
    return total


def starts(drafter: str, targets: dict[str, float]) -> list[ModelParams]:
    """Starting points of the search: a few hand-placed guesses from the targets' α_0 and α_1."""
    a0, a1 = targets.get("alpha_0", 0.5), targets.get("alpha_1", 0.6)
    med, s = length_law(targets["length_median"], targets["length_p90"])
    clip = lambda p: min(max(p, 0.02), 0.98)  # noqa: E731
    common = dict(length_median=med, length_sigma=s, length_level_corr=0.0)
    if drafter == "ngram":  # copy segments: the high state, left when the copy ends (C ≈ 1 inside)
        return [ModelParams(stay=clip(st), stay_spread=0.5, high_share=clip(a0), high_spread=1.0, first_low=0.05,
                            first_high=0.9, cont_low=0.05, cont_high=0.99, level_spread=0.2, tail=0.999, **common)
                for st in (a1 - 0.1, 0.5 * (a1 + 1.0))]
    return [ModelParams(stay=st, stay_spread=0.0, high_share=0.5, high_spread=0.5, first_low=clip(a0 - 0.1),
                        first_high=clip(a0 + 0.1), cont_low=clip(a1 - 0.1), cont_high=clip(a1 + 0.1), level_spread=0.3,
                        tail=0.8, **common)
            for st in (0.3, 0.7)]


def fit(targets: dict[str, float], cap: int, drafter: str, requests: int, seed: int = 2026,
        max_evals: int = 3000, start: ModelParams | None = None,
        progress: Callable[[int, float], None] | None = None) -> tuple[ModelParams, float]:
    """Fit the model to ``targets`` (a dict of :func:`~msenv.traces.stats.measure` keys; those of
    :data:`TOLERANCES` present are matched, ``length_median`` and ``length_p90`` are required) by
    generating banks of ``requests`` requests from ``seed`` (common random numbers) → (params,
    objective). ``start``: the first starting point (else :func:`starts`); ``max_evals`` per start."""
    for k in ("length_median", "length_p90"):
        if k not in targets:
            raise ValueError(f"targets lack {k!r}; allowed: a dict with length_median and length_p90")
    med, s = length_law(targets["length_median"], targets["length_p90"])
    draws = CommonDraws(int(requests), seed)
    gammas = TARGET_GAMMAS
    count = [0]

    def cost(x):
        """The objective at unconstrained coordinates ``x``."""
        params = from_vector(x, med, s)
        acc, off = draws.bank_arrays(params, cap)
        figures = _measure_arrays(acc, off, cap, drafter, gammas)
        count[0] += 1
        value = objective(figures, targets)
        if progress is not None and count[0] % 200 == 0:
            progress(count[0], value)
        return value

    best_x, best = None, math.inf
    for p0 in ([start] if start is not None else []) + starts(drafter, targets):
        x0 = to_vector(ModelParams(**{**p0.as_dict(), "length_median": med, "length_sigma": s}))
        for _ in range(2):  # a restart from the first run's end resets the simplex
            simplex = np.vstack([x0, x0 + SIMPLEX_STEP * np.eye(x0.size)])
            res = minimize(cost, x0, method="Nelder-Mead", options=dict(
                maxfev=max_evals // 2, xatol=1e-3, fatol=1e-3, adaptive=True, initial_simplex=simplex))
            x0 = res.x
        if res.fun < best:
            best_x, best = res.x, float(res.fun)
    return from_vector(best_x, med, s), best


def _measure_arrays(acc, off, cap, drafter, gammas):
    """measure() of the bank (acc_len, offsets) without a digest (the fit's inner loop)."""
    ids = tuple(str(i) for i in range(off.size - 1))
    bank = TraceBank(acc, off, ids, int(cap), drafter, "fit", "")
    return measure(bank, gammas)


__all__ = ["FITTED", "RELATIVE", "TOLERANCES", "CommonDraws", "fit", "from_vector", "length_law", "objective",
           "starts", "to_vector"]
