"""PettingZoo multi-agent variant: every device is an agent choosing its own draft length.

``MultiSpinParallelEnv`` is a :class:`pettingzoo.ParallelEnv` over :class:`msenv.envs.env.MultiSpinEnv`
(same dynamics, same seeding). Agents ``device_0 … device_{K−1}``; action ``Discrete(γ_max+1)``.

Local observation of device k (float32, in [−1, 1]; F = the entries of a device row of the
env's layout, :func:`msenv.layout_of`, 5 in the paper scenario, so 10 entries):

=======  ====================================================================
index    feature
=======  ====================================================================
0…F−1    device k's own features (α or its posterior mean, drafting-speed scale,
         g^ul, g^dl, β, and the model §11 extras; as in :mod:`msenv.engine.observation`)
F, F+1   the global features (P_ul, P_dl)
F+2…F+4  shared: mean over all devices of slot 0 (α), of the squashed g^ul and g^dl
=======  ====================================================================

Reward: ``"shared"`` (default) — every agent gets the sum goodput Σ N / T (× reward_scale);
``"per_device"`` — agent k gets its own token rate N_k / T (× reward_scale).
Needs the ``[marl]`` extra (pettingzoo).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from ..config.system import SystemConfig, check_fields
from ..engine.functional import engine_for
from .env import MultiSpinEnv

REWARD_MODES = ("shared", "per_device")


class MultiSpinParallelEnv(ParallelEnv):
    """Each device is an agent (see module docstring)."""

    metadata = {"name": "msenv_multispin_v0", "render_modes": ["human", "rgb_array", "ansi"], "is_parallelizable": True}

    def __init__(self, config: SystemConfig | dict | str | None = None, reward: str = "shared",
                 render_mode: str | None = None, **overrides: Any) -> None:
        if reward not in REWARD_MODES:
            raise ValueError(f"reward={reward!r} is invalid; allowed: {', '.join(map(repr, REWARD_MODES))}")
        check_fields(f"{type(self).__name__}.__init__()", overrides)
        self.env = MultiSpinEnv(config, render_mode=render_mode, **overrides)
        self.config = self.env.config
        self.reward_mode = reward
        self.render_mode = render_mode
        self.possible_agents = [f"device_{k}" for k in range(self.config.num_devices)]
        self.agents: list[str] = []

    @functools.cache  # noqa: B019 (PettingZoo's idiom: one space object per agent, for the env's life)
    def observation_space(self, agent: str) -> spaces.Box:
        lay = engine_for(self.config).layout
        return spaces.Box(-1.0, 1.0, shape=(lay.row + lay.n_globals + 3,), dtype=np.float32)

    @functools.cache  # noqa: B019 (as above)
    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(self.config.gamma_max + 1)

    def _split(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        return self._local(obs, self.config)

    def _local(self, obs: np.ndarray, cfg: SystemConfig) -> dict[str, np.ndarray]:
        lay = engine_for(cfg).layout
        k, nf = lay.slots, lay.row
        dev = obs[: nf * k].reshape(k, nf)
        glob = obs[nf * k :]
        shared = dev[:, [0, 2, 3]].mean(axis=0)
        local = np.concatenate([dev, np.broadcast_to(glob, (k, lay.n_globals)), np.broadcast_to(shared, (k, 3))],
                               axis=1)
        local = local.astype(np.float32)
        return {a: local[i] for i, a in enumerate(self.possible_agents[:k])}

    def _check_actions(self, actions: dict[str, Any]) -> None:
        """An episode must be running and every live agent must have an action."""
        if not self.agents:
            raise RuntimeError("the episode is over: call reset()")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"actions missing for agents {missing}; every live agent must act")

    def _per_agent(self, agents: list[str], reward: float, info: dict, cfg: SystemConfig) -> tuple[dict, dict]:
        """The round's rewards (shared, or each device's tokens over the round's latency) and infos
        of ``agents`` (devices 0 … len − 1)."""
        if self.reward_mode == "shared":
            rewards = {a: float(reward) for a in agents}
        else:
            per = info["tokens"] / info["latency"] * cfg.episode.reward_scale
            rewards = {a: float(per[i]) for i, a in enumerate(agents)}
        infos = {a: {"tokens": int(info["tokens"][i]), "mode": int(info["modes"][i]),
                     "goodput": info["goodput"], "latency": info["latency"]} for i, a in enumerate(agents)}
        return rewards, infos

    def reset(self, seed: int | None = None, options: dict | None = None):
        obs, _ = self.env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        return self._split(obs), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        self._check_actions(actions)
        gamma = np.array([int(actions[a]) for a in self.possible_agents], dtype=np.int64)
        obs, reward, term, trunc, info = self.env.step(gamma)
        rewards, infos = self._per_agent(self.possible_agents, reward, info, self.config)
        obs_d = self._split(obs)
        terms = {a: bool(term) for a in self.agents}
        truncs = {a: bool(trunc) for a in self.agents}
        if term or trunc:
            self.agents = []
        return obs_d, rewards, terms, truncs, infos

    def render(self):
        return self.env.render()

    def state(self) -> np.ndarray:
        """The global observation (what the single-agent env observes)."""
        return engine_for(self.config).observe(self.env.state)[0]

    def close(self) -> None:
        self.env.close()


def parallel_env(**kwargs: Any) -> MultiSpinParallelEnv:
    """PettingZoo-style constructor."""
    return MultiSpinParallelEnv(**kwargs)


class MultiSpinCellsParallelEnv(MultiSpinParallelEnv):
    """The cell generator (:class:`msenv.envs.cells.MultiSpinCellsEnv`) as a PettingZoo ParallelEnv:
    ``possible_agents`` are the ``k_max`` device slots, an episode's ``agents`` its K devices
    (``device_0 … device_{K−1}``); local observations as :class:`MultiSpinParallelEnv`'s (the
    shared means over the K devices). ``config``/``overrides``: as the cells env's."""

    def __init__(self, config=None, reward: str = "shared", render_mode: str | None = None, **overrides: Any) -> None:
        from .cells import MultiSpinCellsEnv

        if reward not in REWARD_MODES:
            raise ValueError(f"reward={reward!r} is invalid; allowed: {', '.join(map(repr, REWARD_MODES))}")
        self.env = MultiSpinCellsEnv(config, render_mode=render_mode, **overrides)
        self.config = self.env.config.base  # the model of every cell (its num_devices is not used)
        self.reward_mode = reward
        self.render_mode = render_mode
        self.possible_agents = [f"device_{k}" for k in range(self.env.config.k_max)]
        self.agents = []

    def reset(self, seed: int | None = None, options: dict | None = None):
        self.env.reset(seed=seed, options=options)
        cell = self.env.cell
        self.agents = list(self.possible_agents[: cell.num_devices])
        return self._local(self._single_obs(), cell), {a: {} for a in self.agents}

    def _single_obs(self) -> np.ndarray:
        return engine_for(self.env.cell).observe(self.env.state)[0]

    def step(self, actions: dict[str, Any]):
        self._check_actions(actions)
        cell, agents = self.env.cell, list(self.agents)
        gamma = np.zeros(self.env.config.k_max, dtype=np.int64)
        gamma[: len(agents)] = [int(actions[a]) for a in agents]
        _, reward, term, trunc, info = self.env.step(gamma)
        rewards, infos = self._per_agent(agents, reward, info, cell)
        if term or trunc:
            self.agents = []
        return (self._local(self._single_obs(), cell), rewards, {a: bool(term) for a in agents},
                {a: bool(trunc) for a in agents}, infos)

    def state(self) -> np.ndarray:
        """The padded observation of the cell (what the single-agent cells env observes)."""
        from .cells import pad_observation

        return pad_observation(self._single_obs(), self.env.cell, self.env.state.t_draft[0], self.env.config.k_max)
