"""Acceptance from traces, compiled (model §12): the round of :class:`~msenv.engine.kinds.traces.TraceEngine`
and the observation table it writes (the kind's own; :mod:`msenv.engine.kinds.traces` has the rest).

:data:`DEVICES`: the request's acceptance so far, the paper's entries, the device's last H rounds,
the tokens its request has generated and, with ``trace_posterior``, the exact filter's summaries of
its hidden state. :func:`trace_round` plays a round of every row (entered through :func:`trace_rows`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ...config.system import SystemConfig
from ...model import channel, reactive
from ...model.goodput import round_rows
from ...model.slots import COUNT, HISTORY, INT_ROW, PER_ROUND, ROUND_PARAM, STEP_PARAM
from ...traces.model import HIGH, LOW, filter_update, predictive_survival
from ..observation import BETA, G_DL, G_UL, GLOBALS, SPEED, Feature, round_writer

#: the progress entry is tanh(tokens of the request so far / PROGRESS_SCALE)
PROGRESS_SCALE = 256.0
#: the depths j of the posterior's survival entries P(acc_len > j) (those up to γ_max)
SURVIVAL_DEPTHS = (1, 2, 3, 4, 6, 8, 12)
#: the correction-cost entry is tanh(c / COST_SCALE_S)
COST_SCALE_S = 0.010
#: the throughput entry is tanh((λ − center) / scale), λ = (tokens + prior·1 s) / (time + 1 s) of the episode so far
THROUGHPUT_PRIOR, THROUGHPUT_SCALE = 100.0, 20.0


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
    belief: np.ndarray  #: [B, K, G, 2] the filter's posterior (``trace_posterior``; else a stand-in)
    survival: np.ndarray  #: [B, K, γ_max + 1] its predictive survival (``trace_posterior``; else a stand-in)
    levels: np.ndarray  #: [G] the filter's level grid (``trace_posterior``; else a stand-in)
    p_ul: np.ndarray  #: [B] the budgets, W
    p_dl: np.ndarray
    params: np.ndarray  #: the round kernel's constants (:class:`~msenv.model.slots.RoundParams`)
    tokens: np.ndarray  #: [B] the episode's tokens so far
    time: np.ndarray  #: [B] the episode's time so far, s


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


@njit(cache=True, error_model="numpy")
def write_survival(out, nf, col, v):
    """The filter's predictive P(acc_len > j) at the depths of :data:`SURVIVAL_DEPTHS` up to γ_max
    (j = 1: P(the first drafted token is accepted))."""
    b, k = v.position.shape
    for r in range(b):
        for i in range(k):
            c = nf * i + col
            for j in SURVIVAL_DEPTHS:
                if j <= v.gamma_max:
                    out[r, c] = v.survival[r, i, j]
                    c += 1


@njit(cache=True, error_model="numpy")
def write_p_high(out, nf, col, v):
    """The filter's P(the hidden state at the device's position is high)."""
    b, k = v.position.shape
    for r in range(b):
        for i in range(k):
            total = 0.0
            for g in range(v.belief.shape[2]):
                total += v.belief[r, i, g, HIGH]
            out[r, nf * i + col] = total


@njit(cache=True, error_model="numpy")
def write_level(out, nf, col, v):
    """tanh(E[z] / 2): the filter's posterior mean of the request's level z, squashed."""
    b, k = v.position.shape
    for r in range(b):
        for i in range(k):
            total = 0.0
            for g in range(v.belief.shape[2]):
                total += v.levels[g] * (v.belief[r, i, g, LOW] + v.belief[r, i, g, HIGH])
            out[r, nf * i + col] = np.tanh(0.5 * total)


@njit(cache=True, error_model="numpy")
def write_correction_cost(out, nf, col, v):
    """tanh(c_k / 10 ms), c_k the time of the device's correction alone (the faster of its UL and
    its DL at the full bandwidth and budget: the reactive stage of a round that rejects it alone)."""
    b, k = v.position.shape
    bw, bits = v.params[ROUND_PARAM.bandwidth_hz], v.params[ROUND_PARAM.payload_bits]
    n0_ul, n0_dl = v.params[ROUND_PARAM.n0_ul_w_hz], v.params[ROUND_PARAM.n0_dl_w_hz]
    for r in range(b):
        for i in range(k):
            t_ul = channel.delay_scalar(bits, channel.rate_scalar(bw, v.p_ul[r] * v.g_ul[r, i] / (n0_ul * bw)))
            t_dl = reactive.dl_delay(1.0 / v.g_dl[r, i], v.p_dl[r], n0_dl, bw, bits)
            out[r, nf * i + col] = np.tanh(min(t_ul, t_dl) / COST_SCALE_S)


@njit(cache=True, error_model="numpy")
def write_throughput(out, nf, col, v):
    """tanh((λ − 100) / 20), λ = (tokens + 100 · 1 s) / (time + 1 s): the episode's throughput so far."""
    for r in range(v.tokens.shape[0]):
        lam = (v.tokens[r] + THROUGHPUT_PRIOR) / (v.time[r] + 1.0)
        out[r, col] = np.tanh((lam - THROUGHPUT_PRIOR) / THROUGHPUT_SCALE)


