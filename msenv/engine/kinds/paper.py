"""The paper scenario's engine kind (model §3–§6, §8): i.i.d. block fading seen exactly, each
device's α fixed by its task and known.

It owns its state (:class:`PaperState`), its observation table (:data:`DEVICES`), its draws (the
paper scenario's, :func:`~msenv.engine.state.paper_draws`) and its compiled step: the verification
outcomes from the step's uniforms, the round kernel, the next round's fading and observation — for
a batch of cells of one size (:meth:`PaperEngine.step`) or of cells of different sizes padded to a
common number of device slots (:func:`step_padded_cells`, the batched cell generator).

The observation (5 entries per device, then the 2 budgets; :data:`DEVICES`, :data:`~msenv.engine.observation.GLOBALS`):

=====  ===========================================================
index  entry
=====  ===========================================================
5k+0   α_k (acceptance rate of device k's task)
5k+1   drafting-speed scale: (T_k^dft/T_dft,ref − lo)/(hi − lo) ∈ [0, 1]
5k+2   tanh((g_k^ul [dB] + 115) / 15)   current UL gain
5k+3   tanh((g_k^dl [dB] + 115) / 15)   current DL gain
5k+4   tanh((β_k [dB] + 115) / 15)      large-scale gain
5K+0   tanh((P_ul [dBm] − 15) / 20)
5K+1   tanh((P_dl [dBm] − 30) / 20)
=====  ===========================================================
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ...config.system import SystemConfig
from ...model import acceptance, channel
from ...model.goodput import RoundInts, RoundReals, RoundResult, kernel_outputs, kernel_result, round_rows
from ...model.slots import INT_ROW, PER_ROUND, REAL_ROW, ROUND_PARAM, STEP_PARAM
from ..base import Engine
from ..cells import CellRows
from ..observation import BETA, G_DL, G_UL, SPEED, Feature, Layout, round_writer


class PaperState(NamedTuple):
    """The paper scenario's state of B environments (leading axis B)."""

    distance: np.ndarray  #: m [B, K]
    beta: np.ndarray  #: large-scale gain [B, K]
    task: np.ndarray  #: int [B, K] index into cfg.tasks
    alpha: np.ndarray  #: [B, K] each device's acceptance rate
    t_draft: np.ndarray  #: s per token [B, K]
    p_ul_w: np.ndarray  #: W [B]
    p_dl_w: np.ndarray  #: W [B]
    g_ul: np.ndarray  #: the coming round's UL power gain [B, K]
    g_dl: np.ndarray  #: the coming round's DL power gain [B, K]
    t: np.ndarray  #: rounds played [B]
    #: the observation's per-episode entries (α, speed, β, budgets; per-round entries 0), written at reset
    static_obs: np.ndarray  #: float32 [B, obs_size]
    #: the observation of this state when the step kernel already wrote it, else None
    obs: np.ndarray | None = None


class RoundView(NamedTuple):
    """What the paper scenario's per-round observation rows read (the next round's gains)."""

    g_ul: np.ndarray
    g_dl: np.ndarray


def alpha_entry(state, cfg: SystemConfig) -> np.ndarray:
    """α_k itself."""
    return state.alpha


#: the observation's device rows (the globals: the budgets)
DEVICES = (
    Feature("alpha", "α, the acceptance rate of the device's task", alpha_entry, per="episode"),
    SPEED, G_UL, G_DL, BETA,
)
#: the rows the compiled step writes after every round, in the driver's order
ROUND_ROWS = tuple(f for f in DEVICES if f.per == "round")
write_round = round_writer(tuple(f.write for f in ROUND_ROWS))


@njit(cache=True)
def write_rows(out, nf, cols, view):
    """:data:`write_round` as a cached kernel of this module, for the calls from Python (a reset's
    observation): the driver's code is compiled once per machine, inside it."""
    write_round(out, nf, cols, view)


@njit(cache=True, error_model="numpy")
def paper_rows(u, alpha, t_draft, beta, g_ul, g_dl, p_ul, p_dl, gamma, consts, cols, static_obs, ints, reals,
               rejected, modes, per_round, obs):
    """The paper scenario's round over rows (compiled): verification outcomes from the step's
    uniforms, the round kernel, the next round's fading and its observation (model §3–§6, §8).
    ``consts``: the round's and the step's parameters (:meth:`Engine.constants
    <msenv.engine.base.Engine.constants>`), ``cols`` the columns of :data:`ROUND_ROWS`; writes F and
    the next round's gains into the step rows of ``ints`` / ``reals`` and the next observation
    (``static_obs`` with its per-round rows) into ``obs``."""
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
    write_round(obs, int(step[STEP_PARAM.device_features]), cols, RoundView(g_ul_next, g_dl_next))


