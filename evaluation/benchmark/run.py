"""Running a benchmark suite: the methods (controllers, and learned methods of one agent directory
per training seed), checked before any episode starts, played on every cell's test episodes with
the suite's reference (paired: the same episodes for all), and the result document of the run —
provenance (code, machine, agents' decision-file hashes and training records, the trace files the
cells read with their digests), scores, aggregates and every episode (:func:`score_result`)."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines import REGISTRY
from msenv.traces.sources import trace_files as config_trace_files

from .. import provenance, stats
from ..entries import agent_loader, check_agent_dir, check_entries
from ..harness import Entry, entry_config, parse_entry, run_episode
from ..parallel import WorkerDied, parallel_map
from ..suites import Suite
from .score import aggregates, rivals_of, score_matrices

RESULT_FORMAT = "msenv-benchmark-result"
#: 2: scores (runs, episodes, cells), two-way bootstrap intervals, probabilities of improvement over the
#: reference and the best rival, provenance (code, agents' hashes and training records); 1: msenv ≤ 0.5
FORMAT_VERSION = 2
#: the command line a run records in its result file (followed by its arguments)
COMMAND = "python -m evaluation.benchmark"
#: what a method label may hold (it names a row of the results and of the leaderboard page)
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@-]{0,63}")


@dataclass(frozen=True)
class Method:
    """A leaderboard row: a controller (one run) or a learned method (one entry per training seed)."""

    label: str
    kind: str  #: "controller" or "agent"
    entries: tuple[Entry, ...]
    sources: tuple[str, ...]  #: controller name, or the agent directories


def controller_methods(names: Sequence[str]) -> list[Method]:
    """One method per controller name (``name`` or ``name@policy``, a mode policy played with it);
    a name given twice is refused."""
    seen = [n for i, n in enumerate(names) if n in names[:i]]
    if seen:
        raise ValueError(f"--controllers {seen[0]} is given twice; allowed: each controller once")
    return [Method(n, "controller", (parse_entry(n),), (n,)) for n in names]


def agent_method(spec: Sequence[str], taken: Sequence[str] = ()) -> Method:
    """``[LABEL=]DIR [DIR ...]`` → one learned method, a seed per directory (loaded with the
    ``msenv.agents`` entry point, as ``evaluation.evaluate --agent`` does)."""
    if not spec:
        raise ValueError("--agent needs at least one directory")
    first, dirs = spec[0], list(spec)
    label, sep, path = first.partition("=")
    if sep:
        dirs[0] = path
    else:
        label = Path(first).parent.name if Path(first).name == "agent" else Path(first).name
    if not label or label in taken:
        raise ValueError(f"--agent {' '.join(spec)}: label {label!r} is empty or taken; name it LABEL=DIR")
    if not LABEL.fullmatch(label):
        raise ValueError(f"--agent {' '.join(spec)}: label {label!r} is invalid; allowed: up to 64 letters, digits and "
                         "._+@- (starting with a letter or digit)")
    name = label.partition("@")[0]
    if name in REGISTRY or re.fullmatch(r"fixed-\d+", name):
        raise ValueError(f"--agent {' '.join(spec)}: label {label!r} is a controller's name; name the agent otherwise")
    where = [Path(d).resolve() for d in dirs]
    twice = [d for i, d in enumerate(dirs) if where[i] in where[:i]]
    if twice:
        raise ValueError(f"--agent {' '.join(spec)}: {twice[0]} is given twice; allowed: one directory per training "
                         "seed")
    entries = []
    for i, d in enumerate(dirs):
        check_agent_dir(d)
        entries.append(Entry(f"{label}#{i}", agent_loader()(d, f"{label}#{i}")))
    return Method(label, "agent", tuple(entries), tuple(dirs))


def check_methods(suite: Suite, methods: Sequence[Method]) -> None:
    """Refuse (``ValueError`` naming the entry and the cell), before any episode starts, a method
    that cannot play in a cell of ``suite``: an agent that cannot act there, a ``fixed-<γ>``
    beyond its ``gamma_max`` (:func:`evaluation.entries.check_entries`)."""
    for cell in suite.cells:
        config = cell.config()
        for m in methods:
            try:
                check_entries(m.entries, config)
            except ValueError as e:
                raise ValueError(f"{e} (in cell {cell.name!r} of {suite.name})") from None


def _episode_job(args):
    """One episode of one entry in one cell (a job of :func:`play_suite`): (cell name, its statistics)."""
    entry, config, seed, episode, cell = args
    return cell, run_episode(entry.factory(), entry_config(entry, config), seed, entry.label, episode)


def play_suite(suite: Suite, methods: Sequence[Method], workers: int = 1, progress: bool = False,
               ray_address: str | None = None) -> list[dict[str, Any]]:
    """Every entry of ``methods`` and the suite's reference on every cell's test episodes; one
    dict per episode (``cell``, ``method``, ``run`` and the :class:`~evaluation.harness.EpisodeStats`)."""
    ref = [] if any(m.label == suite.reference for m in methods) else controller_methods([suite.reference])
    everyone = [*ref, *methods]
    jobs, owner = [], {}
    for cell in suite.cells:
        config = cell.config()
        for m in everyone:
            for run, entry in enumerate(m.entries):
                owner[entry.label] = (m.label, run)
                jobs += [(entry, config, seed, i, cell.name) for i, seed in enumerate(cell.seeds)]
    try:
        out = parallel_map(_episode_job, jobs, workers, progress, desc=suite.name, ray_address=ray_address)
    except WorkerDied as e:
        entry, _, seed, episode, cell = jobs[min(e.index, len(jobs) - 1)]
        raise WorkerDied(e.index, f"{entry.label} in cell {cell}, episode {episode} (seed {seed}), or a job after it") \
            from None
    rows = []
    for cell, episode in out:
        method, run = owner[episode.label]
        rows.append({"cell": cell, "method": method, "run": run, **asdict(episode)})
    return rows


def machine() -> dict[str, Any]:
    """What decision times depend on: the processor, its cores, the thread settings."""
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}


def describe_method(m: Method) -> dict[str, Any]:
    """A method's row of the result file: kind, sources, runs, whether it is timed, and for a
    learned method each agent's decision-file hashes and training record."""
    timed = m.kind == "controller" and is_timed(m.sources[0])
    row: dict[str, Any] = {"kind": m.kind, "sources": list(m.sources), "runs": len(m.entries), "timed": timed}
    if m.kind == "agent":
        row["agents"] = [provenance.agent_record(d, e.factory) for d, e in zip(m.sources, m.entries)]
        row["seed_streams"] = provenance.seed_streams(row["agents"])
    return row


