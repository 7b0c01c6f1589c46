"""``python -m agents.hyperparams [--check]``: write rl-zoo3's ``agents/hyperparams/ppo.yml`` from
the one table of training defaults (:mod:`agents.defaults`), or check that it is up to date."""

from __future__ import annotations

import argparse
import sys

from . import PATH, write, zoo_yaml


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    ap = argparse.ArgumentParser(prog="python -m agents.hyperparams", description=__doc__)
    ap.add_argument("--check", action="store_true", help=f"exit 1 if {PATH.name} differs from the table's text")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Write the file (or, with ``--check``, compare it); returns the exit code."""
    args = build_parser().parse_args(argv)
    if args.check:
        same = PATH.exists() and PATH.read_text() == zoo_yaml()
        print(f"{PATH}: "
              f"{'up to date' if same else 'differs from agents/defaults.py: run python -m agents.hyperparams'}")
        return 0 if same else 1
    print(f"wrote {write()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
