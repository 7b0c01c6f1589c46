"""Rows of cells of different sizes, padded to a common number of device slots: the batched core
of a cell generator (:mod:`msenv.envs.cells`), which an engine hands out (:meth:`Engine.cells
<msenv.engine.kinds.Engine.cells>`).

Row r holds a cell — a :class:`~msenv.config.SystemConfig` with its own K ≤ ``slots`` — in device
slots ``0 … K − 1``; each row's round is the single-cell round of its cell, bit for bit, and a padded
slot never drafts, never counts in the verification pass, its batch size or the slowest drafter.
The padded observation: row k < K is device k's row of the cell's observation with the
drafting-speed entry replaced by ``tanh(T_k^dft / T_dft,ref − 1)`` (the same meaning in every
cell, whatever its spread) and a last entry 1 (the mask); a padded row is all zeros; the globals
are the cell's and ``tanh(ln K / 4)`` (its size).

Two implementations with one surface (:class:`CellRows`): :class:`PaddedPaperRows` plays every
row's paper-scenario round in one compiled call; :class:`SeparateRows` keeps one state per row and
steps each with its cell's engine (any engine).
"""

from __future__ import annotations

import math

import numpy as np

from ..config.system import SystemConfig
from ..model.goodput import RoundResult, kernel_result
from .observation import Layout
from .paper import step_padded_cells
from .state import State

K_SCALE = 4.0  #: the size feature is tanh(ln K / K_SCALE)
#: the drafting-speed entry of a device row, which a padded row shows on one scale for every cell
SPEED_FEATURE = "draft_speed"
#: the per-device fields of the paper scenario's state that a padded batch holds
_DEVICE_FIELDS = ("distance", "beta", "task", "alpha", "t_draft", "g_ul", "g_dl")


def size_feature(k: int) -> float:
    """The observation's global entry for a cell of ``k`` devices: tanh(ln k / 4)."""
    return math.tanh(math.log(k) / K_SCALE)


def pad_observation(obs: np.ndarray, layout: Layout, t_draft: np.ndarray, t_ref: float, slots: int) -> np.ndarray:
    """The padded observation (module docstring) of a single-cell observation ``obs`` whose cell
    has the single-cell ``layout`` and whose devices draft at ``t_draft`` s per token [K]
    (reference time ``t_ref``)."""
    k, f = layout.slots, layout.row
    out = np.zeros(slots * (f + 1) + layout.n_globals + 1, dtype=np.float32)
    rows = out[: slots * (f + 1)].reshape(slots, f + 1)
    rows[:k, :f] = obs[: k * f].reshape(k, f)
    rows[:k, layout.device.index(SPEED_FEATURE)] = np.tanh(t_draft / t_ref - 1.0)
    rows[:k, f] = 1.0
    out[slots * (f + 1): -1] = obs[k * f:]
    out[-1] = size_feature(k)
    return out


class CellRows:
    """``rows`` cells of one model, padded to ``slots`` device slots (module docstring).

    Each row starts an episode with :meth:`start` and plays with :meth:`step`; :attr:`obs` holds
    every row's padded observation, :attr:`k` each row's K, :attr:`t` the rounds each has played."""

    def __init__(self, rows: int, slots: int, layout: Layout) -> None:
        self.rows, self.slots = rows, slots
        self.single = layout  #: the model's single-cell layout (its ``slots`` is the base's K)
        self.layout = layout.padded(slots)  #: the padded observation's layout
        self.cells: list[SystemConfig | None] = [None] * rows  #: each row's cell
        self.k = np.zeros(rows, np.int64)  #: each row's number of devices
        self.t = np.zeros(rows, np.int64)  #: rounds each row has played in its episode
        self.obs = np.zeros((rows, self.layout.obs_size), np.float32)  #: each row's padded observation

    def start(self, i: int, cell: SystemConfig, engine, u: np.ndarray) -> None:
        """Row ``i`` starts an episode of ``cell`` (its engine ``engine``) from the reset's uniforms
        ``u`` [reset_draws]."""
        raise NotImplementedError

    def step(self, u: np.ndarray, sizes: np.ndarray, live: np.ndarray, gamma: np.ndarray) -> RoundResult:
        """One round of the ``live`` rows (row r's uniforms ``u[r, :sizes[r]]``, its draft lengths
        ``gamma[r, :K]``; the slots past K are ignored): the padded result (rows that did not play and
        padded slots all zero); the live rows' observations and states move on."""
        raise NotImplementedError

    def what_if(self, u: np.ndarray, sizes: np.ndarray, live: np.ndarray, gamma: np.ndarray) -> RoundResult:
        """:meth:`step`'s result on the same uniforms, with nothing changed."""
        raise NotImplementedError

    def state(self, i: int) -> State:
        """Row ``i``'s state as its cell's own (a batch of one with K devices)."""
        raise NotImplementedError

    def draft_times(self) -> np.ndarray:
        """Each row's device slots' drafting times T_k^dft, s per token [rows, slots] (a padded slot: 0)."""
        out = np.zeros((self.rows, self.slots))
        for i, cell in enumerate(self.cells):
            if cell is not None:
                out[i, : self.k[i]] = self.state(i).t_draft[0]
        return out

    def _pad(self, obs: np.ndarray, cell: SystemConfig, layout: Layout, t_draft: np.ndarray) -> np.ndarray:
        return pad_observation(obs, layout, t_draft, cell.compute.t_draft_ref_s, self.slots)


