"""Acceptance from traces (model §12): each device replays requests of a trace bank.

A bank (:mod:`msenv.traces`) holds per request an array ``acc_len``: the tokens emitted if drafting
starts at that output position with a draft long enough (the correction or bonus token included).
A device at position p of its request, drafting γ tokens, has its first rejection at F = acc_len[p]
— model §3's F read from data instead of drawn: it emits min(F, γ + 1) tokens (never past the
request's end), needs a correction iff F ≤ γ, and moves on to p + its tokens. At a request's end the
device starts its next request at the next round. Requests come from the config's split of the
bank (:func:`msenv.traces.sources.bank_of`): each device's first request from a random position (so
episodes see request switches), the next :data:`TRACE_POOL` drawn at reset (request j of a device is
the same whatever the controller), later ones from the step's draws. The channel, the reactive
stage and the latencies are the paper scenario's; the round is the one shared round kernel.

The kind owns its state (:class:`TraceState`), its context (:class:`TraceContext`), its observation
table (:data:`DEVICES`) and its draws: the paper scenario's, then at reset each device's first
request K, where in it the device starts K and its next requests K·TRACE_POOL, and per step a
request past that pool K (the step's outcome uniforms are drawn but unused: the trace is the outcome).

The server never sees ``acc_len`` ahead of the round nor a request's length: the observation shows
each device's acceptance so far in its request, its last H rounds (draft length, accepted count,
rejection; cleared at a request switch) and the tokens its request has generated. ``info`` adds the
round's truth (``acc_len``) and the request ends; the oracle context adds the coming round's F.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from ..config.system import SystemConfig
from ..model import channel
from ..model.goodput import kernel_outputs, kernel_result, round_rows
from ..model.slots import COUNT, HISTORY, INT_ROW, ROUND_PARAM, STEP_PARAM
from ..traces.sources import bank_of
from .base import REQUEST_INFO, Engine, InfoKey
from .context import RoundContext
from .observation import BETA, G_DL, G_UL, SPEED, Feature, round_writer

#: the next requests of each device drawn at reset (model §12)
TRACE_POOL = 16
#: each history round's entries: γ/γ_max, accepted/γ_max, +1 rejected / −1 all accepted
HISTORY_FEATURES = ("gamma", "accepted", "outcome")
#: the progress entry is tanh(tokens of the request so far / PROGRESS_SCALE)
PROGRESS_SCALE = 256.0
#: the round's truth of a trace, for analysis (never in the observation)
TRACE_INFO = (InfoKey("acc_len", "int [K]: the trace's acc_len at each device's position this round (its first "
                                 "rejection F; traces only, never in the observation)"),) + REQUEST_INFO


class TraceState(NamedTuple):
    """The state of B environments replaying traces (leading axis B)."""

    distance: np.ndarray  #: m [B, K]
    beta: np.ndarray  #: large-scale gain [B, K]
    task: np.ndarray  #: int [B, K] (drawn as the paper scenario's; traces have no task)
    alpha: np.ndarray  #: [B, K] the task's α (unused: the trace is the outcome)
    t_draft: np.ndarray  #: s per token [B, K]
    p_ul_w: np.ndarray  #: W [B]
    p_dl_w: np.ndarray  #: W [B]
    g_ul: np.ndarray  #: the coming round's UL power gain [B, K]
    g_dl: np.ndarray  #: the coming round's DL power gain [B, K]
    t: np.ndarray  #: rounds played [B]
    static_obs: np.ndarray  #: float32 [B, obs_size]: the observation's per-episode entries
    #: int [B, K] each device's request (its index in the bank) and position in it
    request: np.ndarray
    position: np.ndarray
    #: int [B, K] requests each device has started this episode (1 after the reset)
    started: np.ndarray
    #: int [B, K, TRACE_POOL] the next requests of each device, drawn at reset
    request_pool: np.ndarray
    #: int [B, K, H, 3] each device's last rounds in its request, newest first: (γ, accepted,
    #: rejected); rows past ``history_rounds`` are zero
    history: np.ndarray
    #: int [B, K] rounds of the request the history holds (at most H)
    history_rounds: np.ndarray
    #: int [B, K, 2] the request's accepted drafted tokens and rejections so far
    accept_counts: np.ndarray
    #: the observation of this state when the step kernel already wrote it, else None
    obs: np.ndarray | None = None


@dataclass(frozen=True)
class TraceContext(RoundContext):
    """What a controller sees under model §12: ``alpha`` is each device's acceptance so far in its
    request, (1 + A)/(2 + A + R) (there is no α); the history of its request; the oracle context
    adds the trace's future (``first_rejection``)."""

    #: each device's last rounds in its request, newest first, int [K, H, 3] (γ, accepted,
    #: rejected; :data:`~msenv.model.slots.HISTORY`), the rounds it holds [K], and the tokens the
    #: request has generated so far [K]
    history: np.ndarray | None = None
    history_rounds: np.ndarray | None = None
    request_tokens: np.ndarray | None = None
    #: the oracle context only: each device's first-rejection position this round, F_k = acc_len at
    #: its position, capped at γ_max + 1 (a draft of γ_k emits min(F_k, γ_k + 1) tokens, rejected
    #: iff F_k ≤ γ_k) — the trace's future, for named oracle controllers only
    first_rejection: np.ndarray | None = None


