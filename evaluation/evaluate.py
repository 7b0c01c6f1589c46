"""Compare controllers and trained agents on the same episodes (paired seeds).

Every entry plays episodes with seeds ``--seed .. --seed + episodes − 1``; the table gives each
metric's mean ± 95% CI over episodes and the throughput relative to the first entry, paired per
episode. An entry ``name@policy`` runs the environment (and the controller's SAA) under the
reactive policy ``policy`` (optimal, all_ul, all_dl, random). ``--agent DIR`` adds a saved agent:
it is loaded by the agent loader installed under the ``msenv.agents`` entry-point group (msenv's
own: PPO from ``train.py``), so this command does not depend on any agent package.

Example: ``python -m evaluation.evaluate --controllers greedy-saa optimal-uniform fixed-4 --episodes 5``.
"""

from __future__ import annotations

# absolute imports: ``python -m baselines.evaluate`` (the 0.6 path, until 0.7) runs this file's code
import argparse
import warnings
from collections.abc import Sequence
from typing import Any

from evaluation import entries
from evaluation.parallel import connect_or_exit
from msenv import env_config, resolve_config
from msenv.config import parse_overrides

DEFAULT_CONTROLLERS = ("greedy-saa", "optimal-uniform", "computation-only", "local-search", "fixed-4")
#: the library names this command line held in 0.6 (``from baselines.evaluate import agent_loader``):
#: still found here, with a DeprecationWarning, until msenv 0.7; they live in :mod:`evaluation.entries`
LIBRARY_NAMES = tuple(entries.__all__)


def __getattr__(name: str) -> Any:
    """A library name of 0.6's ``baselines.evaluate`` (:data:`LIBRARY_NAMES`), with a DeprecationWarning
    naming its module now."""
    if name in LIBRARY_NAMES:
        warnings.warn(f"{__name__}.{name} is evaluation.entries.{name}: import it from there (a command-line module "
                      "exports no library code; this name goes in msenv 0.7)", DeprecationWarning, stacklevel=2)
        return getattr(entries, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m evaluation.evaluate``."""
    ap = argparse.ArgumentParser(prog="python -m evaluation.evaluate", description=__doc__,
                                 epilog="controllers (--controllers NAME or NAME@policy):\n"
                                        + entries.controller_help(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--controllers", nargs="+", default=list(DEFAULT_CONTROLLERS), metavar="NAME",
                    help="entries: a controller name (listed below), optionally @policy (default: %(default)s)")
    ap.add_argument("--preset", default="qwen2.5", help="qwen2.5 | deepseek-r1 (ignored with --env-id)")
    ap.add_argument("--env-id", default=None,
                    help="a registered id, e.g. msenv/MultiSpin-Dynamic-v0 (its config), or the cell generator "
                         "msenv/MultiSpin-Cells-v0 (--set k_range=[200,200] k_max=200: a cell of 200 devices)")
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                    help="config overrides; VALUE is JSON where it parses (numbers, true/false, lists such as "
                         "draft_scale_range=[1.0,2.0]), else a string: e.g. p_dl_dbm=20 csi=decision")
    ap.add_argument("--episodes", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=None, help="rounds per episode (default: config episode_length)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--agent", nargs="*", default=[], metavar="DIR",
                    help="trained agents (train.py's <log-dir>/agent) to add as rows, named by their directory")
    ap.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="run episodes as Ray tasks: a local Ray instance, or the cluster at ADDRESS")
    ap.add_argument("--out", default="results/evaluate.csv",
                    help="where the summary table is written as CSV, relative to the current directory; the "
                    "folder is created if needed and a file there is overwritten (default: "
                    "results/evaluate.csv); a .json beside it holds the config and every episode")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Parse ``argv``, refuse a bad option in one line, then play and report
    (:func:`~evaluation.entries.run_and_report`)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    for flag, value, low in (("--episodes", args.episodes, 1), ("--workers", args.workers, 1),
                             ("--rounds", args.rounds, 2), ("--seed", args.seed, 0)):
        if value is not None and value < low:
            ap.error(f"{flag} must be an integer >= {low}, got {value}")
    try:
        overrides = parse_overrides(args.set)
        if args.rounds is not None:
            overrides["episode_length"] = args.rounds
        if args.env_id is not None:
            cfg = env_config(args.env_id, **overrides)
        else:
            cfg = resolve_config(args.preset, **overrides)
        chosen = entries.make_entries(args.controllers, args.agent)
        entries.check_entries(chosen, cfg)
    except (ValueError, TypeError) as e:
        ap.error(str(e))
    connect_or_exit(ap, args.ray)
    title = f"{args.env_id or args.preset}, {args.episodes} episodes × {cfg.episode_length} rounds, seeds {args.seed}.."
    return entries.run_and_report(chosen, cfg, args.episodes, args.seed, args.out, title, args.workers,
                                   progress=not args.no_progress, ray_address=args.ray)


if __name__ == "__main__":
    main()
