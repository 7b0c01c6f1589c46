"""Native batched vector environment: N Multi-SPIN envs stepped by one call of the batched
round kernel (no per-env Python loop in the model).

``MultiSpinVectorEnv`` has the meaning of N copies of :class:`msenv.envs.env.MultiSpinEnv`:
``reset(seed=s)`` seeds sub-env ``i`` with ``s + i`` (as ``SyncVectorEnv`` does), each sub-env
keeps its own ``numpy.random.Generator`` and draws exactly what the single env draws, so
trajectories equal N single envs' bit for bit. The only per-env Python work is one
``Generator.random(out=...)`` call per env per step (the price of per-env seeding).

Autoreset: ``"next_step"`` (Gymnasium's default, as ``SyncVectorEnv``: the step after an
episode ends resets that env, ignores its action, returns reward 0) or ``"same_step"`` (the env
resets in the step that ends it; the last observation goes to ``info["final_obs"]``).

Create it with ``gymnasium.make_vec("msenv/MultiSpin-v0", num_envs=N,
vectorization_mode="vector_entry_point")`` or directly. :class:`msenv.envs.sb3.SB3VecEnv` adapts it
to Stable-Baselines3's VecEnv API.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..config.system import SystemConfig, check_fields, resolve_config
from ..engine.context import RoundContext, validate_action
from .shell import Autoreset, EnvBatch, autoreset_mode_of, check_num_envs, config_from_options, seed_list


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
        self.num_envs = int(num_envs)
        self.render_mode = None
        self._batch = EnvBatch(resolve_config(config, **overrides), self.num_envs,
                               [seeding.np_random(None)[0] for _ in range(self.num_envs)])
        self.config = self._batch.config
        self.single_action_space, self.single_observation_space = self._batch.engine.layout.spaces()
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._autoreset = Autoreset(self, self.num_envs)

    @property
    def np_random_generators(self) -> list[np.random.Generator]:
        """The sub-envs' generators (sub-env i draws only from generator i)."""
        return self._batch.gens

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        batch = self._batch
        for i, s in enumerate(seed_list(seed, self.num_envs)):
            if s is not None:
                batch.gens[i] = seeding.np_random(s)[0]
        if options and "config" in options:
            batch.use(config_from_options(self.config, options["config"]))
            self.config = batch.config
        batch.start(range(self.num_envs))
        self._autoreset.clear()
        return batch.engine.observe(batch.state), {}

    def step(self, actions):
        batch = self._batch
        if batch.state is None:
            raise RuntimeError("call reset() before step()")
        cfg, n = self.config, self.num_envs
        live = self._autoreset.playing()
        res = batch.play(validate_action(actions, cfg, batch=n), live)
        truncated = live & (batch.state.t >= cfg.episode.episode_length)
        terminated = np.zeros(n, dtype=bool)
        rewards = np.where(live, res.goodput * cfg.episode.reward_scale, 0.0)
        info = batch.engine.batch_info(res, live, batch.totals.tokens, batch.totals.time)
        self._autoreset.finish(live, truncated | terminated, info, lambda: batch.engine.observe(batch.state),
                               batch.start)
        return batch.engine.observe(batch.state), rewards, terminated, truncated, info

    def what_if(self, actions) -> tuple[np.ndarray, np.ndarray]:
        """Counterfactual evaluation on common random numbers: the tokens [N] and the latency (s)
        [N] each sub-env's coming round would give with draft lengths ``actions`` [N, K] — on the
        draws its next :meth:`step` will use, whatever that step plays; every generator is put back
        where it was (see :meth:`msenv.MultiSpinEnv.what_if`). A sub-env whose next step is a
        reset (next-step autoreset) plays no round: 0 tokens, latency 0."""
        if self._batch.state is None:
            raise RuntimeError("call reset() before what_if()")
        live = self._autoreset.playing()
        res = self._batch.what_if(validate_action(actions, self.config, batch=self.num_envs), live)
        return np.where(live, res.total_tokens, 0.0), np.where(live, res.latency, 0.0)

    @property
    def state(self):
        """The batched functional state (the engine kind's, arrays [N, …])."""
        return self._batch.state

    @property
    def states(self) -> tuple:
        """Each sub-env's functional state (a batch of one), as the cell generators' vector env gives them."""
        self._ready()
        s = self._batch.state
        return tuple(type(s)(*(None if a is None else a[i: i + 1] for a in s)) for i in range(self.num_envs))

    @property
    def num_devices(self) -> np.ndarray:
        """K of each sub-env [N] (every sub-env's cell is the config's)."""
        return np.full(self.num_envs, self.config.num_devices, np.int64)

    @property
    def draft_times(self) -> np.ndarray:
        """Each sub-env's devices' drafting times T_k^dft, s per token [N, K]."""
        self._ready()
        return self._batch.state.t_draft.copy()

    def _ready(self) -> None:
        if self._batch.state is None:
            raise RuntimeError("call reset() first")

    @property
    def context(self) -> tuple[RoundContext, ...]:
        """The upcoming round's inputs of each sub-env (one context per sub-env, arrays [K]) — what
        the server knows."""
        return self.round_context()

    @property
    def oracle_context(self) -> tuple[RoundContext, ...]:
        """The upcoming round's truth of each sub-env (see ``MultiSpinEnv.oracle_context``)."""
        return self.round_context(oracle=True)

    def round_context(self, oracle: bool | str = False) -> tuple[RoundContext, ...]:
        """The upcoming round's context of each sub-env (``oracle`` as
        :meth:`msenv.MultiSpinEnv.round_context`); :meth:`batch_context` gives them as one context
        of arrays [N, K]."""
        return tuple(self.batch_context(oracle, i) for i in range(self.num_envs))

    def batch_context(self, oracle: bool | str = False, index: int | None = None) -> RoundContext:
        """Every sub-env's upcoming round as one context of arrays [N, K] (``index``: sub-env
        ``index``'s alone, arrays [K])."""
        self._ready()
        return self._batch.engine.context(self._batch.state, index, oracle)

    def close_extras(self, **kwargs: Any) -> None:
        batch = self.__dict__.get("_batch")  # None when __init__ refused its arguments
        if batch is not None:
            batch.state = None
