"""Benchmark suites played, scored, checked and drawn, one module per job:

- :mod:`~evaluation.benchmark.run` — the methods (controllers; learned methods, one agent
  directory per training seed), the suite played on its test episodes, the result document;
- :mod:`~evaluation.benchmark.score` — each episode's score relative to the suite's reference and
  the aggregates with their two-way bootstrap intervals (IQM, probability of improvement);
- :mod:`~evaluation.benchmark.check` — a result file checked (recomputed, replayed) and what a
  leaderboard row needs besides;
- :mod:`~evaluation.benchmark.plot` — a result's figure;
- :mod:`~evaluation.benchmark.cli` — the command line, ``python -m evaluation.benchmark``.

The names of each are importable from here (``from evaluation.benchmark import run_benchmark``).
"""

from .check import (
    AGGREGATE_RTOL,
    CLOCK_FIELDS,
    COMMANDS,
    MAX_RUNS,
    check_result,
    replay_problems,
    replayable,
    reproducing_command,
    result_problems,
    row_problems,
)
from .cli import DEFAULT_OUT, MAX_REPLAY, MAX_WORKERS, build_parser, check_command, main, plot_command
from .plot import LEGACY_PLOTTED, PLOTTED, plot
from .run import (
    COMMAND,
    FORMAT_VERSION,
    LABEL,
    RESULT_FORMAT,
    Method,
    agent_method,
    check_methods,
    controller_methods,
    describe_method,
    is_timed,
    machine,
    play_suite,
    run_benchmark,
    score_result,
)
from .score import SCORES, aggregates, format_summary, rivals_of, score_matrices, summary_rows

__all__ = [
    "AGGREGATE_RTOL", "CLOCK_FIELDS", "COMMAND", "COMMANDS", "DEFAULT_OUT", "FORMAT_VERSION", "LABEL", "LEGACY_PLOTTED",
    "MAX_REPLAY", "MAX_RUNS", "MAX_WORKERS", "Method", "PLOTTED", "RESULT_FORMAT", "SCORES", "agent_method",
    "aggregates", "build_parser", "check_command", "check_methods", "check_result", "controller_methods",
    "describe_method", "format_summary", "is_timed", "machine", "main", "play_suite", "plot", "plot_command",
    "replay_problems", "replayable", "reproducing_command", "result_problems", "rivals_of", "row_problems",
    "run_benchmark", "score_matrices", "score_result", "summary_rows",
]
