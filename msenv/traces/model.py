"""The generative acceptance model: whole trace banks drawn without a file.

Per request: a latent level z ~ N(0, 1) and a length L = round(exp(ln m + s·(ρ z + √(1 − ρ²) ε))),
ε ~ N(0, 1) (log-normal with median m and log-spread s, tied to the level by ρ; at most
:data:`MAX_LENGTH`).

Per output position q of the request, a hidden state S_q ∈ {low, high}: a two-state Markov chain
started in its stationary law, with P(high) = π(z) = σ(logit π + b_π z) and persistence
λ(z) = σ(logit λ + b_λ z) (the chain's second eigenvalue: P(low → high) = (1 − λ(z)) π(z),
P(high → low) = (1 − λ(z))(1 − π(z)); the mean stay in high is 1 / ((1 − λ)(1 − π)) positions).
Given the state, two independent indicators:

* F_q — the drafter's FIRST token, drafted at q from the true prefix, is right:
  P = σ(logit f_S + b z);
* C_q — a CONTINUATION token for position q, drafted deeper in a draft started before q, is right:
  P = σ(logit c_S + b z).

A draft started at p accepts its first token iff F_p, then continues through C_{p+1}, C_{p+2}, …
until the first failure (the run R_{p+1} of C's that starts at p + 1, stopping at the request's
end); beyond depth :data:`FREE_DEPTH` each further token survives only with probability τ
(a per-position draw, the drafter's horizon). So

    acc_len[p] = 1                                  if not F_p
               = min(cap, 2 + min(R_{p+1}, H_p))     if F_p,   H_p = FREE_DEPTH + Geometric(τ)

with P(H_p − FREE_DEPTH ≥ k) = τ^k. Neighbouring positions share their C's, so
``acc_len[p + 1] = acc_len[p] − 1`` whenever both first tokens and C_{p+1} are right and the
horizon does not bind — a long run from p is followed by decreasing values, as in real traces —
while F and C differing lets a value rise ("2, 3") or fall early ("3, 1").

How the published traces shape it (see :mod:`~msenv.traces.presets`): for n-gram the high state is
a copy of earlier text — F and C are near 1 inside it and near 0 outside (so α_0 ≪ α_1, and after
a rejection the next first token is rarely right); a run ends when the chain leaves the high
state, so a partly accepted round is followed by a low position and the lag-1 correlation of
rounds falls as γ grows. EAGLE's two states differ less; its lag-1 correlation, flat in γ, comes
mostly from the per-request level. A level-dependent persistence makes long copies longer in
some requests (α_d rising with d).

Uniforms: request r's positions read a (L, 4) block from its own stream (child r of the seed's
``Generator.spawn``); z and ε come from the parent. So a request's draws do not depend on the
others' lengths, and banks of more requests extend banks of fewer (common random numbers).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np
from numba import njit

from .bank import DRAFTERS, TraceBank

#: continuations up to this depth are free of the horizon; α_0 … α_5 see only them
FREE_DEPTH = 5
#: the longest request (the published profiling's generation limit, 8,192 tokens)
MAX_LENGTH = 8192
#: uniforms per position: the state's step, F, C, the horizon
DRAWS_PER_POSITION = 4
_TRANSITION, _FIRST, _CONT, _HORIZON = range(DRAWS_PER_POSITION)
_LOGIT_SPAN = 30.0  # |logit| bound of the per-request probabilities (no 0/1 from extreme levels)


@dataclass(frozen=True)
class ModelParams:
    """The model's parameters (see the module docstring); probabilities are at level z = 0."""

    #: λ ∈ (0, 1): persistence of the hidden per-position state at level 0 (→ 0: independent positions)
    stay: float
    #: b_λ: logit effect of the request's level on the persistence
    stay_spread: float
    #: π ∈ (0, 1): stationary share of the high state at level 0
    high_share: float
    #: b_π: logit effect of the request's level on the high state's share
    high_spread: float
    #: f_low ∈ (0, 1): first-token acceptance in the low state
    first_low: float
    #: f_high ∈ (0, 1): first-token acceptance in the high state
    first_high: float
    #: c_low ∈ (0, 1): continuation acceptance in the low state
    cont_low: float
    #: c_high ∈ (0, 1): continuation acceptance in the high state
    cont_high: float
    #: b: logit effect of the request's level on all four acceptances
    level_spread: float
    #: τ ∈ (0, 1]: survival per depth beyond FREE_DEPTH (1: no horizon)
    tail: float
    #: m ≥ 1: median request length (tokens)
    length_median: float
    #: s ≥ 0: standard deviation of log length
    length_sigma: float
    #: ρ ∈ [−1, 1]: correlation of log length with the level
    length_level_corr: float

    def __post_init__(self):
        """Check every parameter (ValueError naming it and what is allowed)."""
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"ModelParams {f.name}={v!r} is invalid; allowed: a finite number")
        opened = ("stay", "high_share", "first_low", "first_high", "cont_low", "cont_high")
        for name in opened:
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"ModelParams {name}={getattr(self, name)!r} is invalid; allowed: a number in (0, 1)")
        checks = (                  ("tail", 0.0 < self.tail <= 1.0, "a number in (0, 1]"),
                  ("length_median", 1.0 <= self.length_median <= MAX_LENGTH, f"a number in [1, {MAX_LENGTH}]"),
                  ("length_sigma", 0.0 <= self.length_sigma <= 5.0, "a number in [0, 5]"),
                  ("length_level_corr", -1.0 <= self.length_level_corr <= 1.0, "a number in [-1, 1]"),
                  ("stay_spread", abs(self.stay_spread) <= 10.0, "a number in [-10, 10]"),
                  ("high_spread", abs(self.high_spread) <= 10.0, "a number in [-10, 10]"),
                  ("level_spread", abs(self.level_spread) <= 10.0, "a number in [-10, 10]"))
        for name, ok, allowed in checks:
            if not ok:
                raise ValueError(f"ModelParams {name}={getattr(self, name)!r} is invalid; allowed: {allowed}")

    def as_dict(self) -> dict[str, float]:
        """The parameters as a plain dict (JSON-ready)."""
        return {k: float(v) for k, v in asdict(self).items()}


