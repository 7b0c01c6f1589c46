"""Statistics of a trace bank: acceptance by depth, replay at a fixed draft length, requests.

Every statistic is a function of per-request counts (the rows of :func:`position_rows` and
:func:`round_rows`): pooled statistics are ratios of the counts summed over requests, so a
bootstrap over requests only re-weights rows (:func:`bootstrap`). :func:`measure` gathers them in
one flat dict whose keys (:func:`key`) the published targets, the fit and the CLI share.

Replay at draft length γ (each request decoded from its start; rounds pooled over requests): a
round at position p emits ``min(acc_len[p], γ + 1, len − p)`` tokens, accepts
``A = min(acc_len[p] − 1, γ)`` drafted tokens, has a rejection iff ``acc_len[p] ≤ γ``; the next
round starts at p + emitted. "Successive rounds" are neighbours within one request.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .bank import TraceBank

#: depths d = 0 … N_DEPTHS − 1 of the acceptance-by-depth statistic α_d
N_DEPTHS = 6
#: draft lengths of the published per-round figures (and of the fit's targets)
TARGET_GAMMAS = (2, 4, 8)
#: the most resamples × requests a bootstrap draws (its weights: 16 bytes each, 256 MiB at the most)
MAX_BOOT_CELLS = 2**24

# columns of position_rows: the request's length, #{acc_len ≥ k + 1} at GE + k (k = 0 … N_DEPTHS), #{at cap}
LENGTH, GE, AT_CAP = 0, 1, N_DEPTHS + 2
N_POSITION_COLS = N_DEPTHS + 3
# columns of round_rows (floats: sums of products for the correlation)
ROUNDS, TOKENS, NOTHING, FULL_PAIRS, FULL_OK, REJ_PAIRS, REJ_OK, PAIRS, SX, SY, SXX, SYY, SXY = range(13)
N_ROUND_COLS = 13


@njit(cache=True)
def position_rows_kernel(acc_len, offsets, cap, out):
    """Per request r: out[r, LENGTH] = its length, out[r, GE + k] = #{p: acc_len[p] ≥ k + 1},
    out[r, AT_CAP] = #{p: acc_len[p] = cap} (compiled)."""
    for r in range(offsets.shape[0] - 1):
        for p in range(offsets[r], offsets[r + 1]):
            a = acc_len[p]
            out[r, LENGTH] += 1
            for k in range(N_DEPTHS + 1):
                if a >= k + 1:
                    out[r, GE + k] += 1
            if a >= cap:
                out[r, AT_CAP] += 1


@njit(cache=True)
def round_rows_kernel(acc_len, offsets, gamma, out):
    """Replay every request from its start at draft length ``gamma`` and add, per request, the
    counts of :data:`ROUNDS` … :data:`SXY` into ``out[r]`` (compiled)."""
    for r in range(offsets.shape[0] - 1):
        p, end = offsets[r], offsets[r + 1]
        prev_full, prev_acc, has_prev = False, 0.0, False
        while p < end:
            a = acc_len[p]
            emitted = min(a, gamma + 1, end - p)
            accepted = float(min(a - 1, gamma))
            ok = 1.0 if a >= 2 else 0.0
            out[r, ROUNDS] += 1.0
            out[r, TOKENS] += emitted
            out[r, NOTHING] += 1.0 - ok
            if has_prev:
                if prev_full:
                    out[r, FULL_PAIRS] += 1.0
                    out[r, FULL_OK] += ok
                else:
                    out[r, REJ_PAIRS] += 1.0
                    out[r, REJ_OK] += ok
                out[r, PAIRS] += 1.0
                out[r, SX] += prev_acc
                out[r, SY] += accepted
                out[r, SXX] += prev_acc * prev_acc
                out[r, SYY] += accepted * accepted
                out[r, SXY] += prev_acc * accepted
            prev_full, prev_acc, has_prev = a > gamma, accepted, True
            p += emitted


def position_rows(bank: TraceBank) -> np.ndarray:
    """Per-request position counts, int64 [R, N_POSITION_COLS] (columns LENGTH, GE + k, AT_CAP)."""
    out = np.zeros((len(bank), N_POSITION_COLS), dtype=np.int64)
    position_rows_kernel(bank.acc_len, bank.offsets, bank.cap, out)
    return out


