"""``python -m agents.convert DIR [DIR ...]``: write the portable decision files (``agent.json``,
``policy.npz``) of agents saved before the portable format existed. It opens each agent's SB3
``model.zip`` and ``vecnormalize.pkl`` — pickles, which run code when loaded — so convert only
directories from a trusted source; afterwards :func:`agents.load_agent` reads no pickle."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from .portable import AGENT_FILE, POLICY_FILE, convert


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m agents.convert", description=__doc__)
    ap.add_argument("dirs", nargs="+", metavar="DIR", help="agent directories (train.py's <log-dir>/agent)")
    return ap


def main(argv: Sequence[str] | None = None) -> None:
    ap = build_parser()
    args = ap.parse_args(argv)
    for d in args.dirs:
        try:
            convert(d)
        except (OSError, ValueError) as e:
            ap.exit(1, f"{ap.prog}: error: {d}: {e}\n")
        print(f"wrote {Path(d) / AGENT_FILE} and {Path(d) / POLICY_FILE}")


if __name__ == "__main__":
    main()