def _logit(p: float) -> float:
    """log(p / (1 − p))."""
    return math.log(p / (1.0 - p))


@njit(cache=True)
def _sigmoid(x):
    """The logistic function, its argument clipped to ±_LOGIT_SPAN (compiled)."""
    x = min(max(x, -_LOGIT_SPAN), _LOGIT_SPAN)
    return 1.0 / (1.0 + math.exp(-x))


@njit(cache=True)
def fill_acc_len(u, u_start, offsets, level, stay_logit, stay_spread, high_logit, high_spread, first_low, first_high,
                 cont_low, cont_high, level_spread, tail, cap, out, high_out):
    """Draw every request's acc_len into ``out`` (compiled) and, when ``high_out`` has their
    length, each position's hidden state (1: high) into it. Request r reads the uniforms
    ``u[u_start[r] + DRAWS_PER_POSITION·q + k]``; logits in, as in :class:`ModelParams`."""
    states = high_out.shape[0] == out.shape[0]
    log_tail = math.log(tail) if tail < 1.0 else 0.0
    for r in range(offsets.shape[0] - 1):
        z = level[r]
        share = _sigmoid(high_logit + high_spread * z)
        move = 1.0 - _sigmoid(stay_logit + stay_spread * z)
        up, down = move * share, move * (1.0 - share)
        fl, fh = _sigmoid(first_low + level_spread * z), _sigmoid(first_high + level_spread * z)
        cl, ch = _sigmoid(cont_low + level_spread * z), _sigmoid(cont_high + level_spread * z)
        o, n, b = offsets[r], offsets[r + 1] - offsets[r], u_start[r]
        high = u[b + _TRANSITION] < share
        for q in range(n):  # forward: the states, then F (bit 1) and C (bit 2) per position
            k = b + DRAWS_PER_POSITION * q
            if q > 0:
                high = (u[k + _TRANSITION] >= down) if high else (u[k + _TRANSITION] < up)
            if states:
                high_out[o + q] = 1 if high else 0
            f = u[k + _FIRST] < (fh if high else fl)
            c = u[k + _CONT] < (ch if high else cl)
            out[o + q] = (1 if f else 0) + (2 if c else 0)
        run = 0  # R_{q+1}: the run of C's starting just after q
        for q in range(n - 1, -1, -1):
            bits = out[o + q]
            if bits & 1:
                depth = run
                if tail < 1.0 and run > FREE_DEPTH:
                    extra = math.log(1.0 - u[b + DRAWS_PER_POSITION * q + _HORIZON]) / log_tail
                    if extra < run - FREE_DEPTH:
                        depth = FREE_DEPTH + int(extra)
                out[o + q] = min(cap, 2 + depth)
            else:
                out[o + q] = 1
            run = run + 1 if bits & 2 else 0


