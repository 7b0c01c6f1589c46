"""The paper's greedy SAA on the exact Bayes filter of the fitted trace model (model §12).

Where acceptance is replayed from a bank drawn from a preset of :mod:`msenv.traces`, the server
knows the generative model (:mod:`msenv.traces.model`); where it is replayed from a file, the server
knows the model fitted to the file's train requests (a shipped bank carries its fit; for any other
file, ``python -m msenv.traces fit FILE --split train`` writes one). It does not know a request's hidden level z nor the
per-position state S_q ∈ {low, high}. :class:`TraceFilterSAA` keeps, per device, the posterior of
(z, S_p) at the device's current position p given every round of its current request, and hands
the predictive survival P(acc_len[p] > j) to the greedy SAA (as
:class:`~baselines.adaptive.KaplanMeierGreedy` hands its Kaplan–Meier estimate).

The filter
----------
z lives on a Gauss–Hermite grid of ``levels`` points of N(0, 1) (its weights are the prior); given
z the chain and the indicators are the model's: P(S_q = high) = π(z) at a request's start,
P(low → high) = (1 − λ(z)) π(z), P(high → low) = (1 − λ(z))(1 − π(z)), P(F_q) = f_S(z),
P(C_q) = c_S(z). A round started at p with draft γ ≥ 1 that accepted A tokens reveals, position by
position (each position is seen at most once, and rounds tile the request):

* p: F_p (true iff A ≥ 1);
* p + 1 … p + A − 1: C = 1;
* p + A, when the round was rejected and A ≥ 1: acc_len[p] = A + 1, i.e. min(R_{p+1}, H_p) = A − 1.
  Given the C's before it this has likelihood P(H_p ≥ A − 1) · (1 − c_S(z) · t), t = τ when
  A − 1 ≥ FREE_DEPTH (the horizon may have stopped the run with C right) and t = 1 below — exact;
  the factor P(H_p ≥ A − 1) is the same for every hidden path and cancels;
* a fully accepted round tells only that min(R, H) ≥ γ − 1: its C's are right and P(H_p ≥ γ − 1)
  cancels again; its bonus position p + γ is unobserved;
* γ = 0 tells nothing.

The chain steps once per position: after a round that emitted N tokens the belief sits at p + N.
A request's end (``info["request_done"]``) resets the device to the prior (z ~ N(0, 1), S at its
stationary law given z). The model's truncation of runs at a request's end only touches the last
round of a request, after which the belief is reset; the request's length, which the model ties to
z (ρ), is not used as evidence (the engine starts each device's first request at a random position,
so how long a request has lasted is only weak, engine-specific evidence).

The predictive survival, by the forward algorithm over the next positions:
P(acc_len > 0) = 1, P(acc_len > 1) = P(F_p), and for 2 ≤ j < cap
P(acc_len > j) = P(F_p, C_{p+1}, …, C_{p+j−1}) · τ^{max(0, j − 1 − FREE_DEPTH)}; 0 from the cap on.

Both kernels are compiled (numba): at K = 20 with 24 levels the filter (survival and update) is
about 1 % of a decision's time, the rest the greedy search (``python -m benchmarks.trace_filter``).
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

import numpy as np
from numba import njit

from msenv.engine.context import RoundContext
from msenv.traces import PRESETS, SHIPPED, ModelParams, fitted_model, read_fit
from msenv.traces.model import FREE_DEPTH

from .greedy import GreedySAA, greedy_search

#: the trace sources with a fitted model: the presets and the shipped banks with a fit
_FITTED = (*sorted(PRESETS), *sorted(n for n, b in SHIPPED.items() if b.fit is not None))
LOW, HIGH = 0, 1  #: the hidden state's index in the filter's arrays
#: |logit| bound of the per-level probabilities, the model generator's (no 0 or 1 from extreme levels)
LOGIT_SPAN = 30.0


@dataclass(frozen=True)
class FilterModel:
    """The fitted model on a grid of levels, as the filter's kernels read it (G levels)."""

    z: np.ndarray  #: [G] the level grid
    prior: np.ndarray  #: [G, 2] the joint prior of (z, S) at a request's start (sums to 1)
    trans: np.ndarray  #: [G, 2, 2] P(S_{q+1} = t | S_q = s, z) at [g, s, t]
    first: np.ndarray  #: [G, 2] P(F_q | S_q, z)
    cont: np.ndarray  #: [G, 2] P(C_q | S_q, z)
    tail: float  #: τ, the survival per depth beyond FREE_DEPTH
    cap: int  #: the bank's cap (acc_len never exceeds it)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) with x clipped to ±LOGIT_SPAN, as the model's generator computes it."""
    return 1.0 / (1.0 + np.exp(-np.clip(x, -LOGIT_SPAN, LOGIT_SPAN)))


def _logit(p: float) -> float:
    """log(p / (1 − p))."""
    return math.log(p / (1.0 - p))