def round_rows(bank: TraceBank, gamma: int) -> np.ndarray:
    """Per-request replay counts at draft length ``gamma`` ≥ 0, float64 [R, N_ROUND_COLS]."""
    if isinstance(gamma, bool) or not isinstance(gamma, (int, np.integer)) or gamma < 0:
        raise ValueError(f"gamma={gamma!r} is invalid; allowed: an integer ≥ 0")
    out = np.zeros((len(bank), N_ROUND_COLS))
    round_rows_kernel(bank.acc_len, bank.offsets, int(gamma), out)
    return out


def _ratio(num, den):
    """num / den elementwise, NaN where den = 0."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


# ---------------------------------------------------------------------- the statistics (of summed rows)
def alpha_by_depth(pos) -> np.ndarray:
    """α_d = P(acc_len ≥ d + 2 | acc_len ≥ d + 1), d = 0 … N_DEPTHS − 1: the share of positions
    (pooled over every position of every request) whose drafted token d + 1 is accepted among
    those whose tokens 1 … d are. ``pos``: summed position rows [..., N_POSITION_COLS]."""
    pos = np.asarray(pos)
    return np.stack([_ratio(pos[..., GE + d + 1], pos[..., GE + d]) for d in range(N_DEPTHS)], axis=-1)


def share_at_cap(pos):
    """The share of positions whose acc_len equals the bank's cap ("at least cap")."""
    pos = np.asarray(pos)
    return _ratio(pos[..., AT_CAP], pos[..., LENGTH])


def request_alpha0(pos_rows: np.ndarray) -> np.ndarray:
    """Each request's α_0: the share of its positions with acc_len ≥ 2 (per-request rows in, [R] out)."""
    return _ratio(pos_rows[:, GE + 1], pos_rows[:, LENGTH])


def tokens_per_round(rnd):
    """Tokens emitted per round (accepted drafted tokens + the correction or bonus token), pooled
    over the rounds of every request decoded from its start at a fixed γ."""
    rnd = np.asarray(rnd)
    return _ratio(rnd[..., TOKENS], rnd[..., ROUNDS])


