"""The model §11 dynamics: a moving channel, back-to-back requests and the server's α belief.

``channel_dynamics="gauss_markov"`` keeps complex gains h per link; a round decided at t0 sees
h(t0), the correction uses h(t0 + T_cmp(γ)) = ρ₁h + √(1−ρ₁²)w₁ (w₁ drawn one round ahead, so an
oracle controller can know it), and the next decision sees h(t0 + T) = ρ₂h_corr + √(1−ρ₂²)w₂, with
ρ = J0(2π f_D Δt). ``alpha_dynamics="request"|"markov"`` replaces the per-episode α by
back-to-back requests (task, geometric length, α ~ Beta) and an easy/hard chain; tokens past a
request's end are not counted. With ``alpha_observed=False`` the server tracks its belief about α:
the Beta posterior of the request's α (``belief="beta"``), or, with the chain, the forward filter
of (request α on a grid, easy/hard state) — exact Bayes on the grid (``belief="grid"``).

:func:`reset_fields` draws the §11 part of a new episode; :func:`step` plays a round of a
§11 config in one compiled kernel (:func:`round_rows_of`, entered through :func:`dynamic_rows`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from numba import njit

from ..config.system import SystemConfig
from ..model import acceptance, channel, latency
from ..model._numeric import ufunc
from ..model.goodput import RoundResult, kernel_outputs, kernel_result, round_rows
from ..model.slots import COMPLEX_ROW, DYN_FLAG, DYN_REAL, INT_ROW, PER_ROUND, ROUND_PARAM, STEP_DRAW, STEP_PARAM
from .observation import NO_BELIEF, NO_CELLS, NO_FLOATS, belief_slots, gain_slots
from .state import REQUEST_POOL, State, links, step_constants, step_offsets


# ---------------------------------------------------------------------- requests
def _task_scalar(u, n_tasks):
    return min(int(u * n_tasks), n_tasks - 1)


#: a request's task, uniform over the config's tasks, from one uniform: compiled and numpy ufunc
task_scalar = njit(cache=True)(_task_scalar)
_task_ufunc = ufunc(["i8(f8, i8)"], _task_scalar)


def task_from_uniform(u: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """Task indices (uniform over ``cfg.tasks``) from uniforms."""
    return _task_ufunc(u, len(cfg.acceptance.tasks))


def task_alpha(task: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """The mean acceptance rate of each task index."""
    return np.asarray(cfg.acceptance.acceptance_rates)[task]


def request_length(u_len, task, cfg: SystemConfig):
    """A request's length in tokens, geometric with its task's mean."""
    return acceptance.geometric_from_uniform(u_len, np.asarray(cfg.dynamics.request_mean_tokens)[task])


def complex_links(u: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """Complex gains [B, L, K] from 2·K·L uniforms (magnitudes first, then phases; UL before DL;
    L = 1, one shared gain, when reciprocal)."""
    n = cfg.num_devices * links(cfg)
    h = channel.complex_gain_from_uniform(u[:, :n], u[:, n : 2 * n])
    return h.reshape(len(u), links(cfg), cfg.num_devices)


def reset_fields(u: np.ndarray, lay: dict[str, slice], task: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                 cfg: SystemConfig) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, dict]:
    """The model §11 part of a new episode from the reset uniforms ``u`` (slices ``lay``): returns
    the first round's α, the decision gains (None unless Gauss–Markov) and the §11 fields of
    :class:`~msenv.engine.state.State`."""
    fields: dict[str, np.ndarray | None] = {}
    g_ul = g_dl = None
    if cfg.dynamics.channel_dynamics == "gauss_markov":
        h = complex_links(u[:, lay["fading"]], cfg)
        lo, hi = cfg.dynamics.speed_range_mps
        speed = lo + (hi - lo) * u[:, lay["speed"]]
        fields.update(h=h, w=complex_links(u[:, lay["w"]], cfg),
                      doppler=channel.doppler_hz(speed, cfg.dynamics.carrier_hz))
        g = channel.power_gain(h, beta[:, None])
        g_ul, g_dl = g[:, 0], g[:, -1]
    if cfg.dynamics.alpha_dynamics != "fixed":
        length = request_length(u[:, lay["length"]], task, cfg)
        a0, b0 = acceptance.beta_prior(task_alpha(task, cfg), cfg.dynamics.alpha_concentration)
        alpha_req = acceptance.beta_from_uniform(u[:, lay["alpha"]], a0, b0)
        pool_u = u[:, lay["pool"]].reshape(len(u), cfg.num_devices, REQUEST_POOL, 3)
        pool_task = task_from_uniform(pool_u[..., 0], cfg)
        pool_len = request_length(pool_u[..., 1], pool_task, cfg)
        # α by the step kernel when the request starts (an inverse Beta CDF costs ≈ 1 µs)
        pool = np.stack([pool_task, pool_len, pool_u[..., 2]], axis=-1).astype(float)  # exact: ints < 2^53
        fields.update(alpha_req=alpha_req, remaining=length, req_index=np.zeros_like(length), req_pool=pool)
        if cfg.dynamics.alpha_dynamics == "markov":
            hard = u[:, lay["chain"]] < 0.5  # the chain's stationary law (½, ½)
            fields["hard"] = hard
            alpha = acceptance.markov_alpha(alpha_req, hard, cfg.dynamics.markov_delta)
        else:
            alpha = alpha_req
        if cfg.belief == "beta":
            fields.update(post_a=a0, post_b=b0)
    elif cfg.belief == "beta":
        a0, b0 = acceptance.beta_prior(alpha, cfg.dynamics.alpha_concentration)
        fields.update(post_a=a0, post_b=b0)
    if cfg.belief == "grid":
        fields["belief"] = acceptance.grid_belief(cfg)["prior"][task]
    return alpha, g_ul, g_dl, fields


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
    """The config's constants of a §11 round (:func:`_constants`)."""

    offsets: np.ndarray  #: int, :class:`~msenv.model.slots.StepDraws` offsets into a step's uniforms
    consts: np.ndarray  #: :class:`~msenv.model.slots.RoundParams` then :class:`~msenv.model.slots.StepParams`
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
                 task, req_index, req_pool, post_a, post_b, belief, static_obs, offsets, consts, cells, likelihoods,
                 prior, task_table, ints, reals, rejected, modes, per_round, flt, flags, hc, belief_next, obs):
    """The compiled entry of :func:`round_rows_of`: ``dynamic_rows(u, gamma, *inputs, *tables,
    *outputs)`` — its parameters are the fields of :class:`Inputs`, :class:`Tables` and
    :class:`Outputs` in order (a test holds them to it). Arrays cross from Python one by one, which
    numba dispatches faster than a NamedTuple of them (≈ 4 µs a step); inside, the round reads
    them by name."""
    round_rows_of(u, gamma,
                  Inputs(alpha, t_draft, beta, g_ul, g_dl, p_ul, p_dl, h, w, doppler, alpha_req, remaining, hard, task,
                         req_index, req_pool, post_a, post_b, belief, static_obs),
                  Tables(offsets, consts, cells, likelihoods, prior, task_table),
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
    offsets, consts, cells = tables.offsets, tables.consts, tables.cells
    likelihoods, prior, task_table = tables.likelihoods, tables.prior, tables.task_table
    ints, reals, rejected, modes, per_round = out.ints, out.reals, out.rejected, out.modes, out.per_round
    flt, flags, hc, belief_next, obs = out.flt, out.flags, out.hc, out.belief_next, out.obs
    n, k = gamma.shape
    n_links = h.shape[1]
    params, step = consts[: len(ROUND_PARAM)], consts[len(ROUND_PARAM):]
    gm, redraw = step[STEP_PARAM.gauss_markov] != 0, step[STEP_PARAM.fading_redraw] != 0
    independent, random_policy = step[STEP_PARAM.independent_links] != 0, step[STEP_PARAM.random_policy] != 0
    belief_mode, alpha_mode, capped = (int(step[STEP_PARAM.belief]), int(step[STEP_PARAM.alpha_mode]),
                                       step[STEP_PARAM.request_caps] != 0)
    cap, nf, statistical = (int(step[STEP_PARAM.gamma_cap]), int(step[STEP_PARAM.device_features]),
                            step[STEP_PARAM.statistical_csi] != 0)
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
                hard_next[r, i] = (u_sw < 0.5) if done[r, i] else (hard[r, i] != (u_sw >= step[STEP_PARAM.markov_stay]))
                alpha_next[r, i] = acceptance.markov_alpha_scalar(alpha_req[r, i], hard_next[r, i],
                                                                  step[STEP_PARAM.markov_delta])
            elif alpha_mode == 1:
                alpha_next[r, i] = alpha_req[r, i]
            else:
                alpha_next[r, i] = alpha[r, i]
    if belief_mode == 2:
        g = belief.shape[2]
        acceptance.filter_rows(belief.reshape(n * k, g, 2), accepted.reshape(n * k), rejected.reshape(n * k),
                               likelihoods, step[STEP_PARAM.filter_stay], belief_next.reshape(n * k, g, 2))
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
                    t_new = task_scalar(u[r, offsets[STEP_DRAW.task] + i], n_tasks)
                    left[r, i] = acceptance.geometric_from_uniform_scalar(u[r, offsets[STEP_DRAW.length] + i],
                                                                          task_table[t_new, 2])
                    u_alpha = u[r, offsets[STEP_DRAW.alpha] + i]
                a_new = acceptance.beta_from_uniform_scalar(u_alpha, task_table[t_new, 0], task_table[t_new, 1])
                task_next[r, i], req_next[r, i] = t_new, a_new
                delta = step[STEP_PARAM.markov_delta]
                alpha_next[r, i] = (acceptance.markov_alpha_scalar(a_new, hard_next[r, i], delta)
                                    if alpha_mode == 2 else a_new)
                if belief_mode == 1:
                    pa[r, i], pb[r, i] = task_table[t_new, 0], task_table[t_new, 1]
                elif belief_mode == 2:  # a new request: its prior, the chain at its stationary law
                    belief_next[r, i] = prior[t_new]
    obs[:] = state.static_obs
    gain_slots(obs, gn_ul, gn_dl, nf, statistical)
    belief_slots(obs, nf, belief_mode, alpha_next, pa, pb, belief_next, cells, doppler, gm)


@functools.lru_cache(maxsize=64)
def _constants(cfg: SystemConfig) -> Tables:
    """The :class:`Tables` of :func:`dynamic_rows` for ``cfg`` (the grid belief's parts are
    stand-ins without the grid)."""
    grid = cfg.belief == "grid"
    g = acceptance.grid_belief(cfg) if grid else {"alpha": NO_CELLS, "likelihoods": _NO_LIK, "prior": NO_BELIEF}
    tasks = np.column_stack([*acceptance.beta_prior(np.asarray(cfg.acceptance.acceptance_rates),
                                                    cfg.dynamics.alpha_concentration),
                             cfg.dynamics.request_mean_tokens])
    return Tables(step_offsets(cfg), step_constants(cfg), g["alpha"], g["likelihoods"], g["prior"], tasks)


#: stand-ins for the state arrays of the §11 parts a config leaves off (the kernel takes arrays)
NO_COMPLEX = np.zeros((3, 1, 1, 1), complex)
NO_INTS = np.zeros((1, 1), np.int64)
NO_BOOLS = np.zeros((1, 1), np.bool_)
NO_POOL = np.zeros((1, 1, 1, 3))
_NO_LIK = np.zeros((1, 2, 1, 2))


def step(u: np.ndarray, state: State, gamma: np.ndarray, cfg: SystemConfig) -> tuple[State, RoundResult]:
    """Play one model §11 round (draft lengths ``gamma`` [B, K], int64 rows); the result's ``info``
    holds the round's truth (α, correction-time gains, request ends)."""
    s = state
    n, k = gamma.shape
    gm, grid, dyn_alpha = s.h is not None, s.belief is not None, s.alpha_req is not None
    ints, reals, rej, modes, per_round = outs = kernel_outputs(n, k, extra=4)
    flt, flags = np.empty((len(DYN_REAL), n, k)), np.empty((len(DYN_FLAG), n, k), np.bool_)
    hc = np.empty((len(COMPLEX_ROW),) + s.h.shape, complex) if gm else NO_COMPLEX
    belief_next = np.empty_like(s.belief) if grid else NO_BELIEF
    obs = np.empty_like(s.static_obs)
    no_h = NO_COMPLEX[0]
    inputs = Inputs(s.alpha, s.t_draft, s.beta, s.g_ul, s.g_dl, s.p_ul_w, s.p_dl_w,
                    s.h if gm else no_h, s.w if gm else no_h, s.doppler if gm else NO_FLOATS,
                    s.alpha_req if dyn_alpha else NO_FLOATS, s.remaining if dyn_alpha else NO_INTS,
                    s.hard if s.hard is not None else NO_BOOLS, s.task, s.req_index if dyn_alpha else NO_INTS,
                    s.req_pool if dyn_alpha else NO_POOL, s.post_a if s.post_a is not None else NO_FLOATS,
                    s.post_b if s.post_b is not None else NO_FLOATS, s.belief if grid else NO_BELIEF, s.static_obs)
    dynamic_rows(u, gamma, *inputs, *_constants(cfg), *outs, flt, flags, hc, belief_next, obs)
    res = kernel_result(ints, reals, rej, modes, per_round)
    new = {"g_ul": flt[DYN_REAL.g_ul_next], "g_dl": flt[DYN_REAL.g_dl_next], "alpha": flt[DYN_REAL.alpha_next],
           "t": s.t + 1, "obs": obs}
    if gm:
        new.update(h=hc[COMPLEX_ROW.h_next], w=hc[COMPLEX_ROW.w_next])
    info = {"alpha": s.alpha, "g_ul_corr": flt[DYN_REAL.g_ul_corr], "g_dl_corr": flt[DYN_REAL.g_dl_corr]}
    if dyn_alpha:
        info["request_done"] = flags[DYN_FLAG.request_done]
        new.update(task=ints[INT_ROW.task], alpha_req=flt[DYN_REAL.alpha_request_next],
                   remaining=ints[INT_ROW.tokens_left], req_index=ints[INT_ROW.request_index])
        if s.hard is not None:
            new["hard"] = flags[DYN_FLAG.hard]
    if s.post_a is not None:
        new.update(post_a=flt[DYN_REAL.post_a], post_b=flt[DYN_REAL.post_b])
    elif grid:
        new["belief"] = belief_next
    res.__dict__["info"] = info
    return s.evolve(**new), res