def _survival_entries(cfg: SystemConfig) -> tuple[tuple[str, str], ...]:
    def doc(j: int) -> str:
        tokens = "token is" if j == 1 else f"{j} tokens are"
        return f"P(acc_len > {j}): the filter's probability that the first drafted {tokens} accepted"

    return tuple((f"survival_{j}", doc(j)) for j in SURVIVAL_DEPTHS if j <= cfg.gamma_max)


def _posterior(cfg: SystemConfig) -> bool:
    return cfg.traces.trace_posterior


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
    Feature("survival", "", write_survival, shown=_posterior, names=_survival_entries),
    Feature("p_high", "the filter's P(the device's hidden state is high: a copy, a match)", write_p_high,
            shown=_posterior),
    Feature("level", "tanh(E[z]/2): the filter's posterior mean of the request's level z (N(0, 1) a priori)",
            write_level, shown=_posterior),
    Feature("correction_cost", "tanh(c / 10 ms), c the time the device's correction alone would take (the faster "
                               "of UL and DL at the full bandwidth and budget)", write_correction_cost,
            shown=_posterior),
)
#: the global rows: the budgets, and with the posterior the episode's throughput so far
GLOBAL_ROWS = GLOBALS + (
    Feature("throughput", "tanh((λ − 100)/20), λ = (tokens + 100·1 s)/(time + 1 s) of the episode so far, tokens/s",
            write_throughput, shown=_posterior),
)
#: the rows the compiled step writes after every round, in the driver's order
ROUND_ROWS = tuple(f for f in DEVICES + GLOBAL_ROWS if f.per == "round")
write_round = round_writer(tuple(f.write for f in ROUND_ROWS))


@njit(cache=True)
def write_rows(out, nf, cols, view):
    """:data:`write_round` as a cached kernel of this module, for the calls from Python (a reset's
    observation): the driver's code is compiled once per machine, inside it."""
    write_round(out, nf, cols, view)


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
    belief: np.ndarray  #: [B, K, G, 2] the filter's posterior (``trace_posterior``; else a stand-in)
    tokens: np.ndarray  #: float [B] the episode's tokens so far
    time: np.ndarray  #: float [B] the episode's time so far, s


class Posterior(NamedTuple):
    """The filter of ``trace_posterior`` as the compiled round reads it (:class:`~msenv.traces.model.FilterModel`)."""

    on: bool  #: the config shows the posterior (else the rest are stand-ins)
    prior: np.ndarray  #: [G, 2] a request's prior
    trans: np.ndarray  #: [G, 2, 2] the chain's transitions per level
    first: np.ndarray  #: [G, 2] P(F | S, z)
    cont: np.ndarray  #: [G, 2] P(C | S, z)
    tail: float  #: τ
    cap: int  #: the bank's cap
    levels: np.ndarray  #: [G] the level grid