class PaperEngine(Engine):
    """The paper's assumptions (module docstring); cells of different sizes play in one compiled,
    padded batch."""

    name = "paper"
    devices = DEVICES
    round_rows = ROUND_ROWS

    def start(self, u, fields):
        g_ul, g_dl = channel.fading_from_uniform(u[:, self.draws["reset"]["fading"]], fields["beta"], self.config)
        state = PaperState(**fields, g_ul=g_ul, g_dl=g_dl, t=np.zeros(len(u), np.int64), static_obs=None)
        return state._replace(static_obs=self.observation.episode(state))

    def step(self, u, state, gamma):
        s = state
        gamma = self.rows(gamma)
        n, k = gamma.shape
        ints, reals, rej, modes, per_round = outs = kernel_outputs(n, k, extra=2)
        obs = np.empty_like(s.static_obs)
        paper_rows(u, s.alpha, s.t_draft, s.beta, s.g_ul, s.g_dl, s.p_ul_w, s.p_dl_w, gamma, self.constants,
                   self.observation.cols, s.static_obs, *outs, obs)
        new = PaperState(s.distance, s.beta, s.task, s.alpha, s.t_draft, s.p_ul_w, s.p_dl_w,
                         reals[REAL_ROW.g_ul_next], reals[REAL_ROW.g_dl_next], s.t + 1, s.static_obs, obs)
        return new, kernel_result(ints, reals, rej, modes, per_round)

    def view(self, state):
        return RoundView(state.g_ul, state.g_dl)

    def write_round(self, out, view):
        write_rows(out, self.layout.row, self.observation.cols, view)

    def cells(self, rows, slots):
        return PaddedPaperRows(rows, slots, self.layout)


# the blocks' sizes as plain ints for the compiled code: the paper step's (kernel_outputs(…, extra=2))
_ROUND_INTS, _STEP_INTS, _STEP_REALS, _PER_ROUND = (len(RoundInts), len(RoundInts) + 2, len(RoundReals) + 2,
                                                    len(PER_ROUND))