# ---------------------------------------------------------------------- the observation
class RoundView(NamedTuple):
    """What the trace's per-round rows read."""

    g_ul: np.ndarray
    g_dl: np.ndarray
    position: np.ndarray  #: [B, K] each device's position in its request
    history: np.ndarray  #: [B, K, H, 3]
    rounds: np.ndarray  #: [B, K] rounds the history holds
    counts: np.ndarray  #: [B, K, 2] accepted tokens and rejections so far
    gamma_max: int


@njit(cache=True, error_model="numpy")
def write_accept_rate(out, nf, col, v):
    """(1 + A) / (2 + A + R): the request's acceptance so far."""
    b, k = v.position.shape
    for r in range(b):
        for i in range(k):
            a, rej = v.counts[r, i, COUNT.accepted], v.counts[r, i, COUNT.rejected]
            out[r, nf * i + col] = (1.0 + a) / (2.0 + a + rej)


@njit(cache=True, error_model="numpy")
def write_history(out, nf, col, v):
    """The last H rounds: γ/γ_max, accepted/γ_max, +1 rejected / −1 all accepted / 0 (none)."""
    b, k = v.position.shape
    h_max = v.history.shape[2]
    for r in range(b):
        for i in range(k):
            c = nf * i + col
            for h in range(h_max):
                if h < v.rounds[r, i]:
                    g = v.history[r, i, h, HISTORY.gamma]
                    out[r, c] = g / v.gamma_max
                    out[r, c + 1] = v.history[r, i, h, HISTORY.accepted] / v.gamma_max
                    if v.history[r, i, h, HISTORY.rejected] != 0:
                        out[r, c + 2] = 1.0
                    elif g > 0:
                        out[r, c + 2] = -1.0
                    else:
                        out[r, c + 2] = 0.0
                else:
                    out[r, c] = out[r, c + 1] = out[r, c + 2] = 0.0
                c += 3


@njit(cache=True, error_model="numpy")
def write_progress(out, nf, col, v):
    """tanh(tokens the request has generated / PROGRESS_SCALE)."""
    b, k = v.position.shape
    for r in range(b):
        for i in range(k):
            out[r, nf * i + col] = np.tanh(v.position[r, i] / PROGRESS_SCALE)


def _history_entries(cfg: SystemConfig) -> tuple[tuple[str, str], ...]:
    out = []
    for h in range(1, cfg.traces.trace_history + 1):
        when = "the last round" if h == 1 else f"{h} rounds ago"
        out += [(f"h{h}_gamma", f"γ / γ_max of {when} in the request (0 before its first rounds)"),
                (f"h{h}_accepted", f"accepted drafted tokens / γ_max of {when}"),
                (f"h{h}_outcome", f"+1 if {when} had a rejection, −1 if it drafted and all was accepted, 0 otherwise")]
    return tuple(out)


