"""Acceptance from traces (model §12): each device replays requests of a trace bank.

A bank (:mod:`msenv.traces`) holds per request an array ``acc_len``: the tokens emitted if drafting
starts at that output position with a draft long enough (the correction or bonus token included).
A device at position p of its request, drafting γ tokens, has its first rejection at F = acc_len[p]
— model §3's F read from data instead of drawn: it emits min(F, γ + 1) tokens (never past the
request's end), needs a correction iff F ≤ γ, and moves on to p + its tokens. At a request's end the
device starts its next request at the next round. Requests come from the config's split of the
bank: each device's first request from a random position (so episodes see request switches), the
next :data:`~msenv.engine.state.TRACE_POOL` drawn at reset (request j of a device is the same
whatever the controller), later ones from the step's draws. The channel, the reactive stage and the
latencies are the paper scenario's; the round is the one shared round kernel.

The server never sees ``acc_len`` ahead of the round nor a request's length: the observation shows
each device's acceptance so far in its request, its last H rounds (draft length, accepted count,
rejection; cleared at a request switch) and the tokens its request has generated. ``info`` adds the
round's truth (``acc_len``) and the request ends; the oracle context adds the coming round's F.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..config.system import SystemConfig
from ..model import channel
from ..model.goodput import kernel_outputs, kernel_result, round_rows
from ..model.slots import COUNT, HISTORY, INT_ROW, ROUND_PARAM, STEP_PARAM
from ..traces.sources import bank_of
from .context import RoundContext
from .kinds import REQUEST_INFO, Engine, InfoKey
from .observation import DS, PROGRESS_SCALE, gain_slots
from .state import TRACE_POOL, step_constants
from .state import layout as draw_layout

#: the round's truth of a trace, for analysis (never in the observation)
TRACE_INFO = (InfoKey("acc_len", "int [K]: the trace's acc_len at each device's position this round (its first "
                                 "rejection F; traces only, never in the observation)"),) + REQUEST_INFO


# ---------------------------------------------------------------------- the compiled round
@njit(cache=True)
def pick(u, requests):
    """The request a uniform ``u`` picks from the split's ``requests`` (each equally likely)."""
    n = requests.shape[0]
    return requests[min(int(u * n), n - 1)]


@njit(cache=True, error_model="numpy")
def trace_slots(obs, nf, gamma_max, position, history, rounds, counts):
    """The trace entries of every device row of the observation (compiled): the request's
    acceptance so far (1 + A)/(2 + A + R), the last H rounds (γ/γ_max, accepted/γ_max, +1
    rejected / −1 all accepted / 0), tanh(tokens so far / PROGRESS_SCALE)."""
    b, k = position.shape
    h_max = history.shape[2]
    for r in range(b):
        for i in range(k):
            j = nf * i
            a, rej = counts[r, i, COUNT.accepted], counts[r, i, COUNT.rejected]
            obs[r, j + DS.alpha] = (1.0 + a) / (2.0 + a + rej)
            col = j + DS.beta + 1
            for h in range(h_max):
                if h < rounds[r, i]:
                    g = history[r, i, h, HISTORY.gamma]
                    obs[r, col] = g / gamma_max
                    obs[r, col + 1] = history[r, i, h, HISTORY.accepted] / gamma_max
                    if history[r, i, h, HISTORY.rejected] != 0:
                        obs[r, col + 2] = 1.0
                    elif g > 0:
                        obs[r, col + 2] = -1.0
                    else:
                        obs[r, col + 2] = 0.0
                else:
                    obs[r, col] = obs[r, col + 1] = obs[r, col + 2] = 0.0
                col += 3
            obs[r, col] = np.tanh(position[r, i] / PROGRESS_SCALE)


class TraceState(NamedTuple):
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
               history, rounds, counts, acc_len, offsets, requests, consts, fading_at, coins_at, next_at, ints, reals,
               rejected, modes, per_round, f_row, done, obs):
    """The compiled entry of :func:`trace_round`: ``trace_rows(u, gamma, <the round's arrays>,
    *TraceState (read, then written in place), *the bank's arrays, <constants>, *outputs)``.
    Arrays cross from Python one by one (cheaper to dispatch than a tuple of them); inside, the
    round reads them by name."""
    trace_round(u, gamma, t_draft, beta, g_ul, g_dl, p_ul, p_dl, static_obs,
                TraceState(request, position, started, pool, history, rounds, counts), acc_len, offsets, requests,
                consts, fading_at, coins_at, next_at, ints, reals, rejected, modes, per_round, f_row, done, obs)


