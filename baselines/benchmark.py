"""Score controllers and learned agents on a benchmark suite (:mod:`baselines.suites`).

Every entry plays every cell of the suite on the cell's test seeds (paired: the same episodes for
all). An episode's **score** is its throughput divided by the suite's reference controller's on
the same episode (the greedy SAA, unless the suite says otherwise), and its **real-time score**
the same ratio of real-time throughputs (decision time counted). A method — a controller, or one
learned method given as several agent directories, one per training seed — gets a score matrix
of (training seeds × episodes) runs by cells; its aggregates over the cells are computed with
``rliable`` (Agarwal et al., NeurIPS 2021): interquartile mean (IQM), mean, optimality gap below
1 (the reference), and the probability of improvement over the reference, each with a 95%
stratified-bootstrap confidence interval (runs resampled within each cell), plus performance
profiles.

Examples::

    python -m baselines.benchmark --suite paper-v0
    python -m baselines.benchmark --suite cells-in-v0 --agent generalist=agents/pretrained/cells
    python -m baselines.benchmark --suite paper-v0 --agent mlp=runs/s0/agent runs/s1/agent runs/s2/agent

It writes ``<out>/<suite>.json`` (the result file: suite, machine, every episode, scores,
aggregates), ``<suite>.csv`` (one row per method) and ``<suite>.png`` (aggregates and performance
profiles). ``--check FILE`` validates a result file (its suite, cells, seeds and scores) — what
a leaderboard row must pass.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .harness import Entry, parse_entry, run_episode
from .parallel import connect_or_exit, parallel_map
from .report import write_csv, write_json
from .suites import SUITES, VALIDATION_SUITES, Suite, get_suite

#: the scores computed per episode: name → the EpisodeStats field divided by the reference's
SCORES = {"throughput": "throughput", "realtime": "realtime_throughput"}
#: aggregate name → what it is
AGGREGATES = {"iqm": "interquartile mean", "mean": "mean", "optimality_gap": "optimality gap below 1",
              "p_improvement": "probability of improvement over the reference"}
RESULT_FORMAT = "msenv-benchmark-result"
BOOTSTRAP_REPS = 2000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Method:
    """A leaderboard row: a controller (one run) or a learned method (one entry per training seed)."""

    label: str
    kind: str  #: "controller" or "agent"
    entries: tuple[Entry, ...]
    sources: tuple[str, ...]  #: controller name, or the agent directories


def controller_methods(names: Sequence[str]) -> list[Method]:
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
    return cell, run_episode(entry.factory(), config, seed, entry.label, episode)


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
    out = parallel_map(_episode_job, jobs, workers, progress, desc=suite.name, ray_address=ray_address)
    rows = []
    for cell, stats in out:
        method, run = owner[stats.label]
        rows.append({"cell": cell, "method": method, "run": run, **asdict(stats)})
    return rows


def score_matrices(suite: Suite, rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, np.ndarray]]:
    """score name → method → array (runs × episodes, cells): each episode's metric over the
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
            out[s][m] = a.reshape(runs * suite.episodes, len(cells))
    return out


def _point(scores: np.ndarray) -> np.ndarray:
    from rliable import metrics

    return np.array([metrics.aggregate_iqm(scores), metrics.aggregate_mean(scores),
                     metrics.aggregate_optimality_gap(scores, 1.0)])


def _improvement(x: np.ndarray, y: np.ndarray) -> float:
    from rliable import metrics

    return float(metrics.probability_of_improvement(x, y))


def aggregates(scores: dict[str, np.ndarray], reference: str, reps: int = BOOTSTRAP_REPS,
               seed: int = BOOTSTRAP_SEED) -> dict[str, dict[str, list[float]]]:
    """method → aggregate → [point, CI low, CI high] (95% stratified bootstrap with ``reps``
    resamples, seeded: the same scores give the same intervals)."""
    from rliable import library as rly

    # rliable draws its resamples from NumPy's global legacy generator (it ignores random_state):
    # seed it for this call, and give the caller's state back after
    state = np.random.get_state()
    try:
        with warnings.catch_warnings():  # arch's notice that RandomState is deprecated
            warnings.simplefilter("ignore", FutureWarning)
            point, ci, p_point, p_ci = {}, {}, {}, {}
            for m in scores:  # each method's intervals from its own scores only
                np.random.seed(seed)
                pt, c = rly.get_interval_estimates({m: scores[m]}, _point, reps=reps)
                np.random.seed(seed)
                ppt, pc = rly.get_interval_estimates({m: [scores[m], scores[reference]]}, _improvement, reps=reps)
                point[m], ci[m], p_point[m], p_ci[m] = pt[m], c[m], ppt[m], pc[m]
    finally:
        np.random.set_state(state)
    out = {}
    for m in scores:
        agg = {name: [float(point[m][i]), float(ci[m][0][i]), float(ci[m][1][i])]
               for i, name in enumerate(("iqm", "mean", "optimality_gap"))}
        agg["p_improvement"] = [float(np.squeeze(p_point[m])), float(np.squeeze(p_ci[m][0])), float(np.squeeze(p_ci[m][1]))]
        out[m] = agg
    return out


