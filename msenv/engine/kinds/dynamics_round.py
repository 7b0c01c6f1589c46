"""The model §11 round, compiled: the step of :class:`~msenv.engine.kinds.dynamics.DynamicEngine` and the
observation table it writes (the kind's own; :mod:`msenv.engine.kinds.dynamics` has the rest of the kind).

:data:`DEVICES` is the kind's observation: the paper's entries, the α slot showing the belief's
mean (or α when observed), then 2·sd of the belief, P(hard) and the Doppler where the config has
them. :func:`round_rows_of` plays a round of every row (entered through :func:`dynamic_rows`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ...config.system import SystemConfig
from ...model import acceptance, channel, latency
from ...model.goodput import round_rows
from ...model.slots import (
    COMPLEX_ROW,
    DYN_FLAG,
    DYN_PARAM,
    DYN_REAL,
    INT_ROW,
    MOMENT,
    PER_ROUND,
    ROUND_PARAM,
    STEP_DRAW,
    STEP_PARAM,
)
from ..observation import BETA, G_DL, G_UL, SPEED, Feature, round_writer

#: the observation's Doppler entry is tanh(f_D / DOPPLER_SCALE_HZ)
DOPPLER_SCALE_HZ = 10.0


# ---------------------------------------------------------------------- the observation
class RoundView(NamedTuple):
    """What the model §11 per-round rows read: the belief (``mode``: :data:`~msenv.model.acceptance.BELIEF_CODES`),
    the round's α, the Beta posterior, the grid belief's moments [3, B·K], the gains shown, the Doppler."""

    mode: int
    alpha: np.ndarray
    post_a: np.ndarray
    post_b: np.ndarray
    moments: np.ndarray
    g_ul: np.ndarray
    g_dl: np.ndarray
    doppler: np.ndarray


@njit(cache=True, error_model="numpy")
def write_alpha(out, nf, col, v):
    """The α slot: the Beta posterior's mean, the chain filter's predictive mean, or α itself."""
    b, k = v.alpha.shape
    for r in range(b):
        for i in range(k):
            if v.mode == 1:
                a, bb = v.post_a[r, i], v.post_b[r, i]
                out[r, nf * i + col] = a / (a + bb)
            elif v.mode == 2:
                out[r, nf * i + col] = v.moments[MOMENT.mean, r * k + i]
            else:
                out[r, nf * i + col] = v.alpha[r, i]


@njit(cache=True, error_model="numpy")
def write_alpha_sd(out, nf, col, v):
    """min(2·sd of the α belief, 1)."""
    b, k = v.alpha.shape
    for r in range(b):
        for i in range(k):
            if v.mode == 1:
                a, bb = v.post_a[r, i], v.post_b[r, i]
                n = a + bb
                out[r, nf * i + col] = min(2.0 * math.sqrt(a * bb / (n * n * (n + 1.0))), 1.0)
            else:
                out[r, nf * i + col] = min(2.0 * v.moments[MOMENT.sd, r * k + i], 1.0)


@njit(cache=True, error_model="numpy")
def write_p_hard(out, nf, col, v):
    """2·P(hard) − 1 of the chain filter."""
    b, k = v.alpha.shape
    for r in range(b):
        for i in range(k):
            out[r, nf * i + col] = 2.0 * v.moments[MOMENT.p_hard, r * k + i] - 1.0


@njit(cache=True, error_model="numpy")
def write_doppler(out, nf, col, v):
    """tanh(f_D / 10 Hz)."""
    b, k = v.alpha.shape
    for r in range(b):
        for i in range(k):
            out[r, nf * i + col] = math.tanh(v.doppler[r, i] * (1.0 / DOPPLER_SCALE_HZ))


def _alpha_entry(cfg: SystemConfig) -> tuple[tuple[str, str], ...]:
    if cfg.belief == "beta":
        return (("alpha_posterior_mean", "the Beta posterior's mean of the request's α"),)
    if cfg.belief == "grid":
        return (("alpha_predictive_mean", "the filter's predictive mean of the coming round's α"),)
    requests = " (the current request's)" if cfg.dynamics.alpha_dynamics != "fixed" else ""
    return (("alpha", f"α, the acceptance rate of the device's task{requests}"),)


#: the observation's device rows (the globals: the budgets); each shown where the config has it
DEVICES = (
    Feature("alpha", "", write_alpha, names=_alpha_entry),
    SPEED, G_UL, G_DL, BETA,
    Feature("alpha_sd", "min(2·sd of the α belief, 1)", write_alpha_sd, shown=lambda cfg: cfg.alpha_hidden),
    Feature("p_hard", "2·P(hard) − 1: the filter's belief that the easy/hard chain is hard", write_p_hard,
            shown=lambda cfg: cfg.belief == "grid"),
    Feature("doppler", "tanh(f_D / 10 Hz): the device's Doppler", write_doppler,
            shown=lambda cfg: cfg.dynamics.channel_dynamics == "gauss_markov"),
)
#: the rows the compiled step writes after every round, in the driver's order
ROUND_ROWS = tuple(f for f in DEVICES if f.per == "round")
write_round = round_writer(tuple(f.write for f in ROUND_ROWS))


@njit(cache=True)
def write_rows(out, nf, cols, view):
    """:data:`write_round` as a cached kernel of this module, for the calls from Python (a reset's
    observation): the driver's code is compiled once per machine, inside it."""
    write_round(out, nf, cols, view)


