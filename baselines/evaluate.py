"""Paired evaluation harness: every controller on the same env config and the same seeds.

Episode ``i`` of every entry uses seed ``seed + i`` for both the environment and the
controller, so geometry, tasks, fading and verification outcomes are identical across
controllers (the outcome draws do not depend on the actions). Metrics per episode:

- ``goodput``: mean per-round goodput (the reward before scaling), tokens/s;
- ``throughput``: long-run Σ tokens / Σ time, tokens/s;
- ``mean_gamma``: mean draft length; ``share_accepted`` / ``share_ul`` / ``share_dl``: fraction of
  device-rounds all-accepted / corrected via UL / via DL; ``share_no_draft``: fraction of rounds in
  which no device drafts (γ = 0 everywhere); ``t_com_ms``: mean T_com;
  ``t_cmp_ms``: mean computation time T_cmp = drafting + verification;
- ``decision_ms``: controller wall time per round.

Summaries give mean and 95% confidence half-width (Student t) over episodes, plus the
throughput relative to the first entry, paired per episode.

CLI: ``python -m baselines.evaluate --controllers greedy-saa optimal-uniform fixed-4 --episodes 5``.
An entry ``name@policy`` runs the environment (and the controller's SAA) under the reactive
policy ``policy`` (``optimal``, ``all_ul``, ``all_dl``, ``random``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from msenv import SystemConfig, resolve_config
from msenv.config import MODE_POLICIES
from msenv.env import SUMMARY_KEYS, MultiSpinEnv, round_summary

from .base import Controller, check_output, controller_context

METRICS = ("goodput", "throughput", "mean_gamma", "share_accepted", "share_ul", "share_dl", "share_no_draft", "t_com_ms",
           "t_cmp_ms", "decision_ms")


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


def play(controller: Controller, config: SystemConfig, seed: int) -> Iterator[tuple]:
    """One episode of ``controller`` on seed ``seed``: yields, per round, (observation it acted
    on, draft lengths, reward, info, decision time in s)."""
    env = MultiSpinEnv(config)
    obs, _ = env.reset(seed=seed)
    controller.reset(seed)
    done = False
    while not done:
        ctx = controller_context(controller, env)
        t0 = time.perf_counter()
        gamma = controller.act(ctx, obs)
        decision_s = time.perf_counter() - t0
        gamma = check_output(controller, gamma, ctx)
        nxt, reward, term, trunc, info = env.step(gamma)
        yield obs, gamma, reward, info, decision_s
        obs, done = nxt, term or trunc


def run_episode(controller: Controller, config: SystemConfig, seed: int, label: str | None = None, episode: int = 0) -> EpisodeStats:
    """Play one episode of ``config.episode_length`` rounds; return its statistics."""
    good, t_com, t_cmp, dec, summaries, idle = [], [], [], [], [], []
    tokens = time_ = 0.0
    for _, gamma, _, info, decision_s in play(controller, config, seed):
        dec.append(decision_s)
        good.append(info["goodput"])
        t_com.append(info["t_com"])
        t_cmp.append(info["t_draft"] + info["t_verify"])
        summaries.append(round_summary(gamma, info["modes"]))
        idle.append(not np.any(gamma))
        tokens += info["tokens"].sum()
        time_ += info["latency"]
    means = {key: float(np.mean([s[key] for s in summaries])) for key in SUMMARY_KEYS}
    return EpisodeStats(
        label=label or controller.name, episode=episode, seed=seed,
        goodput=float(np.mean(good)), throughput=tokens / time_, **means,
        t_com_ms=1e3 * float(np.mean(t_com)), t_cmp_ms=1e3 * float(np.mean(t_cmp)), decision_ms=1e3 * float(np.mean(dec)),
        share_no_draft=float(np.mean(idle)),
    )


def _job(args) -> EpisodeStats:
    entry, config, seed, episode = args
    cfg = config if entry.policy is None else config.replace(mode_policy=entry.policy)
    return run_episode(entry.factory(), cfg, seed, entry.label, episode)


def parallel_map(fn: Callable, items: Sequence, workers: int = 1, progress: bool = False, desc: str = "",
                 ray_address: str | None = None) -> list:
    """``[fn(x) for x in items]``, in order, with a progress bar: in this process (``workers`` ≤ 1),
    over ``workers`` spawned processes, or — with ``ray_address`` — as Ray tasks (``"local"``
    starts a local Ray instance; otherwise the address of a running cluster, e.g.
    ``"ray://head:10001"`` or ``"auto"``). Every item carries its own seed, so all three give the
    same results."""
    bar = _progress(len(items), desc) if progress else None
    out = []
    if ray_address is not None:
        out = _ray_map(fn, items, ray_address, bar)
    elif workers <= 1:
        for x in items:
            out.append(fn(x))
            if bar:
                bar.update(1)
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as ex:
            # small chunks: items can differ 100× in cost (K = 5 vs 40), big chunks leave one
            # worker busy at the end while the other idles
            for r in ex.map(fn, items, chunksize=max(1, min(8, len(items) // (64 * workers)))):
                out.append(r)
                if bar:
                    bar.update(1)
    if bar:
        bar.close()
    return out


def ray_init(address: str) -> None:
    """Connect to Ray once per process: ``"local"`` starts a local instance, anything else is a
    cluster address (``"auto"``, ``"ray://host:10001"``). Needs the ``[ray]`` extra; the
    cluster's nodes need msenv installed (``pip install msenv[ray]``, same version)."""
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("--ray needs Ray: pip install 'msenv[ray]'") from e
    if not ray.is_initialized():
        ray.init(address=None if address == "local" else address, include_dashboard=False, log_to_driver=False)


