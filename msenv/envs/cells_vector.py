"""Vector envs of the cell generator ``msenv/MultiSpin-Cells-v0`` (:mod:`msenv.envs.cells`).

:class:`MultiSpinCellsVectorEnv` holds ``n`` copies' cells in one batch padded to ``k_max``
(:class:`~msenv.envs.cells.CellBatch` over the engine's padded rows: every copy's round in one
compiled call in the paper scenario, each row with its cell's engine otherwise);
:class:`MultiSpinCellsSyncVectorEnv` steps single :class:`~msenv.envs.cells.MultiSpinCellsEnv` one
after the other (what a render mode needs). Both mean the same, bit for bit;
:func:`cells_vector_env` (``gymnasium.make_vec``'s entry point) picks between them.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..config.cells import CellConfig, check_cell_fields, resolve_cells
from ..config.system import SystemConfig
from ..engine.context import RoundContext
from .cells import CellBatch, MultiSpinCellsEnv
from .shell import Autoreset, autoreset_mode_of, check_num_envs, config_from_options, seed_list


class MultiSpinCellsSyncVectorEnv(gym.vector.SyncVectorEnv):
    """``n`` :class:`MultiSpinCellsEnv` side by side, stepped one after the other (Gymnasium's
    ``SyncVectorEnv``): what :func:`cells_vector_env` gives for a render mode;
    :class:`MultiSpinCellsVectorEnv` is the same, batched."""

    def __init__(self, num_envs: int, config: CellConfig | dict | None = None, render_mode: str | None = None,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP, **overrides: Any):
        check_num_envs(num_envs)
        check_cell_fields(f"{type(self).__name__}.__init__()", overrides)
        cells = resolve_cells(config, **overrides)
        super().__init__([functools.partial(MultiSpinCellsEnv, cells, render_mode) for _ in range(num_envs)],
                         autoreset_mode=autoreset_mode_of(autoreset_mode))

    def step(self, actions):
        check_action_batch(actions, self.action_space.shape, self.num_envs)
        return super().step(actions)


class MultiSpinCellsVectorEnv(VectorEnv):
    """``n`` cell generators in one padded batch.

    Sub-env ``i`` has the meaning of a :class:`MultiSpinCellsEnv` seeded ``s + i`` by
    ``reset(seed=s)``: it draws its cells, episode seeds and every uniform from its own
    generators exactly as that env does, so observations, rewards and ``info`` equal those of
    :class:`MultiSpinCellsSyncVectorEnv` (Gymnasium's ``SyncVectorEnv`` of the single envs) bit
    for bit (a test holds this). The cells are padded to ``k_max`` device slots; a padded slot
    never drafts, never counts in the verification pass, its batch size or the slowest drafter.
    Resets (one per episode) are per sub-env in Python.

    Autoreset: ``"next_step"`` (default, as ``SyncVectorEnv``: the step after an episode's end
    resets that sub-env, ignores its action, reward 0, ``info`` only ``num_devices``) or
    ``"same_step"`` (reset in the step that ends the episode; its last observation in
    ``info["final_obs"]``; ``info`` describes the round played, ``num_devices`` its K).
    ``info`` is the stacked single-env ``info`` (per-device arrays [n, k_max], padded with zeros,
    each key with its ``_key`` mask).
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, config: CellConfig | dict | None = None, render_mode: str | None = None,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP, **overrides: Any) -> None:
        check_num_envs(num_envs)
        check_cell_fields(f"{type(self).__name__}.__init__()", overrides)
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r} is not supported by the batched cells vector env; allowed: "
                             "None (cells_vector_env gives the stepped version for a render mode)")
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode_of(autoreset_mode)}
        self.num_envs, self.render_mode = int(num_envs), None
        self._use(resolve_cells(config, **overrides))
        self.single_action_space, self.single_observation_space = self._batch.layout.spaces()
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._started = False
        self._autoreset = Autoreset(self, self.num_envs)

    def _use(self, config: CellConfig) -> None:
        self.config, self._batch = config, CellBatch(config, self.num_envs)

    def _ready(self) -> None:
        if not self._started:
            raise RuntimeError("call reset() first")

    @property
    def cells(self) -> list[SystemConfig | None]:
        """Each sub-env's current cell."""
        return list(self._batch.rows.cells)

    @property
    def draft_times(self) -> np.ndarray:
        """Each sub-env's device slots' drafting times T_k^dft, s per token [n, k_max] (a padded
        slot: 0), as :attr:`MultiSpinCellsEnv.draft_times`."""
        self._ready()
        return self._batch.rows.draft_times()

    @property
    def num_devices(self) -> np.ndarray:
        """K of each sub-env's current cell [n]."""
        self._ready()
        return self._batch.rows.k.copy()

    @property
    def context(self) -> tuple[RoundContext, ...]:
        """Each sub-env's upcoming round as the server sees it (one context per sub-env, arrays [K]
        of its cell's K devices)."""
        return self.round_context()

    @property
    def oracle_context(self) -> tuple[RoundContext, ...]:
        """Each sub-env's upcoming round's truth (as :attr:`MultiSpinCellsEnv.oracle_context`)."""
        return self.round_context(oracle=True)

    def round_context(self, oracle: bool | str = False) -> tuple[RoundContext, ...]:
        """Each sub-env's upcoming round's context (``oracle`` as :meth:`MultiSpinCellsEnv.round_context`)."""
        self._ready()
        return tuple(self._batch.context(i, oracle) for i in range(self.num_envs))

    @property
    def states(self) -> tuple:
        """Each sub-env's functional state, as its cell's own (a batch of one with K devices)."""
        self._ready()
        return tuple(self._batch.rows.state(i) for i in range(self.num_envs))

    @property
    def state(self) -> tuple:
        """:attr:`states` (the cells of the sub-envs differ in K: no one batched state)."""
        return self.states

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Start every sub-env's episode (sub-env i seeded ``seed + i``, or by a list of seeds);
        ``options={"config": {...}}`` as :meth:`MultiSpinCellsEnv.reset`, for every sub-env."""
        seeds = seed_list(seed, self.num_envs)
        if options and "config" in options:
            seeders = self._batch.seeders
            self._use(config_from_options(self.config, options["config"]))
            self._batch.seeders = seeders
        for i, s in enumerate(seeds):
            self._batch.start(i, s)
        self._started = True
        self._autoreset.clear()
        return self._batch.rows.obs.copy(), {"num_devices": self._batch.rows.k.copy(),
                                             "_num_devices": np.ones(self.num_envs, bool)}

    def _restart(self, rows: np.ndarray) -> None:
        for i in rows:
            self._batch.start(i, None)

    def what_if(self, actions) -> tuple[np.ndarray, np.ndarray]:
        """Counterfactual evaluation on common random numbers: the tokens [n] and the latency (s) [n]
        each sub-env's coming round would give if ``actions`` [n, k_max] were played — on the very
        verification outcomes and gains its next :meth:`step` will use, whatever action that step
        plays. The state, every generator and every trajectory are unchanged. Goodput = tokens /
        latency. A sub-env whose next step is a reset (next-step autoreset) plays no round: 0
        tokens, latency 0.

        This is a simulator's privilege, not something a server could observe: a learner may use
        it to score a reference action on the same draws (a control variate for its reward).
        """
        self._ready()
        res = self._batch.what_if(self._batch.check(actions), self._autoreset.playing())
        return res.total_tokens.copy(), res.latency.copy()

    def step(self, actions):
        """Play one round in every sub-env (``actions`` [n, k_max]; slots past a cell's K are
        ignored) — see the class docstring for autoreset and ``info``."""
        self._ready()
        n, cfg, batch = self.num_envs, self.config, self._batch
        gamma = batch.check(actions)
        live = self._autoreset.playing()
        res = batch.step(gamma, live)
        truncated = live & (batch.rows.t >= cfg.episode_length)
        terminated = np.zeros(n, dtype=bool)
        rewards = np.where(live, res.goodput * cfg.reward_scale, 0.0)
        info: dict[str, Any] = batch.info(res, live) if live.any() else {}
        self._autoreset.finish(live, truncated | terminated, info, lambda: batch.rows.obs, self._restart)
        if not self._autoreset.same_step:
            info["num_devices"], info["_num_devices"] = batch.rows.k.copy(), np.ones(n, bool)
        return batch.rows.obs.copy(), rewards, terminated, truncated, info


def check_action_batch(actions: Any, shape: tuple[int, ...], n: int) -> None:
    """``actions`` must have ``shape`` (``ValueError`` naming it otherwise)."""
    got = np.shape(actions)
    if got != shape:
        raise ValueError(f"actions of shape {got} are invalid; allowed: shape {shape} "
                         f"({n} envs × {shape[1]} device slots)")


def cells_vector_env(num_envs: int = 1, config: CellConfig | dict | None = None, render_mode: str | None = None,
                     autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP, **overrides: Any) -> VectorEnv:
    """``gymnasium.make_vec("msenv/MultiSpin-Cells-v0", n)``: the batched
    :class:`MultiSpinCellsVectorEnv`, or for a render mode :class:`MultiSpinCellsSyncVectorEnv`
    (same meaning, stepped one env after the other)."""
    check_cell_fields("cells_vector_env()", overrides)
    cls = MultiSpinCellsVectorEnv if render_mode is None else MultiSpinCellsSyncVectorEnv
    return cls(num_envs, resolve_cells(config, **overrides), render_mode=render_mode, autoreset_mode=autoreset_mode)


__all__ = ["MultiSpinCellsSyncVectorEnv", "MultiSpinCellsVectorEnv", "cells_vector_env", "check_action_batch"]
