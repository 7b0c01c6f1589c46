"""The command line ``python -m evaluation.leaderboard``: check every result file of a folder and
write the leaderboard page of its rows (:mod:`evaluation.leaderboard.page`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..report import atomic_write
from .page import load_results, markdown


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m evaluation.leaderboard``."""
    ap = argparse.ArgumentParser(
        prog="python -m evaluation.leaderboard",
        description="Check every result file of a folder (scores, intervals, the agents' decision files) and write "
                    "the leaderboard page of its rows. The site's leaderboard is this page of docs/leaderboard/, "
                    "built with the docs.")
    ap.add_argument("folder", help="a folder of result files (python -m evaluation.benchmark --out FOLDER)")
    ap.add_argument("--out", metavar="FILE", help="write the page here (default: print it)")
    ap.add_argument("--root", default=".", metavar="DIR",
                    help="the folder the result files' agent paths are relative to (default: the current one)")
    return ap


def main(argv: Sequence[str] | None = None) -> str:
    """Parse ``argv``, check the folder's result files (a bad one: one line per problem, exit 2) and
    print or write the page; returns it."""
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        results = load_results(args.folder, root=args.root)
    except ValueError as e:
        ap.error(str(e))
    page = "# Leaderboard\n\n" + markdown(results)
    if args.out is None:
        print(page)
    else:
        atomic_write(args.out, lambda fh: fh.write(page.encode()))
        rows = sum(len(doc["methods"]) for _, doc in results)
        print(f"wrote {args.out}: {len(results)} result file(s), {rows} rows")
    return page


__all__ = ["build_parser", "main"]