# ---------------------------------------------------------------------- the step
class Inputs(NamedTuple):
    """The state a §11 round reads (arrays [B, K] unless noted; a part the config leaves off is a
    stand-in array: :data:`NO_COMPLEX` and the like)."""

    alpha: np.ndarray  #: the round's true α
    t_draft: np.ndarray  #: T_k^dft, s per token
    beta: np.ndarray  #: large-scale gains
    g_ul: np.ndarray  #: the decision's UL gains
    g_dl: np.ndarray  #: the decision's DL gains
    p_ul: np.ndarray  #: [B] UL power budget, W
    p_dl: np.ndarray  #: [B] DL power budget, W
    h: np.ndarray  #: complex [B, L, K] decision-time gains (Gauss–Markov)
    w: np.ndarray  #: complex [B, L, K] decision → correction innovations (Gauss–Markov)
    doppler: np.ndarray  #: f_D, Hz (Gauss–Markov)
    alpha_req: np.ndarray  #: the request's α (requests)
    remaining: np.ndarray  #: int, tokens left in the request (requests)
    hard: np.ndarray  #: bool, the chain's state (the chain)
    task: np.ndarray  #: int, the request's task
    req_index: np.ndarray  #: int, index of the current request (requests)
    req_pool: np.ndarray  #: [B, K, pool, 3] the reset's next requests: task, length, α's uniform
    post_a: np.ndarray  #: Beta posterior a (belief="beta")
    post_b: np.ndarray  #: Beta posterior b (belief="beta")
    belief: np.ndarray  #: [B, K, grid, 2] the chain filter's belief (belief="grid")
    static_obs: np.ndarray  #: float32 [B, obs] the observation's per-episode entries


class Tables(NamedTuple):
    """The config's constants of a §11 round (:meth:`DynamicEngine.tables`)."""

    offsets: np.ndarray  #: int, :class:`~msenv.model.slots.StepDraws` offsets into a step's uniforms
    consts: np.ndarray  #: the round's, the step's and the kind's constants (:attr:`Engine.constants`)
    cols: np.ndarray  #: int, the columns of :data:`ROUND_ROWS` (−1: not shown)
    cells: np.ndarray  #: the grid belief's α cells
    likelihoods: np.ndarray  #: the grid filter's likelihoods
    prior: np.ndarray  #: per task, the grid belief of a new request
    task_table: np.ndarray  #: per task, the Beta prior (a, b) of a request's α and its mean length


class Outputs(NamedTuple):
    """The blocks a §11 round writes (:mod:`msenv.model.slots` names their rows)."""

    ints: np.ndarray  #: int64 :class:`~msenv.model.slots.Ints` rows [rows, B, K]
    reals: np.ndarray  #: :class:`~msenv.model.slots.Reals` rows of the round kernel
    rejected: np.ndarray  #: bool [B, K]
    modes: np.ndarray  #: int8 [B, K]
    per_round: np.ndarray  #: :class:`~msenv.model.slots.PerRound` rows [rows, B]
    flt: np.ndarray  #: :class:`~msenv.model.slots.DynamicFloats` rows [rows, B, K]
    flags: np.ndarray  #: :class:`~msenv.model.slots.DynamicFlags` rows [rows, B, K]
    hc: np.ndarray  #: complex :class:`~msenv.model.slots.ComplexRows` rows [rows, B, L, K]
    belief_next: np.ndarray  #: the grid belief after the round
    obs: np.ndarray  #: float32 [B, obs] the next observation


