"""Learned agents behind the common controller interface, and save/load in one call.

A saved agent is a directory holding its portable decision files — ``policy.npz`` (weights)
and ``agent.json`` (policy layout, observation normalisation, ``frame_stack``, the config it was
trained on; :mod:`agents.portable`) — and SB3's files for resuming training: ``model.zip``,
``vecnormalize.pkl`` and ``config.json``. :func:`load_agent` reads the portable files only, so
loading an agent runs no code from it; it returns a :class:`PPOController` that the evaluation
harness drives like any baseline. Its deterministic decision runs the policy network in numpy:
identical actions to ``model.predict(..., deterministic=True)``. ``frame_stack``
is how many normalised observations the policy sees, as SB3's ``VecFrameStack`` stacks them —
oldest first, zeros before the episode's first round.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from baselines.base import Controller
from msenv import layout_of
from msenv.atomic import replace_dir
from msenv.config import SystemConfig, spec_from_dict
from msenv.engine.context import RoundContext
from msenv.engine.observation import Layout
from msenv.envs.cells import pad_observation

from .mlp import NumpyPolicy
from .policies import Policy
from .portable import AGENT_FILE, ObsNormalization, normalization_of, read_portable, write_portable
from .threads import blas_libraries

MODEL_FILE, NORM_FILE, CONFIG_FILE = "model.zip", "vecnormalize.pkl", "config.json"


class CellLayout(NamedTuple):
    """The layout of the cell a cell generator's agent last decided in (worked out once per cell)."""

    config: SystemConfig  #: the cell's config
    layout: Layout  #: its single-cell layout


def numpy_policy(sb3_policy, config) -> Policy:
    """The numpy decision (a :class:`~agents.policies.Policy`) of a trained SB3 policy: its own
    ``numpy_policy(config)`` when it has one (the device-set and budget policies), else an
    ``MlpPolicy``'s (:class:`~agents.mlp.NumpyPolicy`)."""
    own = getattr(sb3_policy, "numpy_policy", None)
    return own(config) if own is not None else NumpyPolicy.from_torch(sb3_policy)


