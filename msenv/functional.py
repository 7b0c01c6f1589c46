"""Pure, batched environment dynamics (SPEC §8), in the style of gymnax / Gymnasium FuncEnv.

Randomness enters only as arrays of uniforms, so the dynamics are pure functions::

    state = reset_state(u_reset, cfg)                 # u_reset [B, reset_draws(cfg)]
    state, result = step_state(u_step, state, gamma, cfg)   # u_step [B, step_draws(cfg)]
    obs = observe(state, cfg)                         # float32 [B, obs_size(cfg)]

Each environment draws its uniforms with one ``Generator.random`` call per reset/step, so a
batch of N environments with N generators reproduces N single environments exactly.

Draw layout (all U[0, 1)):
- reset: distances K | tasks K | drafting scales K | P_ul 1 | P_dl 1 | fading (2K, or K when
  reciprocal);
- step: outcome K | next-round fading (2K / K; none when ``fading_redraw="episode"``) |
  mode coins K (used by ``mode_policy="random"``; drawn under every policy so that the same
  seed gives the same outcomes and fading whatever the reactive policy — paired comparisons).

Observation layout (float32, every entry in [−1, 1]): ``K`` rows of 5 per-device features,
flattened device-major, then 2 global features:

=====  ===========================================================
index  feature
=====  ===========================================================
5k+0   α_k (acceptance rate of device k's task)
5k+1   drafting-speed scale: (T_k^dft/T_dft,ref − lo)/(hi − lo) ∈ [0, 1]
5k+2   tanh((g_k^ul [dB] + 115) / 15)   current UL gain
5k+3   tanh((g_k^dl [dB] + 115) / 15)   current DL gain
5k+4   tanh((β_k [dB] + 115) / 15)      large-scale gain
5K+0   tanh((P_ul [dBm] − 15) / 20)
5K+1   tanh((P_dl [dBm] − 30) / 20)
=====  ===========================================================
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from . import acceptance, channel
from .config import SystemConfig
from .goodput import RoundResult, evaluate_round

DEVICE_FEATURES = 5
GLOBAL_FEATURES = 2
GAIN_DB_CENTER, GAIN_DB_SCALE = -115.0, 15.0
P_UL_CENTER, P_DL_CENTER, P_SCALE = 15.0, 30.0, 20.0


@dataclass(frozen=True)
class State:
    """Per-episode and per-round state of B environments (leading axis B)."""

    distance: np.ndarray  #: m [B, K]
    beta: np.ndarray  #: large-scale gain [B, K]
    task: np.ndarray  #: int [B, K] index into cfg.tasks
    alpha: np.ndarray  #: [B, K]
    t_draft: np.ndarray  #: s per token [B, K]
    p_ul_w: np.ndarray  #: W [B]
    p_dl_w: np.ndarray  #: W [B]
    g_ul: np.ndarray  #: current round's UL power gain [B, K]
    g_dl: np.ndarray  #: current round's DL power gain [B, K]
    t: np.ndarray  #: rounds played [B]
    #: the observation's per-episode entries (α, speed, β, budgets; gain slots 0), cached at reset
    static_obs: np.ndarray  #: float32 [B, obs_size]

    def where(self, mask: np.ndarray, other: State) -> State:
        """Rows of ``other`` where ``mask`` [B] is true, else rows of self."""
        out = {}
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
            out[f.name] = np.where(m, b, a)
        return State(**out)


@dataclass(frozen=True)
class RoundContext:
    """What a controller sees before acting (SPEC §7): the upcoming round's inputs.

    Arrays are [K] for one environment (or [B, K] for a batch); ``p_ul_w``/``p_dl_w`` are the
    episode's power budgets (fixed unless the config randomises them).
    """

    alpha: np.ndarray
    t_draft: np.ndarray
    g_ul: np.ndarray
    g_dl: np.ndarray
    p_ul_w: float | np.ndarray
    p_dl_w: float | np.ndarray
    config: SystemConfig


def fading_draws(cfg: SystemConfig) -> int:
    return cfg.num_devices * (2 if cfg.fading == "independent" else 1)


def reset_draws(cfg: SystemConfig) -> int:
    return 3 * cfg.num_devices + 2 + fading_draws(cfg)


def step_draws(cfg: SystemConfig) -> int:
    k = cfg.num_devices
    return 2 * k + (fading_draws(cfg) if cfg.fading_redraw == "round" else 0)


def obs_size(cfg: SystemConfig) -> int:
    return DEVICE_FEATURES * cfg.num_devices + GLOBAL_FEATURES


def _budget(u: np.ndarray, fixed_dbm: float, rng_dbm: tuple[float, float] | None) -> np.ndarray:
    if rng_dbm is None:
        dbm = np.full(u.shape, fixed_dbm)
    else:
        dbm = rng_dbm[0] + (rng_dbm[1] - rng_dbm[0]) * u
    return 10.0 ** ((dbm - 30.0) / 10.0)


def reset_state(u: np.ndarray, cfg: SystemConfig) -> State:
    """Draw a new episode per row of ``u`` [B, reset_draws(cfg)]: geometry, tasks, drafting
    speeds, budgets and the first round's fading."""
    k = cfg.num_devices
    distance = channel.distances_from_uniform(u[:, :k], cfg)
    beta = channel.large_scale_gain(distance, cfg.ref_gain, cfg.pathloss_exponent)
    n_tasks = len(cfg.tasks)
    task = np.minimum((u[:, k : 2 * k] * n_tasks).astype(np.int64), n_tasks - 1)
    alpha = np.asarray(cfg.acceptance_rates)[task]
    s_lo, s_hi = cfg.draft_scale_range
    t_draft = cfg.t_draft_ref_s * (s_lo + (s_hi - s_lo) * u[:, 2 * k : 3 * k])
    p_ul = _budget(u[:, 3 * k], cfg.p_ul_dbm, cfg.p_ul_dbm_range)
    p_dl = _budget(u[:, 3 * k + 1], cfg.p_dl_dbm, cfg.p_dl_dbm_range)
    g_ul, g_dl = channel.fading_from_uniform(u[:, 3 * k + 2 :], beta, cfg)
    return State(distance, beta, task, alpha, t_draft, p_ul, p_dl, g_ul, g_dl, np.zeros(len(u), np.int64),
                 _static_obs(alpha, t_draft, beta, p_ul, p_dl, cfg))


