"""Gymnasium environment: one step = one Multi-SPIN round (model §8).

``MultiSpinEnv`` is a thin shell over :mod:`msenv.functional`: it draws the uniforms from
``self.np_random`` and calls the pure reset/step functions, which call the shared round
kernel :func:`msenv.goodput.evaluate_round`.

- Action: ``MultiDiscrete([γ_max + 1] * K)`` — draft lengths.
- Observation: float32 ``Box(-1, 1, (5K + 2,))``; layout in :mod:`msenv.functional`.
- Reward: realised goodput Σ_k N_k / T (tokens/s) × ``config.reward_scale``.
- Episode: ``config.episode_length`` rounds, then ``truncated=True`` (never terminated).
- ``info``: numbers and arrays only (see :data:`INFO_KEYS`).
- ``env.unwrapped.context``: the upcoming round's :class:`~msenv.functional.RoundContext`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .context import RoundContext, validate_action
from .context import context as round_context
from .functional import reset_state, step_state, warm_up
from .observation import obs_size, observe
from .state import State, reset_draws, step_draws
from .config import SystemConfig, check_fields, resolve_config
from .goodput import RoundResult
from .reactive import MODE_DL, MODE_NONE, MODE_UL

#: keys of the per-step ``info`` dict.
INFO_KEYS = (
    "tokens", "accepted", "rejected", "modes", "dl_power", "ul_delay",
    "t_draft", "t_verify", "t_com", "latency", "goodput",
    "episode_tokens", "episode_time", "episode_throughput",
)
#: extra ``info`` keys under model §11 dynamics: the truth of the round, for analysis (never in
#: the observation): the true α, the correction-time gains, and (requests) which requests ended.
DYNAMIC_INFO_KEYS = ("alpha", "g_ul_corr", "g_dl_corr")
REQUEST_INFO_KEYS = ("request_done",)
#: what each ``info`` key holds (arrays are [K], per device)
INFO_DOCS = {
    "tokens": "int [K]: tokens each device gained this round, N_k = A_k + 1 (capped at a request's end)",
    "accepted": "int [K]: drafted tokens the target model accepted, A_k",
    "rejected": "bool [K]: the device's draft had a rejection (it needed a correction)",
    "modes": "int8 [K]: how the correction crossed the link: 0 none, 1 UL, 2 DL",
    "dl_power": "float [K]: DL power given to the device, W (0 unless DL)",
    "ul_delay": "float [K]: the device's UL transfer time, s (0 unless rejected)",
    "t_draft": "float: drafting time max_k γ_k T_k^dft, s",
    "t_verify": "float: the verification pass, s",
    "t_com": "float: the correction exchange T_com, s",
    "latency": "float: the round's time T = t_draft + t_verify + t_com, s",
    "goodput": "float: the round's goodput Σ_k N_k / T, tokens/s (the reward before reward_scale)",
    "episode_tokens": "float: tokens so far in the episode",
    "episode_time": "float: time so far in the episode, s",
    "episode_throughput": "float: episode_tokens / episode_time, tokens/s (the long-run throughput)",
    "alpha": "float [K]: the true α of the round (dynamics only; never in the observation)",
    "g_ul_corr": "float [K]: the UL gain the correction used (dynamics only)",
    "g_dl_corr": "float [K]: the DL gain the correction used (dynamics only)",
    "request_done": "bool [K]: the device's request ended this round (requests only)",
}
#: fields that fix the spaces (a reset option may not change them)
_LOCKED_FIELDS = ("num_devices", "gamma_max", "alpha_observed", "channel_dynamics")


def info_keys(cfg: SystemConfig) -> tuple[str, ...]:
    """The per-step ``info`` keys for ``cfg`` (the paper scenario: :data:`INFO_KEYS`)."""
    if cfg.is_paper_scenario:
        return INFO_KEYS
    return INFO_KEYS + DYNAMIC_INFO_KEYS + (REQUEST_INFO_KEYS if cfg.alpha_dynamics != "fixed" else ())


#: scalar round metrics of :func:`round_summary` (used by the harness, wrappers and loggers).
SUMMARY_KEYS = ("mean_gamma", "share_accepted", "share_ul", "share_dl")


def round_summary(gamma: np.ndarray, modes: np.ndarray, num_devices: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Mean draft length and the shares of devices all-accepted / UL / DL, over the last axis;
    with ``num_devices`` [rows] (cells padded to a common number of slots), over each row's
    first ``num_devices`` slots only."""
    if num_devices is None:
        return {
            "mean_gamma": np.mean(gamma, axis=-1),
            "share_accepted": np.mean(modes == MODE_NONE, axis=-1),
            "share_ul": np.mean(modes == MODE_UL, axis=-1),
            "share_dl": np.mean(modes == MODE_DL, axis=-1),
        }
    k = np.asarray(num_devices)
    mask = np.arange(np.shape(gamma)[-1]) < k[..., None]
    n = np.maximum(k, 1)
    return {
        "mean_gamma": np.where(mask, gamma, 0).sum(axis=-1) / n,
        "share_accepted": (mask & (modes == MODE_NONE)).sum(axis=-1) / n,
        "share_ul": (mask & (modes == MODE_UL)).sum(axis=-1) / n,
        "share_dl": (mask & (modes == MODE_DL)).sum(axis=-1) / n,
    }