#: the observation's device rows (the globals: the budgets)
DEVICES = (
    Feature("accept_rate", "(1 + A) / (2 + A + R): the acceptance of the device's request so far (A accepted "
                           "drafted tokens, R rejections since the request began; no α exists)", write_accept_rate),
    SPEED, G_UL, G_DL, BETA,
    Feature("history", "", write_history, names=_history_entries),
    Feature("progress", f"tanh(tokens the request has generated / {PROGRESS_SCALE:g}) (never its length)",
            write_progress),
)
#: the rows the compiled step writes after every round, in the driver's order
ROUND_ROWS = tuple(f for f in DEVICES if f.per == "round")
write_round = round_writer(tuple(f.write for f in ROUND_ROWS))


# ---------------------------------------------------------------------- the compiled round
@njit(cache=True)
def pick(u, requests):
    """The request a uniform ``u`` picks from the split's ``requests`` (each equally likely)."""
    n = requests.shape[0]
    return requests[min(int(u * n), n - 1)]


class Replay(NamedTuple):
    """The trace part of the state a round reads and writes (int arrays [B, K] unless noted)."""

    request: np.ndarray  #: each device's request (its index in the bank)
    position: np.ndarray  #: its position in the request
    started: np.ndarray  #: requests it has started this episode
    pool: np.ndarray  #: [B, K, TRACE_POOL] its next requests, drawn at reset
    history: np.ndarray  #: [B, K, H, 3] its last rounds in the request, newest first
    rounds: np.ndarray  #: rounds the history holds
    counts: np.ndarray  #: [B, K, 2] accepted tokens and rejections so far in the request


@njit(cache=True, error_model="numpy")
def trace_rows(u, gamma, t_draft, beta, g_ul, g_dl, p_ul, p_dl, static_obs, request, position, started, pool,
               history, rounds, counts, acc_len, offsets, requests, consts, cols, fading_at, coins_at, next_at, ints,
               reals, rejected, modes, per_round, f_row, done, obs):
    """The compiled entry of :func:`trace_round`: ``trace_rows(u, gamma, <the round's arrays>,
    *Replay (read, then written in place), *the bank's arrays, <constants>, *outputs)``.
    Arrays cross from Python one by one (cheaper to dispatch than a tuple of them); inside, the
    round reads them by name."""
    trace_round(u, gamma, t_draft, beta, g_ul, g_dl, p_ul, p_dl, static_obs,
                Replay(request, position, started, pool, history, rounds, counts), acc_len, offsets, requests,
                consts, cols, fading_at, coins_at, next_at, ints, reals, rejected, modes, per_round, f_row, done, obs)