def _ray_map(fn: Callable, items: Sequence, address: str, bar) -> list:
    import ray

    ray_init(address)
    task = ray.remote(num_cpus=1)(fn)
    refs = [task.remote(x) for x in items]
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=min(len(pending), 1))
        if bar:
            bar.update(len(ready))
    return ray.get(refs)


def _progress(total: int, desc: str):
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is in the train extra
        return None
    return tqdm(total=total, desc=desc, leave=False)


def evaluate(
    entries: Sequence[Entry], config: SystemConfig, episodes: int, seed: int = 0,
    workers: int = 1, progress: bool = False, ray_address: str | None = None,
) -> list[EpisodeStats]:
    """Run every entry on episodes with seeds ``seed .. seed + episodes − 1`` (locally, over
    processes, or as Ray tasks: see :func:`parallel_map`)."""
    if episodes < 1:
        raise ValueError(f"episodes={episodes} is invalid; allowed: an integer ≥ 1")
    jobs = [(e, config, seed + i, i) for e in entries for i in range(episodes)]
    return parallel_map(_job, jobs, workers, progress, desc="evaluate", ray_address=ray_address)


def ci95(x: np.ndarray) -> float:
    """Half-width of the 95% Student-t confidence interval of the mean (0 for one sample)."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return 0.0
    return float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))


def summarize(results: Sequence[EpisodeStats]) -> list[dict[str, Any]]:
    """Per entry: mean and CI of every metric, and throughput relative to the first entry."""
    labels = list(dict.fromkeys(r.label for r in results))
    by = {lab: sorted((r for r in results if r.label == lab), key=lambda r: r.episode) for lab in labels}
    ref = np.array([r.throughput for r in by[labels[0]]])
    rows = []
    for lab in labels:
        rs = by[lab]
        row: dict[str, Any] = {"controller": lab, "episodes": len(rs)}
        for m in METRICS:
            v = np.array([getattr(r, m) for r in rs])
            row[m] = float(v.mean())
            row[f"{m}_ci95"] = ci95(v)
        rel = np.array([r.throughput for r in rs]) / ref[: len(rs)]
        row["rel_throughput"] = float(rel.mean())
        row["rel_throughput_ci95"] = ci95(rel)
        rows.append(row)
    return rows


HEADERS = ("controller", "goodput", "throughput", "rel. thr.", "mean γ", "acc/UL/DL %", "T_com ms", "decide ms")


def _cells(r: dict[str, Any]) -> list[str]:
    return [
        r["controller"],
        f"{r['goodput']:.1f} ± {r['goodput_ci95']:.1f}",
        f"{r['throughput']:.1f} ± {r['throughput_ci95']:.1f}",
        f"{r['rel_throughput']:.4f}",
        f"{r['mean_gamma']:.2f}",
        f"{100 * r['share_accepted']:.0f}/{100 * r['share_ul']:.0f}/{100 * r['share_dl']:.0f}",
        f"{r['t_com_ms']:.2f}",
        f"{r['decision_ms']:.3f}",
    ]


def format_table(rows: Sequence[dict[str, Any]], title: str = "") -> str:
    """Plain-text table of :func:`summarize` rows."""
    body = [_cells(r) for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(HEADERS)]
    lines = [title] if title else []
    lines.append("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths)))
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    return "\n".join(lines)


def print_table(rows: Sequence[dict[str, Any]], title: str = "") -> None:
    """Print the table with rich (plain text when rich is not installed)."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is in the train extra
        print(format_table(rows, title))
        return
    table = Table(title=title or None)
    for h in HEADERS:
        table.add_column(h, justify="left" if h == "controller" else "right")
    for r in rows:
        table.add_row(*_cells(r))
    Console(width=140).print(table)


