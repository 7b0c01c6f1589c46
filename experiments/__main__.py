"""CLI: ``python -m experiments {fig7,fig8,fig9,fig10,fig11,all,gap,sensitivity,dynamics,table,hetero,cells} [options]``."""

from __future__ import annotations

import argparse
import sys
import time

from baselines.parallel import connect_or_exit

from . import cells, hetero, tables
from .figures import FIGURES, run_figure


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m experiments``."""
    ap = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    ap.add_argument("figure", choices=[*FIGURES, "all", "gap", "sensitivity", "dynamics", "table", "hetero", "cells"],
                    help="which experiment ('all' = fig7..fig11; 'sensitivity' = paper claims under each [R] reading; "
                         "'table' = the baselines table of --env-id; 'hetero' = why the greedy falls short on heterogeneous "
                         "devices in a weak cell; 'cells' = the generalist agent against every rival, K from 5 to 200)")
    ap.add_argument("--env-id", default="msenv/MultiSpin-v0", help="table: the registered id (default %(default)s)")
    ap.add_argument("--drops", type=int, default=None,
                    help="independent drops per point (default 50; sensitivity: 14; dynamics: 20; table: episodes, 50)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per drop (default 10; dynamics, table: 30)")
    ap.add_argument("--seed", type=int, default=None, help="first drop seed (default 0; table: 20000)")
    ap.add_argument("--out", default="results", help="output directory (default results/)")
    ap.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    ap.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="run the drops as Ray tasks: a local Ray instance, or the cluster at ADDRESS "
                         "(e.g. ray://head:10001); same results as a local run")
    ap.add_argument("--quick", action="store_true", help="small sweep for tests")
    ap.add_argument("--agent", nargs="*", default=[], metavar="DIR",
                    help="fig11 / dynamics / hetero / cells: a trained agent's directory (adds a PPO row); table: any number")
    ap.add_argument("--mlp-agent", default=None, metavar="DIR",
                    help="cells: a per-K MLP agent of the paper cell at K = 20 (train.py's runs/ppo-MultiSpin-v0/agent)")
    ap.add_argument("--num-devices", type=int, default=3, help="gap: K (default 3)")
    ap.add_argument("--gamma-max", type=int, default=20, help="gap: γ_max (default 20)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--readings", nargs="+", default=None, help="sensitivity: only these readings (default all)")
    ap.add_argument("--extended", action="store_true",
                    help="sensitivity: Fig 9 also at K = 20 and Fig 11 at all four ratios (≈ 1.6× the work)")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.drops is None:  # sensitivity: 14 keeps the documented full run within 15 min on 2 cores
        args.drops = {"sensitivity": 14, "dynamics": 20, "hetero": hetero.EPISODES, "table": tables.EPISODES,
                      "cells": cells.EPISODES}.get(
            args.figure, 50)
    if args.rounds is None:
        args.rounds = {"dynamics": 30, "table": tables.ROUNDS, "hetero": hetero.ROUNDS, "cells": cells.ROUNDS}.get(
            args.figure, 10)
    if args.seed is None:
        args.seed = {"table": tables.SEED, "hetero": hetero.SEED, "cells": cells.SEED}.get(args.figure, 0)
    for name in ("drops", "rounds", "workers"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} {getattr(args, name)} is invalid; allowed: an integer ≥ 1")
    if len(args.agent) > 1 and args.figure != "table":
        ap.error(f"--agent takes one directory for {args.figure} (several only for table)")
    agent = args.agent[0] if args.agent else None
    connect_or_exit(ap, args.ray)
    if args.figure == "table":
        from .tables import run_table

        try:
            run_table(args.env_id, args.out, args.agent, args.drops, args.rounds, args.seed,
                      args.workers, progress=not args.no_progress, ray_address=args.ray)
        except ValueError as e:
            ap.error(str(e))
        return 0
    if args.figure == "cells":
        try:
            cells.run_cells(args.out, args.drops, args.rounds, args.seed, args.workers,
                            agent if args.agent else cells.DEFAULT_AGENT, args.mlp_agent, args.quick,
                            progress=not args.no_progress, ray_address=args.ray)
        except ValueError as e:
            ap.error(str(e))
        return 0
    if args.figure == "hetero":
        from .hetero import run_hetero

        run_hetero(args.out, args.drops, args.rounds, args.seed, args.workers, agent, args.quick,
                   progress=not args.no_progress, ray_address=args.ray)
        return 0
    if args.figure == "dynamics":
        from .dynamics import run_dynamics

        run_dynamics(args.out, args.drops, args.seed, args.rounds, args.workers, args.quick,
                     progress=not args.no_progress, ray_address=args.ray, agent=agent)
        return 0
    if args.figure == "sensitivity":
        from .sensitivity import run_sensitivity

        try:
            run_sensitivity(args.out, args.drops, args.seed, args.rounds, args.workers, args.quick,
                            progress=not args.no_progress, ray_address=args.ray, only=args.readings,
                            extended=args.extended)
        except ValueError as e:
            ap.error(str(e))
        return 0
    if args.figure == "gap":
        from .gap import run_gap

        run_gap(args.out, args.drops, args.seed, args.num_devices, args.gamma_max, workers=args.workers,
                progress=not args.no_progress, ray_address=args.ray)
        return 0
    names = list(FIGURES) if args.figure == "all" else [args.figure]
    for name in names:
        t0 = time.perf_counter()
        extra = {"agent": agent} if (name == "fig11" and agent) else {}
        rows = run_figure(name, args.out, args.drops, args.seed, args.rounds, args.workers, args.quick,
                          progress=not args.no_progress, ray_address=args.ray, **extra)
        print(f"{name}: {len(rows)} points → {args.out}/{name}.csv, {args.out}/{name}.png "
              f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
