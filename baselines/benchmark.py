"""Score controllers and learned agents on a benchmark suite (:mod:`baselines.suites`).

Every entry plays every cell of the suite on the cell's test seeds (paired: the same episodes for
all). An episode's **score** is its throughput divided by the suite's reference controller's on
the same episode (the greedy SAA, unless the suite says otherwise), and its **real-time score**
the same ratio of real-time throughputs (decision time counted). A method — a controller, or one
learned method given as several agent directories, one per training seed — gets a score array
(runs, episodes, cells). Its aggregates — interquartile mean (IQM), mean, the shortfall below
the reference, and rliable's probability of improvement over the reference and over the suite's
best rival — come with 95% intervals of a two-way bootstrap that resamples the runs (training
seeds) and, per cell, the test episodes every run shares (:mod:`baselines.stats`); a one-run
method's interval is over the episodes only.

Examples::

    python -m baselines.benchmark --suite paper-v1
    python -m baselines.benchmark --suite cells-in-v1 --agent generalist=agents/pretrained/cells
    python -m baselines.benchmark --suite paper-v1 --agent mlp=runs/s0/agent runs/s1/agent runs/s2/agent

It writes ``<out>/<suite>.json`` (the result file: suite, code version and commit, machine, each
learned method's decision-file hashes and training records, every episode, scores, aggregates),
``<suite>.csv`` (one row per method) and ``<suite>.png``; ``--plot FILE`` redraws a result file's
PNG from the file alone (``python -m baselines.benchmark --plot docs/leaderboard/paper-v1.json``
rewrites ``docs/leaderboard/paper-v1.png``). ``--check FILE`` is what a leaderboard
row must pass: it recomputes every score, aggregate and interval from the stored episodes and
replays a random sample of them (every controller and agent whose decisions do not depend on the
clock) to the bit, one line per mismatch.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import provenance, stats
from .harness import Entry, entry_config, parse_entry, run_episode
from .parallel import WorkerDied, connect_or_exit, parallel_map, run_stoppable
from .report import output_dir_problem, write_csv, write_json
from .suites import ARCHIVED_SUITES, SUITES, VALIDATION_SUITES, Suite, get_suite

#: the scores computed per episode: name → the EpisodeStats field divided by the reference's
SCORES = {"throughput": "throughput", "realtime": "realtime_throughput"}
RESULT_FORMAT = "msenv-benchmark-result"
#: the most runs (training seeds) a method may have in a result file
MAX_RUNS = 100
#: the most episodes one --check replays
MAX_REPLAY = 10_000
#: 2: scores (runs, episodes, cells), two-way bootstrap intervals, probabilities of improvement over the
#: reference and the best rival, provenance (code, agents' hashes and training records); 1: msenv ≤ 0.5
FORMAT_VERSION = 2
#: the most worker processes a run may ask for
MAX_WORKERS = 64
#: where a run writes its files unless --out says
DEFAULT_OUT = "results/benchmark"
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
    ``msenv.agents`` entry point, as ``baselines.evaluate --agent`` does)."""
    from .evaluate import agent_loader, check_agent_dir

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
    from . import REGISTRY

    name = label.partition("@")[0]
    if name in REGISTRY or re.fullmatch(r"fixed-\d+", name):
        raise ValueError(f"--agent {' '.join(spec)}: label {label!r} is a controller's name; name the agent otherwise")
    where = [Path(d).resolve() for d in dirs]
    twice = [d for i, d in enumerate(dirs) if where[i] in where[:i]]
    if twice:
        raise ValueError(f"--agent {' '.join(spec)}: {twice[0]} is given twice; allowed: one directory per training seed")
    entries = []
    for i, d in enumerate(dirs):
        check_agent_dir(d)
        entries.append(Entry(f"{label}#{i}", agent_loader()(d, f"{label}#{i}")))
    return Method(label, "agent", tuple(entries), tuple(dirs))


def check_methods(suite: Suite, methods: Sequence[Method]) -> None:
    """Refuse (``ValueError`` naming the entry and the cell), before any episode starts, a method
    that cannot play in a cell of ``suite``: an agent that cannot act there, a ``fixed-<γ>``
    beyond its ``gamma_max`` (:func:`baselines.evaluate.check_entries`)."""
    from .evaluate import check_entries

    for cell in suite.cells:
        config = cell.config()
        for m in methods:
            try:
                check_entries(m.entries, config)
            except ValueError as e:
                raise ValueError(f"{e} (in cell {cell.name!r} of {suite.name})") from None