def step_state(u: np.ndarray, state: State, gamma: np.ndarray, cfg: SystemConfig) -> tuple[State, RoundResult]:
    """Play one round with draft lengths ``gamma`` [B, K]; returns the next state and the
    round's :class:`~msenv.goodput.RoundResult` (via the shared round kernel)."""
    k = cfg.num_devices
    first_rej = acceptance.first_rejection_from_uniform(1.0 - u[:, :k], state.alpha, cfg.gamma_max + 1)
    coins = u[:, -k:] if cfg.mode_policy == "random" else None
    result = evaluate_round(
        gamma, first_rej, state.t_draft, state.g_ul, state.g_dl, cfg,
        p_ul_w=state.p_ul_w, p_dl_w=state.p_dl_w, coins=coins,
    )
    if cfg.fading_redraw == "round":
        g_ul, g_dl = channel.fading_from_uniform(u[:, k : k + fading_draws(cfg)], state.beta, cfg)
    else:
        g_ul, g_dl = state.g_ul, state.g_dl
    s = state
    return State(s.distance, s.beta, s.task, s.alpha, s.t_draft, s.p_ul_w, s.p_dl_w, g_ul, g_dl, s.t + 1, s.static_obs), result


def _squash_db(g: np.ndarray) -> np.ndarray:
    return np.tanh((10.0 * np.log10(g) - GAIN_DB_CENTER) * (1.0 / GAIN_DB_SCALE))


