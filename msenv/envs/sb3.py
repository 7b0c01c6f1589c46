"""Stable-Baselines3 adapter for the batched vector env (needs ``stable-baselines3``).

``SB3VecEnv(MultiSpinVectorEnv(...))`` (or a batched cells env,
:class:`~msenv.envs.cells_vector.MultiSpinCellsVectorEnv`) speaks SB3's VecEnv API: ``reset()`` without a seed
(call ``seed(s)`` first), ``step_async``/``step_wait``, episodes reset in the step that ends
them with the last observation in ``infos[i]["terminal_observation"]`` and
``infos[i]["TimeLimit.truncated"]``, and an ``"episode"`` entry (``r``, ``l``, ``t``) like
SB3's ``VecMonitor`` writes, so ``ep_rew_mean`` is logged without another wrapper. Each info holds the
round's scalars, ``round_tokens`` (Σ_k N_k) and the summary of :func:`msenv.envs.env.round_summary`.
:func:`what_if` asks any SB3 VecEnv of msenv envs for a counterfactual round on common random
numbers (the batched envs in one call, single envs one by one).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from .cells_vector import MultiSpinCellsVectorEnv
from .env import SUMMARY_KEYS, round_summary
from .vector import MultiSpinVectorEnv

_SCALAR_INFO = ("t_draft", "t_verify", "t_com", "latency", "goodput", "episode_tokens", "episode_time",
                "episode_throughput")


class SB3VecEnv(VecEnv):
    """SB3 VecEnv over a :class:`~msenv.envs.vector.MultiSpinVectorEnv` or a
    :class:`~msenv.envs.cells_vector.MultiSpinCellsVectorEnv` (switched to same-step autoreset)."""

    def __init__(self, venv: MultiSpinVectorEnv | MultiSpinCellsVectorEnv) -> None:
        from gymnasium.vector import AutoresetMode

        venv.metadata = {**venv.metadata, "autoreset_mode": AutoresetMode.SAME_STEP}
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._next_seeds: list[int | None] | None = None
        self._actions: np.ndarray | None = None
        self._ep_ret = np.zeros(self.num_envs)
        self._ep_len = np.zeros(self.num_envs, dtype=np.int64)
        self._t0 = time.time()

    def reset(self) -> np.ndarray:
        seed = self._next_seeds if self._next_seeds is not None else None
        obs, _ = self.venv.reset(seed=seed)
        self._next_seeds = None
        self._ep_ret[:] = 0.0
        self._ep_len[:] = 0
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def seed(self, seed: int | None = None):
        self._next_seeds = [None if seed is None else seed + i for i in range(self.num_envs)]
        return self._next_seeds

    def seed_next_reset(self, seeds: list[int | None]) -> None:
        """Seed the next reset's environment i with ``seeds[i]`` (one seed per environment, where
        :meth:`seed` gives ``seed + i``)."""
        if len(seeds) != self.num_envs:
            raise ValueError(f"seed list has {len(seeds)} entries; expected num_envs={self.num_envs}")
        self._next_seeds = list(seeds)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs, -1)

    def step_wait(self):
        obs, rew, term, trunc, info = self.venv.step(self._actions)
        info.update(round_summary(self._actions, info["modes"], info.get("num_devices")))
        done = term | trunc
        round_tokens = info["tokens"].sum(axis=-1)  # padded slots of a cell generator hold 0
        self._ep_ret += rew
        self._ep_len += 1
        infos: list[dict[str, Any]] = []
        for i in range(self.num_envs):
            d: dict[str, Any] = {k: float(info[k][i]) for k in _SCALAR_INFO + SUMMARY_KEYS}
            d["round_tokens"] = float(round_tokens[i])
            if "num_devices" in info:  # a cell generator: the K of the round played
                d["num_devices"] = int(info["num_devices"][i])
            if done[i]:
                d["terminal_observation"] = info["final_obs"][i]
                d["TimeLimit.truncated"] = bool(trunc[i] and not term[i])
                d["episode"] = {"r": float(self._ep_ret[i]), "l": int(self._ep_len[i]),
                                "t": round(time.time() - self._t0, 6)}
                self._ep_ret[i] = 0.0
                self._ep_len[i] = 0
            infos.append(d)
        return obs, rew.astype(np.float32), done, infos

    def what_if(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The wrapped env's counterfactual round on common random numbers — (tokens [n], latency
        [n]) of ``actions`` on the draws the coming step will use
        (:meth:`msenv.envs.vector.MultiSpinVectorEnv.what_if`,
        :meth:`msenv.envs.cells_vector.MultiSpinCellsVectorEnv.what_if`)."""
        return self.venv.what_if(_action_rows(actions, self.num_envs))

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        return [getattr(self.venv, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        return [getattr(self.venv, method_name)(*method_args, **method_kwargs) for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        """True for SB3's ``Monitor``: the adapter writes Monitor's ``info["episode"]`` itself
        (so ``evaluate_policy`` reads unnormalised episode returns from it)."""
        from stable_baselines3.common.monitor import Monitor

        return [wrapper_class is Monitor for _ in self._get_indices(indices)]


def _action_rows(actions, n: int) -> np.ndarray:
    """``actions`` as one row per env; any other shape is refused, never reshaped."""
    a = np.asarray(actions)
    if a.ndim != 2 or a.shape[0] != n:
        raise ValueError(f"actions of shape {a.shape} are invalid; allowed: one row per env, shape ({n}, …)")
    return a


def what_if(venv: VecEnv, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tokens [n], latency [n]) that ``actions`` would get in each sub-env's coming round, on the
    draws its step will use: the VecEnv's own ``what_if`` (the batched envs, and wrappers that map
    actions), else each single env's (:meth:`msenv.MultiSpinEnv.what_if`, through SB3's
    ``env_method``)."""
    if hasattr(venv, "what_if"):
        return venv.what_if(actions)
    actions = _action_rows(actions, venv.num_envs)
    try:
        out = [venv.env_method("what_if", actions[i], indices=[i])[0] for i in range(venv.num_envs)]
    except AttributeError:
        raise TypeError(f"what_if needs msenv environments; {type(venv).__name__}'s have no what_if") from None
    tokens, latency = zip(*out)
    return np.asarray(tokens, dtype=np.float64), np.asarray(latency, dtype=np.float64)


__all__ = ["SB3VecEnv", "what_if"]