def _episode_job(args):
    entry, config, seed, episode, cell = args
    return cell, run_episode(entry.factory(), entry_config(entry, config), seed, entry.label, episode)


def play_suite(suite: Suite, methods: Sequence[Method], workers: int = 1, progress: bool = False,
               ray_address: str | None = None) -> list[dict[str, Any]]:
    """Every entry of ``methods`` and the suite's reference on every cell's test episodes; one
    dict per episode (``cell``, ``method``, ``run`` and the :class:`~baselines.harness.EpisodeStats`)."""
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
    for cell, stats in out:
        method, run = owner[stats.label]
        rows.append({"cell": cell, "method": method, "run": run, **asdict(stats)})
    return rows


def score_matrices(suite: Suite, rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, np.ndarray]]:
    """score name → method → array (runs, episodes, cells): each episode's metric over the
    reference's on the same cell and episode."""
    cells = [c.name for c in suite.cells]
    ref = {(r["cell"], r["episode"]): r for r in rows if r["method"] == suite.reference}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    out: dict[str, dict[str, np.ndarray]] = {s: {} for s in SCORES}
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        runs = 1 + max(r["run"] for r in mine)
        for s, field in SCORES.items():
            a = np.full((runs, suite.episodes, len(cells)), np.nan)
            for r in mine:
                a[r["run"], r["episode"], cells.index(r["cell"])] = r[field] / ref[(r["cell"], r["episode"])][field]
            if np.isnan(a).any():
                raise ValueError(f"method {m!r}: episodes are missing from the results")
            out[s][m] = a
    return out


def rivals_of(suite: Suite, matrices: dict[str, np.ndarray], kinds: dict[str, str]) -> dict[str, str]:
    """The methods every row's probability of improvement is computed against: the suite's
    reference, and its best rival — the controller of the file with the highest IQM."""
    points = {m: stats.point(a)["iqm"] for m, a in matrices.items() if kinds[m] == "controller"}
    return {"reference": suite.reference, "best_rival": stats.best_rival(points, list(points))}


def aggregates(matrices: dict[str, np.ndarray], rivals: dict[str, str]) -> dict[str, dict[str, list[float]]]:
    """method → aggregate → [point, CI low, CI high] (:func:`baselines.stats.summarize`: the
    two-way bootstrap over runs and test episodes, seeded)."""
    return stats.summarize(matrices, rivals)


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


def run_benchmark(suite: Suite, methods: Sequence[Method], workers: int = 1, progress: bool = False,
                  ray_address: str | None = None, command: str | None = None) -> dict[str, Any]:
    """Play the suite and score it: the result document (see :func:`check_result`)."""
    import time

    t0 = time.perf_counter()
    rows = play_suite(suite, methods, workers, progress, ray_address)
    wall_s = time.perf_counter() - t0
    return score_result(suite, methods, rows, wall_s, workers, command)


def score_result(suite: Suite, methods: Sequence[Method], rows: list[dict[str, Any]], wall_s: float, workers: int,
                 command: str | None) -> dict[str, Any]:
    """The result document of played ``rows``: provenance, scores, aggregates, episodes."""
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
        "command": command, "machine": {**machine(), "workers": workers}, "wall_s": wall_s,
        "methods": {m: described[m] for m in matrices["throughput"]},
        "statistics": {"method": stats.METHOD, "reps": stats.REPS, "seed": stats.SEED, "confidence": stats.CONFIDENCE,
                       "rivals": rivals},
        "decision_ms": decision,
        "scores": {s: {m: a.tolist() for m, a in per.items()} for s, per in matrices.items()},
        "aggregates": {s: aggregates(per, rivals[s]) for s, per in matrices.items()},
        "episodes": rows,
    }


