"""Pure, batched environment dynamics (model §8), in the style of gymnax / Gymnasium FuncEnv.

Randomness enters only as arrays of uniforms, so the dynamics are pure functions::

    state = reset_state(u_reset, cfg)                       # u_reset [B, reset_draws(cfg)]
    state, result = step_state(u_step, state, gamma, cfg)   # u_step [B, step_draws(cfg)]
    obs = observe(state, cfg)                               # float32 [B, obs_size(cfg)]

Each entry point hands the call to the config's engine (:func:`engine_for`), which owns them: one
kind per module — :mod:`msenv.engine.kinds.paper`, :mod:`msenv.engine.kinds.dynamics`,
:mod:`msenv.engine.kinds.traces` — over what every kind shares (:mod:`msenv.engine.base`, the
observation table :mod:`msenv.engine.observation`, the draws :mod:`msenv.engine.state`, the
context :mod:`msenv.engine.context`, padded cells :mod:`msenv.engine.cells`).
"""

from __future__ import annotations

import functools

import numpy as np

from ..config.system import SystemConfig
from ..model.goodput import RoundResult
from ..traces.sources import version_of
from .base import Engine
from .context import ORACLE_MODES, RoundContext, validate_action
from .kinds.dynamics import DynamicEngine
from .kinds.paper import PaperEngine
from .kinds.traces import TraceEngine
from .observation import Layout

__all__ = [
    "Engine", "Layout", "ORACLE_MODES", "RoundContext", "context", "device_features", "engine_for", "feature_docs",
    "info_keys", "layout", "obs_size", "observe", "reset_draws", "reset_state", "step_draws", "step_state",
    "validate_action", "warm_up",
]


def engine_for(config: SystemConfig) -> Engine:
    """The engine of ``config``, built once per config — and, for a config that replays trace files,
    once per version of its files, so a rewritten file is never replayed stale (an environment keeps
    the engine it was made with) — the one place that reads which kind plays it:
    :class:`~msenv.engine.kinds.traces.TraceEngine` when acceptance comes from traces
    (``trace_source``), :class:`~msenv.engine.kinds.paper.PaperEngine` in the paper scenario
    (:attr:`~msenv.config.SystemConfig.is_paper_scenario`), else
    :class:`~msenv.engine.kinds.dynamics.DynamicEngine`."""
    if not isinstance(config, SystemConfig):
        raise TypeError(f"engine_for() takes a SystemConfig; got {type(config).__name__}")
    return _engine(config, () if config.traces.trace_source is None else version_of(config))


@functools.lru_cache(maxsize=128)
def _engine(config: SystemConfig, version: tuple) -> Engine:
    if config.traces.trace_source is not None:
        return TraceEngine(config)
    return PaperEngine(config) if config.is_paper_scenario else DynamicEngine(config)


def info_keys(config: SystemConfig) -> tuple[str, ...]:
    """The per-step ``info`` keys of ``config``'s engine."""
    return engine_for(config).info_keys


def warm_up(cfg: SystemConfig) -> None:
    """Compile (or load from numba's cache) the kernels of ``cfg``'s engine, once per process
    (:meth:`~msenv.engine.base.Engine.warm_up`)."""
    engine_for(cfg).warm_up()


def layout(cfg: SystemConfig) -> Layout:
    """The shapes ``cfg`` fixes (its engine's :class:`~msenv.engine.observation.Layout`)."""
    return engine_for(cfg).layout


def obs_size(cfg: SystemConfig) -> int:
    """The observation's width under ``cfg``."""
    return engine_for(cfg).layout.obs_size


def device_features(cfg: SystemConfig) -> int:
    """Observation entries per device under ``cfg``."""
    return engine_for(cfg).layout.row


def feature_docs(cfg: SystemConfig) -> tuple[list[str], list[str]]:
    """What each entry of a device row, and each global entry, means under ``cfg`` (from its
    kind's observation table; the source of the environment pages)."""
    dev, glob = engine_for(cfg).observation.docs
    return list(dev), list(glob)


def reset_draws(cfg: SystemConfig) -> int:
    """Uniforms one reset takes per environment."""
    return engine_for(cfg).reset_draws


def step_draws(cfg: SystemConfig) -> int:
    """Uniforms one step takes per environment."""
    return engine_for(cfg).step_draws


def reset_state(u: np.ndarray, cfg: SystemConfig):
    """Draw a new episode per row of ``u`` [B, reset_draws(cfg)] (:meth:`Engine.reset
    <msenv.engine.base.Engine.reset>`); the state is the kind's."""
    return engine_for(cfg).reset(u)


def step_state(u: np.ndarray, state, gamma: np.ndarray, cfg: SystemConfig) -> tuple[object, RoundResult]:
    """Play one round with draft lengths ``gamma`` [B, K]; returns the next state and the round's
    :class:`~msenv.model.goodput.RoundResult` (via the shared round kernel)."""
    return engine_for(cfg).step(u, state, gamma)


def observe(state, cfg: SystemConfig) -> np.ndarray:
    """The normalised observation [B, obs_size(cfg)] of ``state``."""
    return engine_for(cfg).observe(state)


def context(state, cfg: SystemConfig, index: int | None = None, oracle: bool | str = False) -> RoundContext:
    """The round context of row ``index`` (arrays [K]) or of the whole batch (``None``):
    ``oracle=False`` what the server can know (model §11), ``True`` the truth, ``"alpha"`` /
    ``"csi"`` the server's view plus only that part of the truth."""
    return engine_for(cfg).context(state, index, oracle)