@njit(cache=True, error_model="numpy")
def dynamic_rows(u, gamma, alpha, t_draft, beta, g_ul, g_dl, p_ul, p_dl, h, w, doppler, alpha_req, remaining, hard,
                 task, req_index, req_pool, post_a, post_b, belief, static_obs, offsets, consts, cols, cells,
                 likelihoods, prior, task_table, ints, reals, rejected, modes, per_round, flt, flags, hc, belief_next,
                 obs):
    """The compiled entry of :func:`round_rows_of`: ``dynamic_rows(u, gamma, *inputs, *tables,
    *outputs)`` — its parameters are the fields of :class:`Inputs`, :class:`Tables` and
    :class:`Outputs` in order (a test holds them to it). Arrays cross from Python one by one, which
    numba dispatches faster than a NamedTuple of them (≈ 4 µs a step); inside, the round reads
    them by name."""
    round_rows_of(u, gamma,
                  Inputs(alpha, t_draft, beta, g_ul, g_dl, p_ul, p_dl, h, w, doppler, alpha_req, remaining, hard, task,
                         req_index, req_pool, post_a, post_b, belief, static_obs),
                  Tables(offsets, consts, cols, cells, likelihoods, prior, task_table),
                  Outputs(ints, reals, rejected, modes, per_round, flt, flags, hc, belief_next, obs))