def draw_levels_and_lengths(params: ModelParams, rng: np.random.Generator, requests: int):
    """(z [R], lengths int64 [R]) from the parent Generator: a pair (z, ε) of N(0, 1) per request."""
    normals = rng.standard_normal((requests, 2))  # request r's pair (z_r, ε_r): banks nest
    return normals[:, 0], lengths_of(params, normals[:, 0], normals[:, 1])


def lengths_of(params: ModelParams, z: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """L = round(exp(ln m + s (ρ z + √(1 − ρ²) ε))) in [1, MAX_LENGTH]: log-normal, tied to the level."""
    rho = params.length_level_corr
    x = math.log(params.length_median) + params.length_sigma * (rho * z + math.sqrt(max(0.0, 1.0 - rho * rho)) * eps)
    return np.clip(np.rint(np.exp(np.minimum(x, math.log(MAX_LENGTH) + 1.0))), 1, MAX_LENGTH).astype(np.int64)


def fill_bank(params: ModelParams, u: np.ndarray, u_start: np.ndarray, z: np.ndarray, lengths: np.ndarray,
              cap: int, states: bool = False):
    """(acc_len int32, offsets int64) of requests with levels ``z`` and ``lengths`` from the
    uniforms ``u`` (request r's block starts at ``u_start[r]``) — the kernel's numpy entry; with
    ``states``, also each position's hidden state (uint8, 1: high)."""
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.int32)
    high = np.empty(out.size if states else 0, dtype=np.uint8)
    fill_acc_len(u, u_start, offsets, z, _logit(params.stay), params.stay_spread, _logit(params.high_share),
                 params.high_spread, _logit(params.first_low), _logit(params.first_high), _logit(params.cont_low),
                 _logit(params.cont_high), params.level_spread, params.tail, int(cap), out, high)
    return (out, offsets, high) if states else (out, offsets)


