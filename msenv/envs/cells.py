"""A cell generator: one environment whose every episode is a new cell, with any number of devices.

``msenv/MultiSpin-Cells-v0`` (:class:`MultiSpinCellsEnv`) draws, per episode, a cell from the
distribution of a :class:`CellConfig`: the number of devices K, the spread of drafting speeds,
and — through the base :class:`~msenv.config.SystemConfig` — distances, UL/DL budgets (its
``p_*_dbm_range`` fields), tasks and, optionally, the model §11 dynamics. The cell's episode is
then exactly the episode of a :class:`~msenv.envs.env.MultiSpinEnv` of that cell (same seed, same
trajectory), so every controller and formula is the one of the single-cell ids. The env is the
batched cells core (:class:`CellBatch`, over the engine's padded rows, :mod:`msenv.engine.cells`)
with one row; :class:`~msenv.envs.cells_vector.MultiSpinCellsVectorEnv` is the same with N.

Spaces stay fixed, as SB3 and the vector envs need:

- Action: ``MultiDiscrete([γ_max + 1] * k_max)``; the episode's K devices are slots ``0 … K−1``.
  Slots ``K … k_max−1`` are padding: their entries must be valid draft lengths (they are members
  of the space) and are ignored — the round is played with ``action[:K]`` only, so padded slots
  never change tokens, latency or goodput.
- Observation: float32 in [−1, 1], ``k_max`` rows of ``F + 1`` entries, then ``G + 1`` globals.
  Row k < K is device k's row of the single-cell observation (F entries,
  :func:`msenv.engine.observation.feature_docs`) with the drafting-speed slot replaced by
  ``tanh(T_k^dft / T_dft,ref − 1)`` (the same meaning in every cell, whatever its spread), and a
  last entry 1 (a device); a padded row is all zeros (its last entry 0 is the mask). The globals
  are the single-cell ones (P_ul, P_dl) and ``tanh(ln K / 4)`` (the cell's size).
- ``info``: the single-cell ``info``, per-device arrays padded to ``k_max`` entries with zeros
  (so vector envs can stack them), and ``num_devices``: K; ``reset`` returns ``{"num_devices": K}``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding

from ..config.cells import CELL_FIELDS, CellConfig, cell_rng, check_cell_fields, draw_cell, resolve_cells
from ..config.system import SystemConfig
from ..engine import cells as padded_cells
from ..engine.base import Engine
from ..engine.cells import size_feature  # (the cells module's name)
from ..engine.context import RoundContext, validate_action
from ..engine.functional import engine_for
from .render import ansi_line
from .shell import Totals, check_render_mode, config_from_options, draw, episode_seed, layout_of, make_env, peek


# ---------------------------------------------------------------------- what a config fixes
def pad_observation(obs: np.ndarray, cell: SystemConfig, t_draft: np.ndarray, k_max: int) -> np.ndarray:
    """The padded observation (module docstring) of a single-cell observation ``obs`` of ``cell``
    whose devices draft at ``t_draft`` s per token [K], in ``k_max`` device slots."""
    return padded_cells.pad_observation(obs, engine_for(cell).layout, t_draft, cell.compute.t_draft_ref_s, k_max)


# ---------------------------------------------------------------------- the batched core
class CellBatch:
    """The episodes of ``n`` cell-generator rows (the core of :class:`MultiSpinCellsEnv`, n = 1, and
    of :class:`~msenv.envs.cells_vector.MultiSpinCellsVectorEnv`): each row's episode seeds, cell,
    generator, the engine's padded rows (:meth:`Engine.cells <msenv.engine.base.Engine.cells>`)
    and the episodes' totals. Row i draws exactly what a :class:`MultiSpinCellsEnv` seeded like it
    draws."""

    def __init__(self, config: CellConfig, n: int) -> None:
        self.config, self.n = config, n
        base, k_max = config.base, config.k_max
        self.engine: Engine = engine_for(base)  #: the model's engine (every cell's kind)
        self.engine.warm_up()
        self.rows = self.engine.cells(n, k_max)  #: the padded rows
        self.layout = self.rows.layout
        self.seeders: list[np.random.Generator | None] = [None] * n  # episode seeds (as MultiSpinCellsEnv's)
        self.gens: list[np.random.Generator | None] = [None] * n  # each episode's own stream
        self.sizes = np.zeros(n, np.int64)  # each row's uniforms per step
        self.u = np.zeros((n, self.engine.step_draws))  # the step's uniforms (grown to the largest cell's)
        self.totals = Totals(n)

    def start(self, i: int, seed: int | None) -> None:
        """Row ``i``'s next episode (its seed: ``seed``, or its seeder's next draw): a cell from
        :func:`cell_rng` of the episode seed, the episode from ``np_random(seed)``."""
        self.seeders[i], ep_seed = episode_seed(self.seeders[i], seed)
        cell = draw_cell(self.config, cell_rng(ep_seed))
        gen, engine = seeding.np_random(ep_seed)[0], engine_for(cell)
        self.rows.start(i, cell, engine, gen.random((1, engine.reset_draws))[0])
        self.gens[i], self.sizes[i] = gen, engine.step_draws
        if engine.step_draws > self.u.shape[1]:
            self.u = np.zeros((self.n, engine.step_draws))
        self.totals.clear(i)

    def check(self, actions: Any) -> np.ndarray:
        """``actions`` [n, k_max] as draft lengths (``ValueError`` naming the row and slot)."""
        got = np.shape(actions)
        if got != (self.n, self.config.k_max):
            raise ValueError(f"actions of shape {got} are invalid; allowed: shape {(self.n, self.config.k_max)} "
                             f"({self.n} envs × {self.config.k_max} device slots)")
        return validate_action(actions, self.config.base, batch=self.n, num_devices=self.config.k_max)

    def step(self, gamma: np.ndarray, live: np.ndarray):
        """Play the ``live`` rows' round; the padded result."""
        draw(self.gens, np.flatnonzero(live), self.u, self.sizes)
        res = self.rows.step(self.u, self.sizes, live, gamma)
        self.totals.add(res, live)
        return res

    def what_if(self, gamma: np.ndarray, live: np.ndarray):
        """The result the ``live`` rows' coming round would give with ``gamma``, on the draws their
        step will use; nothing changes."""
        u = peek(self.gens, np.flatnonzero(live), self.u.copy(), self.sizes)
        return self.rows.what_if(u, self.sizes, live, gamma)

    def info(self, res, live: np.ndarray) -> dict[str, Any]:
        """The vector ``info`` of a round (the engine's, with each row's K)."""
        info = self.engine.batch_info(res, live, self.totals.tokens, self.totals.time)
        info["num_devices"], info["_num_devices"] = np.where(live, self.rows.k, 0), live.copy()
        return info

    def context(self, i: int, oracle: bool | str = False) -> RoundContext:
        """Row ``i``'s round context (its K devices)."""
        return engine_for(self.rows.cells[i]).context(self.rows.state(i), 0, oracle)