@njit(cache=True, error_model="numpy")
def round_rows_of(u, gamma, state, tables, out):
    """A model §11 round over rows (compiled), the whole step, reading ``state``
    (:class:`Inputs`) and ``tables`` (:class:`Tables`) and writing ``out`` (:class:`Outputs`):

    1. outcomes; with the Gauss–Markov channel the correction-time gains
       h(t0 + T_cmp(γ)) = ρ₁h + √(1 − ρ₁²)w, ρ₁ = J0(2π f_D T_cmp(γ));
    2. the round kernel, tokens capped at the request's end;
    3. the next decision's gains h(t0 + T) = ρ₂h_corr + √(1 − ρ₂²)w₂ (ρ₂ over T_com) and the
       innovations drawn ahead; the belief's update (Beta posterior or the chain filter); the
       requests' progress and the easy/hard chain; a request that ends is followed by the next one
       of the reset pool (past the pool: from the step's draws);
    4. the next observation.

    ``u`` [B, step draws] are the step's uniforms and ``gamma`` [B, K] the draft lengths."""
    alpha, t_draft, beta, g_ul, g_dl = state.alpha, state.t_draft, state.beta, state.g_ul, state.g_dl
    p_ul, p_dl, h, w, doppler = state.p_ul, state.p_dl, state.h, state.w, state.doppler
    alpha_req, remaining, hard, task = state.alpha_req, state.remaining, state.hard, state.task
    req_index, req_pool, post_a, post_b, belief = (state.req_index, state.req_pool, state.post_a, state.post_b,
                                                   state.belief)
    offsets, consts, cols, cells = tables.offsets, tables.consts, tables.cols, tables.cells
    likelihoods, prior, task_table = tables.likelihoods, tables.prior, tables.task_table
    ints, reals, rejected, modes, per_round = out.ints, out.reals, out.rejected, out.modes, out.per_round
    flt, flags, hc, belief_next, obs = out.flt, out.flags, out.hc, out.belief_next, out.obs
    n, k = gamma.shape
    n_links = h.shape[1]
    params, step = consts[: len(ROUND_PARAM)], consts[len(ROUND_PARAM):len(ROUND_PARAM) + len(STEP_PARAM)]
    dyn = consts[len(ROUND_PARAM) + len(STEP_PARAM):]
    gm, redraw = dyn[DYN_PARAM.gauss_markov] != 0, step[STEP_PARAM.fading_redraw] != 0
    independent, random_policy = step[STEP_PARAM.independent_links] != 0, step[STEP_PARAM.random_policy] != 0
    belief_mode, alpha_mode, capped = (int(dyn[DYN_PARAM.belief]), int(dyn[DYN_PARAM.alpha_mode]),
                                       dyn[DYN_PARAM.request_caps] != 0)
    cap, nf, statistical = (int(step[STEP_PARAM.gamma_cap]), int(step[STEP_PARAM.device_features]),
                            dyn[DYN_PARAM.statistical_csi] != 0)
    first_rej, left = ints[INT_ROW.first_rejection], ints[INT_ROW.tokens_left]
    task_next, index_next = ints[INT_ROW.task], ints[INT_ROW.request_index]
    gc_ul, gc_dl, gn_ul, gn_dl = (flt[DYN_REAL.g_ul_corr], flt[DYN_REAL.g_dl_corr], flt[DYN_REAL.g_ul_next],
                                  flt[DYN_REAL.g_dl_next])
    pa, pb, alpha_next, req_next = (flt[DYN_REAL.post_a], flt[DYN_REAL.post_b], flt[DYN_REAL.alpha_next],
                                    flt[DYN_REAL.alpha_request_next])
    done, hard_next = flags[DYN_FLAG.request_done], flags[DYN_FLAG.hard]
    h_corr, h_next, w_next = hc[COMPLEX_ROW.h_corr], hc[COMPLEX_ROW.h_next], hc[COMPLEX_ROW.w_next]
    acceptance.outcome_rows(u, offsets[STEP_DRAW.outcome], alpha, cap, first_rej)
    if gm:  # T_cmp(γ) of each row (the round kernel computes the same again)
        latency.latency_rows(gamma, t_draft, params[ROUND_PARAM.t_verify_base_s],
                             params[ROUND_PARAM.t_verify_per_device_s],
                             params[ROUND_PARAM.t_verify_per_token_s], params[ROUND_PARAM.t_verify_per_padded_token_s],
                             params[ROUND_PARAM.drafting_only] != 0, per_round[PER_ROUND.t_draft],
                             per_round[PER_ROUND.t_verify])
    for r in range(n):
        t_cmp = per_round[PER_ROUND.t_draft, r] + per_round[PER_ROUND.t_verify, r]
        for i in range(k):
            if gm:
                rho = channel.jakes_scalar(doppler[r, i], t_cmp)
                for li in range(n_links):
                    h_corr[r, li, i] = channel.evolve_scalar(h[r, li, i], rho, w[r, li, i])
                gc_ul[r, i] = channel.power_gain_scalar(h_corr[r, 0, i], beta[r, i])
                gc_dl[r, i] = channel.power_gain_scalar(h_corr[r, n_links - 1, i], beta[r, i])
            else:
                gc_ul[r, i], gc_dl[r, i] = g_ul[r, i], g_dl[r, i]
    coins_at = offsets[STEP_DRAW.coins]
    coins = np.ascontiguousarray(u[:, coins_at:coins_at + k]) if random_policy else np.zeros((1, 1))
    caps = remaining if capped else np.zeros((0, 0), np.int64)
    round_rows(gamma, first_rej, t_draft, gc_ul, gc_dl, p_ul, p_dl, coins, caps, capped, params,
               ints, reals, rejected, modes, per_round)
    served, accepted = ints[INT_ROW.served], ints[INT_ROW.accepted]
    m = k * n_links
    w_com, w_ahead, fading = offsets[STEP_DRAW.w_com], offsets[STEP_DRAW.w_next], offsets[STEP_DRAW.fading]
    for r in range(n):
        for i in range(k):
            if gm:
                rho = channel.jakes_scalar(doppler[r, i], per_round[PER_ROUND.t_com, r])
                for li in range(n_links):
                    j = li * k + i
                    wc = channel.complex_gain_scalar(u[r, w_com + j], u[r, w_com + m + j])
                    h_next[r, li, i] = channel.evolve_scalar(h_corr[r, li, i], rho, wc)
                    w_next[r, li, i] = channel.complex_gain_scalar(u[r, w_ahead + j], u[r, w_ahead + m + j])
                gn_ul[r, i] = channel.power_gain_scalar(h_next[r, 0, i], beta[r, i])
                gn_dl[r, i] = channel.power_gain_scalar(h_next[r, n_links - 1, i], beta[r, i])
            elif redraw:
                gn_ul[r, i], gn_dl[r, i] = channel.block_fading_scalar(u[r], fading, i, k, beta[r, i], independent)
            else:
                gn_ul[r, i], gn_dl[r, i] = g_ul[r, i], g_dl[r, i]
            if belief_mode == 1:  # Beta posterior: a += accepted, b += rejected
                pa[r, i] = post_a[r, i] + accepted[r, i]
                pb[r, i] = post_b[r, i] + rejected[r, i]
            if alpha_mode > 0:
                left[r, i] = remaining[r, i] - served[r, i]  # tokens generated, counted or not
                done[r, i] = left[r, i] <= 0
            else:
                done[r, i] = False
            if alpha_mode == 2:  # the chain; a new request starts from its stationary law
                u_sw = u[r, offsets[STEP_DRAW.switch] + i]
                hard_next[r, i] = (u_sw < 0.5) if done[r, i] else (hard[r, i] != (u_sw >= dyn[DYN_PARAM.markov_stay]))
                alpha_next[r, i] = acceptance.markov_alpha_scalar(alpha_req[r, i], hard_next[r, i],
                                                                  dyn[DYN_PARAM.markov_delta])
            elif alpha_mode == 1:
                alpha_next[r, i] = alpha_req[r, i]
            else:
                alpha_next[r, i] = alpha[r, i]
    if belief_mode == 2:
        g = belief.shape[2]
        acceptance.filter_rows(belief.reshape(n * k, g, 2), accepted.reshape(n * k), rejected.reshape(n * k),
                               likelihoods, dyn[DYN_PARAM.filter_stay], belief_next.reshape(n * k, g, 2))
    if alpha_mode > 0:
        pool, n_tasks = req_pool.shape[2], task_table.shape[0]
        for r in range(n):
            for i in range(k):
                task_next[r, i], req_next[r, i], index_next[r, i] = task[r, i], alpha_req[r, i], req_index[r, i]
                if not done[r, i]:
                    continue
                nxt = req_index[r, i] + 1
                index_next[r, i] = nxt
                if nxt <= pool:  # the reset pool's next request: (task, length, the uniform of α)
                    t_new, left[r, i], u_alpha = int(req_pool[r, i, nxt - 1, 0]), int(req_pool[r, i, nxt - 1, 1]), \
                        req_pool[r, i, nxt - 1, 2]
                else:  # past the pool: from this step's draws
                    t_new = acceptance.task_scalar(u[r, offsets[STEP_DRAW.task] + i], n_tasks)
                    left[r, i] = acceptance.geometric_from_uniform_scalar(u[r, offsets[STEP_DRAW.length] + i],
                                                                          task_table[t_new, 2])
                    u_alpha = u[r, offsets[STEP_DRAW.alpha] + i]
                a_new = acceptance.beta_from_uniform_scalar(u_alpha, task_table[t_new, 0], task_table[t_new, 1])
                task_next[r, i], req_next[r, i] = t_new, a_new
                delta = dyn[DYN_PARAM.markov_delta]
                alpha_next[r, i] = (acceptance.markov_alpha_scalar(a_new, hard_next[r, i], delta)
                                    if alpha_mode == 2 else a_new)
                if belief_mode == 1:
                    pa[r, i], pb[r, i] = task_table[t_new, 0], task_table[t_new, 1]
                elif belief_mode == 2:  # a new request: its prior, the chain at its stationary law
                    belief_next[r, i] = prior[t_new]
    obs[:] = state.static_obs
    moments = np.empty((len(MOMENT), n * k if belief_mode == 2 else 0))
    if belief_mode == 2:
        acceptance.moment_rows(belief_next.reshape(n * k, belief_next.shape[2], 2), cells, moments)
    shown_ul, shown_dl = (beta, beta) if statistical else (gn_ul, gn_dl)
    write_round(obs, nf, cols, RoundView(belief_mode, alpha_next, pa, pb, moments, shown_ul, shown_dl, doppler))


__all__ = ["DEVICES", "DOPPLER_SCALE_HZ", "Inputs", "Outputs", "ROUND_ROWS", "RoundView", "Tables", "dynamic_rows",
           "round_rows_of", "write_round", "write_rows"]