@njit(cache=True, error_model="numpy")
def trace_round(u, gamma, t_draft, beta, g_ul, g_dl, p_ul, p_dl, static_obs, ts, acc_len, offsets, requests, consts,
                cols, fading_at, coins_at, next_at, ints, reals, rejected, modes, per_round, f_row, done, obs):
    """One round of every row with acceptance from the bank (compiled): F = acc_len at each
    device's position; the round kernel (tokens capped at the request's end); the next round's
    fading; each device's position, history and counts move on, a finished request is followed by
    the next of its pool (past the pool: the step's draw); the next observation. Updates ``ts``
    (:class:`Replay`) and ``g_ul`` / ``g_dl`` in place."""
    n, k = gamma.shape
    params, step = consts[: len(ROUND_PARAM)], consts[len(ROUND_PARAM):]
    cap, redraw = int(step[STEP_PARAM.gamma_cap]), step[STEP_PARAM.fading_redraw] != 0
    independent, random_policy = step[STEP_PARAM.independent_links] != 0, step[STEP_PARAM.random_policy] != 0
    nf, gamma_max = int(step[STEP_PARAM.device_features]), cap - 1
    first_rej, left = ints[INT_ROW.first_rejection], ints[INT_ROW.tokens_left]
    for r in range(n):
        for i in range(k):
            req, pos = ts.request[r, i], ts.position[r, i]
            f = acc_len[offsets[req] + pos]
            f_row[r, i] = f
            first_rej[r, i] = min(f, cap)
            left[r, i] = offsets[req + 1] - offsets[req] - pos
    coins = np.ascontiguousarray(u[:, coins_at:coins_at + k]) if random_policy else np.zeros((1, 1))
    round_rows(gamma, first_rej, t_draft, g_ul, g_dl, p_ul, p_dl, coins, left, True, params, ints, reals, rejected,
               modes, per_round)
    served, accepted = ints[INT_ROW.served], ints[INT_ROW.accepted]
    h_max = ts.history.shape[2]
    pool_size = ts.pool.shape[2]
    for r in range(n):
        for i in range(k):
            if redraw:
                g_ul[r, i], g_dl[r, i] = channel.block_fading_scalar(u[r], fading_at, i, k, beta[r, i], independent)
            pos = ts.position[r, i] + served[r, i]
            done[r, i] = pos >= left[r, i] + ts.position[r, i]
            if done[r, i]:  # the next request starts the next round, its history empty
                j = ts.started[r, i]
                ts.request[r, i] = ts.pool[r, i, j - 1] if j <= pool_size else pick(u[r, next_at + i], requests)
                ts.started[r, i] = j + 1
                ts.position[r, i] = 0
                ts.rounds[r, i] = 0
                ts.counts[r, i, COUNT.accepted] = ts.counts[r, i, COUNT.rejected] = 0
                for h in range(h_max):
                    ts.history[r, i, h, HISTORY.gamma] = ts.history[r, i, h, HISTORY.accepted] = 0
                    ts.history[r, i, h, HISTORY.rejected] = 0
                continue
            ts.position[r, i] = pos
            for h in range(h_max - 1, 0, -1):
                ts.history[r, i, h, HISTORY.gamma] = ts.history[r, i, h - 1, HISTORY.gamma]
                ts.history[r, i, h, HISTORY.accepted] = ts.history[r, i, h - 1, HISTORY.accepted]
                ts.history[r, i, h, HISTORY.rejected] = ts.history[r, i, h - 1, HISTORY.rejected]
            ts.history[r, i, 0, HISTORY.gamma] = gamma[r, i]
            ts.history[r, i, 0, HISTORY.accepted] = accepted[r, i]
            ts.history[r, i, 0, HISTORY.rejected] = 1 if rejected[r, i] else 0
            ts.rounds[r, i] = min(ts.rounds[r, i] + 1, h_max)
            ts.counts[r, i, COUNT.accepted] += accepted[r, i]
            ts.counts[r, i, COUNT.rejected] += 1 if rejected[r, i] else 0
    obs[:] = static_obs
    write_round(obs, nf, cols, RoundView(g_ul, g_dl, ts.position, ts.history, ts.rounds, ts.counts, gamma_max))