def level_grid(levels: int) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, weights) of the ``levels``-point Gauss–Hermite rule of N(0, 1) (weights sum to 1)."""
    z, w = np.polynomial.hermite_e.hermegauss(levels)
    return z, w / w.sum()


def filter_model(params: ModelParams, cap: int, levels: int = 24, z: np.ndarray | None = None,
                 weights: np.ndarray | None = None) -> FilterModel:
    """The model ``params`` on a level grid: ``levels`` Gauss–Hermite points, or the nodes ``z``
    with prior ``weights`` (normalised) when given."""
    if z is None:
        z, weights = level_grid(levels)
    z = np.asarray(z, float)
    w = np.asarray(weights, float) / np.sum(weights)
    share = _sigmoid(_logit(params.high_share) + params.high_spread * z)
    move = 1.0 - _sigmoid(_logit(params.stay) + params.stay_spread * z)
    up, down = move * share, move * (1.0 - share)
    trans = np.empty((len(z), 2, 2))
    trans[:, LOW, HIGH], trans[:, LOW, LOW] = up, 1.0 - up
    trans[:, HIGH, LOW], trans[:, HIGH, HIGH] = down, 1.0 - down
    prior = np.stack([w * (1.0 - share), w * share], axis=1)

    def by_state(low: float, high: float) -> np.ndarray:
        return np.stack([_sigmoid(_logit(low) + params.level_spread * z),
                         _sigmoid(_logit(high) + params.level_spread * z)], axis=1)

    return FilterModel(z, prior, trans, by_state(params.first_low, params.first_high),
                       by_state(params.cont_low, params.cont_high), float(params.tail), int(cap))


# ---------------------------------------------------------------------- the compiled kernels
@njit(cache=True)
def _advance(b, trans):
    """One position forward: b[g, t] ← Σ_s b[g, s] P(t | s, z_g) (in place)."""
    for g in range(b.shape[0]):
        lo, hi = b[g, LOW], b[g, HIGH]
        b[g, LOW] = lo * trans[g, LOW, LOW] + hi * trans[g, HIGH, LOW]
        b[g, HIGH] = lo * trans[g, LOW, HIGH] + hi * trans[g, HIGH, HIGH]


@njit(cache=True)
def _weigh(b, prob, hit, scale):
    """Multiply b by the likelihood of an indicator: prob · scale if ``hit``, else 1 − prob · scale;
    then normalise b to sum 1."""
    total = 0.0
    for g in range(b.shape[0]):
        for s in range(2):
            p = prob[g, s] * scale
            b[g, s] *= p if hit else 1.0 - p
            total += b[g, s]
    for g in range(b.shape[0]):
        for s in range(2):
            b[g, s] /= total


@njit(cache=True)
def filter_update(belief, trans, first, cont, tail, gamma, accepted, rejected, tokens):
    """Bayes update of every device's belief [K, G, 2] (in place) by one round: draft lengths,
    accepted counts, rejections and emitted tokens [K] (module docstring); the belief ends at the
    device's next position."""
    for k in range(belief.shape[0]):
        b = belief[k]
        n, a, g, rej = tokens[k], accepted[k], gamma[k], rejected[k]
        for o in range(n):
            if o > 0:
                _advance(b, trans)
            if o == 0:
                if g >= 1:  # F_p: the first drafted token right iff anything was accepted
                    _weigh(b, first, a >= 1, 1.0)
            elif o < a:  # a continuation accepted
                _weigh(b, cont, True, 1.0)
            elif o == a and rej:  # the failure that stopped the run: C wrong, or the horizon past FREE_DEPTH
                _weigh(b, cont, False, tail if a - 1 >= FREE_DEPTH else 1.0)
        if n > 0:
            _advance(b, trans)


@njit(cache=True)
def predictive_survival(belief, trans, first, cont, tail, cap, out):
    """P(acc_len > j) at each device's position, j = 0 … J − 1, into ``out`` [K, J], by the
    forward algorithm from the belief [K, G, 2]."""
    n_levels, depth = belief.shape[1], out.shape[1]
    v = np.empty((n_levels, 2))
    for k in range(belief.shape[0]):
        out[k, 0] = 1.0
        total = 0.0
        for g in range(n_levels):
            for s in range(2):
                v[g, s] = belief[k, g, s] * first[g, s]
                total += v[g, s]
        if depth > 1:
            out[k, 1] = total if cap > 1 else 0.0
        for j in range(2, depth):
            _advance(v, trans)
            total = 0.0
            for g in range(n_levels):
                for s in range(2):
                    v[g, s] *= cont[g, s]
                    total += v[g, s]
            out[k, j] = total * tail ** max(0, j - 1 - FREE_DEPTH) if j < cap else 0.0


