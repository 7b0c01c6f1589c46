"""Learned agents behind the common controller interface, and save/load in one call.

A saved agent is a directory holding ``model.zip`` (SB3 PPO), ``vecnormalize.pkl`` (observation
statistics) and ``config.json`` (the :class:`~msenv.SystemConfig` it was trained on, and
``frame_stack``: how many normalised observations the policy sees, as SB3's ``VecFrameStack``
stacks them — oldest first, zeros before the episode's first round).
:func:`load_agent` returns a :class:`PPOController` that the evaluation harness drives like any
baseline. Its deterministic decision runs the policy network as a small numpy MLP (weights
taken from the torch policy): identical actions to ``model.predict(..., deterministic=True)``,
without torch's per-call overhead.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from baselines.base import Controller
from msenv.cells import pad_observation, row_size
from msenv.config import SystemConfig
from msenv.functional import RoundContext
from msenv.observation import obs_size

MODEL_FILE, NORM_FILE, CONFIG_FILE = "model.zip", "vecnormalize.pkl", "config.json"


class NumpyPolicy:
    """Deterministic forward pass of an SB3 ``MlpPolicy`` actor in numpy."""

    def __init__(self, policy) -> None:
        import torch.nn as nn
        from stable_baselines3.common.torch_layers import FlattenExtractor

        self.layers: list[tuple[str, Any]] = []
        if not isinstance(policy.features_extractor, FlattenExtractor):
            raise ValueError("NumpyPolicy supports SB3's FlattenExtractor (MlpPolicy) only")
        for mod in list(policy.mlp_extractor.policy_net) + [policy.action_net]:
            if isinstance(mod, nn.Linear):
                self.layers.append(("linear", (mod.weight.detach().cpu().numpy().T.astype(np.float64),
                                               mod.bias.detach().cpu().numpy().astype(np.float64))))
            elif isinstance(mod, nn.Tanh):
                self.layers.append(("tanh", None))
            elif isinstance(mod, nn.ReLU):
                self.layers.append(("relu", None))
            else:
                raise ValueError(f"NumpyPolicy cannot run layer {mod!r}; supported: Linear, Tanh, ReLU")
        self.nvec = np.asarray(policy.action_space.nvec)

    def logits(self, x: np.ndarray) -> np.ndarray:
        for kind, p in self.layers:
            if kind == "linear":
                x = x @ p[0] + p[1]
            elif kind == "tanh":
                x = np.tanh(x)
            else:
                x = np.maximum(x, 0.0)
        return x

    def act(self, x: np.ndarray) -> np.ndarray:
        """Argmax of each device's categorical (all devices share one size γ_max + 1)."""
        z = self.logits(x)
        return z.reshape(*z.shape[:-1], len(self.nvec), int(self.nvec[0])).argmax(axis=-1)