def write_csv(rows: Sequence[dict[str, Any]], path: str | os.PathLike) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def write_json(obj: Any, path: str | os.PathLike) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=_jsonable))


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


def parse_entry(spec: str) -> Entry:
    """``name`` or ``name@policy`` → Entry (controller names: see ``baselines.REGISTRY``)."""
    from . import make_controller

    name, _, policy = spec.partition("@")
    if policy and policy not in MODE_POLICIES:
        raise ValueError(f"entry {spec!r}: policy {policy!r} is not allowed; allowed: {', '.join(MODE_POLICIES)}")
    make_controller(name)  # validate now, not in a worker
    return Entry(spec, ControllerFactory(name), policy or None)


@dataclass
class ControllerFactory:
    """Picklable controller factory (for spawned workers)."""

    name: str

    def __call__(self) -> Controller:
        from . import make_controller

        return make_controller(self.name)


def agent_label(path: str | Path, taken: Sequence[str] = ()) -> str:
    """``ppo:<run>`` for train.py's ``<run>/agent``, else ``ppo:<parent>/<dir>`` (e.g.
    ``ppo:<run>/cloned``); the whole path when that label is already ``taken``."""
    p = Path(path)
    label = f"ppo:{p.parent.name if p.name == 'agent' else f'{p.parent.name}/{p.name}'}"
    return f"ppo:{path}" if label in taken else label


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``field=value`` strings → dict (values parsed as JSON when possible)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, val = item.partition("=")
        if not sep:
            raise ValueError(f"override {item!r} is invalid; expected field=value")
        try:
            out[key] = json.loads(val)
        except json.JSONDecodeError:
            out[key] = val
    return out


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(prog="python -m baselines.evaluate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--controllers", nargs="+", default=["greedy-saa", "optimal-uniform", "computation-only", "local-search", "fixed-4"],
                    help="entries: a controller name (greedy-saa, optimal-uniform, computation-only, local-search, "
                         "exact-saa, random, fixed-<γ>), optionally @policy")
    ap.add_argument("--preset", default="qwen2.5", help="qwen2.5 | deepseek-r1 (ignored with --env-id)")
    ap.add_argument("--env-id", default=None, help="a registered id, e.g. msenv/MultiSpin-Dynamic-v0 (its config)")
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="config overrides, e.g. p_dl_dbm=20")
    ap.add_argument("--episodes", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=None, help="rounds per episode (default: config episode_length)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--agent", nargs="*", default=[], metavar="DIR",
                    help="trained agents (train.py's <log-dir>/agent) to add as rows, named by their directory")
    ap.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="run episodes as Ray tasks: a local Ray instance, or the cluster at ADDRESS")
    ap.add_argument("--out", default="results/evaluate.csv", help="CSV path (a .json beside it holds the raw episodes)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    try:
        overrides = parse_overrides(args.set)
        if args.rounds is not None:
            overrides["episode_length"] = args.rounds
        if args.env_id is not None:
            from msenv import ENV_IDS

            if args.env_id not in ENV_IDS:
                raise ValueError(f"--env-id {args.env_id!r} is not registered; allowed: {', '.join(ENV_IDS)}")
            cfg = resolve_config(ENV_IDS[args.env_id], **overrides)
        else:
            cfg = resolve_config(args.preset, **overrides)
        entries = [parse_entry(s) for s in args.controllers]
        for path in args.agent:
            from agents.controller import AgentFactory

            label = agent_label(path, [e.label for e in entries])
            if not (Path(path) / "model.zip").exists():
                raise ValueError(f"--agent {path}: no saved agent there (expected model.zip)")
            entries.append(Entry(label, AgentFactory(path, label)))
    except (ValueError, TypeError) as e:
        ap.error(str(e))
    results = evaluate(entries, cfg, args.episodes, args.seed, args.workers, progress=not args.no_progress,
                       ray_address=args.ray)
    rows = summarize(results)
    print_table(rows, title=f"{args.env_id or args.preset}, {args.episodes} episodes × {cfg.episode_length} rounds, seeds {args.seed}..")
    write_csv(rows, args.out)
    write_json({"config": cfg.to_dict(), "summary": rows, "episodes": [asdict(r) for r in results]},
               Path(args.out).with_suffix(".json"))
    print(f"wrote {args.out}")
    return rows


if __name__ == "__main__":
    main()