# ---------------------------------------------------------------------- the controller
class TraceFilterSAA(GreedySAA):
    """The paper's greedy SAA on each device's predictive survival from the exact Bayes filter of
    the fitted trace model (module docstring).

    Args:
        preset: the trace source whose fitted model is filtered (:func:`~msenv.traces.fitted_model`: a
            preset, a shipped bank); default: the config's ``trace_source``, which must then have one.
        params: instead, a PARAMS.json written by ``python -m msenv.traces fit`` (for a bank file or a
            published file: fit its train requests with ``--split train``).
        levels: points of the Gauss–Hermite grid of the request's level z (2 … 128).
        **kwargs: :class:`~baselines.greedy.GreedySAA`'s ``n_samples``, ``objective``, ``policy``.
    """

    name = "trace-filter-saa"

    def __init__(self, preset: str | None = None, levels: int = 24, params=None, **kwargs) -> None:
        super().__init__(**kwargs)
        owner = type(self).__name__
        if preset is not None and (not isinstance(preset, str) or fitted_model(preset) is None):
            raise ValueError(f"{owner} preset={preset!r} is unknown; allowed: None (the config's trace_source) or "
                             f"a source with a fitted model: {' | '.join(_FITTED)}")
        if params is not None and preset is not None:
            raise ValueError(f"{owner} preset={preset!r} and params={params!r} are both given; allowed: at most one")
        if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or not 2 <= levels <= 128:
            raise ValueError(f"{owner} levels={levels!r} is invalid; allowed: an integer in [2, 128]")
        if params is not None and not isinstance(params, (str, os.PathLike)):
            raise ValueError(f"{owner} params={params!r} is invalid; allowed: the path of a PARAMS.json written by "
                             "`python -m msenv.traces fit`")
        self.preset, self.levels = preset, int(levels)
        #: the model given as a PARAMS.json of ``python -m msenv.traces fit`` (read now: a bad file fails here)
        self.params = None if params is None else (str(params), *read_fit(params))
        self._models: dict[str, FilterModel] = {}
        self.model: FilterModel | None = None  #: the model filtered in this episode
        self.belief: np.ndarray | None = None  #: [K, G, 2] each device's posterior of (z, S) at its position

    def reset(self, seed=None) -> None:
        super().reset(seed)
        self.belief = None

    def model_for(self, config) -> FilterModel:
        """The filtered model of ``config``: ``params`` or ``preset`` when given, else the model
        fitted to its ``trace_source`` (a preset's, a shipped bank's fit of its train requests);
        ``ValueError`` in one line for a source with no fitted model."""
        if self.params is not None:
            name, params, cap = self.params
        else:
            name = self.preset if self.preset is not None else getattr(config, "trace_source", None)
            fitted = None if name is None else fitted_model(name)
            if fitted is None:
                what = "no trace" if name is None else "a source with no fitted model (a bank file, a mix)"
                raise ValueError(f"config field trace_source={name!r} is invalid for {type(self).__name__}: it is "
                                 f"{what}; allowed: {' | '.join(_FITTED)}, or params=PARAMS.json (`python -m "
                                 f"msenv.traces fit FILE --split train --out PARAMS.json`) or preset=")
            params, cap = fitted
        gamma_max = config.gamma_max
        if gamma_max >= cap:  # the engine refuses the same mismatch for a bank
            what = f"params={name!r}" if self.params is not None else (
                f"preset={name!r}" if self.preset is not None else f"the model of trace_source={name!r}")
            raise ValueError(f"{type(self).__name__} {what}: cap={cap} is invalid for gamma_max={gamma_max} (the model "
                             f"prices drafts of at most cap − 1 = {cap - 1} tokens); allowed: a model whose cap is "
                             f"above gamma_max={gamma_max}")
        if name not in self._models:
            self._models[name] = filter_model(params, cap, self.levels)
        return self._models[name]

    def survival(self, gamma_max: int) -> np.ndarray:
        """Each device's predictive P(acc_len > j), j = 0 … γ_max [K, γ_max + 1]."""
        m = self.model
        out = np.empty((self.belief.shape[0], gamma_max + 1))
        predictive_survival(self.belief, m.trans, m.first, m.cont, m.tail, m.cap, out)
        return out

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        model = self.model_for(context.config)
        k = len(context.t_draft)
        if self.belief is None or self.belief.shape[0] != k or model is not self.model:
            self.model, self.belief = model, np.repeat(model.prior[None], k, axis=0)
        ctx = dataclasses.replace(context, survival=self.survival(context.config.gamma_max))
        self.last_trace = []
        return greedy_search(self.estimator(ctx), self.last_trace)[0]

    def observe(self, gamma, info) -> None:
        k, m = len(gamma), self.model
        filter_update(self.belief, m.trans, m.first, m.cont, m.tail, np.asarray(gamma, np.int64),
                      np.asarray(info["accepted"], np.int64)[:k], np.asarray(info["rejected"], np.bool_)[:k],
                      np.asarray(info["tokens"], np.int64)[:k])
        done = info.get("request_done")
        if done is not None:
            self.belief[np.asarray(done, bool)[:k]] = m.prior


__all__ = ["FilterModel", "TraceFilterSAA", "filter_model", "filter_update", "level_grid", "predictive_survival"]