class MultiSpinCellsEnv(gym.Env):
    """Draft-length control in a new cell every episode (see the module docstring).

    Args:
        config: a :class:`CellConfig`, a dict of its fields (SystemConfig fields go to the base), or
            None (the defaults).
        render_mode: as :class:`~msenv.envs.env.MultiSpinEnv`.
        **overrides: generator or SystemConfig fields (e.g. ``k_range=(200, 200), k_max=200``);
            any other keyword raises ``TypeError``.
    """

    metadata = {"render_modes": ["human", "rgb_array", "ansi"], "render_fps": 4}

    def __init__(self, config: CellConfig | dict | None = None, render_mode: str | None = None, **overrides: Any):
        check_cell_fields(f"{type(self).__name__}.__init__()", overrides)
        check_render_mode(render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self._window = self._renderer = None
        if render_mode == "human":  # one window for every episode's cell
            from .render import HumanWindow

            self._window = HumanWindow(self.metadata["render_fps"])
        self._use(resolve_cells(config, **overrides))
        self.action_space, self.observation_space = self._batch.layout.spaces()
        self.cell: SystemConfig | None = None  #: the current episode's cell
        self._last: dict[str, Any] | None = None
        self._last_action: np.ndarray | None = None

    def _use(self, config: CellConfig) -> None:
        self.config, self._batch = config, CellBatch(config, 1)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw a cell and start its episode. Episode seed: ``seed`` when given, else the next draw
        of a generator seeded by the last given seed; the cell comes from :func:`cell_rng` of it, the
        episode itself is the single-cell env's ``reset(seed=…)``, so a cell of fixed K and spread
        replays :class:`~msenv.envs.env.MultiSpinEnv` exactly. ``options={"config": {...}}`` changes the
        generator's or the base's fields (not those that change the layout)."""
        super().reset(seed=seed)
        if options and "config" in options:
            seeders = self._batch.seeders
            self._use(config_from_options(self.config, options["config"]))
            self._batch.seeders = seeders
        self._batch.start(0, seed)
        self.cell = self._batch.rows.cells[0]
        self._last = self._last_action = None
        self._show()
        return self._batch.rows.obs[0].copy(), {"num_devices": self.cell.num_devices}

    def step(self, action):
        """Play one round with draft lengths ``action[:K]`` (``action``: [k_max] integers in [0, γ_max];
        the padded entries are ignored): as :meth:`MultiSpinEnv.step`, observation padded."""
        if self.cell is None:
            raise RuntimeError("call reset() before step()")
        a = validate_action(action, self.config.base, num_devices=self.config.k_max)
        batch = self._batch
        res = batch.step(a[None], _ONE)
        info = batch.engine.row_info(res, 0, float(batch.totals.tokens[0]), float(batch.totals.time[0]))
        info["num_devices"] = k = self.cell.num_devices
        self._last, self._last_action = info, a[:k]
        self._show()
        truncated = bool(self._batch.rows.t[0] >= self.config.episode_length)
        return self._batch.rows.obs[0].copy(), info["goodput"] * self.config.reward_scale, False, truncated, info

    def what_if(self, action) -> tuple[float, float]:
        """:meth:`MultiSpinEnv.what_if` of the current cell (``action``: [k_max], padding ignored)."""
        if self.cell is None:
            raise RuntimeError("call reset() before what_if()")
        a = validate_action(action, self.config.base, num_devices=self.config.k_max)
        res = self._batch.what_if(a[None], _ONE)
        return float(res.total_tokens[0]), float(res.latency[0])

    @property
    def draft_times(self) -> np.ndarray:
        """Each device slot's drafting time T_k^dft, s per token [k_max] (a padded slot: 0) — what an
        action type such as :class:`~msenv.envs.actions.BudgetAction` maps to draft lengths."""
        if self.cell is None:
            raise RuntimeError("call reset() first")
        return self._batch.rows.draft_times()[0]

    @property
    def num_devices(self) -> int:
        """K of the current episode's cell."""
        if self.cell is None:
            raise RuntimeError("call reset() first")
        return self.cell.num_devices

    @property
    def context(self) -> RoundContext:
        """The current cell's upcoming round as the server sees it (K devices; as
        :attr:`MultiSpinEnv.context`)."""
        return self.round_context()

    @property
    def oracle_context(self) -> RoundContext:
        """The current cell's upcoming round's truth (as :attr:`MultiSpinEnv.oracle_context`)."""
        return self.round_context(oracle=True)

    def round_context(self, oracle: bool | str = False) -> RoundContext:
        """The current cell's upcoming round's context (as :meth:`MultiSpinEnv.round_context`)."""
        if self.cell is None:
            raise RuntimeError("call reset() before reading the context")
        return self._batch.context(0, oracle)

    @property
    def state(self):
        """The current cell's functional state (a batch of one with K devices)."""
        return None if self.cell is None else self._batch.rows.state(0)

    def render(self):
        """As :meth:`MultiSpinEnv.render` for the current cell (``"human"``: nothing; ``reset`` and
        ``step`` show each round)."""
        if self.render_mode is None or self._window is not None:
            return None
        if self.cell is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "rgb_array":
            return self._frame()
        return ansi_line(int(self._batch.rows.t[0]), self._last)

    def _frame(self) -> np.ndarray:
        if self._renderer is None:
            from .render import RoundRenderer

            self._renderer = RoundRenderer(self.config.base.channel.distance_range_m[1])
        k = self.cell.num_devices
        last = None if self._last is None else {key: (v[:k] if isinstance(v, np.ndarray) else v)
                                                  for key, v in self._last.items()}
        return self._renderer.frame(self.state.distance[0], int(self._batch.rows.t[0]), self._last_action, last)

    def _show(self) -> None:
        if self._window is not None:
            self._window.show(self._frame())

    def close(self) -> None:
        """Close the ``"human"`` window, if one is open."""
        if self._window is not None:
            self._window.close()
        super().close()


_ONE = np.ones(1, dtype=bool)


__all__ = ["CELL_FIELDS", "CellBatch", "CellConfig", "MultiSpinCellsEnv", "cell_rng", "draw_cell", "layout_of",
           "make_env", "pad_observation", "resolve_cells", "size_feature"]