#: stand-ins of the posterior's arrays where the config does not show it
NO_BELIEF = np.zeros((1, 1, 1, 2))
NO_SURVIVAL = np.zeros((1, 1, 1))
NO_FILTER = (False, np.zeros((1, 2)), np.zeros((1, 2, 2)), np.zeros((1, 2)), np.zeros((1, 2)), 1.0, 2, np.zeros(1))


@njit(cache=True, error_model="numpy")
def trace_rows(u, gamma, t_draft, beta, g_ul, g_dl, p_ul, p_dl, static_obs, request, position, started, pool,
               history, rounds, counts, belief, tokens, time, acc_len, offsets, requests, consts, cols, fading_at,
               coins_at, next_at, posterior, prior, trans, first, cont, tail, cap, levels, ints, reals, rejected, modes,
               per_round, f_row, done, survival, obs):
    """The compiled entry of :func:`trace_round`: ``trace_rows(u, gamma, <the round's arrays>,
    *Replay (read, then written in place), *the bank's arrays, <constants>, *outputs)``.
    Arrays cross from Python one by one (cheaper to dispatch than a tuple of them); inside, the
    round reads them by name."""
    trace_round(u, gamma, t_draft, beta, g_ul, g_dl, p_ul, p_dl, static_obs,
                Replay(request, position, started, pool, history, rounds, counts, belief, tokens, time), acc_len,
                offsets, requests, consts, cols, fading_at, coins_at, next_at,
                Posterior(posterior, prior, trans, first, cont, tail, cap, levels), ints, reals, rejected, modes,
                per_round, f_row, done, survival, obs)


@njit(cache=True, error_model="numpy")
def trace_round(u, gamma, t_draft, beta, g_ul, g_dl, p_ul, p_dl, static_obs, ts, acc_len, offsets, requests, consts,
                cols, fading_at, coins_at, next_at, post, ints, reals, rejected, modes, per_round, f_row, done,
                survival, obs):
    """One round of every row with acceptance from the bank (compiled): F = acc_len at each
    device's position; the round kernel (tokens capped at the request's end); the next round's
    fading; each device's position, history and counts move on, a finished request is followed by
    the next of its pool (past the pool: the step's draw); with ``trace_posterior`` the filter's
    update (a new request: its prior) and its predictive survival; the next observation. Updates
    ``ts`` (:class:`Replay`) and ``g_ul`` / ``g_dl`` in place."""
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
    if post.on:
        for r in range(n):
            filter_update(ts.belief[r], post.trans, post.first, post.cont, post.tail, gamma[r], accepted[r],
                          rejected[r], served[r])
            for i in range(k):
                if done[r, i]:
                    ts.belief[r, i] = post.prior
            predictive_survival(ts.belief[r], post.trans, post.first, post.cont, post.tail, post.cap, survival[r])
    for r in range(n):
        ts.tokens[r] += per_round[PER_ROUND.total_tokens, r]
        ts.time[r] += per_round[PER_ROUND.latency, r]
    obs[:] = static_obs
    write_round(obs, nf, cols, RoundView(g_ul, g_dl, ts.position, ts.history, ts.rounds, ts.counts, gamma_max,
                                         ts.belief, survival, post.levels, p_ul, p_dl, params, ts.tokens, ts.time))


__all__ = ["DEVICES", "GLOBAL_ROWS", "NO_BELIEF", "NO_FILTER", "NO_SURVIVAL", "PROGRESS_SCALE", "Posterior",
           "ROUND_ROWS", "Replay", "RoundView", "SURVIVAL_DEPTHS", "pick", "trace_round", "trace_rows", "write_round",
           "write_rows"]