def _generator(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed={seed!r} is invalid; allowed: an integer ≥ 0 or a numpy Generator")
    return np.random.default_rng(int(seed))


def _draw(params: ModelParams, requests: int, rng: np.random.Generator, cap: int, states: bool):
    """Every request's draws and the bank's arrays (:func:`fill_bank`), with the levels z [R]."""
    children = rng.spawn(requests)
    z, lengths = draw_levels_and_lengths(params, rng, requests)
    blocks = [child.random(DRAWS_PER_POSITION * int(n)) for child, n in zip(children, lengths)]
    u_start = np.zeros(requests, dtype=np.int64)
    np.cumsum(DRAWS_PER_POSITION * lengths[:-1], out=u_start[1:])
    return z, lengths, fill_bank(params, np.concatenate(blocks), u_start, z, lengths, cap, states)


def _check_draw(params, requests, cap) -> int:
    if not isinstance(params, ModelParams):
        raise ValueError(f"params={params!r} is invalid; allowed: a ModelParams")
    if isinstance(requests, bool) or not isinstance(requests, (int, np.integer)) or requests < 1:
        raise ValueError(f"requests={requests!r} is invalid; allowed: an integer ≥ 1")
    if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 2:
        raise ValueError(f"cap={cap!r} is invalid; allowed: an integer ≥ 2")
    return int(requests)


def generate_bank(params: ModelParams, requests: int, seed: int | np.random.Generator = 0, cap: int = 21,
                  drafter: str = "eagle", source: str | None = None) -> TraceBank:
    """A bank of ``requests`` requests drawn from the model. ``seed``: an integer or a Generator
    (its ``spawn`` gives the requests' streams); the same seed gives the same bank."""
    requests = _check_draw(params, requests, cap)
    if drafter not in DRAFTERS:
        raise ValueError(f"drafter={drafter!r} is invalid; allowed: {' | '.join(DRAFTERS)}")
    _, lengths, (acc, offsets) = _draw(params, requests, _generator(seed), cap, False)
    width = len(str(requests - 1))
    ids = tuple(f"r{i:0{width}d}" for i in range(requests))
    src = source if source is not None else f"generated ({requests} requests)"
    return TraceBank.from_arrays(acc, np.diff(offsets), ids, int(cap), drafter, src)


def hidden_states(params: ModelParams, requests: int, seed: int = 0, cap: int = 21) -> tuple[np.ndarray, np.ndarray]:
    """The hidden part of :func:`generate_bank`'s bank of the same arguments: each request's level
    z [R] and each position's state (uint8 [positions], 1: high), in the bank's order — what a
    state oracle knows (never the coin flips)."""
    z, _, (_, _, high) = _draw(params, _check_draw(params, requests, cap), _generator(seed), cap, True)
    return z, high


# ---------------------------------------------------------------------- the exact Bayes filter
# What a server that knows the model (not a request's level z nor the states S) can know of a device
# after the rounds of its request so far: the posterior of (z, S_p) at its position p on a grid of
# levels (z on a Gauss–Hermite grid of N(0, 1), whose weights are the prior). A round started at p
# with draft γ ≥ 1 that accepted A tokens reveals, position by position (each position is seen at
# most once, and rounds tile the request): F_p (true iff A ≥ 1); C = 1 at p + 1 … p + A − 1; at
# p + A, when the round was rejected and A ≥ 1, min(R_{p+1}, H_p) = A − 1 — likelihood
# P(H_p ≥ A − 1)·(1 − c_S(z)·t), t = τ when A − 1 ≥ FREE_DEPTH and 1 below (the first factor is the
# same for every hidden path and cancels); a fully accepted round tells only that its C's were
# right (its bonus position is unobserved); γ = 0 tells nothing. The chain steps once per position.
# The predictive survival by the forward algorithm: P(acc_len > 0) = 1, P(acc_len > 1) = P(F_p),
# and for 2 ≤ j < cap P(acc_len > j) = P(F_p, C_{p+1}, …, C_{p+j−1})·τ^max(0, j − 1 − FREE_DEPTH).
LOW, HIGH = 0, 1  #: the hidden state's index in the filter's arrays


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


def _sigmoid_array(x: np.ndarray) -> np.ndarray:
    """σ(x) with x clipped to ±_LOGIT_SPAN, as the generator computes it (numpy)."""
    return 1.0 / (1.0 + np.exp(-np.clip(x, -_LOGIT_SPAN, _LOGIT_SPAN)))


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
    share = _sigmoid_array(_logit(params.high_share) + params.high_spread * z)
    move = 1.0 - _sigmoid_array(_logit(params.stay) + params.stay_spread * z)
    up, down = move * share, move * (1.0 - share)
    trans = np.empty((len(z), 2, 2))
    trans[:, LOW, HIGH], trans[:, LOW, LOW] = up, 1.0 - up
    trans[:, HIGH, LOW], trans[:, HIGH, HIGH] = down, 1.0 - down
    prior = np.stack([w * (1.0 - share), w * share], axis=1)

    def by_state(low: float, high: float) -> np.ndarray:
        return np.stack([_sigmoid_array(_logit(low) + params.level_spread * z),
                         _sigmoid_array(_logit(high) + params.level_spread * z)], axis=1)

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


__all__ = ["DRAWS_PER_POSITION", "FREE_DEPTH", "FilterModel", "HIGH", "LOW", "MAX_LENGTH", "ModelParams",
           "draw_levels_and_lengths", "fill_acc_len", "fill_bank", "filter_model", "filter_update", "generate_bank",
           "hidden_states", "level_grid", "lengths_of", "predictive_survival"]
