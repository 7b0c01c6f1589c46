"""Gymnasium environment: one step = one Multi-SPIN round (model §8).

``MultiSpinEnv`` is a batch of one of the vector env's core (:class:`~msenv.envs.shell.EnvBatch`,
whose generator is ``self.np_random``): the engine's pure reset and step play the shared round
kernel (:mod:`msenv.model.goodput`); what it shares with the other shells is in :mod:`msenv.envs.shell`.

- Action: ``MultiDiscrete([γ_max + 1] * K)`` — draft lengths.
- Observation: float32 ``Box(-1, 1, (5K + 2,))``; layout in :mod:`msenv.engine.observation`.
- Reward: realised goodput Σ_k N_k / T (tokens/s) × ``config.reward_scale``.
- Episode: ``config.episode_length`` rounds, then ``truncated=True`` (never terminated).
- ``info``: numbers and arrays only (see :data:`~msenv.engine.base.INFO_KEYS`).
- ``env.unwrapped.context``: the upcoming round's :class:`~msenv.engine.context.RoundContext`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ..config.system import SystemConfig, check_fields, resolve_config
from ..engine.context import RoundContext, validate_action
from ..model.reactive import MODE_DL, MODE_NONE, MODE_UL
from .render import ansi_line
from .shell import EnvBatch, check_render_mode, config_from_options

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


class MultiSpinEnv(gym.Env):
    """Draft-length control for multi-access speculative inference (model §8).

    Args:
        config: a :class:`~msenv.config.SystemConfig`, a dict of its fields, or a preset name.
        render_mode: ``None``, ``"human"`` (each round's picture in a matplotlib window, shown
            by ``reset`` and ``step``; needs a display), ``"rgb_array"`` (a picture of the last
            round, uint8 [360, 640, 3]; needs matplotlib) or ``"ansi"`` (one line of text).
        **overrides: config fields to override (e.g. ``p_dl_dbm=20``); any other keyword
            raises ``TypeError`` as Python does.

    ``reset(options={"config": {...}})`` changes config fields for the coming episodes, except
    those that would change the layout (the spaces, or what an observation entry means).
    """

    metadata = {"render_modes": ["human", "rgb_array", "ansi"], "render_fps": 4}

    def __init__(self, config: SystemConfig | dict | str | None = None, render_mode: str | None = None,
                 **overrides: Any):
        check_fields(f"{type(self).__name__}.__init__()", overrides)
        self.config = resolve_config(config, **overrides)
        check_render_mode(render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self._batch = EnvBatch(self.config, 1, [self.np_random])
        self._use(self.config)
        self.action_space, self.observation_space = self._engine.layout.spaces()
        self._last: dict[str, Any] | None = None
        self._last_action: np.ndarray | None = None
        self._renderer = None
        self._window = None
        if render_mode == "human":
            from .render import HumanWindow

            self._window = HumanWindow(self.metadata["render_fps"])

    def _use(self, cfg: SystemConfig) -> None:
        """Play ``cfg`` from now on: its engine (compiled on first use) and the numbers read on
        every step."""
        self._batch.use(cfg)
        self.config, self._engine = cfg, self._batch.engine
        self._length, self._scale = cfg.episode.episode_length, cfg.episode.reward_scale  # read on every step

    @property
    def _state(self):
        return self._batch.state

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode: new distances, tasks, drafting speeds, budgets and fading, drawn from
        the env's generator (seeded by ``seed``); ``options={"config": {...}}`` changes config
        fields from this episode on. Returns the first observation and an empty ``info``."""
        super().reset(seed=seed)
        if options and "config" in options:
            self._use(config_from_options(self.config, options["config"]))
        self._batch.gens[0] = self.np_random  # a seed gives a new generator
        self._batch.start(_ROW)
        self._last = None
        self._last_action = None
        if self._window is not None:
            self._window.show(self._frame())
        return self._engine.observe(self._state)[0], {}

    def step(self, action):
        """Play one round with draft lengths ``action`` ([K] integers in [0, γ_max]): returns the
        next observation, the round's goodput × ``reward_scale``, ``terminated`` (always False),
        ``truncated`` (after ``episode_length`` rounds) and ``info``."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        gamma = validate_action(action, self.config)
        batch = self._batch
        res = batch.play(gamma[None])
        totals = batch.totals
        info = self._engine.row_info(res, 0, totals.tokens.item(), totals.time.item())
        self._last = info
        self._last_action = gamma
        state = batch.state
        truncated = bool(state.t[0] >= self._length)
        reward = info["goodput"] * self._scale
        if self._window is not None:
            self._window.show(self._frame())
        return state.obs[0], reward, False, truncated, info  # the step wrote the next observation

    def what_if(self, action) -> tuple[float, float]:
        """Counterfactual evaluation on common random numbers: the tokens and the latency (s) the
        coming round would give with draft lengths ``action`` — on the very draws the next
        :meth:`step` will use, whatever it plays (goodput = tokens / latency). Nothing changes: the
        generator is put back where it was. A simulator's privilege, for a learner's control
        variate; not something a server could observe."""
        if self._state is None:
            raise RuntimeError("call reset() before what_if()")
        gamma = validate_action(action, self.config)
        res = self._batch.what_if(gamma[None])
        return float(res.total_tokens[0]), float(res.latency[0])

    @property
    def context(self) -> RoundContext:
        """The upcoming round's inputs (α, T^dft, g^ul, g^dl, budgets, config) — what
        controllers act on; under model §11 only what the server can know (posterior of α, the
        CSI its mode shows)."""
        return self.round_context()

    @property
    def oracle_context(self) -> RoundContext:
        """The upcoming round's truth (model §11): true α and the innovations that fix the
        correction-time gains — for explicitly named oracle controllers only. Equals
        :attr:`context` in the paper scenario."""
        return self.round_context(oracle=True)

    def round_context(self, oracle: bool | str = False) -> RoundContext:
        """The upcoming round's context: :attr:`context` (``oracle=False``), :attr:`oracle_context`
        (``True``), or the server's view plus only the true α (``"alpha"``) or only the
        correction-time channel (``"csi"``)."""
        if self._state is None:
            raise RuntimeError("call reset() before reading the context")
        return self._engine.context(self._state, 0, oracle)

    @property
    def state(self):
        """The functional state (batch of one)."""
        return self._state

    def render(self):
        """``"rgb_array"``: uint8 [360, 640, 3] picture of the last round (see
        :mod:`msenv.envs.render`); ``"ansi"``: one line of text; ``"human"`` and ``None``: nothing
        (in ``"human"`` mode ``reset`` and ``step`` show each round themselves)."""
        if self.render_mode is None or self.render_mode == "human":
            return None
        if self._state is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "rgb_array":
            return self._frame()
        return ansi_line(int(self._state.t[0]), self._last)

    def _frame(self) -> np.ndarray:
        if self._renderer is None:
            from .render import RoundRenderer

            self._renderer = RoundRenderer(self.config.channel.distance_range_m[1])
        return self._renderer.frame(self._state.distance[0], int(self._state.t[0]), self._last_action, self._last)

    def close(self) -> None:
        """Close the ``"human"`` window, if one is open."""
        if self._window is not None:
            self._window.close()
        super().close()


_ROW = np.zeros(1, np.int64)  # the single env's one row

