"""What every environment shell shares, written once: what a config's environment is (its layout,
its shells — for any :class:`~msenv.config.EnvSpec`), which reset options may change the config
(those that keep the layout), the seeds of sub-environments and episodes, the draws of a step (and
the common random numbers of ``what_if``), the episode totals and Gymnasium's two autoreset modes.
The spaces, the round and its ``info`` are the engine's (:mod:`msenv.engine.base`).

The shells (:mod:`msenv.envs.env`, :mod:`~msenv.envs.vector`, :mod:`~msenv.envs.cells`,
:mod:`~msenv.envs.cells_vector`) keep only what is their own: how many rows they hold, and how a
row's episode starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.envs.registration import load_env_creator
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode

from ..config.spec import EnvSpec
from ..engine.functional import engine_for
from ..engine.observation import Layout, changed_by
from ..engine.state import put_rows
from ..model.goodput import RoundResult


# ---------------------------------------------------------------------- a config's environment
def layout_of(config: EnvSpec) -> Layout:
    """The shapes a config fixes (:class:`~msenv.engine.observation.Layout`): its cells' engine's
    layout as the config pads it (a single cell: as it is; a generator's: padded to ``k_max``) — what
    the spaces, the agents and the padding read."""
    return config.pad(engine_for(config.base).layout)


def make_env(config: EnvSpec, render_mode: str | None = None, **kwargs: Any):
    """The environment of a config (the shell it names: :attr:`EnvSpec.entry <msenv.config.EnvSpec.entry>`)."""
    return load_env_creator(config.entry)(config=config, render_mode=render_mode, **kwargs)


def make_vector_env(config: EnvSpec, num_envs: int, **kwargs: Any):
    """The batched vector environment of a config (its :attr:`~msenv.config.EnvSpec.vector_entry`);
    ``kwargs`` as its (``autoreset_mode``)."""
    return load_env_creator(config.vector_entry)(num_envs=num_envs, config=config, **kwargs)


# ---------------------------------------------------------------------- checks
def config_from_options(current: EnvSpec, value: Any) -> EnvSpec:
    """The config of ``reset(options={"config": value})``: ``current`` with the fields of ``value``
    (a dict of fields, or a config) changed; refused in one line naming the field when the change
    would change the layout (the spaces, or what an observation entry means) — the env would no
    longer fit a policy built on its spaces."""
    if isinstance(value, type(current)):
        value = value.fields()
    if not isinstance(value, dict):
        raise ValueError(f"reset option config={value!r} is invalid; allowed: a dict of config fields or a "
                         f"{type(current).__name__}")
    new = current.replace(**value)
    name = changed_by(current, new, layout_of, type(current).fields)
    if name is not None:
        raise ValueError(f"reset option config.{name}={new.fields()[name]!r} is not allowed: it changes the "
                         f"observation or action layout (current {current.fields()[name]!r}); make a new env "
                         "instead")
    return new


def check_render_mode(render_mode: Any, allowed: list[str]) -> None:
    """``render_mode`` must be None or one of ``allowed`` (Gymnasium's mode names)."""
    if render_mode is not None and render_mode not in allowed:
        names = ", ".join(["None"] + [repr(m) for m in allowed])
        raise ValueError(f"render_mode={render_mode!r} is not allowed; allowed: {names}")


def check_num_envs(num_envs: Any) -> None:
    """A vector env's ``num_envs`` must be an integer ≥ 1."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs={num_envs!r} is invalid; allowed: an integer ≥ 1")


# ---------------------------------------------------------------------- seeds and draws
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


def episode_seed(seeder: np.random.Generator | None, seed: int | None) -> tuple[np.random.Generator, int]:
    """A cell generator's next episode seed and its seeder: ``seed`` itself when given (and a
    seeder for the episodes after it, from ``SeedSequence(seed)``'s child 0), else the seeder's
    next draw (an unseeded seeder when there is none yet)."""
    if seed is not None:
        return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,))), int(seed)
    if seeder is None:
        seeder = seeding.np_random()[0]
    return seeder, int(seeder.integers(2**63 - 1))


def draw(gens: list[np.random.Generator], rows, out: np.ndarray, sizes: np.ndarray | None = None) -> np.ndarray:
    """Fill ``out[i]`` (its first ``sizes[i]`` entries) with generator ``i``'s next uniforms, for
    each row ``i`` of ``rows``: the one way a shell draws a step's randomness."""
    if sizes is None:
        for i in rows:
            gens[i].random(out=out[i])
    else:
        for i in rows:
            gens[i].random(out=out[i, : sizes[i]])
    return out


def draw_rows(gens: list[np.random.Generator], rows, n: int) -> np.ndarray:
    """[len(rows), n] uniforms, row j the next ``n`` of generator ``rows[j]`` (a reset of those rows only)."""
    out = np.empty((len(rows), n))
    for j, i in enumerate(rows):
        gens[i].random(out=out[j])
    return out


def peek(gens: list[np.random.Generator], rows, out: np.ndarray, sizes: np.ndarray | None = None) -> np.ndarray:
    """:func:`draw`, then every generator put back where it was: the numbers the coming step will
    draw (the common random numbers of ``what_if``), and nothing changed."""
    saved = [gens[i].bit_generator.state for i in rows]
    draw(gens, rows, out, sizes)
    for i, state in zip(rows, saved):
        gens[i].bit_generator.state = state
    return out


# ---------------------------------------------------------------------- episode totals and info
class Totals:
    """Each row's tokens and time so far in its episode."""

    def __init__(self, n: int) -> None:
        self.tokens, self.time = np.zeros(n), np.zeros(n)

    def add(self, res: RoundResult, live: np.ndarray | None = None) -> None:
        """Count the round of the ``live`` rows (None: every row)."""
        if live is None:
            if len(self.tokens) == 1:  # a single env's step (item arithmetic costs less than array ops)
                self.tokens[0] += res.total_tokens[0]
                self.time[0] += res.latency[0]
            else:
                self.tokens += res.total_tokens
                self.time += res.latency
            return
        self.tokens = np.where(live, self.tokens + res.total_tokens, self.tokens)
        self.time = np.where(live, self.time + res.latency, self.time)

    def clear(self, rows) -> None:
        self.tokens[rows] = 0.0
        self.time[rows] = 0.0


# ---------------------------------------------------------------------- the single-cell core (a batch of n rows)
class EnvBatch:
    """The episodes of ``n`` rows of one single-cell config (the core of
    :class:`~msenv.envs.env.MultiSpinEnv`, n = 1, and of :class:`~msenv.envs.vector.MultiSpinVectorEnv`):
    the engine, each row's generator, the batched state and the episodes' totals. Row i draws only
    from generator i, so a batch of n rows plays exactly n single envs seeded alike."""

    def __init__(self, config, n: int, gens: list[np.random.Generator]) -> None:
        self.n = n
        self.gens = gens  #: each row's generator
        self.state = None  #: the kind's batched state (None before the first reset)
        self.totals = Totals(n)
        self.use(config)

    def use(self, config) -> None:
        """Play ``config`` from now on (its engine, compiled on first use)."""
        self.config, self.engine = config, engine_for(config)
        self.engine.warm_up()
        self.u = np.empty((self.n, self.engine.step_draws))  #: the step's uniforms, drawn in place

    def start(self, rows) -> None:
        """New episodes of ``rows`` (each from its own generator); the other rows keep theirs."""
        fresh = self.engine.reset(draw_rows(self.gens, rows, self.engine.reset_draws))
        every = len(rows) == self.n
        self.state = fresh if every or self.state is None else put_rows(self.state, np.asarray(rows), fresh)
        self.totals.clear(rows)

    def play(self, gamma: np.ndarray, live: np.ndarray | None = None):
        """One round of the ``live`` rows (None: all) with draft lengths ``gamma`` [n, K] (checked):
        the round's result; the state and the totals move on."""
        if live is None and self.n == 1:  # the single env's step: one generator, every row playing
            self.gens[0].random(out=self.u)
        else:
            draw(self.gens, range(self.n) if live is None else np.flatnonzero(live), self.u)
        self.state, res = self.engine.step(self.u, self.state, gamma)
        self.totals.add(res, live)
        return res

    def what_if(self, gamma: np.ndarray, live: np.ndarray | None = None):
        """The result of :meth:`play` on the draws it would use; nothing changes."""
        rows = range(self.n) if live is None else np.flatnonzero(live)
        return self.engine.step(peek(self.gens, rows, np.empty_like(self.u)), self.state, gamma)[1]


# ---------------------------------------------------------------------- autoreset
def autoreset_mode_of(mode: str | AutoresetMode) -> AutoresetMode:
    """Gymnasium's AutoresetMode of a member or a name: next-step or same-step autoreset."""
    table = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP,
             "NextStep": AutoresetMode.NEXT_STEP, "SameStep": AutoresetMode.SAME_STEP}
    if isinstance(mode, AutoresetMode) and mode in table.values():
        return mode
    if isinstance(mode, str) and mode in table:
        return table[mode]
    raise ValueError(f"autoreset_mode={mode!r} is invalid; allowed: 'next_step', 'same_step'")


class Autoreset:
    """Gymnasium's two autoreset modes for a vector env of ``n`` rows, read from the env's
    ``metadata["autoreset_mode"]`` at every step (an adapter may switch it):

    - next-step: the step after a row's episode ended resets it, plays no round there (its action
      ignored, reward 0);
    - same-step: the row resets in the step that ends it, its last observation in
      ``info["final_obs"]``.
    """

    def __init__(self, env: Any, n: int) -> None:
        self.env = env
        self.pending = np.zeros(n, dtype=bool)  #: rows whose next step is a (next-step) reset

    @property
    def same_step(self) -> bool:
        return self.env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP

    def playing(self) -> np.ndarray:
        """The rows whose coming step plays a round."""
        return np.ones_like(self.pending) if self.same_step else ~self.pending

    def finish(self, live: np.ndarray, ended: np.ndarray, info: dict[str, Any], final_obs: Callable[[], np.ndarray],
               restart: Callable[[np.ndarray], None]) -> None:
        """After a step of the ``live`` rows whose episodes ``ended``: same-step — record the final
        observations (``final_obs()``, all rows) and ``restart`` the ended rows; next-step —
        ``restart`` the rows that did not play, and remember the ended ones."""
        if self.same_step:
            done = np.flatnonzero(ended)
            if len(done):
                final = final_obs()
                info["final_obs"] = np.full(len(live), None, dtype=object)
                for i in done:
                    info["final_obs"][i] = final[i].copy()
                info["_final_obs"] = ended.copy()
                restart(done)
            self.pending[:] = False
        else:
            resetting = np.flatnonzero(~live)
            if len(resetting):
                restart(resetting)
            self.pending = ended.copy()

    def clear(self) -> None:
        self.pending[:] = False