def is_timed(controller: str) -> bool:
    """Whether a controller's decisions depend on the clock (its episodes cannot be replayed bit
    for bit): its class's ``timed`` attribute."""
    try:
        return bool(getattr(parse_entry(controller).factory(), "timed", False))
    except (ValueError, TypeError):
        return False


def suite_trace_files(suite: Suite, missing_ok: bool = False) -> list[dict[str, Any]]:
    """The trace files the suite's cells read, each once, as ``{"path", "sha256", "bytes"}``
    (:func:`msenv.traces.sources.trace_files`; a bank msenv ships under ``msenv/traces/data/…``);
    [] for a suite without trace files. ``missing_ok``: leave out a file that cannot be read here."""
    out: dict[str, dict[str, Any]] = {}
    for cell in suite.cells:
        for record in config_trace_files(cell.config(), missing_ok=missing_ok):
            out.setdefault(record["path"], record)
    return list(out.values())


def run_benchmark(suite: Suite, methods: Sequence[Method], workers: int = 1, progress: bool = False,
                  ray_address: str | None = None, command: str | None = None) -> dict[str, Any]:
    """Play the suite and score it: the result document (see :func:`evaluation.benchmark.check.check_result`);
    the trace files its cells read are recorded as they were when the run started (``trace_files``)."""
    import time

    files = suite_trace_files(suite)
    t0 = time.perf_counter()
    rows = play_suite(suite, methods, workers, progress, ray_address)
    wall_s = time.perf_counter() - t0
    return score_result(suite, methods, rows, wall_s, workers, command, files)


def score_result(suite: Suite, methods: Sequence[Method], rows: list[dict[str, Any]], wall_s: float, workers: int,
                 command: str | None, trace_files: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The result document of played ``rows``: provenance (with ``trace_files``, every trace file
    the cells read: its path, SHA-256 and size; default: the suite's files as they are now),
    scores, aggregates, episodes."""
    matrices = score_matrices(suite, rows)
    ref = [] if any(m.label == suite.reference for m in methods) else controller_methods([suite.reference])
    described = {m.label: describe_method(m) for m in [*ref, *methods]}
    kinds = {m: described[m]["kind"] for m in described}
    rivals = {s: rivals_of(suite, per, kinds) for s, per in matrices.items()}
    decision = {m: {c.name: float(np.mean([r["decision_ms"] for r in rows if r["method"] == m and r["cell"] == c.name]))
                    for c in suite.cells} for m in matrices["throughput"]}
    return {
        "format": RESULT_FORMAT, "format_version": FORMAT_VERSION, "suite": suite.to_dict(),
        "msenv_version": provenance.code_version()["msenv"], "code": provenance.code_version(),
        "command": command, "date": provenance.run_date(), "machine": {**machine(), "workers": workers},
        "wall_s": wall_s,
        "trace_files": suite_trace_files(suite) if trace_files is None else trace_files,
        "methods": {m: described[m] for m in matrices["throughput"]},
        "statistics": {"method": stats.METHOD, "reps": stats.REPS, "seed": stats.SEED, "confidence": stats.CONFIDENCE,
                       "rivals": rivals},
        "decision_ms": decision,
        "scores": {s: {m: a.tolist() for m, a in per.items()} for s, per in matrices.items()},
        "aggregates": {s: aggregates(per, rivals[s]) for s, per in matrices.items()},
        "episodes": rows,
    }


__all__ = ["COMMAND", "FORMAT_VERSION", "LABEL", "Method", "RESULT_FORMAT", "agent_method", "check_methods",
           "controller_methods", "describe_method", "is_timed", "machine", "play_suite", "run_benchmark",
           "score_result", "suite_trace_files"]