def machine() -> dict[str, Any]:
    """What decision times depend on: the processor, its cores, the thread settings."""
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}


def run_benchmark(suite: Suite, methods: Sequence[Method], workers: int = 1, progress: bool = False,
                  ray_address: str | None = None, command: str | None = None) -> dict[str, Any]:
    """Play the suite and score it: the result document (see :func:`check_result`)."""
    import time

    import msenv

    t0 = time.perf_counter()
    rows = play_suite(suite, methods, workers, progress, ray_address)
    wall_s = time.perf_counter() - t0
    matrices = score_matrices(suite, rows)
    described = {suite.reference: ("controller", (suite.reference,))} | {m.label: (m.kind, m.sources) for m in methods}
    decision = {m: {c.name: float(np.mean([r["decision_ms"] for r in rows if r["method"] == m and r["cell"] == c.name]))
                    for c in suite.cells} for m in matrices["throughput"]}
    return {
        "format": RESULT_FORMAT, "format_version": 1, "suite": suite.to_dict(), "msenv_version": msenv.__version__,
        "command": command, "machine": {**machine(), "workers": workers}, "wall_s": wall_s,
        "methods": {m: {"kind": described[m][0], "sources": list(described[m][1]),
                        "runs": int(matrices["throughput"][m].shape[0] // suite.episodes)} for m in matrices["throughput"]},
        "decision_ms": decision,
        "scores": {s: {m: a.tolist() for m, a in per.items()} for s, per in matrices.items()},
        "aggregates": {s: aggregates(per, suite.reference) for s, per in matrices.items()},
        "episodes": rows,
    }


def summary_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per method: runs, every aggregate of both scores with its CI, decision time."""
    rows = []
    for m, info in result["methods"].items():
        row: dict[str, Any] = {"method": m, "kind": info["kind"], "runs": info["runs"]}
        for s in SCORES:
            for a, (pt, lo, hi) in result["aggregates"][s][m].items():
                row[f"{s}_{a}"], row[f"{s}_{a}_lo"], row[f"{s}_{a}_hi"] = pt, lo, hi
        row["decision_ms"] = float(np.mean(list(result["decision_ms"][m].values())))
        rows.append(row)
    return rows


def format_summary(result: dict[str, Any]) -> str:
    lines = [f"{result['suite']['name']}: scores relative to {result['suite']['reference']} (95% stratified-bootstrap CIs)",
             f"{'method':<22}{'runs':>5}  {'IQM':<22}{'P(> ref)':<22}{'real-time IQM':<22}{'decide ms':>10}"]
    for r in summary_rows(result):
        def ci(k):
            return f"{r[k]:.3f} [{r[k + '_lo']:.3f}, {r[k + '_hi']:.3f}]"
        lines.append(f"{r['method']:<22}{r['runs']:>5}  {ci('throughput_iqm'):<22}{ci('throughput_p_improvement'):<22}"
                     f"{ci('realtime_iqm'):<22}{r['decision_ms']:>10.3f}")
    return "\n".join(lines)


def plot(result: dict[str, Any], path: str | Path) -> None:
    """Aggregates with their CIs and the performance profile of the throughput scores."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(result["methods"])
    agg = result["aggregates"]["throughput"]
    fig, axes = plt.subplots(1, 4, figsize=(16, 0.5 * len(methods) + 2.2))
    for ax, (name, title) in zip(axes[:3], (("iqm", "IQM"), ("mean", "mean"), ("p_improvement", "P(improvement)"))):
        for i, m in enumerate(methods):
            pt, lo, hi = agg[m][name]
            ax.plot([lo, hi], [i, i], lw=6, alpha=0.6)
            ax.plot([pt], [i], "k|", ms=14)
        ax.set_yticks(range(len(methods)), methods if ax is axes[0] else [""] * len(methods))
        ax.set_title(title)
        ax.axvline(0.5 if name == "p_improvement" else 1.0, color="grey", ls=":")
    taus = np.linspace(0.6, 1.3, 141)
    for m in methods:
        s = np.asarray(result["scores"]["throughput"][m])
        axes[3].plot(taus, [(s > t).mean() for t in taus], label=m)
    axes[3].set_xlabel("score τ (throughput / reference)")
    axes[3].set_title("performance profile: P(score > τ)")
    axes[3].legend(fontsize=7)
    fig.suptitle(f"{result['suite']['name']} (relative to {result['suite']['reference']})")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def check_result(result: Any, recompute: bool = True) -> None:
    """Validate a result document: a known suite with unchanged content, every method's scores
    of the right shape and finite, and (``recompute``) scores and aggregates that follow from its
    episodes. Raises ``ValueError`` saying what is wrong."""
    if not isinstance(result, dict) or result.get("format") != RESULT_FORMAT:
        raise ValueError(f"not a benchmark result (format must be {RESULT_FORMAT!r})")
    name = result.get("suite", {}).get("name")
    suite = get_suite(name)
    if result["suite"] != suite.to_dict():
        raise ValueError(f"suite {name!r}: the file's cells, seeds or reference differ from the suite's")
    for key in ("methods", "scores", "aggregates", "episodes", "decision_ms"):
        if key not in result:
            raise ValueError(f"the result has no {key!r}")
    for s in SCORES:
        for m, info in result["methods"].items():
            a = np.asarray(result["scores"][s].get(m, []), dtype=float)
            if a.shape != (info["runs"] * suite.episodes, len(suite.cells)) or not np.isfinite(a).all() or (a <= 0).any():
                raise ValueError(f"method {m!r}: {s} scores must be finite and positive, of shape "
                                 f"({info['runs']} runs × {suite.episodes} episodes, {len(suite.cells)} cells)")
    if recompute:
        again = score_matrices(suite, result["episodes"])
        for s, per in again.items():
            for m, a in per.items():
                if not np.allclose(a, result["scores"][s][m], rtol=1e-12):
                    raise ValueError(f"method {m!r}: {s} scores do not follow from the episodes")
                agg = result["aggregates"][s][m]
                if not np.allclose(_point(a), [agg[k][0] for k in ("iqm", "mean", "optimality_gap")], rtol=1e-9):
                    raise ValueError(f"method {m!r}: {s} aggregates do not follow from the scores")


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m baselines.benchmark``."""
    suites = "\n".join(f"  {s.name:<14} {s.description}" for s in [*SUITES.values(), *VALIDATION_SUITES.values()])
    ap = argparse.ArgumentParser(prog="python -m baselines.benchmark", description=__doc__,
                                 epilog="suites:\n" + suites, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=[*SUITES, *VALIDATION_SUITES], help="the suite to run")
    ap.add_argument("--controllers", nargs="*", default=None, metavar="NAME",
                    help="controllers to score (default: the suite's own list; the reference is always played)")
    ap.add_argument("--agent", nargs="+", action="append", default=[], metavar="[LABEL=]DIR",
                    help="a learned method: one agent directory per training seed (repeat --agent for more methods)")
    ap.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    ap.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="run episodes as Ray tasks: a local Ray instance, or the cluster at ADDRESS")
    ap.add_argument("--out", default="results/benchmark", help="folder of <suite>.json/.csv/.png (default %(default)s)")
    ap.add_argument("--check", metavar="FILE", help="validate a result file and exit")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def main(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.check:
        import json

        try:
            check_result(json.loads(Path(args.check).read_text()))
        except (OSError, ValueError, KeyError, TypeError) as e:
            ap.exit(1, f"{ap.prog}: error: {args.check}: {e}\n")
        print(f"{args.check}: a valid result of suite {json.loads(Path(args.check).read_text())['suite']['name']}")
        return None
    if args.suite is None:
        ap.error("--suite is required (or --check FILE)")
    if args.workers < 1:
        ap.error(f"--workers must be an integer ≥ 1, got {args.workers}")
    suite = get_suite(args.suite)
    try:
        methods = controller_methods(suite.controllers if args.controllers is None else args.controllers)
        for spec in args.agent:
            methods.append(agent_method(spec, [m.label for m in methods]))
        check_methods(suite, methods)
    except (ValueError, TypeError) as e:
        ap.error(str(e))
    connect_or_exit(ap, args.ray)
    command = "python -m baselines.benchmark " + " ".join(sys.argv[1:] if argv is None else argv)
    result = run_benchmark(suite, methods, args.workers, not args.no_progress, args.ray, command)
    out = Path(args.out)
    write_json(result, out / f"{suite.name}.json")
    write_csv(summary_rows(result), out / f"{suite.name}.csv")
    plot(result, out / f"{suite.name}.png")
    print(format_summary(result))
    print(f"wrote {out / suite.name}.json, .csv, .png")
    return result


if __name__ == "__main__":
    main()