class PPOController(Controller):
    """A trained PPO agent as a :class:`~baselines.base.Controller` (needs the observation).

    Built from an SB3 ``model`` (its numpy decision policy is copied out) or, as
    :func:`load_agent` does, from a numpy ``policy`` alone (no torch, no pickle); ``obs_rms``
    holds the observation statistics: VecNormalize's ``obs_rms`` (with ``clip_obs``, ``epsilon``),
    an :class:`~agents.portable.ObsNormalization` (used as it is), or None."""

    def __init__(self, model=None, obs_rms=None, clip_obs: float = 10.0, epsilon: float = 1e-8,
                 config: SystemConfig | None = None, name: str = "ppo", frame_stack: int = 1, *, policy=None) -> None:
        super().__init__()
        if model is None and policy is None:
            raise ValueError("PPOController needs an SB3 model or a numpy policy (policy=...)")
        self.model = model
        self.name = name
        self.config = config
        if obs_rms is None or isinstance(obs_rms, ObsNormalization):
            self.normalization = obs_rms
        else:  # VecNormalize's running statistics
            self.normalization = ObsNormalization(np.asarray(obs_rms.mean, dtype=np.float64),
                                                  np.asarray(obs_rms.var, dtype=np.float64), float(clip_obs),
                                                  float(epsilon))
        if policy is None:
            policy = numpy_policy(model.policy, config)
        self.policy = policy
        # found once per process, here: the first decision would otherwise pay for it (7–14 ms at K = 400)
        blas_libraries()
        self.frame_stack = int(frame_stack)
        self._history: np.ndarray | None = None
        self._layout: CellLayout | None = None

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
        if self.normalization is None:
            return np.asarray(obs, dtype=np.float64)
        return self.normalization(obs)

    def act(self, context: RoundContext, obs: np.ndarray | None = None) -> np.ndarray:
        if obs is None:
            raise ValueError(f"controller {self.name!r} needs the observation: call act(context, obs)")
        if self.policy.masked and context is not None:
            obs = self._as_generator_shows(context, obs)  # checks the rows against the cell's
            x = self.check_observation(obs, batch=False, mask=False)
            if self.policy.device_rows(x) < context.config.num_devices:
                raise ValueError(f"agent {self.name!r}: an observation of shape {x.shape} has fewer device rows "
                                 f"than this cell's {context.config.num_devices} devices")
        else:
            x = self.check_observation(obs, batch=False)
        return self.policy.act(self._stacked(x), context)

    def check_observation(self, obs, batch: bool = True, mask: bool = True) -> np.ndarray:
        """``obs`` as an array when this agent can read it (one observation, or with ``batch`` a
        batch of them; a cell generator's agent: with ``mask``, every row's mask entry 0 or 1);
        else ``ValueError`` naming its shape and the one expected."""
        x = np.asarray(obs)
        if x.dtype.kind not in "biuf":
            raise ValueError(f"agent {self.name!r}: the observation has dtype {x.dtype}; allowed: numbers")
        if not np.isfinite(x).all():
            raise ValueError(f"agent {self.name!r}: the observation holds NaN or infinite entries; allowed: finite "
                             "numbers")
        if not (x.ndim in ((1, 2) if batch else (1,)) and self.policy.fits(x, self.frame_stack, mask)):
            width, reads = self.policy.reads(self.config, self.frame_stack)
            shape = f"({width},)" + (f" or (n, {width})" if batch else "") if width is not None else "(width,)"
            raise ValueError(f"agent {self.name!r}: an observation of shape {x.shape} does not fit; expected "
                             f"{shape}: {reads}")
        return x

    def check_config(self, config) -> None:
        """Refuse (``ValueError`` saying why) an environment of ``config`` (a
        :class:`~msenv.SystemConfig` or a cell generator's :class:`~msenv.envs.cells.CellConfig`) whose
        observations or draft lengths this agent cannot read or give — what a harness checks
        before it starts any episode."""
        self.policy.check_config(config, self.name, self.frame_stack)
        n, gamma_max = self.policy.n_choices, layout_of(config).gamma_max
        if n != gamma_max + 1:
            raise ValueError(f"agent {self.name!r} chooses draft lengths 0..{n - 1}; this env's are 0..{gamma_max} "
                             "(gamma_max differs)")

    def _as_generator_shows(self, context: RoundContext, obs: np.ndarray) -> np.ndarray:
        """A cell-generator agent's observation: checked against the cell's device rows, and padded
        as the generator shows it when it comes from a single-cell env (the layout of a config is
        worked out once, not per decision)."""
        cfg = context.config
        if self._layout is None or self._layout.config is not cfg:
            lay = layout_of(cfg)
            if lay.row + 1 != self.policy.n_features:
                raise ValueError(f"agent {self.name!r} reads device rows of {self.policy.n_features} entries; this "
                                 f"cell's have {lay.row + 1} (another model: e.g. the §11 dynamics add entries)")
            self._layout = CellLayout(cfg, lay)
        lay = self._layout.layout
        if np.shape(obs)[-1] == lay.obs_size:  # a single-cell env's observation
            obs = pad_observation(np.asarray(obs), cfg, context.t_draft, cfg.num_devices)
        return obs

    def predict(self, observation, state=None, episode_start=None, deterministic: bool = True):
        """SB3-style predict on raw observations (deterministic numpy path)."""
        if episode_start is not None and np.any(episode_start):
            self._history = None
        x = self._stacked(self.check_observation(observation))
        if not deterministic:
            if self.model is None:
                raise ValueError("predict(deterministic=False) samples from SB3's torch policy: load the agent with "
                                 "load_agent(path, sb3=True) (it opens SB3's pickled files: trusted sources only)")
            act, _ = self.model.predict(x.astype(np.float32), deterministic=False)
            return act, state
        return self.policy.act(x), state


def load_config(data: dict[str, Any]):
    """A saved agent's config: a :class:`~msenv.envs.cells.CellConfig` (an agent of the cell generator)
    or a :class:`~msenv.SystemConfig`."""
    return spec_from_dict(data)