class RoundMetrics(gym.Wrapper):
    """Adds the :data:`SUMMARY_KEYS` scalars and ``round_tokens`` (Σ_k N_k, the round's tokens) to
    ``info`` (for Monitor, loggers and rewards built on the tokens), as the SB3 adapter's ``info``
    holds them."""

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        k = info.get("num_devices", len(info["modes"]))  # a cell generator pads after the K devices
        summ = round_summary(np.asarray(action)[..., :k], info["modes"][..., :k])
        info.update({k: float(v) for k, v in summ.items()})
        info["round_tokens"] = float(np.sum(info["tokens"]))
        return obs, reward, term, trunc, info


def round_info(res: RoundResult, i: int, ep_tokens: float, ep_time: float) -> dict[str, Any]:
    """The ``info`` dict of row ``i`` of a batched round result; ``ep_tokens``/``ep_time`` are
    the episode's totals *before* this round (the dict holds them after it)."""
    t_draft, t_verify, t_com, latency, goodput = (float(res.t_draft[i]), float(res.t_verify[i]), float(res.t_com[i]),
                                                  float(res.latency[i]), float(res.goodput[i]))
    ep_tokens += float(res.total_tokens[i])
    ep_time += latency
    out = {
        "tokens": res.tokens[i],
        "accepted": res.accepted[i],
        "rejected": res.rejected[i],
        "modes": res.modes[i],
        "dl_power": res.dl_power[i],
        "ul_delay": res.ul_delay[i],
        "t_draft": t_draft,
        "t_verify": t_verify,
        "t_com": t_com,
        "latency": latency,
        "goodput": goodput,
        "episode_tokens": ep_tokens,
        "episode_time": ep_time,
        "episode_throughput": ep_tokens / ep_time,
    }
    if res.info:
        for key, val in res.info.items():
            out[key] = val[i]
    return out