class PPOController(Controller):
    """A trained PPO agent as a :class:`~baselines.base.Controller` (needs the observation)."""

    def __init__(self, model, obs_rms=None, clip_obs: float = 10.0, epsilon: float = 1e-8,
                 config: SystemConfig | None = None, name: str = "ppo", frame_stack: int = 1) -> None:
        super().__init__()
        self.model = model
        self.name = name
        self.config = config
        self.obs_rms = obs_rms
        self.clip_obs, self.epsilon = clip_obs, epsilon
        from .setpolicy import DeviceSetPolicy, NumpySetPolicy

        self.policy = NumpySetPolicy(model.policy) if isinstance(model.policy, DeviceSetPolicy) else NumpyPolicy(model.policy)
        self.frame_stack = int(frame_stack)
        self._history: np.ndarray | None = None
        self._layout: tuple[SystemConfig, int] | None = None  # (a cell's config, its single-cell obs size)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._history = None  # a new episode: the stack starts from zeros

    def _stacked(self, obs: np.ndarray) -> np.ndarray:
        z = self.normalize(obs)
        if self.frame_stack == 1:
            return z
        if self._history is None:
            self._history = np.zeros(z.shape[:-1] + (z.shape[-1] * self.frame_stack,))
        d = z.shape[-1]
        self._history = np.concatenate([self._history[..., d:], z], axis=-1)
        return self._history

    def normalize(self, obs: np.ndarray) -> np.ndarray:
        if self.obs_rms is None:
            return np.asarray(obs, dtype=np.float64)
        z = (np.asarray(obs, dtype=np.float64) - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + self.epsilon)
        return np.clip(z, -self.clip_obs, self.clip_obs)

    def act(self, context: RoundContext, obs: np.ndarray | None = None) -> np.ndarray:
        if obs is None:
            raise ValueError(f"controller {self.name!r} needs the observation: call act(context, obs)")
        if getattr(self.policy, "masked", False):
            obs = self._as_generator_shows(context, obs)
        return self.policy.act(self._stacked(obs))

    def _as_generator_shows(self, context: RoundContext, obs: np.ndarray) -> np.ndarray:
        """A cell-generator agent's observation: checked against the cell's device rows, and padded
        as the generator shows it when it comes from a single-cell env (the layout of a config is
        worked out once, not per decision)."""
        cfg = context.config
        if self._layout is None or self._layout[0] is not cfg:
            if row_size(cfg) != self.policy.f:
                raise ValueError(f"agent {self.name!r} reads device rows of {self.policy.f} entries; this cell's have "
                                 f"{row_size(cfg)} (another model: e.g. the §11 dynamics add entries)")
            self._layout = (cfg, obs_size(cfg))
        if np.shape(obs)[-1] == self._layout[1]:  # a single-cell env's observation
            obs = pad_observation(np.asarray(obs), cfg, context.t_draft, cfg.num_devices)
        return obs

    def predict(self, observation, state=None, episode_start=None, deterministic: bool = True):
        """SB3-style predict on raw observations (deterministic numpy path)."""
        if episode_start is not None and np.any(episode_start):
            self._history = None
        x = self._stacked(observation)
        if not deterministic:
            act, _ = self.model.predict(x.astype(np.float32), deterministic=False)
            return act, state
        return self.policy.act(x), state


def load_config(data: dict[str, Any]):
    """A saved agent's config: a :class:`~msenv.cells.CellConfig` (an agent of the cell generator)
    or a :class:`~msenv.SystemConfig`."""
    if "k_range" in data:
        from msenv.cells import CellConfig

        return CellConfig.from_dict(data)
    return SystemConfig.from_dict(data)


def save_agent(path: str | Path, model, vecnormalize, config: SystemConfig, extra: dict | None = None) -> Path:
    """Save model, normalisation statistics and config into directory ``path``."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save(path / MODEL_FILE)
    if vecnormalize is not None:
        vecnormalize.save(str(path / NORM_FILE))
    (path / CONFIG_FILE).write_text(json.dumps({"config": config.to_dict(), **(extra or {})}, indent=2))
    return path


def load_agent(path: str | Path, name: str = "ppo") -> PPOController:
    """Reload a saved agent in one call (CPU)."""
    from stable_baselines3 import PPO

    path = Path(path)
    if not (path / MODEL_FILE).exists():
        raise FileNotFoundError(f"no saved agent at {path} (expected {MODEL_FILE}, {NORM_FILE}, {CONFIG_FILE})")
    model = PPO.load(path / MODEL_FILE, device="cpu")
    meta = json.loads((path / CONFIG_FILE).read_text())
    config = load_config(meta["config"])
    obs_rms, clip, eps = None, 10.0, 1e-8
    if (path / NORM_FILE).exists():
        with open(path / NORM_FILE, "rb") as fh:
            vn = pickle.load(fh)
        obs_rms, clip, eps = (vn.obs_rms if vn.norm_obs else None), vn.clip_obs, vn.epsilon
    return PPOController(model, obs_rms, clip, eps, config, name, frame_stack=int(meta.get("frame_stack", 1)))


class AgentFactory:
    """Picklable factory: loads the agent from ``path`` (for spawned harness workers)."""

    def __init__(self, path: str | Path, name: str = "ppo") -> None:
        self.path, self.name = str(path), name

    def __call__(self) -> PPOController:
        return load_agent(self.path, self.name)
