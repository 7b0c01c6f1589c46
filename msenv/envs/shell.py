"""What every environment shell shares, written once: the spaces, the seeds of sub-environments
and episodes, the draws of a step (and the common random numbers of ``what_if``), the episode
totals, the ``info`` dict and Gymnasium's two autoreset modes.

The shells (:mod:`msenv.envs.env`, :mod:`~msenv.envs.vector`, :mod:`~msenv.envs.cells`,
:mod:`~msenv.envs.cells_vector`) keep only what is their own: how many rows they hold, and how a
row's episode starts.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode

from ..model.goodput import RoundResult

#: the per-device and per-round fields of a round's result that ``info`` carries, in its order
ROUND_KEYS = ("tokens", "accepted", "rejected", "modes", "dl_power", "ul_delay", "t_draft", "t_verify", "t_com",
              "latency", "goodput")


# ---------------------------------------------------------------------- spaces
def env_spaces(slots: int, gamma_max: int, obs_len: int) -> tuple[spaces.MultiDiscrete, spaces.Box]:
    """The action space (a draft length in [0, γ_max] per device slot) and the observation space
    (float32 in [−1, 1]) of a shell with ``slots`` device slots."""
    return (spaces.MultiDiscrete(np.full(slots, gamma_max + 1, dtype=np.int64)),
            spaces.Box(-1.0, 1.0, shape=(obs_len,), dtype=np.float32))


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

    def add(self, res: RoundResult, live: np.ndarray) -> None:
        """Count the round of the ``live`` rows."""
        self.tokens = np.where(live, self.tokens + res.total_tokens, self.tokens)
        self.time = np.where(live, self.time + res.latency, self.time)

    def clear(self, rows) -> None:
        self.tokens[rows] = 0.0
        self.time[rows] = 0.0


def round_info(res: RoundResult, i: int, ep_tokens: float, ep_time: float) -> dict[str, Any]:
    """The ``info`` dict of row ``i`` of a round's result (a single env's); ``ep_tokens``/``ep_time``
    are the episode's totals *before* this round (the dict holds them after it). Written out key by
    key: this is on the single env's step, where a loop over :data:`ROUND_KEYS` costs a microsecond."""
    latency = float(res.latency[i])
    ep_tokens += float(res.total_tokens[i])
    ep_time += latency
    out = {
        "tokens": res.tokens[i],
        "accepted": res.accepted[i],
        "rejected": res.rejected[i],
        "modes": res.modes[i],
        "dl_power": res.dl_power[i],
        "ul_delay": res.ul_delay[i],
        "t_draft": float(res.t_draft[i]),
        "t_verify": float(res.t_verify[i]),
        "t_com": float(res.t_com[i]),
        "latency": latency,
        "goodput": float(res.goodput[i]),
        "episode_tokens": ep_tokens,
        "episode_time": ep_time,
        "episode_throughput": ep_tokens / ep_time,
    }
    if res.info:
        for key, val in res.info.items():
            out[key] = val[i]
    return out


def batch_info(res: RoundResult, live: np.ndarray, totals: Totals, keys: tuple[str, ...]) -> dict[str, Any]:
    """The ``info`` dict of a vector env's round: every key of ``keys`` as an array over the rows,
    zero in the rows that did not play (``live`` false), with Gymnasium's ``_key`` mask."""
    info: dict[str, Any] = {key: getattr(res, key) for key in ROUND_KEYS}
    if res.info:
        info.update(res.info)
    info["episode_tokens"] = np.where(live, totals.tokens, 0.0)
    info["episode_time"] = np.where(live, totals.time, 0.0)
    info["episode_throughput"] = np.where(live, totals.tokens / np.where(live, totals.time, 1.0), 0.0)
    all_live = bool(live.all())
    for key in keys:
        if not all_live:
            val = info[key]
            m = live.reshape(live.shape + (1,) * (val.ndim - 1))
            info[key] = np.where(m, val, np.zeros_like(val))
        info[f"_{key}"] = live.copy()
    return info


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