@njit(cache=True, error_model="numpy")
def trace_round(u, gamma, t_draft, beta, g_ul, g_dl, p_ul, p_dl, static_obs, ts, acc_len, offsets, requests, consts,
                fading_at, coins_at, next_at, ints, reals, rejected, modes, per_round, f_row, done, obs):
    """One round of every row with acceptance from the bank (compiled): F = acc_len at each
    device's position; the round kernel (tokens capped at the request's end); the next round's
    fading; each device's position, history and counts move on, a finished request is followed by
    the next of its pool (past the pool: the step's draw); the next observation. Updates ``ts``
    (:class:`TraceState`) and ``g_ul`` / ``g_dl`` in place."""
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
    gain_slots(obs, g_ul, g_dl, nf, False)
    trace_slots(obs, nf, gamma_max, ts.position, ts.history, ts.rounds, ts.counts)


# ---------------------------------------------------------------------- the engine
class TraceEngine(Engine):
    """Acceptance from a trace bank over the paper scenario's channel (module docstring); its
    ``info`` adds ``acc_len`` and ``request_done``."""

    name = "traces"

    def __init__(self, config: SystemConfig) -> None:
        super().__init__(config)
        self.bank = bank_of(config)  #: the bank's requests (:class:`~msenv.traces.sources.Bank`)
        lay = draw_layout(config)
        self._reset_at, self._step_at = lay["reset"], lay["step"]

    def _extra_info(self):
        return TRACE_INFO

    def reset(self, u):
        s = super().reset(u)
        b, k, h = len(u), self.config.num_devices, self.config.traces.trace_history
        at, bank = self._reset_at, self.bank
        n = len(bank.requests)
        first = bank.requests[np.minimum((u[:, at["trace_first"]] * n).astype(np.int64), n - 1)]
        length = bank.offsets[first + 1] - bank.offsets[first]
        start = np.minimum((u[:, at["trace_start"]] * length).astype(np.int64), length - 1)
        pool_u = u[:, at["trace_pool"]].reshape(b, k, TRACE_POOL)
        pool = bank.requests[np.minimum((pool_u * n).astype(np.int64), n - 1)]
        return s.evolve(request=first, position=start, started=np.ones((b, k), np.int64), request_pool=pool,
                        history=np.zeros((b, k, h, len(HISTORY)), np.int64), history_rounds=np.zeros((b, k), np.int64),
                        accept_counts=np.zeros((b, k, len(COUNT)), np.int64), obs=None)

    def step(self, u, state, gamma):
        if gamma.dtype != np.int64 or not gamma.flags.c_contiguous:
            gamma = np.ascontiguousarray(gamma, dtype=np.int64)
        s, bank = state, self.bank
        n, k = gamma.shape
        ints, reals, rej, modes, per_round = outs = kernel_outputs(n, k, extra=2)
        ts = TraceState(s.request.copy(), s.position.copy(), s.started.copy(), s.request_pool, s.history.copy(),
                        s.history_rounds.copy(), s.accept_counts.copy())
        g_ul, g_dl = s.g_ul.copy(), s.g_dl.copy()
        f_row, done, obs = np.empty((n, k), np.int64), np.empty((n, k), np.bool_), np.empty_like(s.static_obs)
        at = self._step_at
        fading = at["fading"].start if "fading" in at else 0
        trace_rows(u, gamma, s.t_draft, s.beta, g_ul, g_dl, s.p_ul_w, s.p_dl_w, s.static_obs, *ts, bank.acc_len,
                   bank.offsets, bank.requests, step_constants(self.config), fading, at["coins"].start,
                   at["trace_next"].start, *outs, f_row, done, obs)
        res = kernel_result(ints, reals, rej, modes, per_round)
        res.__dict__["info"] = {"acc_len": f_row, "request_done": done}
        return s.evolve(g_ul=g_ul, g_dl=g_dl, t=s.t + 1, obs=obs, request=ts.request, position=ts.position,
                        started=ts.started, history=ts.history, history_rounds=ts.rounds,
                        accept_counts=ts.counts), res

    def observe(self, state):
        if state.obs is not None:
            return state.obs
        out = state.static_obs.copy()
        nf = self.layout.row
        gain_slots(out, state.g_ul, state.g_dl, nf, False)
        trace_slots(out, nf, self.config.gamma_max, state.position, state.history, state.history_rounds,
                    state.accept_counts)
        return out

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
        return RoundContext(rate, state.t_draft[i], state.g_ul[i], state.g_dl[i], p_ul, p_dl, self.config,
                            beta=state.beta[i], history=state.history[i], history_rounds=state.history_rounds[i],
                            request_tokens=state.position[i], oracle=oracle is True, **extra)


__all__ = ["TRACE_INFO", "TraceEngine", "TraceState", "pick", "trace_rows", "trace_slots"]
