"""The paired evaluation harness: every controller on the same env config and the same seeds.

Episode ``i`` of every entry uses seed ``seed + i`` for both the environment and the
controller, so geometry, tasks, fading and verification outcomes are identical across
controllers (the outcome draws do not depend on the actions). Metrics per episode
(:class:`EpisodeStats`):

- ``goodput``: mean per-round goodput (the reward before scaling), tokens/s;
- ``throughput``: long-run Σ tokens / Σ time, tokens/s;
- ``mean_gamma``: mean draft length; ``share_accepted`` / ``share_ul`` / ``share_dl``: fraction of
  device-rounds all-accepted / corrected via UL / via DL; ``share_no_draft``: fraction of rounds in
  which no device drafts (γ = 0 everywhere); ``t_com_ms``: mean T_com;
  ``t_cmp_ms``: mean computation time T_cmp = drafting + verification;
- ``decision_ms``: controller wall time per round; ``realtime_throughput``: Σ tokens / Σ (round
  time + decision time) — the throughput when a round cannot start before its decision (the
  decision times, and so this, depend on the machine and its threads).

:mod:`evaluation.report` summarises them (mean, 95% CI, throughput relative to the first entry,
paired per episode); :mod:`evaluation.parallel` runs the episodes in processes or on Ray.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines import make_controller
from baselines.base import Controller, controller_context
from msenv import SystemConfig
from msenv.config import MODE_POLICIES
from msenv.envs.cells import CellConfig, make_env
from msenv.envs.env import SUMMARY_KEYS, round_summary

from .parallel import parallel_map


@dataclass
class Entry:
    """One row of a comparison: a controller factory and the reactive policy it runs under."""

    label: str
    factory: Callable[[], Controller]
    policy: str | None = None  # None → the config's


@dataclass
class EpisodeStats:
    label: str
    episode: int
    seed: int
    goodput: float
    throughput: float
    mean_gamma: float
    share_accepted: float
    share_ul: float
    share_dl: float
    t_com_ms: float
    t_cmp_ms: float
    decision_ms: float
    share_no_draft: float = 0.0  #: fraction of rounds in which no device drafts (γ = 0 everywhere)
    #: Σ tokens / Σ (round time + the controller's measured decision time): the throughput when the
    #: server cannot start a round before it has decided (depends on the machine and its threads)
    realtime_throughput: float = 0.0
    tokens: float = 0.0  #: Σ tokens of the episode
    time_s: float = 0.0  #: Σ round time of the episode, s
    #: the 10th percentile over the episode's devices of each device's goodput Σ_t N_k,t / Σ_t T_t
    #: (tokens/s): how the worst-served devices fare
    device_p10_goodput: float = 0.0


def play(controller: Controller, config: SystemConfig | CellConfig, seed: int) -> Iterator[tuple]:
    """One episode of ``controller`` on seed ``seed``: yields, per round, (observation it acted
    on, draft lengths, reward, info, decision time in s). In a cell generator's env a controller
    decides for the cell's K devices (an agent acting on the padded observation may return
    ``k_max`` entries: the padded ones are dropped); the draft lengths are the K devices'."""
    env = make_env(config)
    obs, _ = env.reset(seed=seed)
    controller.reset(seed)
    pad = env.action_space.shape[0]
    done = False
    while not done:
        ctx = controller_context(controller, env)
        t0 = time.perf_counter()
        gamma = controller.act(ctx, obs)
        decision_s = time.perf_counter() - t0
        k = ctx.config.num_devices
        gamma = np.asarray(gamma)
        if k < pad and gamma.shape == (pad,):
            gamma = gamma[:k]
        if gamma.shape != (k,):  # the env checks the rest, once (the padded slots hide a short vector)
            raise ValueError(f"controller {controller.name!r} returned a bad draft-length vector: action shape "
                             f"{gamma.shape} is invalid; expected ({k},): one draft length per device")
        try:
            nxt, reward, term, trunc, info = env.step(gamma if k == pad else np.pad(gamma, (0, pad - k)))
        except ValueError as e:
            raise ValueError(f"controller {controller.name!r} returned a bad draft-length vector: {e}") from None
        gamma = gamma.astype(np.int64, copy=False)
        controller.observe(gamma, info if k == pad else {key: _first(v, k) for key, v in info.items()})
        yield obs, gamma, reward, info, decision_s
        obs, done = nxt, term or trunc