class MultiSpinEnv(gym.Env):
    """Draft-length control for multi-access speculative inference (model §8).

    Args:
        config: a :class:`~msenv.config.SystemConfig`, a dict of its fields, or a preset name.
        render_mode: ``None``, ``"rgb_array"`` (a picture of the last round, uint8
            [360, 640, 3]; needs matplotlib) or ``"ansi"`` (one line of text).
        **overrides: config fields to override (e.g. ``p_dl_dbm=20``); any other keyword
            raises ``TypeError`` as Python does.

    ``reset(options={"config": {...}})`` changes config fields for the coming episodes
    (except ``num_devices``/``gamma_max``, which fix the spaces).
    """

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 4}

    def __init__(self, config: SystemConfig | dict | str | None = None, render_mode: str | None = None, **overrides: Any):
        check_fields(f"{type(self).__name__}.__init__()", overrides)
        self.config = resolve_config(config, **overrides)
        warm_up(self.config)
        check_render_mode(render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self._build_spaces()
        self._state: State | None = None
        self._last: dict[str, Any] | None = None
        self._last_action: np.ndarray | None = None
        self._renderer = None

    def _build_spaces(self) -> None:
        cfg = self.config
        self.action_space = spaces.MultiDiscrete(np.full(cfg.num_devices, cfg.gamma_max + 1, dtype=np.int64))
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(obs_size(cfg),), dtype=np.float32)
        self._n_reset = reset_draws(cfg)
        self._n_step = step_draws(cfg)
        self._u_step = np.empty((1, self._n_step))  # the step's uniforms, drawn in place

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode: new distances, tasks, drafting speeds, budgets and fading, drawn from
        the env's generator (seeded by ``seed``); ``options={"config": {...}}`` changes config
        fields from this episode on. Returns the first observation and an empty ``info``."""
        super().reset(seed=seed)
        if options and "config" in options:
            self.config = config_from_options(self.config, options)
            warm_up(self.config)
            self._build_spaces()
        self._state = reset_state(self.np_random.random((1, self._n_reset)), self.config)
        self._ep_tokens = 0.0
        self._ep_time = 0.0
        self._last = None
        self._last_action = None
        return observe(self._state, self.config)[0], {}

    def step(self, action):
        """Play one round with draft lengths ``action`` ([K] integers in [0, γ_max]): returns the
        next observation, the round's goodput × ``reward_scale``, ``terminated`` (always False),
        ``truncated`` (after ``episode_length`` rounds) and ``info``."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        cfg = self.config
        gamma = validate_action(action, cfg)
        u = self.np_random.random(out=self._u_step)  # the same draws as random((1, n)); never kept
        self._state, res = step_state(u, self._state, gamma[None], cfg)
        info = round_info(res, 0, self._ep_tokens, self._ep_time)
        self._ep_tokens, self._ep_time = info["episode_tokens"], info["episode_time"]
        self._last = info
        self._last_action = gamma
        truncated = bool(self._state.t[0] >= cfg.episode_length)
        reward = info["goodput"] * cfg.reward_scale
        return observe(self._state, cfg)[0], reward, False, truncated, info

    def what_if(self, action) -> tuple[float, float]:
        """Counterfactual evaluation on common random numbers: the tokens and the latency (s) the
        coming round would give with draft lengths ``action`` — on the very draws the next
        :meth:`step` will use, whatever it plays (goodput = tokens / latency). Nothing changes: the
        generator is put back where it was. A simulator's privilege, for a learner's control
        variate; not something a server could observe."""
        if self._state is None:
            raise RuntimeError("call reset() before what_if()")
        gamma = validate_action(action, self.config)
        gen = self.np_random.bit_generator
        saved = gen.state
        u = self.np_random.random(out=np.empty_like(self._u_step))
        gen.state = saved
        _, res = step_state(u, self._state, gamma[None], self.config)
        return float(res.total_tokens[0]), float(res.latency[0])

    @property
    def context(self) -> RoundContext:
        """The upcoming round's inputs (α, T^dft, g^ul, g^dl, budgets, config) — what
        controllers act on; under model §11 only what the server can know (posterior of α, the
        CSI its mode shows)."""
        if self._state is None:
            raise RuntimeError("call reset() before reading the context")
        return round_context(self._state, self.config, 0)

    @property
    def oracle_context(self) -> RoundContext:
        """The upcoming round's truth (model §11): true α and the innovations that fix the
        correction-time gains — for explicitly named oracle controllers only. Equals
        :attr:`context` in the paper scenario."""
        if self._state is None:
            raise RuntimeError("call reset() before reading the context")
        return round_context(self._state, self.config, 0, oracle=True)

    @property
    def state(self) -> State:
        """The functional state (batch of one)."""
        return self._state

    def render(self):
        """``"rgb_array"``: uint8 [360, 640, 3] picture of the last round (see
        :mod:`msenv.render`); ``"ansi"``: one line of text; ``None``: nothing."""
        if self.render_mode is None:
            return None
        if self._state is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "rgb_array":
            if self._renderer is None:
                from .render import RoundRenderer

                self._renderer = RoundRenderer(self.config.distance_range_m[1])
            return self._renderer.frame(self._state.distance[0], int(self._state.t[0]), self._last_action, self._last)
        if self._last is None:
            return "msenv: no round played yet\n"
        i = self._last
        modes = "".join(".UD"[m] for m in i["modes"])
        return (
            f"round {int(self._state.t[0])}: tokens {int(i['tokens'].sum())} in {i['latency'] * 1e3:.1f} ms "
            f"(draft {i['t_draft'] * 1e3:.1f}, verify {i['t_verify'] * 1e3:.1f}, com {i['t_com'] * 1e3:.1f}) "
            f"goodput {i['goodput']:.1f} tok/s modes [{modes}]\n"
        )


def check_render_mode(render_mode: Any, allowed: list[str]) -> None:
    """``render_mode`` must be None or one of ``allowed`` (Gymnasium's mode names)."""
    if render_mode is not None and render_mode not in allowed:
        names = ", ".join(["None"] + [repr(m) for m in allowed])
        raise ValueError(f"render_mode={render_mode!r} is not allowed; allowed: {names}")


def config_from_options(current: SystemConfig, options: dict[str, Any]) -> SystemConfig:
    """The config for ``reset(options={"config": ...})``: ``current`` with the given fields
    changed; ``num_devices``/``gamma_max`` may not change (they fix the spaces)."""
    new = resolve_config(current, **_as_dict(options["config"]))
    for name in _LOCKED_FIELDS:
        if getattr(new, name) != getattr(current, name):
            raise ValueError(
                f"reset option config.{name}={getattr(new, name)!r} is not allowed: it changes the "
                f"spaces (current {getattr(current, name)!r}); make a new env instead"
            )
    return new


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, SystemConfig):
        return value.to_dict()
    if isinstance(value, dict):
        return value
    raise ValueError(f"reset option config={value!r} is invalid; allowed: a dict of config fields or a SystemConfig")
