"""Native batched vector environment: N Multi-SPIN envs stepped by one call of the batched
round kernel (no per-env Python loop in the model).

``MultiSpinVectorEnv`` has the meaning of N copies of :class:`msenv.env.MultiSpinEnv`:
``reset(seed=s)`` seeds sub-env ``i`` with ``s + i`` (as ``SyncVectorEnv`` does), each sub-env
keeps its own ``numpy.random.Generator`` and draws exactly what the single env draws, so
trajectories equal N single envs' bit for bit. The only per-env Python work is one
``Generator.random(out=...)`` call per env per step (the price of per-env seeding).

Autoreset: ``"next_step"`` (Gymnasium's default, as ``SyncVectorEnv``: the step after an
episode ends resets that env, ignores its action, returns reward 0) or ``"same_step"`` (the env
resets in the step that ends it; the last observation goes to ``info["final_obs"]``).

Create it with ``gymnasium.make_vec("msenv/MultiSpin-v0", num_envs=N,
vectorization_mode="vector_entry_point")`` or directly. :class:`msenv.sb3.SB3VecEnv` adapts it
to Stable-Baselines3's VecEnv API.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .context import RoundContext, validate_action
from .context import context as round_context
from .functional import reset_state, step_state, warm_up
from .observation import obs_size, observe
from .state import State, reset_draws, step_draws
from .config import SystemConfig, check_fields, resolve_config
from .env import config_from_options, info_keys

_PER_DEVICE = ("tokens", "accepted", "rejected", "modes", "dl_power", "ul_delay")


class MultiSpinVectorEnv(VectorEnv):
    """N Multi-SPIN environments in one batched state (see module docstring)."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        config: SystemConfig | dict | str | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        check_fields(f"{type(self).__name__}.__init__()", overrides)
        check_num_envs(num_envs)
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r} is not supported by the vector env; allowed: None")
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode_of(autoreset_mode)}
        self.config = resolve_config(config, **overrides)
        warm_up(self.config)
        self.num_envs = int(num_envs)
        self.render_mode = None
        cfg = self.config
        self.single_action_space = spaces.MultiDiscrete(np.full(cfg.num_devices, cfg.gamma_max + 1, dtype=np.int64))
        self.single_observation_space = spaces.Box(-1.0, 1.0, shape=(obs_size(cfg),), dtype=np.float32)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._n_reset, self._n_step = reset_draws(cfg), step_draws(cfg)
        self._gens = [seeding.np_random(None)[0] for _ in range(self.num_envs)]
        self._state: State | None = None
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._ep_tokens = np.zeros(self.num_envs)
        self._ep_time = np.zeros(self.num_envs)

    # ------------------------------------------------------------------ helpers
    def _draw(self, n: int, rows: np.ndarray) -> np.ndarray:
        u = np.zeros((self.num_envs, n))
        for i in rows:
            self._gens[i].random(out=u[i])
        return u

    def _fresh(self, rows: np.ndarray) -> State:
        return reset_state(self._draw(self._n_reset, rows), self.config)

    @property
    def np_random_generators(self) -> list[np.random.Generator]:
        """The sub-envs' generators (sub-env i draws only from generator i)."""
        return self._gens

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        seeds = seed_list(seed, self.num_envs)
        for i, s in enumerate(seeds):
            if s is not None:
                self._gens[i] = seeding.np_random(s)[0]
        if options and "config" in options:
            self.config = config_from_options(self.config, options)
            warm_up(self.config)
            self._n_reset, self._n_step = reset_draws(self.config), step_draws(self.config)
        self._state = self._fresh(np.arange(self.num_envs))
        self._autoreset[:] = False
        self._ep_tokens[:] = 0.0
        self._ep_time[:] = 0.0
        return observe(self._state, self.config), {}

    def step(self, actions):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        cfg, n = self.config, self.num_envs
        gamma = validate_action(actions, cfg, batch=n)
        same_step = self.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        resetting = self._autoreset if not same_step else np.zeros(n, dtype=bool)
        stepping = ~resetting
        rows = np.flatnonzero(stepping)
        state, res = step_state(self._draw(self._n_step, rows), self._state, gamma, cfg)
        self._ep_tokens = np.where(stepping, self._ep_tokens + res.tokens.sum(axis=-1), 0.0)
        self._ep_time = np.where(stepping, self._ep_time + res.latency, 0.0)
        truncated = stepping & (state.t >= cfg.episode_length)
        terminated = np.zeros(n, dtype=bool)
        rewards = np.where(stepping, res.goodput * cfg.reward_scale, 0.0)
        info = self._info(res, stepping)
        if same_step:
            done = np.flatnonzero(truncated)
            if len(done):
                info["final_obs"] = np.full(n, None, dtype=object)
                final = observe(state, cfg)
                for i in done:
                    info["final_obs"][i] = final[i]
                info["_final_obs"] = truncated.copy()
                state = state.where(truncated, self._fresh(done))
                self._ep_tokens[done] = 0.0
                self._ep_time[done] = 0.0
        else:
            if resetting.any():
                state = state.where(resetting, self._fresh(np.flatnonzero(resetting)))
            self._autoreset = truncated | terminated
        self._state = state
        return observe(state, cfg), rewards, terminated, truncated, info

    def what_if(self, actions) -> tuple[np.ndarray, np.ndarray]:
        """Counterfactual evaluation on common random numbers: the tokens [N] and the latency (s)
        [N] each sub-env's coming round would give with draft lengths ``actions`` [N, K] — on the
        draws its next :meth:`step` will use, whatever that step plays; every generator is put back
        where it was (see :meth:`msenv.MultiSpinEnv.what_if`). A sub-env whose next step is a
        reset (next-step autoreset) plays no round: 0 tokens, latency 0."""
        if self._state is None:
            raise RuntimeError("call reset() before what_if()")
        cfg, n = self.config, self.num_envs
        gamma = validate_action(actions, cfg, batch=n)
        playing = np.ones(n, dtype=bool)
        if self.metadata["autoreset_mode"] != AutoresetMode.SAME_STEP:
            playing = ~self._autoreset
        saved = [g.bit_generator.state for g in self._gens]
        u = self._draw(self._n_step, np.flatnonzero(playing))
        for g, st in zip(self._gens, saved):
            g.bit_generator.state = st
        _, res = step_state(u, self._state, gamma, cfg)
        tokens = res.total_tokens
        return np.where(playing, tokens, 0.0), np.where(playing, res.latency, 0.0)

    def _info(self, res, mask: np.ndarray) -> dict[str, Any]:
        info: dict[str, Any] = {}
        for key in _PER_DEVICE + ("t_draft", "t_verify", "t_com", "latency", "goodput"):
            info[key] = getattr(res, key)
        if res.info:
            info.update(res.info)
        info["episode_tokens"] = self._ep_tokens.copy()
        info["episode_time"] = self._ep_time.copy()
        info["episode_throughput"] = np.where(mask, self._ep_tokens / np.where(mask, self._ep_time, 1.0), 0.0)
        all_live = bool(mask.all())
        for key in info_keys(self.config):
            if not all_live:
                val = info[key]
                m = mask.reshape(mask.shape + (1,) * (val.ndim - 1))
                info[key] = np.where(m, val, np.zeros_like(val))
            info[f"_{key}"] = mask.copy()
        return info

    @property
    def state(self) -> State:
        """The batched functional state."""
        return self._state

    @property
    def context(self) -> RoundContext:
        """The upcoming round's inputs of all sub-envs (arrays [N, K]) — what the server knows."""
        return round_context(self._state, self.config)

    @property
    def oracle_context(self) -> RoundContext:
        """The upcoming round's truth of all sub-envs (see ``MultiSpinEnv.oracle_context``)."""
        return round_context(self._state, self.config, oracle=True)

    def close_extras(self, **kwargs: Any) -> None:
        self._state = None


def check_num_envs(num_envs: Any) -> None:
    """A vector env's ``num_envs`` must be an integer ≥ 1."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs={num_envs!r} is invalid; allowed: an integer ≥ 1")


def autoreset_mode_of(mode: str | AutoresetMode) -> AutoresetMode:
    """Gymnasium's AutoresetMode of a member or a name: next-step or same-step autoreset."""
    table = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP,
             "NextStep": AutoresetMode.NEXT_STEP, "SameStep": AutoresetMode.SAME_STEP}
    if isinstance(mode, AutoresetMode) and mode in table.values():
        return mode
    if isinstance(mode, str) and mode in table:
        return table[mode]
    raise ValueError(f"autoreset_mode={mode!r} is invalid; allowed: 'next_step', 'same_step'")


def seed_list(seed, n: int) -> list[int | None]:
    """Per-sub-env seeds of ``reset(seed=…)``: None for all, ``seed + i`` (as SyncVectorEnv), or a
    list of ``n``."""
    if seed is None:
        return [None] * n
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return [int(seed) + i for i in range(n)]
    seeds = list(seed)
    if len(seeds) != n:
        raise ValueError(f"seed list has {len(seeds)} entries; expected num_envs={n}")
    return seeds