def _first(value, k: int):
    """A padded ``info`` entry's K devices (scalars as they are)."""
    return value[:k] if isinstance(value, np.ndarray) and value.ndim == 1 else value


def run_episode(controller: Controller, config: SystemConfig | CellConfig, seed: int, label: str | None = None,
                episode: int = 0) -> EpisodeStats:
    """Play one episode of ``config.episode_length`` rounds; return its statistics."""
    good, t_com, t_cmp, dec, summaries, idle = [], [], [], [], [], []
    tokens = time_ = 0.0
    per_device = 0.0
    for _, gamma, _, info, decision_s in play(controller, config, seed):
        per_device = per_device + info["tokens"][: len(gamma)]
        dec.append(decision_s)
        good.append(info["goodput"])
        t_com.append(info["t_com"])
        t_cmp.append(info["t_draft"] + info["t_verify"])
        summaries.append(round_summary(gamma, info["modes"][: len(gamma)]))
        idle.append(not np.any(gamma))
        tokens += info["tokens"].sum()
        time_ += info["latency"]
    means = {key: float(np.mean([s[key] for s in summaries])) for key in SUMMARY_KEYS}
    decision_ms = 1e3 * float(np.mean(dec))
    return EpisodeStats(
        label=label or controller.name, episode=episode, seed=seed,
        goodput=float(np.mean(good)), throughput=tokens / time_, **means,
        t_com_ms=1e3 * float(np.mean(t_com)), t_cmp_ms=1e3 * float(np.mean(t_cmp)), decision_ms=decision_ms,
        share_no_draft=float(np.mean(idle)), realtime_throughput=tokens / (time_ + len(dec) * decision_ms / 1e3),
        tokens=float(tokens), time_s=float(time_),
        device_p10_goodput=float(np.percentile(per_device / time_, 10)),
    )


def entry_config(entry: Entry, config: SystemConfig | CellConfig) -> SystemConfig | CellConfig:
    """The config ``entry`` plays in: ``config`` under the entry's reactive policy, if it names one."""
    return config if entry.policy is None else config.replace(mode_policy=entry.policy)


def _job(args) -> EpisodeStats:
    entry, config, seed, episode = args
    return run_episode(entry.factory(), entry_config(entry, config), seed, entry.label, episode)


def evaluate(
    entries: Sequence[Entry], config: SystemConfig | CellConfig, episodes: int, seed: int = 0,
    workers: int = 1, progress: bool = False, ray_address: str | None = None,
) -> list[EpisodeStats]:
    """Run every entry on episodes with seeds ``seed .. seed + episodes − 1`` (locally, over
    processes, or as Ray tasks: see :func:`parallel_map`)."""
    if episodes < 1:
        raise ValueError(f"episodes={episodes} is invalid; allowed: an integer ≥ 1")
    jobs = [(e, config, seed + i, i) for e in entries for i in range(episodes)]
    return parallel_map(_job, jobs, workers, progress, desc="evaluate", ray_address=ray_address)


def parse_entry(spec: str) -> Entry:
    """``name`` or ``name@policy`` → Entry (controller names: see ``baselines.REGISTRY``)."""
    name, _, policy = spec.partition("@")
    if policy and policy not in MODE_POLICIES:
        raise ValueError(f"entry {spec!r}: policy {policy!r} is not allowed; allowed: {', '.join(MODE_POLICIES)}")
    make_controller(name)  # validate now, not in a worker
    return Entry(spec, ControllerFactory(name), policy or None)


@dataclass
class ControllerFactory:
    """Picklable controller factory (for spawned workers): the controller ``name`` made with the
    keyword arguments ``settings`` (``(keyword, value)`` pairs, e.g. ``(("objective",
    "mean_of_ratios"),)`` for an SAA controller)."""

    name: str
    settings: tuple[tuple[str, Any], ...] = ()

    def __call__(self) -> Controller:
        return make_controller(self.name, **dict(self.settings))


def agent_label(path: str | Path, taken: Sequence[str] = ()) -> str:
    """``ppo:<run>`` for train.py's ``<run>/agent``, else ``ppo:<parent>/<dir>`` (e.g.
    ``ppo:<run>/cloned``); the whole path when that label is already ``taken``."""
    p = Path(path)
    label = f"ppo:{p.parent.name if p.name == 'agent' else f'{p.parent.name}/{p.name}'}"
    return f"ppo:{path}" if label in taken else label
