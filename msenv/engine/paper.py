"""The paper scenario's step (model §3–§6, §8), compiled: the verification outcomes from the
step's uniforms, the round kernel, the next round's fading and observation — for a batch of
cells of one size (:func:`step_paper`) or of cells of different sizes padded to a common number of
device slots (:func:`step_padded_cells`, the batched cell generator)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..config.system import SystemConfig
from ..model import acceptance, channel
from ..model.goodput import RoundInts, RoundReals, RoundResult, kernel_outputs, kernel_result, round_rows
from ..model.slots import INT_ROW, PER_ROUND, REAL_ROW, ROUND_PARAM, STEP_PARAM
from .observation import DS, device_features, gain_slots
from .state import State, step_constants

__all__ = ["step_paper", "step_padded_cells"]


@njit(cache=True, error_model="numpy")
def _paper_rows(u, alpha, t_draft, beta, g_ul, g_dl, p_ul, p_dl, gamma, consts, static_obs, ints, reals,
                rejected, modes, per_round, obs):
    """The paper scenario's round over rows (compiled): verification outcomes from the step's
    uniforms, the round kernel, the next round's fading and its observation (model §3–§6, §8).
    ``consts``: :func:`msenv.engine.state.step_constants` (the round's and the step's parameters);
    writes F and the next round's gains into the step rows of ``ints`` / ``reals`` and the next
    observation (``static_obs`` with its gain slots) into ``obs``."""
    n, k = gamma.shape
    params, step = consts[: len(ROUND_PARAM)], consts[len(ROUND_PARAM):]
    cap, redraw = int(step[STEP_PARAM.gamma_cap]), step[STEP_PARAM.fading_redraw] != 0
    independent, random_policy = step[STEP_PARAM.independent_links] != 0, step[STEP_PARAM.random_policy] != 0
    first_rej, g_ul_next, g_dl_next = (ints[INT_ROW.first_rejection], reals[REAL_ROW.g_ul_next],
                                       reals[REAL_ROW.g_dl_next])
    acceptance.outcome_rows(u, 0, alpha, cap, first_rej)
    # contiguous arguments: the same compiled round kernel as evaluate_round's (one compilation)
    coins = np.ascontiguousarray(u[:, u.shape[1] - k:]) if random_policy else np.zeros((1, 1))
    round_rows(gamma, first_rej, t_draft, g_ul, g_dl, p_ul, p_dl, coins, np.zeros((0, 0), np.int64), False, params,
               ints, reals, rejected, modes, per_round)
    for r in range(n):
        for i in range(k):
            if not redraw:
                g_ul_next[r, i], g_dl_next[r, i] = g_ul[r, i], g_dl[r, i]
            else:
                g_ul_next[r, i], g_dl_next[r, i] = channel.block_fading_scalar(u[r], k, i, k, beta[r, i], independent)
    obs[:] = static_obs
    gain_slots(obs, g_ul_next, g_dl_next, int(step[STEP_PARAM.device_features]), step[STEP_PARAM.statistical_csi] != 0)


def step_paper(u: np.ndarray, state: State, gamma: np.ndarray, cfg: SystemConfig) -> tuple[State, RoundResult]:
    """One paper-scenario round of every row (``gamma`` [B, K] int64, C-contiguous): the next state
    (its observation written by the kernel) and the round's result."""
    n, k = state.alpha.shape
    ints, reals, rej, modes, per_round = outs = kernel_outputs(n, k, extra=2)
    s = state
    obs = np.empty_like(s.static_obs)
    _paper_rows(u, s.alpha, s.t_draft, s.beta, s.g_ul, s.g_dl, s.p_ul_w, s.p_dl_w, gamma, step_constants(cfg),
                s.static_obs, *outs, obs)
    new = object.__new__(State)  # State.evolve, inlined on the paper step's hot path
    new.__dict__.update(s.__dict__)
    new.__dict__.update(g_ul=reals[REAL_ROW.g_ul_next], g_dl=reals[REAL_ROW.g_dl_next], t=s.t + 1, obs=obs)
    return new, kernel_result(ints, reals, rej, modes, per_round)


# the blocks' sizes as plain ints for the compiled code: the paper step's (kernel_outputs(…, extra=2))
_ROUND_INTS, _STEP_INTS, _STEP_REALS, _PER_ROUND = (len(RoundInts), len(RoundInts) + 2, len(RoundReals) + 2,
                                                    len(PER_ROUND))