@njit(cache=True, error_model="numpy")
def _padded_cells_rows(u, n_draws, k, live, alpha, t_draft, beta, g_ul, g_dl, p_ul, p_dl, gamma, consts, cols,
                       static, n_features, speed_slot, template, obs, ints, reals, rejected, modes, per_round):
    """The paper step of cells of different sizes, padded to ``k_max`` device slots (compiled):
    row r holds a cell of ``k[r]`` devices in slots ``0 … k[r] − 1``, its uniforms in
    ``u[r, :n_draws[r]]`` and its single-cell static observation in ``static[r, :k[r]·F + G]``.
    Each live row plays :func:`paper_rows` on exactly its own devices (the arrays of a single
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
        paper_rows(np.ascontiguousarray(u[r:r + 1, : n_draws[r]]), np.ascontiguousarray(alpha[r:r + 1, :kr]),
                   np.ascontiguousarray(t_draft[r:r + 1, :kr]), np.ascontiguousarray(beta[r:r + 1, :kr]),
                   np.ascontiguousarray(g_ul[r:r + 1, :kr]), np.ascontiguousarray(g_dl[r:r + 1, :kr]),
                   np.ascontiguousarray(p_ul[r:r + 1]), np.ascontiguousarray(p_dl[r:r + 1]),
                   np.ascontiguousarray(gamma[r:r + 1, :kr]), consts, cols,
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


def step_padded_cells(u: np.ndarray, n_draws: np.ndarray, k: np.ndarray, live: np.ndarray, state: PaperState,
                      gamma: np.ndarray, template: np.ndarray, engine: PaperEngine) -> tuple[np.ndarray, RoundResult]:
    """One paper-scenario round of B cells of different sizes in one kernel call.

    ``state`` holds the cells padded to ``k_max`` slots (arrays [B, k_max]; ``static_obs``
    [B, k_max·F + G], row r's first ``k[r]·F + G`` entries its cell's), ``u`` [B, ≥ n_draws] the
    uniforms each cell drew for its step, ``gamma`` [B, k_max] the draft lengths (slots past
    ``k[r]`` ignored), ``live`` [B] which rows play (the others are left untouched) and
    ``template`` [B, obs] each cell's padded observation with its per-episode entries.
    ``engine`` is any cell's engine (the step's constants do not depend on K). Updates the state's
    gains in place and returns the padded observations [B, obs] and the round's result, padded
    slots and rows that did not play all zeros. Each row's numbers are those of
    :meth:`PaperEngine.step` on its cell alone, bit for bit."""
    b, k_max = state.alpha.shape
    ints, reals, rej, modes, per_round = outs = kernel_outputs(b, k_max)
    for block in outs:
        block.fill(0)
    obs = np.zeros_like(template)
    lay = engine.layout
    _padded_cells_rows(u, n_draws, k, live, state.alpha, state.t_draft, state.beta, state.g_ul, state.g_dl,
                       state.p_ul_w, state.p_dl_w, np.ascontiguousarray(gamma, dtype=np.int64), engine.constants,
                       engine.observation.cols, state.static_obs, lay.row, lay.device.index(SPEED.name), template, obs,
                       *outs)
    return obs, kernel_result(ints, reals, rej, modes, per_round)


class PaddedPaperRows(CellRows):
    """Paper-scenario cells in one padded state, every row's round in one compiled call
    (:func:`step_padded_cells`)."""

    #: the per-device fields of the state that a padded batch holds
    DEVICE_FIELDS = ("distance", "beta", "task", "alpha", "t_draft", "g_ul", "g_dl")

    def __init__(self, rows: int, slots: int, layout: Layout) -> None:
        super().__init__(rows, slots, layout)
        z = np.zeros((rows, slots))
        self._state = PaperState(z.copy(), z.copy(), np.zeros((rows, slots), np.int64), z.copy(), z.copy(),
                                 np.zeros(rows), np.zeros(rows), z.copy(), z.copy(), np.zeros(rows, np.int64),
                                 np.zeros((rows, slots * layout.row + layout.n_globals), np.float32))
        self._template = np.zeros_like(self.obs)  #: each row's padded observation with its per-episode entries
        self._engine: PaperEngine | None = None

    def start(self, i, cell, engine, u):
        one = engine.reset(u[None])
        k, s = cell.num_devices, self._state
        for name in self.DEVICE_FIELDS:
            getattr(s, name)[i] = 0
            getattr(s, name)[i, :k] = getattr(one, name)[0]
        s.p_ul_w[i], s.p_dl_w[i] = one.p_ul_w[0], one.p_dl_w[0]
        s.static_obs[i] = 0
        s.static_obs[i, : one.static_obs.shape[1]] = one.static_obs[0]
        self._template[i] = self.obs[i] = self._pad(engine.observe(one)[0], cell, engine.layout, one.t_draft[0])
        self.cells[i], self.k[i], self.t[i] = cell, k, 0
        self._engine = engine  # the step's constants do not depend on K or the drafting spread

    def step(self, u, sizes, live, gamma):
        obs, res = step_padded_cells(u, sizes, self.k, live, self._state, gamma, self._template, self._engine)
        self.obs = np.where(live[:, None], obs, self.obs)
        self.t[live] += 1
        return res

    def what_if(self, u, sizes, live, gamma):
        s = self._state
        scratch = s._replace(g_ul=s.g_ul.copy(), g_dl=s.g_dl.copy())  # the kernel moves the gains on
        return step_padded_cells(u, sizes, self.k, live, scratch, gamma, self._template, self._engine)[1]

    def state(self, i):
        s, k = self._state, int(self.k[i])
        row = {name: getattr(s, name)[i: i + 1, :k].copy() for name in self.DEVICE_FIELDS}
        width = k * self.single.row + self.single.n_globals
        return PaperState(**row, p_ul_w=s.p_ul_w[i: i + 1].copy(), p_dl_w=s.p_dl_w[i: i + 1].copy(),
                          t=self.t[i: i + 1].copy(), static_obs=s.static_obs[i: i + 1, :width].copy())

    def draft_times(self):
        return self._state.t_draft.copy()


__all__ = ["DEVICES", "PaddedPaperRows", "PaperEngine", "PaperState", "ROUND_ROWS", "RoundView", "paper_rows",
           "step_padded_cells", "write_round", "write_rows"]