# ---------------------------------------------------------------------- the engine
class TraceEngine(Engine):
    """Acceptance from a trace bank over the paper scenario's channel (module docstring); its
    ``info`` adds ``acc_len`` and ``request_done``."""

    name = "traces"
    devices = DEVICES
    round_rows = ROUND_ROWS
    extra_info = TRACE_INFO

    def __init__(self, config: SystemConfig) -> None:
        super().__init__(config)
        self.bank = bank_of(config)  #: the bank's requests (:class:`~msenv.traces.sources.Bank`)

    def draw_parts(self):
        reset, step = super().draw_parts()
        k = self.config.num_devices
        return (reset + [("trace_first", k), ("trace_start", k), ("trace_pool", k * TRACE_POOL)],
                step + [("trace_next", k)])

    def start(self, u, fields):
        cfg, at, bank = self.config, self.draws["reset"], self.bank
        b, k, h = len(u), cfg.num_devices, cfg.traces.trace_history
        g_ul, g_dl = channel.fading_from_uniform(u[:, at["fading"]], fields["beta"], cfg)
        n = len(bank.requests)
        first = bank.requests[np.minimum((u[:, at["trace_first"]] * n).astype(np.int64), n - 1)]
        length = bank.offsets[first + 1] - bank.offsets[first]
        start = np.minimum((u[:, at["trace_start"]] * length).astype(np.int64), length - 1)
        pool_u = u[:, at["trace_pool"]].reshape(b, k, TRACE_POOL)
        pool = bank.requests[np.minimum((pool_u * n).astype(np.int64), n - 1)]
        state = TraceState(**fields, g_ul=g_ul, g_dl=g_dl, t=np.zeros(b, np.int64), static_obs=None, request=first,
                           position=start, started=np.ones((b, k), np.int64), request_pool=pool,
                           history=np.zeros((b, k, h, len(HISTORY)), np.int64),
                           history_rounds=np.zeros((b, k), np.int64),
                           accept_counts=np.zeros((b, k, len(COUNT)), np.int64))
        return state._replace(static_obs=self.observation.episode(state))

    def step(self, u, state, gamma):
        gamma = self.rows(gamma)
        s, bank = state, self.bank
        n, k = gamma.shape
        ints, reals, rej, modes, per_round = outs = kernel_outputs(n, k, extra=2)
        ts = Replay(s.request.copy(), s.position.copy(), s.started.copy(), s.request_pool, s.history.copy(),
                    s.history_rounds.copy(), s.accept_counts.copy())
        g_ul, g_dl = s.g_ul.copy(), s.g_dl.copy()
        f_row, done, obs = np.empty((n, k), np.int64), np.empty((n, k), np.bool_), np.empty_like(s.static_obs)
        at = self.draws["step"]
        fading = at["fading"].start if "fading" in at else 0
        trace_rows(u, gamma, s.t_draft, s.beta, g_ul, g_dl, s.p_ul_w, s.p_dl_w, s.static_obs, *ts, bank.acc_len,
                   bank.offsets, bank.requests, self.constants, self.observation.cols, fading, at["coins"].start,
                   at["trace_next"].start, *outs, f_row, done, obs)
        res = kernel_result(ints, reals, rej, modes, per_round, info={"acc_len": f_row, "request_done": done})
        return s._replace(g_ul=g_ul, g_dl=g_dl, t=s.t + 1, obs=obs, request=ts.request, position=ts.position,
                          started=ts.started, history=ts.history, history_rounds=ts.rounds,
                          accept_counts=ts.counts), res

    def view(self, state):
        return RoundView(state.g_ul, state.g_dl, state.position, state.history, state.history_rounds,
                         state.accept_counts, self.config.gamma_max)

    def write_round(self, out, view):
        write_round(out, self.layout.row, self.observation.cols, view)

    def _context(self, state, index, oracle):
        i = slice(None) if index is None else index
        counts = state.accept_counts[i]
        rate = (1.0 + counts[..., COUNT.accepted]) / (2.0 + counts[..., COUNT.accepted] + counts[..., COUNT.rejected])
        extra = {}
        if oracle in (True, "alpha"):  # the trace's future: the coming round's first rejections
            bank = self.bank
            req, pos = state.request[i], state.position[i]
            extra["first_rejection"] = np.minimum(bank.acc_len[bank.offsets[req] + pos], self.config.gamma_max + 1)
        p_ul = state.p_ul_w[i] if index is None else float(state.p_ul_w[i])
        p_dl = state.p_dl_w[i] if index is None else float(state.p_dl_w[i])
        return TraceContext(rate, state.t_draft[i], state.g_ul[i], state.g_dl[i], p_ul, p_dl, self.config,
                            beta=state.beta[i], history=state.history[i], history_rounds=state.history_rounds[i],
                            request_tokens=state.position[i], oracle=oracle is True, **extra)


__all__ = ["DEVICES", "HISTORY_FEATURES", "PROGRESS_SCALE", "ROUND_ROWS", "Replay", "TRACE_INFO", "TRACE_POOL",
           "TraceContext", "TraceEngine", "TraceState", "pick", "trace_rows"]
