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

from ...config.system import SystemConfig
from ...model import channel
from ...model.goodput import kernel_outputs, kernel_result
from ...model.slots import COUNT, HISTORY
from ...traces.model import filter_model, predictive_survival
from ...traces.presets import fitted_model
from ...traces.sources import bank_of
from ..base import REQUEST_INFO, Engine, InfoKey
from ..context import RoundContext
from .traces_round import (
    DEVICES,
    GLOBAL_ROWS,
    NO_BELIEF,
    NO_FILTER,
    NO_SURVIVAL,
    ROUND_ROWS,
    Replay,
    RoundView,
    trace_rows,
    write_rows,
)

#: the next requests of each device drawn at reset (model §12)
TRACE_POOL = 16
#: each history round's entries: γ/γ_max, accepted/γ_max, +1 rejected / −1 all accepted
HISTORY_FEATURES = ("gamma", "accepted", "outcome")
#: points of the level grid of the posterior's filter (``trace_posterior``)
POSTERIOR_LEVELS = 24
#: what only the oracle context holds (a server never sees it; docs/_ext/msenv_docs.py writes each
#: id's "What a server can know" from this and the contexts' fields)
HIDDEN = {
    "first_rejection": "each device's first-rejection position this round (the trace's future, `acc_len`)",
    "hidden_level": "the level z of each device's request (a bank drawn from the fitted model)",
    "hidden_high": "the hidden state at each device's position (1: high; a bank drawn from the fitted model)",
}
#: what the context's ``alpha`` is under this kind: there is no α to observe
CONTEXT_ALPHA = ("a trace has no α; `context.alpha` holds each device's acceptance so far in its request, "
                 "(1 + A)/(2 + A + R), a plug-in estimate (the same in `oracle_context`)")
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
    #: float [B] the episode's tokens and time (s) so far
    tokens: np.ndarray
    time: np.ndarray
    #: ``trace_posterior``: each device's posterior of (level, state) at its position [B, K, G, 2]
    #: (:mod:`msenv.traces.model`'s filter), else None
    belief: np.ndarray | None = None
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
    #: the oracle context of a bank drawn from the fitted model (a preset): the level z of each
    #: device's request and its hidden state at its position (1: high) — what a state oracle knows
    hidden_level: np.ndarray | None = None
    hidden_high: np.ndarray | None = None
    #: ``trace_posterior``: the exact filter's predictive P(acc_len > j), j = 0 … γ_max [K, γ_max + 1]
    #: at each device's position, from the rounds of its request (what the observation summarises)
    posterior: np.ndarray | None = None