def summary_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per method: runs, every aggregate of both scores with its CI, decision time."""
    rows = []
    for m, info in result["methods"].items():
        row: dict[str, Any] = {"method": m, "kind": info["kind"], "runs": info["runs"],
                               "interval": "runs × episodes" if info["runs"] > 1 else "episodes"}
        for s in SCORES:
            for a, (pt, lo, hi) in result["aggregates"][s][m].items():
                row[f"{s}_{a}"], row[f"{s}_{a}_lo"], row[f"{s}_{a}_hi"] = pt, lo, hi
        row["decision_ms"] = float(np.mean(list(result["decision_ms"][m].values())))
        rows.append(row)
    return rows


def format_summary(result: dict[str, Any]) -> str:
    rivals = result.get("statistics", {}).get("rivals", {}).get("throughput", {})
    lines = [f"{result['suite']['name']}: scores relative to {result['suite']['reference']}; best rival "
             f"{rivals.get('best_rival', '?')} (95% two-way bootstrap CIs over runs and episodes)",
             f"{'method':<22}{'runs':>5}  {'IQM':<22}{'P(> best rival)':<22}{'real-time IQM':<22}{'decide ms':>10}"]
    for r in summary_rows(result):
        def ci(k):
            return f"{r[k]:.3f} [{r[k + '_lo']:.3f}, {r[k + '_hi']:.3f}]" if k in r else "—"
        lines.append(f"{r['method']:<22}{r['runs']:>5}  {ci('throughput_iqm'):<22}"
                     f"{ci('throughput_p_improvement_over_best_rival'):<22}{ci('realtime_iqm'):<22}{r['decision_ms']:>10.3f}")
    return "\n".join(lines)


#: the aggregates the leaderboard figure shows, with their titles (format 1, msenv ≤ 0.5: P(improvement)
#: over the reference in place of P(> best rival))
PLOTTED = (("iqm", "IQM"), ("mean", "mean"), ("p_improvement_over_best_rival", "P(> best rival)"))
LEGACY_PLOTTED = {"p_improvement_over_best_rival": ("p_improvement", "P(improvement)")}


def plot(result: dict[str, Any], path: str | Path) -> None:
    """Aggregates with their CIs (a row per method) and the performance profile of the throughput
    scores, for a result document — a fresh run's, or one read back (``--plot FILE``)."""
    from matplotlib.ticker import MaxNLocator

    from .report import FIGURE_WIDTH_IN, figure_style, save_figure, series_style

    methods = list(result["methods"])
    agg = result["aggregates"]["throughput"]
    with figure_style() as plt:
        fig = plt.figure(figsize=(FIGURE_WIDTH_IN, 5.2 + 0.3 * len(methods)))
        top, bottom = fig.subfigures(2, 1, height_ratios=(0.3 * len(methods) + 1.2, 3.6))
        axes = top.subplots(1, 3, sharey=True)
        for ax, (name, title) in zip(axes, PLOTTED):
            if name not in agg[methods[0]]:
                name, title = LEGACY_PLOTTED.get(name, (name, title))
            for i, m in enumerate(methods):
                pt, lo, hi = agg[m][name]
                ax.plot([lo, hi], [i, i], lw=6, alpha=0.6, color=series_style(i)["color"])
                ax.plot([pt], [i], "k|", ms=14)
            ax.set_title(title)
            ax.axvline(0.5 if name.startswith("p_") else 1.0, color="grey", ls=":")
            ax.xaxis.set_major_locator(MaxNLocator(nbins=3))
            ax.grid(True, axis="x")
            ax.grid(False, axis="y")
        axes[0].set_yticks(range(len(methods)), methods)
        for ax in axes[1:]:
            ax.tick_params(labelleft=False)
        profile = bottom.subplots()
        taus = np.linspace(0.6, 1.3, 141)
        for i, m in enumerate(methods):
            s = np.asarray(result["scores"]["throughput"][m]).ravel()
            profile.plot(taus, [(s > t).mean() for t in taus], label=m, **series_style(i))
        profile.set_xlabel("score τ (throughput / reference)")
        profile.set_ylabel("P(score > τ)")
        profile.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, handlelength=1.2)
        fig.suptitle(f"{result['suite']['name']}: scores relative to {result['suite']['reference']}")
        save_figure(fig, path)
        plt.close(fig)


#: EpisodeStats fields measured with a clock: left out of a replay's comparison
CLOCK_FIELDS = ("decision_ms", "realtime_throughput")
#: how close a stored aggregate or interval must be to the recomputed one
AGGREGATE_RTOL = 1e-9