def save_agent(path: str | Path, model, vecnormalize, config: SystemConfig, extra: dict | None = None,
               files: dict[str, bytes] | None = None) -> Path:
    """Save an agent into directory ``path``: the portable decision files (``policy.npz``,
    ``agent.json``: :mod:`agents.portable`) and SB3's files for resuming training (``model.zip``,
    ``vecnormalize.pkl``, ``config.json``), as a whole (:func:`msenv.atomic.replace_dir`): a kill or
    a failed write leaves the earlier agent there intact, never new files beside old ones.
    ``files``: more files of the folder, name → bytes, written with it (the training record)."""
    path = Path(path)
    with replace_dir(path) as tmp:
        model.save(tmp / MODEL_FILE)
        if vecnormalize is not None:
            vecnormalize.save(str(tmp / NORM_FILE))
        meta = {"config": config.to_dict(), **(extra or {})}
        (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2))
        agent = PPOController(model, config=config)
        write_portable(tmp, agent.policy, normalization_of(vecnormalize), meta)
        for name, data in (files or {}).items():
            (tmp / name).write_bytes(data)
    return path


def load_agent(path: str | Path, name: str = "ppo", *, sb3: bool = False) -> PPOController:
    """The agent saved in directory ``path`` as a controller (CPU).

    By default from its portable files only (``agent.json``, ``policy.npz``): nothing is
    unpickled, and deterministic decisions are the trained policy's mode.
    ``sb3=True`` opens SB3's ``model.zip`` and ``vecnormalize.pkl`` instead — pickles, which run
    code when loaded: only for agents from a trusted source — and gives stochastic ``predict``."""
    path = Path(path)
    if not sb3:
        policy, normalization, meta = read_portable(path)
        return PPOController(None, normalization, config=_config_of(meta, path / AGENT_FILE), name=name,
                             frame_stack=_frame_stack(meta, path / AGENT_FILE), policy=policy)
    from stable_baselines3 import PPO

    if not (path / MODEL_FILE).exists():
        raise FileNotFoundError(f"no saved agent at {path} (expected {MODEL_FILE}, {NORM_FILE}, {CONFIG_FILE})")
    import zipfile

    if zipfile.is_zipfile(path / MODEL_FILE):  # SB3 itself says what a file that is no zip is
        with zipfile.ZipFile(path / MODEL_FILE) as archive:
            names = archive.namelist()
        if "data" not in names:  # SB3 would fail on an assert: "No data found in the saved file"
            arrays = bool(names) and all(n.endswith(".npy") for n in names)
            what = "a NumPy .npz archive of arrays (a portable policy.npz?)" if arrays else "a zip archive"
            raise ValueError(f"{path / MODEL_FILE}: not an SB3 model: {what} holding "
                             f"{', '.join(names[:3]) or 'nothing'}"
                             f"{', …' if len(names) > 3 else ''}, without the 'data' entry of the archive SB3's save "
                             "writes; expected model.zip from PPO.save (a portable agent loads with sb3=False)")
    model = PPO.load(path / MODEL_FILE, device="cpu")
    meta = json.loads((path / CONFIG_FILE).read_text())
    obs_rms, clip, eps = None, 10.0, 1e-8
    if (path / NORM_FILE).exists():
        with open(path / NORM_FILE, "rb") as fh:
            vn = pickle.load(fh)
        obs_rms, clip, eps = (vn.obs_rms if vn.norm_obs else None), vn.clip_obs, vn.epsilon
    return PPOController(model, obs_rms, clip, eps, _config_of(meta, path / CONFIG_FILE), name,
                         frame_stack=_frame_stack(meta, path / CONFIG_FILE))


def _frame_stack(meta: dict, source: Path) -> int:
    n = meta.get("frame_stack", 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{source}: frame_stack={n!r} is invalid; allowed: an integer ≥ 1")
    return n


def _config_of(meta: dict, source: Path):
    try:
        return load_config(meta["config"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{source}: its config is invalid ({type(e).__name__}: {e})") from None


class AgentFactory:
    """Picklable factory: loads the agent from ``path`` (for spawned harness workers)."""

    def __init__(self, path: str | Path, name: str = "ppo") -> None:
        self.path, self.name = str(path), name

    def __call__(self) -> PPOController:
        return load_agent(self.path, self.name)

    @staticmethod
    def decision_files() -> tuple[str, ...]:
        """The files :func:`load_agent` reads to decide (what a benchmark result hashes)."""
        from .portable import AGENT_FILE, POLICY_FILE

        return AGENT_FILE, POLICY_FILE

    def check(self, config) -> None:
        """Refuse (``ValueError`` naming the directory) an environment of ``config`` the agent
        cannot act in (:meth:`PPOController.check_config`): before any episode starts."""
        try:
            self().check_config(config)
        except ValueError as e:
            raise ValueError(f"{self.path}: {e}") from None