def _static_obs(alpha, t_draft, beta, p_ul_w, p_dl_w, cfg: SystemConfig) -> np.ndarray:
    """The per-episode observation entries (gain slots left at 0)."""
    b, k = alpha.shape
    s_lo, s_hi = cfg.draft_scale_range
    scale = t_draft / cfg.t_draft_ref_s
    speed = (scale - s_lo) / (s_hi - s_lo) if s_hi > s_lo else np.zeros_like(scale)
    out = np.zeros((b, DEVICE_FEATURES * k + GLOBAL_FEATURES), dtype=np.float32)
    dev = out[:, : DEVICE_FEATURES * k].reshape(b, k, DEVICE_FEATURES)
    dev[:, :, 0] = alpha
    dev[:, :, 1] = speed
    dev[:, :, 4] = _squash_db(beta)
    p_dbm = 10.0 * np.log10(np.stack([p_ul_w, p_dl_w], axis=-1)) + 30.0
    out[:, -2:] = np.tanh((p_dbm - (P_UL_CENTER, P_DL_CENTER)) * (1.0 / P_SCALE))
    return out


def observe(state: State, cfg: SystemConfig) -> np.ndarray:
    """Normalised observation [B, obs_size(cfg)] (layout in the module docstring): the cached
    per-episode entries plus this round's squashed gains."""
    out = state.static_obs.copy()
    b, k = state.g_ul.shape
    dev = out[:, : DEVICE_FEATURES * k].reshape(b, k, DEVICE_FEATURES)
    dev[:, :, 2] = _squash_db(state.g_ul)
    dev[:, :, 3] = _squash_db(state.g_dl)
    return out


def context(state: State, cfg: SystemConfig, index: int | None = None) -> RoundContext:
    """The round context of row ``index`` (arrays [K]) or of the whole batch (``None``)."""
    if index is None:
        return RoundContext(state.alpha, state.t_draft, state.g_ul, state.g_dl, state.p_ul_w, state.p_dl_w, cfg)
    i = index
    return RoundContext(
        state.alpha[i], state.t_draft[i], state.g_ul[i], state.g_dl[i],
        float(state.p_ul_w[i]), float(state.p_dl_w[i]), cfg,
    )


def validate_action(action, cfg: SystemConfig, batch: int | None = None) -> np.ndarray:
    """Check draft lengths: shape (K,) (or (B, K)), integer values in [0, γ_max].

    Raises ValueError naming the device (and env row) and what is allowed.
    """
    k, gmax = cfg.num_devices, cfg.gamma_max
    shape = (k,) if batch is None else (batch, k)
    a = action if isinstance(action, np.ndarray) else np.asarray(action)
    if a.shape != shape:
        raise ValueError(f"action shape {a.shape} is invalid; expected {shape}: one draft length per device")
    kind = a.dtype.kind
    if kind in "iu":
        if a.size and (a.min() < 0 or a.max() > gmax):
            bad = np.argwhere((a < 0) | (a > gmax))[0]
            raise ValueError(
                f"action for device {_where(bad, batch)} is {a[tuple(bad)]!r}; allowed: integers in [0, {gmax}]"
            )
        return a
    if kind == "f":
        bad_mask = ~np.isfinite(a) | (a != np.round(a)) | (a < 0) | (a > gmax)
        if bad_mask.any():
            bad = np.argwhere(bad_mask)[0]
            raise ValueError(
                f"action for device {_where(bad, batch)} is {a[tuple(bad)]!r}; allowed: integers in [0, {gmax}]"
            )
        return a.astype(np.int64)
    raise ValueError(f"action dtype {a.dtype} is invalid; allowed: integer draft lengths in [0, {gmax}]")


def _where(idx: np.ndarray, batch: int | None) -> str:
    return str(int(idx[0])) if batch is None else f"{int(idx[1])} of env {int(idx[0])}"