class PaddedPaperRows(CellRows):
    """Paper-scenario cells in one padded state, every row's round in one compiled call
    (:func:`msenv.engine.paper.step_padded_cells`)."""

    def __init__(self, rows: int, slots: int, layout: Layout) -> None:
        super().__init__(rows, slots, layout)
        z = np.zeros((rows, slots))
        self._state = State(z.copy(), z.copy(), np.zeros((rows, slots), np.int64), z.copy(), z.copy(),
                            np.zeros(rows), np.zeros(rows), z.copy(), z.copy(), np.zeros(rows, np.int64),
                            np.zeros((rows, slots * layout.row + layout.n_globals), np.float32))
        self._template = np.zeros_like(self.obs)  #: each row's padded observation with its per-episode entries
        self._base: SystemConfig | None = None

    def start(self, i, cell, engine, u):
        one = engine.reset(u[None])
        k, s = cell.num_devices, self._state
        for name in _DEVICE_FIELDS:
            getattr(s, name)[i] = 0
            getattr(s, name)[i, :k] = getattr(one, name)[0]
        s.p_ul_w[i], s.p_dl_w[i] = one.p_ul_w[0], one.p_dl_w[0]
        s.static_obs[i] = 0
        s.static_obs[i, : one.static_obs.shape[1]] = one.static_obs[0]
        self._template[i] = self.obs[i] = self._pad(engine.observe(one)[0], cell, engine.layout, one.t_draft[0])
        self.cells[i], self.k[i], self.t[i] = cell, k, 0
        self._base = cell  # the step's constants do not depend on K or the drafting spread

    def step(self, u, sizes, live, gamma):
        obs, res = step_padded_cells(u, sizes, self.k, live, self._state, gamma, self._template, self._base)
        self.obs = np.where(live[:, None], obs, self.obs)
        self.t[live] += 1
        return res

    def what_if(self, u, sizes, live, gamma):
        s = self._state
        scratch = s.evolve(g_ul=s.g_ul.copy(), g_dl=s.g_dl.copy())  # the kernel moves the gains on
        return step_padded_cells(u, sizes, self.k, live, scratch, gamma, self._template, self._base)[1]

    def state(self, i):
        s, k = self._state, int(self.k[i])
        row = {name: getattr(s, name)[i: i + 1, :k].copy() for name in _DEVICE_FIELDS}
        width = k * self.single.row + self.single.n_globals
        return State(**row, p_ul_w=s.p_ul_w[i: i + 1].copy(), p_dl_w=s.p_dl_w[i: i + 1].copy(),
                     t=self.t[i: i + 1].copy(), static_obs=s.static_obs[i: i + 1, :width].copy())

    def draft_times(self):
        return self._state.t_draft.copy()


class SeparateRows(CellRows):
    """Cells of any engine, one state per row, each row stepped by its cell's engine; the results
    padded into one."""

    def __init__(self, rows: int, slots: int, layout: Layout) -> None:
        super().__init__(rows, slots, layout)
        self._states: list[State | None] = [None] * rows
        self._engines: list = [None] * rows

    def start(self, i, cell, engine, u):
        self._states[i], self._engines[i] = engine.reset(u[None]), engine
        self.obs[i] = self._pad(engine.observe(self._states[i])[0], cell, engine.layout, self._states[i].t_draft[0])
        self.cells[i], self.k[i], self.t[i] = cell, cell.num_devices, 0

    def _play(self, u, sizes, live, gamma, keep: bool) -> RoundResult:
        n, slots = self.rows, self.slots
        ints, reals = np.zeros((3, n, slots), np.int64), np.zeros((2, n, slots))
        rej, modes, per_round = np.zeros((n, slots), np.bool_), np.zeros((n, slots), np.int8), np.zeros((6, n))
        extra: dict[str, np.ndarray] = {}
        for i in np.flatnonzero(live):
            k, eng = int(self.k[i]), self._engines[i]
            new, res = eng.step(u[i: i + 1, : sizes[i]], self._states[i], gamma[i: i + 1, :k])
            for row, key in enumerate(("tokens", "served", "accepted")):
                ints[row, i, :k] = getattr(res, key)[0]
            reals[0, i, :k], reals[1, i, :k] = res.dl_power[0], res.ul_delay[0]
            rej[i, :k], modes[i, :k] = res.rejected[0], res.modes[0]
            for row, key in enumerate(("t_draft", "t_verify", "t_com", "latency", "goodput", "total_tokens")):
                per_round[row, i] = getattr(res, key)[0]
            for key, val in (res.info or {}).items():
                if key not in extra:
                    extra[key] = np.zeros((n, slots), val.dtype)
                extra[key][i, :k] = val[0]
            if keep:
                self._states[i] = new
                self.obs[i] = self._pad(eng.observe(new)[0], self.cells[i], eng.layout, new.t_draft[0])
                self.t[i] += 1
        out = kernel_result(ints, reals, rej, modes, per_round)
        out.__dict__["info"] = extra or None
        return out

    def step(self, u, sizes, live, gamma):
        return self._play(u, sizes, live, gamma, keep=True)

    def what_if(self, u, sizes, live, gamma):
        return self._play(u, sizes, live, gamma, keep=False)

    def state(self, i):
        return self._states[i]


__all__ = ["CellRows", "K_SCALE", "PaddedPaperRows", "SeparateRows", "pad_observation", "size_feature"]