@njit(cache=True, error_model="numpy")
def _padded_cells_rows(u, n_draws, k, live, alpha, t_draft, beta, g_ul, g_dl, p_ul, p_dl, gamma, consts, static,
                       n_features, speed_slot, template, obs, ints, reals, rejected, modes, per_round):
    """The paper step of cells of different sizes, padded to ``k_max`` device slots (compiled):
    row r holds a cell of ``k[r]`` devices in slots ``0 … k[r] − 1``, its uniforms in
    ``u[r, :n_draws[r]]`` and its single-cell static observation in ``static[r, :k[r]·F + G]``.
    Each live row plays :func:`_paper_rows` on exactly its own devices (the arrays of a single
    cell, so a row's round is the single-cell env's, bit for bit); padded slots take no part and
    their outputs stay as given (zeros). Updates ``g_ul``/``g_dl`` in place to the next round's
    gains and writes the padded observation (``template`` with the device rows' and the globals'
    entries of the cell's observation, all but the ``speed_slot``) into ``obs``."""
    b, k_max = alpha.shape  # the padded cells: rows × device slots
    f = n_features
    n_glob = static.shape[1] - k_max * f
    row = f + 1
    for r in range(b):
        if not live[r]:
            continue
        kr = k[r]
        o_ints = np.empty((_STEP_INTS, 1, kr), np.int64)
        o_reals = np.empty((_STEP_REALS, 1, kr))
        o_rej = np.empty((1, kr), np.bool_)
        o_modes = np.empty((1, kr), np.int8)
        o_round = np.empty((_PER_ROUND, 1))
        o_obs = np.empty((1, kr * f + n_glob), np.float32)
        _paper_rows(np.ascontiguousarray(u[r:r + 1, : n_draws[r]]), np.ascontiguousarray(alpha[r:r + 1, :kr]),
                    np.ascontiguousarray(t_draft[r:r + 1, :kr]), np.ascontiguousarray(beta[r:r + 1, :kr]),
                    np.ascontiguousarray(g_ul[r:r + 1, :kr]), np.ascontiguousarray(g_dl[r:r + 1, :kr]),
                    np.ascontiguousarray(p_ul[r:r + 1]), np.ascontiguousarray(p_dl[r:r + 1]),
                    np.ascontiguousarray(gamma[r:r + 1, :kr]), consts,
                    np.ascontiguousarray(static[r:r + 1, : kr * f + n_glob]), o_ints, o_reals, o_rej, o_modes,
                    o_round, o_obs)
        # the row's outputs, as [K] vectors (its batch has one row), into row r's first K slots
        # scalar loops over views of the row's blocks (slice assignments cost more in the compiled code)
        oi, orl = o_ints.reshape(_STEP_INTS, kr), o_reals.reshape(_STEP_REALS, kr)
        orj, omd, opr = o_rej.reshape(kr), o_modes.reshape(kr), o_round.reshape(_PER_ROUND)
        for i in range(kr):
            for j in range(_ROUND_INTS):
                ints[j, r, i] = oi[j, i]
            reals[REAL_ROW.dl_power, r, i] = orl[REAL_ROW.dl_power, i]
            reals[REAL_ROW.ul_delay, r, i] = orl[REAL_ROW.ul_delay, i]
            g_ul[r, i] = orl[REAL_ROW.g_ul_next, i]
            g_dl[r, i] = orl[REAL_ROW.g_dl_next, i]
            rejected[r, i] = orj[i]
            modes[r, i] = omd[i]
        for j in range(_PER_ROUND):
            per_round[j, r] = opr[j]
        cell_obs = o_obs.reshape(kr * f + n_glob)
        obs[r] = template[r]
        for i in range(kr):
            for j in range(f):
                if j != speed_slot:
                    obs[r, i * row + j] = cell_obs[i * f + j]
        for j in range(n_glob):
            obs[r, k_max * row + j] = cell_obs[kr * f + j]


def step_padded_cells(u: np.ndarray, n_draws: np.ndarray, k: np.ndarray, live: np.ndarray, state: State,
                      gamma: np.ndarray, template: np.ndarray, cfg: SystemConfig) -> tuple[np.ndarray, RoundResult]:
    """One paper-scenario round of B cells of different sizes in one kernel call.

    ``state`` holds the cells padded to ``k_max`` slots (arrays [B, k_max]; ``static_obs``
    [B, k_max·F + G], row r's first ``k[r]·F + G`` entries its cell's), ``u`` [B, ≥ n_draws] the
    uniforms each cell drew for its step, ``gamma`` [B, k_max] the draft lengths (slots past
    ``k[r]`` ignored), ``live`` [B] which rows play (the others are left untouched) and
    ``template`` [B, obs] each cell's padded observation with its per-episode entries.
    ``cfg`` is any cell's config (the step's constants do not depend on K). Updates the state's
    gains in place and returns the padded observations [B, obs] and the round's result, padded
    slots and rows that did not play all zeros. Each row's numbers are those of
    :func:`step_state` on its cell alone, bit for bit."""
    b, k_max = state.alpha.shape
    ints, reals, rej, modes, per_round = outs = kernel_outputs(b, k_max)
    for block in outs:
        block.fill(0)
    obs = np.zeros_like(template)
    _padded_cells_rows(u, n_draws, k, live, state.alpha, state.t_draft, state.beta, state.g_ul, state.g_dl,
                       state.p_ul_w, state.p_dl_w, np.ascontiguousarray(gamma, dtype=np.int64), step_constants(cfg),
                       state.static_obs, device_features(cfg), DS.speed, template, obs, *outs)
    return obs, kernel_result(ints, reals, rej, modes, per_round)
