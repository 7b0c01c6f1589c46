"""The leaderboard: the page of the committed result files' rows (:mod:`~evaluation.leaderboard.page`)
and its command line, ``python -m evaluation.leaderboard`` (:mod:`~evaluation.leaderboard.cli`)."""

from .cli import build_parser, main
from .page import load_results, markdown

__all__ = ["build_parser", "load_results", "main", "markdown"]