def _structure(result: Any) -> Suite:
    """The suite of a result document whose top-level structure is sound; ``ValueError`` otherwise."""
    if not isinstance(result, dict) or result.get("format") != RESULT_FORMAT:
        raise ValueError(f"not a benchmark result (format must be {RESULT_FORMAT!r})")
    if result.get("format_version") not in (1, FORMAT_VERSION):
        raise ValueError(f"format_version={result.get('format_version')!r} is not known; allowed: 1, {FORMAT_VERSION}")
    if not isinstance(result.get("suite"), dict):
        raise ValueError("suite must be an object (the suite as it was run)")
    suite = get_suite(result["suite"].get("name"))
    if result["suite"] != suite.to_dict():
        raise ValueError(f"suite {suite.name!r}: the file's cells, seeds or reference differ from the suite's")
    for key, kind in (("methods", dict), ("scores", dict), ("aggregates", dict), ("episodes", list),
                      ("decision_ms", dict)):
        if not isinstance(result.get(key), kind):
            raise ValueError(f"the result has no {key!r} {'object' if kind is dict else 'list'}")
    for m, info in result["methods"].items():
        if not LABEL.fullmatch(m):
            raise ValueError(f"method label {m[:80]!r} is invalid; allowed: up to 64 letters, digits and ._+@-")
        if not isinstance(info, dict) or isinstance(info.get("runs"), bool) or not isinstance(info.get("runs"), int) \
                or not 1 <= info["runs"] <= MAX_RUNS:
            raise ValueError(f"method {m!r}: runs must be an integer in 1 … {MAX_RUNS}")
        if info.get("kind") not in ("controller", "agent"):
            raise ValueError(f"method {m!r}: kind={info.get('kind')!r} is invalid; allowed: 'controller', 'agent'")
        sources = info.get("sources")
        if not isinstance(sources, list) or len(sources) != info["runs"] or not all(isinstance(s, str) for s in sources):
            raise ValueError(f"method {m!r}: sources must be a list of {info['runs']} paths or names, one per run")
        for i, rec in enumerate(info.get("agents", []) if info["kind"] == "agent" else []):
            tr = rec.get("training") if isinstance(rec, dict) else "?"
            if not isinstance(rec, dict) or not isinstance(rec.get("path"), str) or not isinstance(rec.get("files"), dict):
                raise ValueError(f"method {m!r}: agent record {i} must hold its path and its files' hashes")
            if tr is not None and (not isinstance(tr, dict) or isinstance(tr.get("timesteps"), bool)
                                   or not isinstance(tr.get("timesteps"), int)
                                   or not (tr.get("wall_s") is None or isinstance(tr["wall_s"], (int, float)))
                                   or not (tr.get("selection") is None or isinstance(tr["selection"], str))):
                raise ValueError(f"method {m!r}: agent record {i}'s training must be null or hold integer timesteps, "
                                 "a number or null wall_s, a string or null selection")
    # what the leaderboard page prints of the run
    command = result.get("command")
    if command is not None and (not isinstance(command, str) or not command.startswith("python -m baselines.benchmark")):
        raise ValueError("command must be the string of the run's command (python -m baselines.benchmark …), or null "
                         "for a run made through the API")
    wall = result.get("wall_s")
    if isinstance(wall, bool) or not isinstance(wall, (int, float)) or not 0 <= wall < 1e9:
        raise ValueError(f"wall_s={wall!r} is invalid; allowed: the run's wall time in seconds, a number ≥ 0")
    mach = result.get("machine")
    if not isinstance(mach, dict) or not all(isinstance(mach.get(k), str) for k in ("platform", "processor")):
        raise ValueError("machine must be an object with the platform and processor strings")
    for i, row in enumerate(result["episodes"]):
        if not isinstance(row, dict) or row.get("method") not in result["methods"]:
            raise ValueError(f"episode {i}: not an object of one of the file's methods")
        run = row.get("run")
        if isinstance(run, bool) or not isinstance(run, int) or not 0 <= run < result["methods"][row["method"]]["runs"]:
            raise ValueError(f"episode {i} ({row['method']}): run={run!r} is invalid; allowed: 0 … "
                             f"{result['methods'][row['method']]['runs'] - 1}")
    return suite


