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
from ..engine.functional import engine_for
from ..engine.state import put_rows
from .shell import (
    Autoreset,
    Totals,
    autoreset_mode_of,
    check_num_envs,
    config_from_options,
    draw,
    draw_rows,
    peek,
    seed_list,
)


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
        self._use(resolve_config(config, **overrides))
        self.single_action_space, self.single_observation_space = self._engine.layout.spaces()
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._gens = [seeding.np_random(None)[0] for _ in range(self.num_envs)]
        self._state = None
        self._autoreset = Autoreset(self, self.num_envs)
        self._totals = Totals(self.num_envs)

    def _use(self, cfg: SystemConfig) -> None:
        """Play ``cfg`` from now on (its engine, compiled on first use)."""
        self.config, self._engine = cfg, engine_for(cfg)
        self._engine.warm_up()
        self._n_reset, self._n_step = self._engine.reset_draws, self._engine.step_draws

    def _fresh(self, rows: np.ndarray):
        """New episodes of the sub-envs ``rows`` (each from its own generator), as a state of len(rows) rows."""
        return self._engine.reset(draw_rows(self._gens, rows, self._n_reset))

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
            self._use(config_from_options(self.config, options["config"]))
        self._state = self._fresh(np.arange(self.num_envs))
        self._autoreset.clear()
        self._totals.clear(slice(None))
        return self._engine.observe(self._state), {}

    def step(self, actions):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        cfg, n = self.config, self.num_envs
        live = self._autoreset.playing()
        self._state, res = self._play(actions, live, draw)
        self._totals.add(res, live)
        truncated = live & (self._state.t >= cfg.episode.episode_length)
        terminated = np.zeros(n, dtype=bool)
        rewards = np.where(live, res.goodput * cfg.episode.reward_scale, 0.0)
        info = self._engine.batch_info(res, live, self._totals.tokens, self._totals.time)
        self._autoreset.finish(live, truncated | terminated, info, lambda: self._engine.observe(self._state),
                               self._restart)
        return self._engine.observe(self._state), rewards, terminated, truncated, info

    def _restart(self, rows: np.ndarray) -> None:
        self._state = put_rows(self._state, rows, self._fresh(rows))
        self._totals.clear(rows)

    def what_if(self, actions) -> tuple[np.ndarray, np.ndarray]:
        """Counterfactual evaluation on common random numbers: the tokens [N] and the latency (s)
        [N] each sub-env's coming round would give with draft lengths ``actions`` [N, K] — on the
        draws its next :meth:`step` will use, whatever that step plays; every generator is put back
        where it was (see :meth:`msenv.MultiSpinEnv.what_if`). A sub-env whose next step is a
        reset (next-step autoreset) plays no round: 0 tokens, latency 0."""
        if self._state is None:
            raise RuntimeError("call reset() before what_if()")
        live = self._autoreset.playing()
        _, res = self._play(actions, live, peek)
        return np.where(live, res.total_tokens, 0.0), np.where(live, res.latency, 0.0)

    def _play(self, actions, live: np.ndarray, sample) -> tuple[Any, Any]:
        """(the next state, the round's result) of ``actions`` in the rows ``live``, their uniforms
        from ``sample``: :func:`~msenv.envs.shell.draw` for a step, :func:`~msenv.envs.shell.peek`
        for ``what_if``."""
        gamma = validate_action(actions, self.config, batch=self.num_envs)
        u = sample(self._gens, np.flatnonzero(live), np.zeros((self.num_envs, self._n_step)))
        return self._engine.step(u, self._state, gamma)

    @property
    def state(self):
        """The batched functional state."""
        return self._state

    @property
    def context(self) -> RoundContext:
        """The upcoming round's inputs of all sub-envs (arrays [N, K]) — what the server knows."""
        return self.round_context()

    @property
    def oracle_context(self) -> RoundContext:
        """The upcoming round's truth of all sub-envs (see ``MultiSpinEnv.oracle_context``)."""
        return self.round_context(oracle=True)

    def round_context(self, oracle: bool | str = False) -> RoundContext:
        """The upcoming round's context of all sub-envs (arrays [N, K]; ``oracle`` as
        :meth:`msenv.MultiSpinEnv.round_context`)."""
        if self._state is None:
            raise RuntimeError("call reset() before reading the context")
        return self._engine.context(self._state, None, oracle)

    def close_extras(self, **kwargs: Any) -> None:
        self._state = None
