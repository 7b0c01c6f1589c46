"""Score controllers and learned agents on a benchmark suite (:mod:`evaluation.suites`).

Every entry plays every cell of the suite on the cell's test seeds (paired: the same episodes for
all). An episode's **score** is its throughput divided by the suite's reference controller's on
the same episode (the greedy SAA, unless the suite says otherwise), and its **real-time score**
the same ratio of real-time throughputs (decision time counted). A method — a controller, or one
learned method given as several agent directories, one per training seed — gets a score array
(runs, episodes, cells). Its aggregates — interquartile mean (IQM), mean, the shortfall below
the reference, and rliable's probability of improvement over the reference and over the suite's
best rival — come with 95% intervals of a two-way bootstrap that resamples the runs (training
seeds) and, per cell, the test episodes every run shares (:mod:`evaluation.stats`); a one-run
method's interval is over the episodes only.

Examples::

    python -m evaluation.benchmark --suite paper-v1
    python -m evaluation.benchmark --suite cells-in-v1 --agent gen=agents/pretrained/cells
    python -m evaluation.benchmark --suite paper-v1 --agent mlp=runs/s0/agent runs/s1/agent

It writes ``<out>/<suite>.json`` (the result file: suite, code version and commit, machine, each
learned method's decision-file hashes and training records, every episode, scores, aggregates),
``<suite>.csv`` (one row per method) and ``<suite>.png``; ``--plot FILE`` redraws a result file's
PNG from the file alone (``python -m evaluation.benchmark --plot docs/leaderboard/paper-v1.json``
rewrites ``docs/leaderboard/paper-v1.png``). ``--check FILE`` is what a leaderboard
row must pass: it recomputes every score, aggregate and interval from the stored episodes and
replays a random sample of them (every controller and agent whose decisions do not depend on the
clock) to the bit, one line per mismatch, and says what else keeps the file off the
leaderboard (a run without its command, a validation or archived suite), as the leaderboard does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from msenv.atomic import atomic_files, held_signals

from .. import suites
from ..parallel import Stopped, connect_or_exit, run_stoppable, stop_on_signals
from ..report import csv_bytes, figure_style, figure_writer, json_bytes, output_dir_problem
from ..suites import ARCHIVED_SUITES, SUITES, VALIDATION_SUITES, get_suite
from .check import replay_problems, replayable, result_problems, row_problems
from .plot import draw, plot
from .run import COMMAND, agent_method, check_methods, controller_methods, run_benchmark
from .score import format_summary, summary_rows

#: the most episodes one --check replays
MAX_REPLAY = 10_000
#: the most worker processes a run may ask for
MAX_WORKERS = 64
#: where a run writes its files unless --out says
DEFAULT_OUT = "results/benchmark"


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m evaluation.benchmark``."""
    listing = "\n".join(f"  {s.name:<14} {s.description}" for s in [*SUITES.values(), *VALIDATION_SUITES.values()])
    ap = argparse.ArgumentParser(prog=COMMAND, description=__doc__,
                                 epilog="suites:\n" + listing, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=[*SUITES, *VALIDATION_SUITES, *ARCHIVED_SUITES], help="the suite to run")
    ap.add_argument("--controllers", nargs="*", default=None, metavar="NAME",
                    help="controllers to score (default: the suite's own list; the reference is always played)")
    ap.add_argument("--agent", nargs="+", action="append", default=[], metavar="[LABEL=]DIR",
                    help="a learned method: one agent directory per training seed (repeat --agent for more methods)")
    ap.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    ap.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="run episodes as Ray tasks: a local Ray instance, or the cluster at ADDRESS")
    ap.add_argument("--out", default=None,
                    help=f"folder of <suite>.json/.csv/.png (default {DEFAULT_OUT}); with --plot: "
                    "the folder of the PNG (default: beside FILE)")
    ap.add_argument("--check", metavar="FILE",
                    help="recompute a result file's scores, aggregates and intervals, replay "
                    "a sample of its episodes, and exit (1 with one line per mismatch)")
    ap.add_argument("--plot", metavar="FILE", help="redraw a result file's figure (<FILE stem>.png) from its stored "
                    "scores and aggregates, and exit; no episode is played")
    ap.add_argument("--replay", type=int, default=6, metavar="N",
                    help="with --check: episodes replayed, drawn at random (default %(default)s; 0: none)")
    ap.add_argument("--replay-seed", type=int, default=None, metavar="S",
                    help="with --check: the seed of the replay's draw (default: fresh, printed)")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def read_result(ap: argparse.ArgumentParser, path: str) -> Any:
    """The JSON document of ``path``; one line on stderr and exit 1 when it is not readable as JSON."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError, RecursionError) as e:
        ap.exit(1, f"{ap.prog}: error: {path}: not readable as JSON ({type(e).__name__}: {e})\n")


def check_command(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--check FILE``: every problem a line on stderr, exit 1; else a line saying what was checked.
    The problems are the file's (:func:`~evaluation.benchmark.check.result_problems`), its replay's
    and — for a suite of the leaderboard — the leaderboard's own (:func:`~evaluation.benchmark.check.row_problems`,
    agent paths relative to the current folder); a validation or archived suite's file is no row,
    and says why."""
    if not 0 <= args.replay <= MAX_REPLAY:
        ap.error(f"--replay {args.replay} is invalid; allowed: an integer in 0 … {MAX_REPLAY}")
    result = read_result(ap, args.check)
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
    if not problems:
        row = row_problems(result, Path.cwd())
        if result["suite"]["name"] in suites.SUITES:
            problems = row
        else:
            notes += [f"not a leaderboard row: {p}" for p in row]
    if problems:
        ap.exit(1, "".join(f"{ap.prog}: error: {args.check}: {p}\n" for p in dict.fromkeys(problems)))
    for n in notes:
        print(f"{args.check}: {n}")
    print(f"{args.check}: a valid result of suite {result['suite']['name']}")


