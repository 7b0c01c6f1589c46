"""Vector envs of the cell generator ``msenv/MultiSpin-Cells-v0`` (:mod:`msenv.cells`).

:class:`MultiSpinCellsVectorEnv` holds ``n`` copies' cells in one batch padded to ``k_max`` and
plays every copy's round in one kernel call (:func:`msenv.functional.step_padded_cells`);
:class:`MultiSpinCellsSyncVectorEnv` steps single :class:`~msenv.cells.MultiSpinCellsEnv` one
after the other (a base with the model §11 dynamics, or a render mode). Both mean the same, bit
for bit; :func:`cells_vector_env` (``gymnasium.make_vec``'s entry point) picks between them.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..config.system import SystemConfig
from ..engine.context import validate_action
from ..engine.functional import observe, reset_draws, reset_state, step_draws, warm_up
from ..engine.paper import step_padded_cells
from ..engine.kinds import INFO_KEYS, engine_of
from ..engine.observation import GLOBAL_FEATURES, device_features
from ..engine.state import State
from .cells import (CellConfig, MultiSpinCellsEnv, cell_rng, check_cell_fields, draw_cell, pad_observation,
                    reset_option_config, resolve_cells)
from .shell import (Autoreset, Totals, autoreset_mode_of, batch_info, check_num_envs, draw, episode_seed, peek,
                    seed_list)


class MultiSpinCellsSyncVectorEnv(gym.vector.SyncVectorEnv):
    """``n`` :class:`MultiSpinCellsEnv` side by side, stepped one after the other (Gymnasium's
    ``SyncVectorEnv``): what :func:`cells_vector_env` gives for a base with the model §11 dynamics
    or a render mode; :class:`MultiSpinCellsVectorEnv` is the same, batched, for the paper scenario."""

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
    """``n`` cell generators in one padded batch, every sub-env's round in one kernel call.

    Sub-env ``i`` has the meaning of a :class:`MultiSpinCellsEnv` seeded ``s + i`` by
    ``reset(seed=s)``: it draws its cells, episode seeds and every uniform from its own
    generators exactly as that env does, so observations, rewards and ``info`` equal those of
    :class:`MultiSpinCellsSyncVectorEnv` (Gymnasium's ``SyncVectorEnv`` of the single envs) bit
    for bit (a test holds this). The cells are padded to ``k_max`` device slots; a padded slot
    never drafts, never counts in the verification pass, its batch size or the slowest drafter —
    each row plays the kernel of its own K devices (:func:`msenv.functional.step_padded_cells`).
    Resets (one per episode) are per sub-env in Python. Needs a base in the paper scenario
    (:func:`cells_vector_env` picks the stepped version otherwise).

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
        self.config = resolve_cells(config, **overrides)
        _check_batchable(self.config)
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode_of(autoreset_mode)}
        self.num_envs, self.render_mode = int(num_envs), None
        single = MultiSpinCellsEnv(self.config)
        self.single_action_space, self.single_observation_space = single.action_space, single.observation_space
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        warm_up(self.config.base)
        n, k_max, base = self.num_envs, self.config.k_max, self.config.base
        self._seeders: list[np.random.Generator | None] = [None] * n  # episode seeds (MultiSpinCellsEnv's)
        self._gens: list[np.random.Generator | None] = [None] * n  # each episode's own stream
        self.cells: list[SystemConfig | None] = [None] * n  #: each sub-env's current cell
        self._k = np.zeros(n, np.int64)
        self._n_step = np.zeros(n, np.int64)
        self._u = np.zeros((n, step_draws(base.replace(num_devices=k_max))))
        self._state: State | None = None
        self._template = np.zeros((n,) + self.single_observation_space.shape, np.float32)
        self._obs = np.zeros_like(self._template)
        self._t = np.zeros(n, np.int64)
        self._totals = Totals(n)
        self._autoreset = Autoreset(self, n)

    @property
    def draft_times(self) -> np.ndarray:
        """Each sub-env's device slots' drafting times T_k^dft, s per token [n, k_max] (a padded
        slot: 0), as :attr:`MultiSpinCellsEnv.draft_times`."""
        if self._state is None:
            raise RuntimeError("call reset() first")
        return self._state.t_draft.copy()

    @property
    def num_devices(self) -> np.ndarray:
        """K of each sub-env's current cell [n]."""
        if self._state is None:
            raise RuntimeError("call reset() first")
        return self._k.copy()

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Start every sub-env's episode (sub-env i seeded ``seed + i``, or by a list of seeds);
        ``options={"config": {...}}`` as :meth:`MultiSpinCellsEnv.reset`, for every sub-env."""
        seeds = seed_list(seed, self.num_envs)
        if options and "config" in options:
            self.config = reset_option_config(self.config, options["config"])
            _check_batchable(self.config)
        if self._state is None:
            k_max, base = self.config.k_max, self.config.base
            z = np.zeros((self.num_envs, k_max))
            self._state = State(z.copy(), z.copy(), np.zeros((self.num_envs, k_max), np.int64), z.copy(), z.copy(),
                                np.zeros(self.num_envs), np.zeros(self.num_envs), z.copy(), z.copy(),
                                np.zeros(self.num_envs, np.int64),
                                np.zeros((self.num_envs, k_max * device_features(base) + GLOBAL_FEATURES), np.float32))
        for i, s in enumerate(seeds):
            self._start(i, s)
        self._autoreset.clear()
        return self._obs.copy(), {"num_devices": self._k.copy(), "_num_devices": np.ones(self.num_envs, bool)}

    def _start(self, i: int, seed: int | None) -> None:
        """Sub-env i's next episode, drawn as :meth:`MultiSpinCellsEnv.reset` draws it."""
        self._seeders[i], ep_seed = episode_seed(self._seeders[i], seed)
        cell = draw_cell(self.config, cell_rng(ep_seed))
        gen = seeding.np_random(ep_seed)[0]
        one = reset_state(gen.random((1, reset_draws(cell))), cell)
        k, s = cell.num_devices, self._state
        for name in ("distance", "beta", "task", "alpha", "t_draft", "g_ul", "g_dl"):
            getattr(s, name)[i] = 0
            getattr(s, name)[i, :k] = getattr(one, name)[0]
        s.p_ul_w[i], s.p_dl_w[i] = one.p_ul_w[0], one.p_dl_w[0]
        s.static_obs[i] = 0
        s.static_obs[i, : one.static_obs.shape[1]] = one.static_obs[0]
        self._template[i] = self._obs[i] = pad_observation(observe(one, cell)[0], cell, one.t_draft[0], self.config.k_max)
        self.cells[i], self._gens[i], self._k[i], self._n_step[i] = cell, gen, k, step_draws(cell)
        self._t[i] = 0
        self._totals.clear(i)

    def _restart(self, rows: np.ndarray) -> None:
        for i in rows:
            self._start(i, None)

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
        if self._state is None:
            raise RuntimeError("call reset() before what_if()")
        check_action_batch(actions, self.action_space.shape, self.num_envs)
        gamma = validate_action(actions, self.config.base, batch=self.num_envs, num_devices=self.config.k_max)
        live = self._autoreset.playing()
        u = peek(self._gens, np.flatnonzero(live), self._u.copy(), self._n_step)
        s = self._state
        scratch = s.evolve(g_ul=s.g_ul.copy(), g_dl=s.g_dl.copy())  # the kernel moves the gains on
        _, res = step_padded_cells(u, self._n_step, self._k, live, scratch, gamma, self._template, self.config.base)
        return res.total_tokens.copy(), res.latency.copy()

    def step(self, actions):
        """Play one round in every sub-env (``actions`` [n, k_max]; slots past a cell's K are
        ignored) — see the class docstring for autoreset and ``info``."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        n, cfg = self.num_envs, self.config
        check_action_batch(actions, self.action_space.shape, n)
        gamma = validate_action(actions, cfg.base, batch=n, num_devices=cfg.k_max)
        live = self._autoreset.playing()
        draw(self._gens, np.flatnonzero(live), self._u, self._n_step)
        obs, res = step_padded_cells(self._u, self._n_step, self._k, live, self._state, gamma, self._template, cfg.base)
        self._t[live] += 1
        self._totals.add(res, live)
        truncated = live & (self._t >= cfg.episode_length)
        terminated = np.zeros(n, dtype=bool)
        rewards = np.where(live, res.goodput * cfg.reward_scale, 0.0)
        info: dict[str, Any] = {}
        if live.any():
            info = batch_info(res, live, self._totals, INFO_KEYS)
            info["num_devices"], info["_num_devices"] = np.where(live, self._k, 0), live.copy()
        self._obs = np.where(live[:, None], obs, self._obs)
        self._autoreset.finish(live, truncated | terminated, info, lambda: self._obs, self._restart)
        if not self._autoreset.same_step:
            info["num_devices"], info["_num_devices"] = self._k.copy(), np.ones(n, bool)
        return self._obs.copy(), rewards, terminated, truncated, info


def _check_batchable(cells: CellConfig) -> None:
    if not engine_of(cells.base).pads_cells:
        raise ValueError("the batched cells vector env needs a base in the paper scenario (got one with the model §11 "
                         "dynamics); allowed: such a base, or cells_vector_env / MultiSpinCellsSyncVectorEnv, which "
                         "step the cells one after the other")


def check_action_batch(actions: Any, shape: tuple[int, ...], n: int) -> None:
    got = np.shape(actions)
    if got != shape:
        raise ValueError(f"actions of shape {got} are invalid; allowed: shape {shape} "
                         f"({n} envs × {shape[1]} device slots)")


def cells_vector_env(num_envs: int = 1, config: CellConfig | dict | None = None, render_mode: str | None = None,
                     autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP, **overrides: Any) -> VectorEnv:
    """``gymnasium.make_vec("msenv/MultiSpin-Cells-v0", n)``: the batched
    :class:`MultiSpinCellsVectorEnv` for a base in the paper scenario without a render mode,
    else :class:`MultiSpinCellsSyncVectorEnv` (same meaning, stepped one env after the other)."""
    check_cell_fields("cells_vector_env()", overrides)
    cells = resolve_cells(config, **overrides)
    batched = engine_of(cells.base).pads_cells and render_mode is None
    cls = MultiSpinCellsVectorEnv if batched else MultiSpinCellsSyncVectorEnv
    return cls(num_envs, cells, render_mode=render_mode, autoreset_mode=autoreset_mode)


__all__ = ["MultiSpinCellsSyncVectorEnv", "MultiSpinCellsVectorEnv", "cells_vector_env", "check_action_batch"]
