"""Pure, batched environment dynamics (model §8), in the style of gymnax / Gymnasium FuncEnv.

Randomness enters only as arrays of uniforms, so the dynamics are pure functions::

    state = reset_state(u_reset, cfg)                       # u_reset [B, reset_draws(cfg)]
    state, result = step_state(u_step, state, gamma, cfg)   # u_step [B, step_draws(cfg)]
    obs = observe(state, cfg)                               # float32 [B, obs_size(cfg)]

The parts live in rooms of their own, re-exported here: :mod:`msenv.engine.state` (the state and
the layout of the draws), :mod:`msenv.engine.observation` (the observation's layout),
:mod:`msenv.engine.context` (what a controller sees, and action checks), :mod:`msenv.engine.paper`
and :mod:`msenv.engine.dynamics` (the two steps), :mod:`msenv.engine.kinds` (which of them plays a
config). This module keeps reset and the public entry points, each handing over to the config's
engine.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..config.system import SystemConfig
from ..model import channel
from ..model._numeric import compile_notice
from ..model.goodput import RoundResult
from . import dynamics
from .context import ORACLE_MODES, RoundContext, validate_action
from .context import dynamic_context, paper_context
from .kinds import engine_of
from .observation import GLOBAL_FEATURES, device_features, obs_size, observe_dynamic, observe_paper, static_obs
from .paper import step_padded_cells, step_paper
from .state import REQUEST_POOL, State, fading_draws, layout, reset_draws, step_draws

__all__ = [
    "GLOBAL_FEATURES", "ORACLE_MODES", "REQUEST_POOL", "RoundContext", "State", "context", "device_features",
    "fading_draws", "obs_size", "observe", "reset_draws", "reset_state", "step_draws", "step_state",
    "step_padded_cells", "validate_action", "warm_up",
]


_WARM: set[str] = set()


def warm_up(cfg: SystemConfig) -> None:
    """Compile (or load from numba's cache) the kernels of ``cfg``'s step — the paper scenario's
    or the model §11 one — once per process, with a one-line notice on stderr when that takes long
    (the first use on a machine). Environments call it when they are made; it draws nothing from
    any environment's generator."""
    kind = engine_of(cfg).name
    if kind in _WARM:
        return
    with compile_notice("the kernels of the environment's step"):
        state = reset_state(np.full((1, reset_draws(cfg)), 0.5), cfg)
        observe(state, cfg)
        context(state, cfg, 0)
        step_state(np.full((1, step_draws(cfg)), 0.5), state, np.zeros((1, cfg.num_devices), np.int64), cfg)
    _WARM.add(kind)


def _budget(u: np.ndarray, fixed_dbm: float, rng_dbm: tuple[float, float] | None) -> np.ndarray:
    if rng_dbm is None:
        dbm = np.full(u.shape, fixed_dbm)
    else:
        dbm = rng_dbm[0] + (rng_dbm[1] - rng_dbm[0]) * u
    return 10.0 ** ((dbm - 30.0) / 10.0)


def reset_state(u: np.ndarray, cfg: SystemConfig) -> State:
    """Draw a new episode per row of ``u`` [B, reset_draws(cfg)]: geometry, tasks, drafting
    speeds, budgets and the first round's fading (and the model §11 state when configured)."""
    lay = layout(cfg)["reset"]
    distance = channel.distances_from_uniform(u[:, lay["distance"]], cfg)
    beta = channel.large_scale_gain(distance, cfg.ref_gain, cfg.pathloss_exponent)
    task = dynamics.task_from_uniform(u[:, lay["task"]], cfg)
    alpha = dynamics.task_alpha(task, cfg)
    s_lo, s_hi = cfg.draft_scale_range
    t_draft = cfg.t_draft_ref_s * (s_lo + (s_hi - s_lo) * u[:, lay["scale"]])
    p_ul = _budget(u[:, lay["p_ul"].start], cfg.p_ul_dbm, cfg.p_ul_dbm_range)
    p_dl = _budget(u[:, lay["p_dl"].start], cfg.p_dl_dbm, cfg.p_dl_dbm_range)
    alpha, g_ul, g_dl, extra = dynamics.reset_fields(u, lay, task, alpha, beta, cfg)
    if g_ul is None:
        g_ul, g_dl = channel.fading_from_uniform(u[:, lay["fading"]], beta, cfg)
    static = static_obs(alpha, t_draft, beta, p_ul, p_dl, cfg)
    return State(distance, beta, task, alpha, t_draft, p_ul, p_dl, g_ul, g_dl, np.zeros(len(u), np.int64),
                 static, **extra)


def step_state(u: np.ndarray, state: State, gamma: np.ndarray, cfg: SystemConfig) -> tuple[State, RoundResult]:
    """Play one round with draft lengths ``gamma`` [B, K]; returns the next state and the
    round's :class:`~msenv.goodput.RoundResult` (via the shared round kernel). Under model §11 the
    result's ``info`` holds the truth of the round (α, correction-time gains, request ends)."""
    if gamma.dtype != np.int64 or not gamma.flags.c_contiguous:
        gamma = np.ascontiguousarray(gamma, dtype=np.int64)
    if engine_of(cfg).dynamic:
        return dynamics.step(u, state, gamma, cfg)
    return step_paper(u, state, gamma, cfg)


def observe(state: State, cfg: SystemConfig) -> np.ndarray:
    """The normalised observation [B, obs_size(cfg)] of ``state`` (layout:
    :mod:`msenv.engine.observation`)."""
    if engine_of(cfg).dynamic:
        return observe_dynamic(state, cfg)
    return observe_paper(state, cfg)


def context(state: State, cfg: SystemConfig, index: int | None = None, oracle: bool | str = False) -> RoundContext:
    """The round context of row ``index`` (arrays [K]) or of the whole batch (``None``).

    ``oracle=False``: what the server can know (model §11); ``True``: the truth (true α, the
    innovations that fix the correction-time gains); ``"alpha"`` / ``"csi"``: the server's view
    plus only that part of the truth. All equal in the paper scenario.
    """
    if oracle not in ORACLE_MODES:
        raise ValueError(f"oracle={oracle!r} is invalid; allowed: {', '.join(map(repr, ORACLE_MODES))}")
    if engine_of(cfg).dynamic:
        return dynamic_context(state, cfg, index, oracle)
    return paper_context(state, cfg, index)