def iid_tokens_per_round(alpha, gamma: int):
    """The i.i.d. model's E[N] = (1 − α^(γ+1)) / (1 − α) (γ + 1 at α = 1): tokens per round when
    every drafted token is accepted independently with probability α."""
    alpha = np.asarray(alpha, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(alpha < 1.0, (1.0 - alpha ** (gamma + 1)) / np.where(alpha < 1.0, 1.0 - alpha, 1.0),
                        gamma + 1.0)


def p_nothing_accepted(rnd):
    """P(no drafted token accepted): the share of rounds starting at a position with acc_len = 1."""
    rnd = np.asarray(rnd)
    return _ratio(rnd[..., NOTHING], rnd[..., ROUNDS])


def first_after_full(rnd):
    """First-token acceptance (acc_len ≥ 2) of a round that follows, in the same request, a fully
    accepted round (its acc_len > γ)."""
    rnd = np.asarray(rnd)
    return _ratio(rnd[..., FULL_OK], rnd[..., FULL_PAIRS])


def first_after_rejected(rnd):
    """First-token acceptance (acc_len ≥ 2) of a round that follows, in the same request, a round
    with a rejection (its acc_len ≤ γ)."""
    rnd = np.asarray(rnd)
    return _ratio(rnd[..., REJ_OK], rnd[..., REJ_PAIRS])


def lag1_correlation(rnd):
    """Pearson correlation of successive rounds' accepted counts (A_t, A_t+1), pairs taken within
    each request and pooled over requests; NaN when either count is constant."""
    rnd = np.asarray(rnd, dtype=float)
    n = rnd[..., PAIRS]
    mx, my = _ratio(rnd[..., SX], n), _ratio(rnd[..., SY], n)
    cov = _ratio(rnd[..., SXY], n) - mx * my
    vx = _ratio(rnd[..., SXX], n) - mx * mx
    vy = _ratio(rnd[..., SYY], n) - my * my
    v = vx * vy
    return _ratio(cov, np.sqrt(np.where(v > 1e-12, v, 0.0)))


# ---------------------------------------------------------------------- all of them, by key
#: per-round statistics (each at every γ), in the order of the per-round table
ROUND_STATS = ("tokens", "iid_tokens", "p_nothing", "after_full", "after_rejected", "lag1")
#: request statistics: length median / p90 and the per-request α_0 p10 / median / p90
REQUEST_STATS = ("length_median", "length_p90", "alpha0_p10", "alpha0_median", "alpha0_p90")


def key(stat: str, gamma: int | None = None) -> str:
    """A statistic's key in :func:`measure`'s dict: ``"alpha_3"``, ``"at_cap"``, ``"tokens@4"``, …"""
    return stat if gamma is None else f"{stat}@{gamma}"


def _check_gammas(gammas) -> tuple[int, ...]:
    """The γ's as a tuple of ints ≥ 1, or a ValueError."""
    gammas = tuple(gammas)
    if not gammas or any(isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 1 for g in gammas):
        raise ValueError(f"gammas={gammas!r} is invalid; allowed: a non-empty sequence of integers ≥ 1")
    return tuple(int(g) for g in gammas)


def _pooled(pos, rounds: dict[int, np.ndarray]) -> dict[str, np.ndarray]:
    """The pooled statistics from summed position rows and summed round rows per γ."""
    out = {}
    alpha = alpha_by_depth(pos)
    for d in range(N_DEPTHS):
        out[key(f"alpha_{d}")] = alpha[..., d]
    out["at_cap"] = share_at_cap(pos)
    for g, rnd in rounds.items():
        out[key("tokens", g)] = tokens_per_round(rnd)
        out[key("iid_tokens", g)] = iid_tokens_per_round(alpha[..., 0], g)
        out[key("p_nothing", g)] = p_nothing_accepted(rnd)
        out[key("after_full", g)] = first_after_full(rnd)
        out[key("after_rejected", g)] = first_after_rejected(rnd)
        out[key("lag1", g)] = lag1_correlation(rnd)
    return out


def _request_figures(lengths: np.ndarray, alpha0: np.ndarray) -> dict[str, np.ndarray]:
    """Length median / p90 and per-request α_0 p10 / median / p90 (last axis: requests)."""
    lq = np.quantile(lengths, [0.5, 0.9], axis=-1)
    aq = np.quantile(alpha0, [0.1, 0.5, 0.9], axis=-1)
    return dict(zip(REQUEST_STATS, [*lq, *aq]))


def measure(bank: TraceBank, gammas=TARGET_GAMMAS) -> dict[str, float]:
    """Every statistic of ``bank`` by :func:`key`: ``alpha_0`` … ``alpha_5``, ``at_cap``, the
    :data:`ROUND_STATS` at each γ of ``gammas``, the :data:`REQUEST_STATS`, and ``requests``,
    ``positions``, ``cap``. A statistic with no case to count (e.g. no fully accepted round) is NaN."""
    gammas = _check_gammas(gammas)
    pos_rows = position_rows(bank)
    rounds = {g: round_rows(bank, g).sum(axis=0) for g in gammas}
    out = {k: float(v) for k, v in _pooled(pos_rows.sum(axis=0), rounds).items()}
    out.update({k: float(v) for k, v in _request_figures(bank.lengths.astype(float), request_alpha0(pos_rows)).items()})
    out.update(requests=float(len(bank)), positions=float(bank.acc_len.size), cap=float(bank.cap))
    return out


def bootstrap(bank: TraceBank, gammas=TARGET_GAMMAS, n: int = 1000, seed: int = 0,
              level: float = 0.95) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals over requests: ``n`` resamples of R requests drawn with
    replacement (a Generator seeded by ``seed``), each statistic of :func:`measure` recomputed
    from the resampled requests' rows; → {key: (low, high)} at ``level`` (0.95: 2.5 % / 97.5 %)."""
    gammas = _check_gammas(gammas)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= n <= MAX_BOOT_CELLS // len(bank):
        raise ValueError(f"n={n!r} is invalid for a bank of {len(bank)} requests; allowed: an integer in [2, "
                         f"{MAX_BOOT_CELLS // len(bank)}] (n × requests at most {MAX_BOOT_CELLS})")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level={level!r} is invalid; allowed: a number in (0, 1)")
    rng = np.random.default_rng(seed)
    r = len(bank)
    pick = rng.integers(r, size=(int(n), r))
    weights = np.zeros((int(n), r))
    np.add.at(weights, (np.repeat(np.arange(int(n)), r), pick.ravel()), 1.0)
    pos_rows = position_rows(bank)
    rounds = {g: weights @ round_rows(bank, g) for g in gammas}
    figures = _pooled(weights @ pos_rows, rounds)
    figures.update(_request_figures(bank.lengths.astype(float)[pick], request_alpha0(pos_rows)[pick]))
    tail = (1.0 - level) / 2.0
    out = {}
    for k, v in figures.items():
        v = v[np.isfinite(v)]
        out[k] = (float(np.quantile(v, tail)), float(np.quantile(v, 1.0 - tail))) if v.size else (math.nan, math.nan)
    return out


# ---------------------------------------------------------------------- the CLI's tables
# The three tables of a bank's statistics, as text (the CLI's ``stats`` output).
#
# 1. acceptance by depth: requests, positions, α_0 … α_5, the cap, the share of positions at the cap;
# 2. per round, one row per γ: tokens per round (the i.i.d. model's prediction at α_0) ·
#    P(no drafted token accepted) · first-token acceptance after a fully accepted / a rejected
#    round · lag-1 correlation of successive rounds' accepted counts;
# 3. requests: length median / p90 and the per-request α_0 p10 / median / p90.
#
# With bootstrap intervals, each figure is followed by its 95 % interval ``[low, high]``.


def _f(v: float, digits: int = 2) -> str:
    """A number with ``digits`` decimals, or n/a."""
    return "n/a" if not math.isfinite(v) else f"{v:.{digits}f}"


def _cell(figures, intervals, k, digits=2, percent=False) -> str:
    """A figure as text, with its interval when given."""
    v = figures[k]
    scale, unit = (100.0, "%") if percent else (1.0, "")
    d = 1 if percent else digits
    text = _f(v * scale, d) + unit
    if intervals is not None and k in intervals:
        lo, hi = intervals[k]
        text += f" [{_f(lo * scale, d)}, {_f(hi * scale, d)}]"
    return text


def depth_table(figures: dict[str, float], intervals=None) -> str:
    """Table 1: acceptance by depth, the cap and the share of positions at the cap."""
    cells = [f"{int(figures['requests'])}", f"{int(figures['positions'])}"]
    cells += [_cell(figures, intervals, key(f"alpha_{d}")) for d in range(N_DEPTHS)]
    cells += [f"{int(figures['cap'])}", _cell(figures, intervals, "at_cap", percent=True)]
    head = ["requests", "positions", *[f"α_{d}" for d in range(N_DEPTHS)], "cap", "at cap"]
    return _grid("acceptance by depth: α_d = P(acc_len ≥ d + 2 | acc_len ≥ d + 1), pooled over positions",
                 head, [cells])


def round_table(figures: dict[str, float], gammas, intervals=None) -> str:
    """Table 2: per-round figures, one row per γ."""
    rows = []
    for g in gammas:
        rows.append([str(g),
                     f"{_cell(figures, intervals, key('tokens', g))} ({_f(figures[key('iid_tokens', g)])})",
                     _cell(figures, intervals, key("p_nothing", g)),
                     (f"{_cell(figures, intervals, key('after_full', g))} / "
                      f"{_cell(figures, intervals, key('after_rejected', g))}"),
                     _cell(figures, intervals, key("lag1", g))])
    head = ["γ", "tokens/round (i.i.d. at α_0)", "P(none accepted)", "first token after full / rejected", "lag-1"]
    return _grid("per round (each request decoded from its start at a fixed γ, rounds pooled)", head, rows)


def request_table(figures: dict[str, float], intervals=None) -> str:
    """Table 3: request length median / p90 and per-request α_0 p10 / median / p90."""
    cells = [_cell(figures, intervals, "length_median", 0), _cell(figures, intervals, "length_p90", 0),
             _cell(figures, intervals, "alpha0_p10"), _cell(figures, intervals, "alpha0_median"),
             _cell(figures, intervals, "alpha0_p90")]
    head = ["length median", "length p90", "α_0 p10", "α_0 median", "α_0 p90"]
    return _grid("requests (per-request α_0: the share of its positions with acc_len ≥ 2)", head, [cells])


def _grid(title: str, head: list[str], rows: list[list[str]]) -> str:
    """A title, a header and right-aligned rows."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([title, line(head), *(line(r) for r in rows)])


def tables(figures: dict[str, float], gammas, intervals=None) -> str:
    """The three tables, separated by blank lines."""
    return "\n\n".join([depth_table(figures, intervals), round_table(figures, gammas, intervals),
                        request_table(figures, intervals)])


__all__ = ["MAX_BOOT_CELLS", "N_DEPTHS", "REQUEST_STATS", "ROUND_STATS", "TARGET_GAMMAS", "alpha_by_depth", "bootstrap",
           "first_after_full", "first_after_rejected", "iid_tokens_per_round", "key", "lag1_correlation", "measure",
           "p_nothing_accepted", "position_rows", "request_alpha0", "round_rows", "share_at_cap", "tokens_per_round",
           "depth_table", "request_table", "round_table", "tables"]