def plot_command(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--plot FILE``: the figure of a result file whose structure is sound, written beside it (or
    into ``--out``) under the file's stem; else one line on stderr, exit 1."""
    result = read_result(ap, args.plot)
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
    """Parse ``argv`` and run its command: ``--check``, ``--plot``, or a suite (the result document; every bad
    option refused in one line before any episode starts)."""
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
    missing = suite.unavailable()
    if missing:  # a suite of files msenv does not ship: skipped, in one line, where they are absent
        print(f"{ap.prog}: suite {suite.name} skipped: {missing}", flush=True)
        return None
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
    command = f"{COMMAND} " + " ".join(sys.argv[1:] if argv is None else argv)
    result = run_stoppable(ap, lambda: run_benchmark(suite, methods, args.workers, not args.no_progress, args.ray,
                                                     command), "no result written; every worker ended")
    print(format_summary(result), flush=True)  # first: a failed write below leaves the summary on screen
    write_result(ap, result, out)
    return result


def write_result(ap: argparse.ArgumentParser, result: dict[str, Any], out: Path) -> None:
    """The write phase: ``<suite>.json``, ``.csv`` and ``.png`` as one output
    (:func:`msenv.atomic.atomic_files`: every file written and fsynced before the first is renamed
    into place). SIGINT/SIGTERM meanwhile are held until the three are in place, then end the
    command in one line (exit 130 / 143); a failed write (a full disk) replaces none of them
    (exit 74, one line)."""
    name = result["suite"]["name"]
    paths = [out / f"{name}.{ext}" for ext in ("json", "csv", "png")]
    failed: OSError | None = None
    with stop_on_signals() as stop:
        try:
            with held_signals():  # the whole phase: figure drawn and files written, then the signal
                try:
                    with figure_style() as plt:
                        fig = draw(plt, result)
                        atomic_files({paths[0]: lambda fh: fh.write(json_bytes(result)),
                                      paths[1]: lambda fh: fh.write(csv_bytes(summary_rows(result))),
                                      paths[2]: figure_writer(fig)})
                        plt.close(fig)
                except OSError as e:
                    failed = e
        except Stopped:
            pass
    if failed is not None:
        where = f" {failed.filename}" if failed.filename else f" {out}"
        ap.exit(74, f"{ap.prog}: error: could not write{where}: {failed.strerror or failed} (files already there are "
                    "unchanged)\n")
    if stop.signal_name is not None:
        ap.exit(stop.exit_code, f"{ap.prog}: stopped by {stop.signal_name} after writing {out / name}.json, .csv, "
                                ".png whole\n")
    print(f"wrote {out / name}.json, .csv, .png")


__all__ = ["DEFAULT_OUT", "MAX_REPLAY", "MAX_WORKERS", "build_parser", "check_command", "main", "plot_command",
           "read_result", "write_result"]
