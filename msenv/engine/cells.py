"""Rows of cells of different sizes, padded to a common number of device slots: the batched core
of a cell generator (:mod:`msenv.envs.cells`), which an engine hands out (:meth:`Engine.cells
<msenv.engine.base.Engine.cells>`).

Row r holds a cell — a :class:`~msenv.config.SystemConfig` with its own K ≤ ``slots`` — in device
slots ``0 … K − 1``; each row's round is the single-cell round of its cell, bit for bit, and a padded
slot never drafts, never counts in the verification pass, its batch size or the slowest drafter.
The padded observation: row k < K is device k's row of the cell's observation with the
drafting-speed entry replaced by ``tanh(T_k^dft / T_dft,ref − 1)`` (the same meaning in every
cell, whatever its spread) and a last entry 1 (the mask); a padded row is all zeros; the globals
are the cell's and ``tanh(ln K / 4)`` (its size).

Two implementations with one surface (:class:`CellRows`): the paper kind's
:class:`~msenv.engine.kinds.paper.PaddedPaperRows` plays every row's paper-scenario round in one compiled
call; :class:`SeparateRows` keeps one state per row and steps each with its cell's engine (any kind).
"""

from __future__ import annotations

import math

import numpy as np

from ..config.system import SystemConfig
from ..model.goodput import RoundResult, kernel_result
from .observation import Layout

K_SCALE = 4.0  #: the size feature is tanh(ln K / K_SCALE)
#: the drafting-speed entry of a device row, which a padded row shows on one scale for every cell
SPEED_FEATURE = "draft_speed"


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

    def state(self, i: int):
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


class SeparateRows(CellRows):
    """Cells of any engine, one state per row, each row stepped by its cell's engine; the results
    padded into one."""

    def __init__(self, rows: int, slots: int, layout: Layout) -> None:
        super().__init__(rows, slots, layout)
        self._states: list = [None] * rows
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
        return kernel_result(ints, reals, rej, modes, per_round, info=extra or None)

    def step(self, u, sizes, live, gamma):
        return self._play(u, sizes, live, gamma, keep=True)

    def what_if(self, u, sizes, live, gamma):
        return self._play(u, sizes, live, gamma, keep=False)

    def state(self, i):
        return self._states[i]


__all__ = ["CellRows", "K_SCALE", "SeparateRows", "pad_observation", "size_feature"]
