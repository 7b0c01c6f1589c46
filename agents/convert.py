"""``python -m agents.convert DIR [DIR ...]``: write the portable decision files (``agent.json``,
``policy.npz``) of agents saved before the portable format existed. It opens each agent's SB3
``model.zip`` and ``vecnormalize.pkl`` — pickles, which run code when loaded — so convert only
directories from a trusted source; afterwards :func:`agents.load_agent` reads no pickle."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from .controller import load_agent
from .portable import AGENT_FILE, POLICY_FILE, write_portable


def convert(path: str | Path) -> Path:
    """Write the portable files of an agent directory saved with SB3's files only (opens its
    ``model.zip`` and ``vecnormalize.pkl``: pickles — trusted directories only)."""
    path = Path(path)
    agent = load_agent(path, sb3=True)
    meta = json.loads((path / "config.json").read_text())
    return write_portable(path, agent.policy, agent.normalization, meta)


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