def result_problems(result: Any, recompute: bool = True) -> list[str]:
    """What is wrong with a result document, one line each (empty: nothing): its structure, its
    suite, every method's scores (shape, finite, positive) and — ``recompute`` — scores that follow
    from its episodes and aggregates and intervals that follow from the scores."""
    try:
        suite = _structure(result)
    except (ValueError, TypeError, AttributeError) as e:
        return [str(e)]
    legacy = result["format_version"] == 1
    out = []
    for s in SCORES:
        for m, info in result["methods"].items():
            shape = (info["runs"] * suite.episodes, len(suite.cells)) if legacy else (info["runs"], suite.episodes, len(suite.cells))
            try:
                a = np.asarray(result["scores"][s].get(m, []), dtype=float)
            except (ValueError, TypeError, AttributeError):
                a = np.empty(0)
            if a.shape != shape or not np.isfinite(a).all() or (a <= 0).any():
                out.append(f"method {m!r}: {s} scores must be finite and positive, of shape {shape} (runs, "
                           f"{suite.episodes} episodes, {len(suite.cells)} cells)")
    if out or not recompute:
        return out
    try:
        again = score_matrices(suite, result["episodes"])
    except (ValueError, TypeError, KeyError, IndexError) as e:
        return [f"the episodes do not make the score arrays: {e}"]
    out += _clock_problems(suite, result)
    for s, per in again.items():
        if set(per) != set(result["methods"]):
            return [f"the episodes' methods {sorted(per)} are not the file's {sorted(result['methods'])}"]
        for m, a in per.items():
            stored = np.asarray(result["scores"][s][m], dtype=float).reshape(a.shape)
            if not np.allclose(a, stored, rtol=1e-12):
                out.append(f"method {m!r}: {s} scores do not follow from the episodes")
        if legacy:  # msenv ≤ 0.5: the points only (its intervals came from a bootstrap this code no longer runs)
            for m, a in per.items():
                pts, agg = stats.point(a), result["aggregates"][s].get(m, {})
                old = {"iqm": "iqm", "mean": "mean", "shortfall": "optimality_gap"}
                if not all(np.isclose(pts[k], (agg.get(o) or [np.nan])[0], rtol=AGGREGATE_RTOL) for k, o in old.items()):
                    out.append(f"method {m!r}: {s} aggregates do not follow from the scores")
            continue
        kinds = {m: info.get("kind") for m, info in result["methods"].items()}
        rivals = rivals_of(suite, per, kinds)
        if result.get("statistics", {}).get("rivals", {}).get(s) != rivals:
            out.append(f"{s}: the rivals {result.get('statistics', {}).get('rivals', {}).get(s)} are not the ones the "
                       f"scores give, {rivals}")
        recomputed = aggregates(per, rivals)
        for m, agg in recomputed.items():
            stored = result["aggregates"][s].get(m)
            for k, v in agg.items():
                got = (stored or {}).get(k)
                if not (isinstance(got, list) and len(got) == 3 and np.allclose(got, v, rtol=AGGREGATE_RTOL, atol=1e-12)):
                    out.append(f"method {m!r}: {s} {k} is {got}, the scores give {[round(x, 6) for x in v]}")
    return out


def _clock_problems(suite: Suite, result: dict[str, Any]) -> list[str]:
    """The timed fields hold together: each episode's real-time throughput is its tokens over its
    time plus its rounds' decision time, and the file's decision times are the episodes' means
    (an edited decision time shows)."""
    rounds = {c.name: c.rounds for c in suite.cells}
    out = []
    for r in result["episodes"]:
        try:
            want = r["tokens"] / (r["time_s"] + rounds[r["cell"]] * r["decision_ms"] / 1e3)
            ok = np.isclose(r["realtime_throughput"], want, rtol=1e-9)
        except (KeyError, TypeError, ZeroDivisionError):
            ok = False
        if not ok:
            out.append(f"method {r.get('method')!r} cell {r.get('cell')} episode {r.get('episode')}: its real-time "
                       "throughput does not follow from its tokens, time and decision_ms")
            break
    for m, per_cell in result["decision_ms"].items():
        for cell, ms in (per_cell.items() if isinstance(per_cell, dict) else []):
            mine = [r["decision_ms"] for r in result["episodes"] if r["method"] == m and r["cell"] == cell]
            if not mine or not isinstance(ms, (int, float)) or not np.isclose(ms, np.mean(mine), rtol=1e-12):
                out.append(f"method {m!r}: decision_ms of cell {cell} is {ms!r}, its episodes give "
                           f"{np.mean(mine) if mine else None!r}")
    return out