# ---------------------------------------------------------------------- the engine
class TraceEngine(Engine):
    """Acceptance from a trace bank over the paper scenario's channel (module docstring); its
    ``info`` adds ``acc_len`` and ``request_done``."""

    name = "traces"
    devices = DEVICES
    globals = GLOBAL_ROWS
    round_rows = ROUND_ROWS
    extra_info = TRACE_INFO

    def __init__(self, config: SystemConfig) -> None:
        super().__init__(config)
        self.bank = bank_of(config)  #: the bank's requests (:class:`~msenv.traces.sources.Bank`)
        #: ``trace_posterior``: the source's fitted model on the filter's grid, else None
        self.filter = None
        self._post = NO_FILTER
        if config.traces.trace_posterior:
            fitted = fitted_model(config.traces.trace_source)
            if fitted is None:
                raise ValueError(f"config field trace_posterior=True is invalid for trace_source="
                                 f"{config.traces.trace_source!r}: it has no fitted model; allowed: a preset, a "
                                 "shipped bank with its fit, or published:<set>-<drafter> (or trace_posterior=False)")
            m = self.filter = filter_model(*fitted, levels=POSTERIOR_LEVELS)
            self._post = (True, m.prior, m.trans, m.first, m.cont, m.tail, m.cap, m.z)

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
                           accept_counts=np.zeros((b, k, len(COUNT)), np.int64), tokens=np.zeros(b), time=np.zeros(b),
                           belief=None if self.filter is None else np.repeat(
                               np.repeat(self.filter.prior[None, None], b, axis=0), k, axis=1))
        return state._replace(static_obs=self.observation.episode(state))

    def step(self, u, state, gamma):
        gamma = self.rows(gamma)
        s, bank = state, self.bank
        n, k = gamma.shape
        ints, reals, rej, modes, per_round = outs = kernel_outputs(n, k, extra=2)
        post = self.filter is not None
        ts = Replay(s.request.copy(), s.position.copy(), s.started.copy(), s.request_pool, s.history.copy(),
                    s.history_rounds.copy(), s.accept_counts.copy(), s.belief.copy() if post else NO_BELIEF,
                    s.tokens.copy(), s.time.copy())
        survival = np.empty((n, k, self.config.gamma_max + 1)) if post else NO_SURVIVAL
        g_ul, g_dl = s.g_ul.copy(), s.g_dl.copy()
        f_row, done, obs = np.empty((n, k), np.int64), np.empty((n, k), np.bool_), np.empty_like(s.static_obs)
        at = self.draws["step"]
        fading = at["fading"].start if "fading" in at else 0
        trace_rows(u, gamma, s.t_draft, s.beta, g_ul, g_dl, s.p_ul_w, s.p_dl_w, s.static_obs, *ts, bank.acc_len,
                   bank.offsets, bank.requests, self.constants, self.observation.cols, fading, at["coins"].start,
                   at["trace_next"].start, *self._post, *outs, f_row, done, survival, obs)
        res = kernel_result(ints, reals, rej, modes, per_round, info={"acc_len": f_row, "request_done": done})
        return s._replace(g_ul=g_ul, g_dl=g_dl, t=s.t + 1, obs=obs, request=ts.request, position=ts.position,
                          started=ts.started, history=ts.history, history_rounds=ts.rounds,
                          accept_counts=ts.counts, tokens=ts.tokens, time=ts.time,
                          belief=ts.belief if post else None), res

    def survival(self, belief: np.ndarray) -> np.ndarray:
        """The filter's predictive P(acc_len > j), j = 0 … γ_max, of beliefs [B, K, G, 2] → [B, K, γ_max + 1]."""
        m = self.filter
        out = np.empty(belief.shape[:2] + (self.config.gamma_max + 1,))
        for r in range(len(belief)):
            predictive_survival(belief[r], m.trans, m.first, m.cont, m.tail, m.cap, out[r])
        return out

    def view(self, state):
        post = self.filter is not None
        return RoundView(state.g_ul, state.g_dl, state.position, state.history, state.history_rounds,
                         state.accept_counts, self.config.gamma_max, state.belief if post else NO_BELIEF,
                         self.survival(state.belief) if post else NO_SURVIVAL, self._post[-1], state.p_ul_w,
                         state.p_dl_w, self.constants, state.tokens, state.time)

    def write_round(self, out, view):
        write_rows(out, self.layout.row, self.observation.cols, view)

    def _context(self, state, index, oracle):
        i = slice(None) if index is None else index
        counts = state.accept_counts[i]
        rate = (1.0 + counts[..., COUNT.accepted]) / (2.0 + counts[..., COUNT.accepted] + counts[..., COUNT.rejected])
        extra = {}
        if oracle in (True, "alpha"):  # the trace's future: the coming round's first rejections
            bank = self.bank
            req, pos = state.request[i], state.position[i]
            extra["first_rejection"] = np.minimum(bank.acc_len[bank.offsets[req] + pos], self.config.gamma_max + 1)
            if bank.levels is not None:
                extra.update(hidden_level=bank.levels[req], hidden_high=bank.high[bank.offsets[req] + pos])
        p_ul = state.p_ul_w[i] if index is None else float(state.p_ul_w[i])
        p_dl = state.p_dl_w[i] if index is None else float(state.p_dl_w[i])
        if self.filter is not None:
            extra["posterior"] = self.survival(state.belief[i][None] if index is not None else state.belief)
            if index is not None:
                extra["posterior"] = extra["posterior"][0]
        return TraceContext(rate, state.t_draft[i], state.g_ul[i], state.g_dl[i], p_ul, p_dl, self.config,
                            beta=state.beta[i], history=state.history[i], history_rounds=state.history_rounds[i],
                            request_tokens=state.position[i], oracle=oracle is True, **extra)


__all__ = ["HISTORY_FEATURES", "POSTERIOR_LEVELS", "TRACE_INFO", "TRACE_POOL", "TraceContext", "TraceEngine",
           "TraceState"]