def check_result(result: Any, recompute: bool = True) -> None:
    """Validate a result document (:func:`result_problems`); ``ValueError`` with one line per problem."""
    problems = result_problems(result, recompute)
    if problems:
        raise ValueError("\n".join(problems))


def replayable(result: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The methods of a result whose episodes replay bit for bit, and the others with the reason."""
    ok, skipped = [], {}
    for m, info in result["methods"].items():
        if info.get("timed"):
            skipped[m] = "timed: its decisions depend on the clock, so its episodes do not replay bit for bit"
        elif info["kind"] not in ("controller", "agent"):
            skipped[m] = f"kind {info['kind']!r} is not replayable"
        else:
            ok.append(m)
    return ok, skipped


def replay_problems(result: dict[str, Any], n: int, seed: int | None = None, root: str | Path = ".") -> list[str]:
    """Replay ``n`` episodes of the file drawn at random (seeded by ``seed``) among the replayable
    methods' and compare every statistic but the timed ones (:data:`CLOCK_FIELDS`) to the bit; one
    line per mismatch, and per agent whose decision files changed since the file was written."""
    from .evaluate import agent_loader

    suite = get_suite(result["suite"]["name"])
    ok, _ = replayable(result)
    rows = [r for r in result["episodes"] if r["method"] in ok]
    rng = np.random.default_rng(seed)
    picks = [rows[i] for i in sorted(rng.choice(len(rows), size=min(n, len(rows)), replace=False))] if rows else []
    out, changed = [], {}
    cells = {c.name: c for c in suite.cells}
    for row in picks:
        info = result["methods"][row["method"]]
        if info["kind"] == "agent":
            rec = info.get("agents", [{}] * info["runs"])[row["run"]]
            path = rec.get("path", info["sources"][row["run"]])
            if path not in changed:
                changed[path] = provenance.changed_agents({"agents": [rec]} if rec.get("files") else {}, root)
                out += changed[path]
            if changed[path]:
                continue
            entry = Entry(row["label"], agent_loader()(str(Path(root) / path), row["label"]))
        else:
            entry = parse_entry(info["sources"][0])
        again = asdict(run_episode(entry.factory(), entry_config(entry, cells[row["cell"]].config()), row["seed"],
                                   row["label"], row["episode"]))
        for k, v in again.items():
            if k not in CLOCK_FIELDS and row.get(k) != v:
                out.append(f"method {row['method']!r} cell {row['cell']} episode {row['episode']} (seed {row['seed']}, "
                           f"run {row['run']}): {k} replays as {v!r}, the file has {row.get(k)!r}")
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m baselines.benchmark``."""
    suites = "\n".join(f"  {s.name:<14} {s.description}" for s in [*SUITES.values(), *VALIDATION_SUITES.values()])
    ap = argparse.ArgumentParser(prog="python -m baselines.benchmark", description=__doc__,
                                 epilog="suites:\n" + suites, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=[*SUITES, *VALIDATION_SUITES, *ARCHIVED_SUITES], help="the suite to run")
    ap.add_argument("--controllers", nargs="*", default=None, metavar="NAME",
                    help="controllers to score (default: the suite's own list; the reference is always played)")
    ap.add_argument("--agent", nargs="+", action="append", default=[], metavar="[LABEL=]DIR",
                    help="a learned method: one agent directory per training seed (repeat --agent for more methods)")
    ap.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    ap.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="run episodes as Ray tasks: a local Ray instance, or the cluster at ADDRESS")
    ap.add_argument("--out", default=None, help=f"folder of <suite>.json/.csv/.png (default {DEFAULT_OUT}); with --plot: "
                    "the folder of the PNG (default: beside FILE)")
    ap.add_argument("--check", metavar="FILE", help="recompute a result file's scores, aggregates and intervals, replay "
                    "a sample of its episodes, and exit (1 with one line per mismatch)")
    ap.add_argument("--plot", metavar="FILE", help="redraw a result file's figure (<FILE stem>.png) from its stored "
                    "scores and aggregates, and exit; no episode is played")
    ap.add_argument("--replay", type=int, default=6, metavar="N",
                    help="with --check: episodes replayed, drawn at random (default %(default)s; 0: none)")
    ap.add_argument("--replay-seed", type=int, default=None, metavar="S",
                    help="with --check: the seed of the replay's draw (default: fresh, printed)")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def check_command(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--check FILE``: every problem a line on stderr, exit 1; else a line saying what was checked."""
    import json

    if not 0 <= args.replay <= MAX_REPLAY:
        ap.error(f"--replay {args.replay} is invalid; allowed: an integer in 0 … {MAX_REPLAY}")
    try:
        result = json.loads(Path(args.check).read_text())
    except (OSError, ValueError, RecursionError) as e:
        ap.exit(1, f"{ap.prog}: error: {args.check}: not readable as JSON ({type(e).__name__}: {e})\n")
    problems = result_problems(result)
    notes = []
    if not problems and result["format_version"] == 1:
        notes.append("format 1 (msenv ≤ 0.5): points checked; its intervals are of an earlier bootstrap and not "
                     "recomputed; no provenance to replay against")
    elif not problems and args.replay:
        seed = args.replay_seed if args.replay_seed is not None else int(np.random.SeedSequence().entropy % 2**32)
        _, skipped = replayable(result)
        notes += [f"{m} not replayed: {why}" for m, why in skipped.items()]
        problems = replay_problems(result, args.replay, seed, Path.cwd())
        notes.append(f"replayed {min(args.replay, len(result['episodes']))} episodes drawn with --replay-seed {seed}")
    if problems:
        ap.exit(1, "".join(f"{ap.prog}: error: {args.check}: {p}\n" for p in problems))
    for n in notes:
        print(f"{args.check}: {n}")
    print(f"{args.check}: a valid result of suite {result['suite']['name']}")


def plot_command(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--plot FILE``: the figure of a result file whose structure is sound, written beside it (or
    into ``--out``) under the file's stem; else one line on stderr, exit 1."""
    import json

    try:
        result = json.loads(Path(args.plot).read_text())
    except (OSError, ValueError, RecursionError) as e:
        ap.exit(1, f"{ap.prog}: error: {args.plot}: not readable as JSON ({type(e).__name__}: {e})\n")
    problems = result_problems(result, recompute=False)
    if problems:
        ap.exit(1, "".join(f"{ap.prog}: error: {args.plot}: {p}\n" for p in problems))
    out = Path(args.out) if args.out is not None else Path(args.plot).parent
    problem = output_dir_problem(out)
    if problem:
        ap.error(f"--out {out}: {problem}")
    path = out / f"{Path(args.plot).stem}.png"
    try:
        plot(result, path)
    except OSError as e:
        ap.exit(74, f"{ap.prog}: error: could not write {path}: {e.strerror or e}\n")
    print(f"wrote {path}")


def main(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.check and args.plot:
        ap.error("--check and --plot are two commands; give one")
    if args.check:
        return check_command(ap, args)
    if args.plot:
        return plot_command(ap, args)
    if args.out is None:
        args.out = DEFAULT_OUT
    if args.suite is None:
        ap.error("--suite is required (or --check FILE)")
    if not 1 <= args.workers <= MAX_WORKERS:
        ap.error(f"--workers {args.workers} is invalid; allowed: an integer in 1 … {MAX_WORKERS}")
    suite = get_suite(args.suite)
    try:
        methods = controller_methods(suite.controllers if args.controllers is None else args.controllers)
        for spec in args.agent:
            methods.append(agent_method(spec, [m.label for m in methods]))
        check_methods(suite, methods)
    except (ValueError, TypeError) as e:
        ap.error(str(e))
    out = Path(args.out)
    problem = output_dir_problem(out)
    if problem:
        ap.error(f"--out {args.out}: {problem}")
    connect_or_exit(ap, args.ray)
    command = "python -m baselines.benchmark " + " ".join(sys.argv[1:] if argv is None else argv)
    result = run_stoppable(ap, lambda: run_benchmark(suite, methods, args.workers, not args.no_progress, args.ray,
                                                     command), "no result written; every worker ended")
    print(format_summary(result), flush=True)  # first: a failed write below leaves the summary on screen
    try:
        write_json(result, out / f"{suite.name}.json")
        write_csv(summary_rows(result), out / f"{suite.name}.csv")
        plot(result, out / f"{suite.name}.png")
    except OSError as e:
        where = f" {e.filename}" if e.filename else ""
        ap.exit(74, f"{ap.prog}: error: could not write{where}: {e.strerror or e} (files already there are unchanged)\n")
    print(f"wrote {out / suite.name}.json, .csv, .png")
    return result


if __name__ == "__main__":
    main()
