"""CLI: ``python -m experiments SUBCOMMAND [options]``: the paper's figures, the studies, the
traces' experiments and the main job's seeds (the usage line lists every SUBCOMMAND)."""

from __future__ import annotations

import argparse
import sys
import time

from evaluation.parallel import connect_or_exit

from . import budget, cells, hetero, tables
from .figures import FIGURES, run_figure
from .traces import EPISODES as TRACES_EPISODES
from .traces import ROUNDS as TRACES_ROUNDS
from .traces import SEEDS as TRACES_SEEDS

#: the subcommands of model §12's experiments (experiments.traces)
TRACE_COMMANDS = ("traces-tune", "traces-headroom", "traces-sensitivity", "traces-presets", "traces-training")


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m experiments``."""
    ap = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    ap.add_argument("figure", choices=[*FIGURES, "all", "gap", "sensitivity", "dynamics", "table", "hetero", "cells",
                                       "budget", "paired", "replot", "traces-tune", "traces-headroom",
                                       "traces-sensitivity", "traces-presets", "traces-training",
                                       "main-job-seeds"],
                    help="which experiment ('all' = fig7..fig11; 'sensitivity' = paper claims under each [R] reading; "
                         "'table' = the baselines table of --env-id; 'hetero' = why the greedy falls short on "
                         "heterogeneous devices in a weak cell; 'cells' = the generalist agent against every rival, "
                         "K from 5 to 400; 'budget' = the best budget action against the best model-based action; "
                         "'paired' = each agent against each rival, episode by episode, from a cells run's --out "
                         "folder; 'replot' = redraw the figures of an --out folder from the CSVs a run wrote there, "
                         "playing nothing; "
                         "'traces-tune' = every adaptive rule's tunables chosen on each trace preset's validation "
                         "requests (writes baselines/tuned.py); 'traces-headroom' = every rule, the best fixed "
                         "draft length and the clairvoyant reference on each preset's validation requests; "
                         "'traces-sensitivity' = the same headroom as the drafting cost and the DL budget change; "
                         "'traces-presets' = each fitted preset's bank beside the published figures; "
                         "'traces-training' = the trace agents of the ablation (the budget policy at H = 1, 4, 16, the "
                         "per-device policy at H = 4, the budget policy at H = 4 with 3× the rounds), trained under "
                         "--runs (unless there) and scored on validation "
                         "requests (rows already in the CSV kept); 'main-job-seeds' = python train.py's "
                         "defaults on training seeds 0–4, each against the best rule: --out/main_job_seeds.csv)")
    ap.add_argument("--runs", default="runs/traces", metavar="DIR",
                    help="traces-training: the folder of the trained agents (default %(default)s)")
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
                    help="fig11 / dynamics / hetero / cells: a trained agent's directory (adds a PPO row); table: any "
                         "number; cells: any number of LABEL=DIR (a plain DIR is the 'generalist')")
    ap.add_argument("--mlp-agent", default=None, metavar="DIR",
                    help="cells: a per-K MLP agent of the paper cell at K = 20 (train.py's "
                         "runs/ppo-MultiSpin-v0/agent)")
    ap.add_argument("--ks", type=int, nargs="+", default=None, metavar="K",
                    help="cells: only these numbers of devices (default 5 10 20 50 100 200 400)")
    ap.add_argument("--kinds", nargs="+", default=None, metavar="TYPE",
                    help="cells: only these cell types (default all: " + ", ".join(cells.CELL_TYPES) + ")")
    ap.add_argument("--num-devices", type=int, default=3, help="gap: K (default 3)")
    ap.add_argument("--gamma-max", type=int, default=20, help="gap: γ_max (default 20)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--readings", nargs="+", default=None, help="sensitivity: only these readings (default all)")
    ap.add_argument("--extended", action="store_true",
                    help="sensitivity: Fig 9 also at K = 20 and Fig 11 at all four ratios (≈ 1.6× the work)")
    return ap


#: the subcommands that play a trained agent (--agent); cells also takes --mlp-agent
AGENT_USERS = ("fig11", "all", "dynamics", "hetero", "cells", "table", "budget")


def check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, with argparse's one-line error and before any work starts, a bad count or seed, a
    configuration field out of the config's own range, an agent directory that holds no agent,
    an agent that cannot act in the experiment's envs, or an option the subcommand does not use."""
    from msenv import resolve_config

    for name, top in (("drops", 100_000), ("workers", 256)):
        if not 1 <= getattr(args, name) <= top:
            ap.error(f"--{name} {getattr(args, name)} is invalid; allowed: an integer in 1 … {top:,}")
    if args.seed < 0:
        ap.error(f"--seed {args.seed} is invalid; allowed: an integer ≥ 0")
    from evaluation.suites import seed_refusal

    seeds = range(args.seed, args.seed + args.drops)
    if args.figure in TRACE_COMMANDS:  # choices are made on validation seeds, never test ones
        from evaluation.suites import VALIDATION_SEEDS

        if seeds.start not in VALIDATION_SEEDS or seeds.stop - 1 not in VALIDATION_SEEDS:
            ap.error(f"--seed {args.seed} is invalid for {args.figure}: its {args.drops} episodes must draw seeds of "
                     f"the validation block [{VALIDATION_SEEDS.start}, {VALIDATION_SEEDS.stop}) (choices are made on "
                     "validation requests and seeds)")
    else:
        refusal = seed_refusal("--seed", args.seed, seeds)
        if refusal:
            ap.error(refusal)
    if args.figure != "gap":  # --rounds is each drop's episode_length: the config's range
        try:
            resolve_config("qwen2.5", episode_length=args.rounds)
        except ValueError as e:
            ap.error(f"--rounds {args.rounds} is invalid ({e})")
    else:
        try:
            resolve_config("qwen2.5", num_devices=args.num_devices)
        except ValueError as e:
            ap.error(f"--num-devices {args.num_devices} is invalid ({e})")
        try:
            resolve_config("qwen2.5", gamma_max=args.gamma_max)
        except ValueError as e:
            ap.error(f"--gamma-max {args.gamma_max} is invalid ({e})")
    if args.agent and args.figure not in AGENT_USERS:
        ap.error(f"--agent is not used by {args.figure}; allowed with: {', '.join(AGENT_USERS)}")
    if len(args.agent) > 1 and args.figure not in ("table", "cells"):
        ap.error(f"--agent takes one directory for {args.figure} (several only for table and cells)")
    if args.figure != "cells":
        for name in ("ks", "kinds"):
            if getattr(args, name) is not None:
                ap.error(f"--{name} is not used by {args.figure}; allowed with: cells")
    if args.mlp_agent is not None and args.figure != "cells":
        ap.error(f"--mlp-agent is not used by {args.figure}; allowed with: cells")
    if args.figure == "table":
        from msenv import env_config

        try:
            configs = [env_config(args.env_id, episode_length=args.rounds)]
        except ValueError as e:
            ap.error(str(e))
        for path in args.agent:
            _check_agent(ap, "--agent", path, configs)
    elif args.figure == "cells":
        for k in args.ks or ():
            if k < 1:
                ap.error(f"--ks {k} is invalid; allowed: integers ≥ 1")
        for kind in args.kinds or ():
            if kind not in cells.CELL_TYPES:
                ap.error(f"--kinds {kind!r} is not a cell type; allowed: {', '.join(cells.CELL_TYPES)}")
        try:
            table = cells_agents(args.agent)
        except ValueError as e:
            ap.error(f"--agent: {e}")
        points = []
        for k in args.ks or cells.KS:
            for kind in args.kinds or cells.CELL_TYPES:
                try:
                    points.append(cells.cell_config(kind, k, args.rounds))
                except ValueError as e:
                    ap.error(f"--ks {k} is invalid ({e})")
        for path in table.values():  # each agent plays where it can act: somewhere, or it is refused
            _check_agent(ap, "--agent", path, points, any_of=True)
        if args.mlp_agent is not None:
            # run_point plays it on the paper cell's single-cell env at K = 20
            _check_agent(ap, "--mlp-agent", args.mlp_agent,
                         [cells.cell_config("paper", 20, args.rounds).base.replace(num_devices=20)])
    elif args.agent:
        _check_agent(ap, "--agent", args.agent[0], _agent_configs(ap, args))


def cells_agents(specs: list[str]) -> dict[str, str]:
    """The agents of the cells sweep: ``[LABEL=]DIR`` entries (an unlabelled one is the
    ``generalist``); none: the committed generalist."""
    if not specs:
        return {"generalist": cells.DEFAULT_AGENT}
    out: dict[str, str] = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        label, path = (label, path) if sep else ("generalist", spec)
        if not label or not path or label in out:
            raise ValueError(f"{spec!r}: give LABEL=DIR with a label of its own (one entry may be a plain DIR)")
        out[label] = path
    return out


def _agent_configs(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list:
    """The configs of the envs the agent of fig11 / all, dynamics or hetero plays in."""
    agent = args.agent[0]
    if args.figure == "hetero":
        from msenv import ENV_IDS, resolve_config

        return [resolve_config(ENV_IDS[hetero.HETERO], episode_length=args.rounds)]
    if args.figure == "dynamics":
        from .dynamics import agent_devices, build_jobs

        _check_agent(ap, "--agent", agent, [])  # a directory with an agent, before its K is read
        jobs = [j for j in build_jobs(1, args.seed, args.rounds, args.quick, agent) if j.agent]
        if not jobs:
            k = agent_devices(agent)
            ks = sorted({j.config.num_devices for j in build_jobs(1, 0, 2, args.quick)})
            ap.error(f"--agent {agent}: the dynamics sweep plays an agent at the points of its K, and "
                     + (f"no point has K = {k}" if k else "a cell generator's agent has no K")
                     + f"; allowed: an agent trained at K in {', '.join(map(str, ks))}")
        return [j.config for j in jobs]
    if args.figure == "budget":
        return [cells.cell_config(kind, k, 2) for kind in budget.KINDS for k in budget.KS]
    from .figures import FIGURES, QUICK, fig11_jobs

    params = {**FIGURES["fig11"][1], **(QUICK["fig11"] if args.quick else {})}  # as run_figure builds them
    return [j.config for j in fig11_jobs(drops=1, seed=args.seed, rounds=args.rounds, agent=agent, **params) if j.agent]


def _check_agent(ap: argparse.ArgumentParser, flag: str, path: str, configs: list, any_of: bool = False) -> None:
    """``path`` holds an agent (one line naming ``flag`` and ``path`` otherwise) that can act in
    the env of every config of ``configs`` — or, with ``any_of``, of at least one (the first
    refusal is the message) — as its loader's ``check`` says, when it has one."""
    from evaluation.entries import agent_loader, check_agent_dir

    try:
        check_agent_dir(path, flag)
        factory = agent_loader()(path, "ppo")
        check = getattr(factory, "check", None)
        if callable(check):
            refusals = []
            for cfg in configs:
                try:
                    check(cfg)
                except ValueError as e:
                    refusals.append(e)
            if refusals and (not any_of or len(refusals) == len(configs)):
                raise refusals[0]
    except ValueError as e:
        ap.error(str(e) if str(e).startswith(flag) else f"{flag} {e}")


#: options a subcommand does not read (refused when given, rather than ignored)
UNUSED = {"paired": ("drops", "rounds", "seed"), "replot": ("drops", "rounds", "seed"), "budget": ("rounds",),
          "main-job-seeds": ("drops", "rounds", "seed")}


def parse_args(ap: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """``argv`` parsed, each option a subcommand leaves out given the subcommand's default, and checked
    (:func:`check_args`)."""
    args = ap.parse_args(argv)
    for name in UNUSED.get(args.figure, ()):
        if getattr(args, name) is not None:
            ap.error(f"--{name} is not used by {args.figure}")
    if args.drops is None:  # sensitivity: 14 keeps the documented full run within 15 min on 2 cores
        args.drops = {"sensitivity": 14, "dynamics": 20, "hetero": hetero.EPISODES, "table": tables.EPISODES,
                      "cells": cells.EPISODES, "budget": budget.EPISODES, "traces-tune": TRACES_EPISODES,
                      "traces-headroom": TRACES_EPISODES, "traces-sensitivity": 4, "traces-presets": 1,
                      "traces-training": TRACES_EPISODES}.get(
            args.figure, 50)
    if args.rounds is None:
        args.rounds = {"dynamics": 30, "table": tables.ROUNDS, "hetero": hetero.ROUNDS, "cells": cells.ROUNDS,
                       "traces-tune": TRACES_ROUNDS, "traces-headroom": TRACES_ROUNDS,
                       "traces-sensitivity": TRACES_ROUNDS, "traces-training": TRACES_ROUNDS}.get(
            args.figure, 10)
    if args.seed is None:
        args.seed = {"table": tables.SEED, "hetero": hetero.SEED, "cells": cells.SEED, "budget": budget.SEED,
                     **TRACES_SEEDS}.get(
            args.figure, 0)
    check_args(ap, args)
    return args


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = parse_args(ap, argv)
    connect_or_exit(ap, args.ray)
    from evaluation.parallel import run_stoppable

    return run_stoppable(ap, lambda: _run(ap, args), "every worker ended; the files already written stay as they are")


def _run(ap: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The subcommand ``args.figure``, its arguments checked."""
    agent = args.agent[0] if args.agent else None
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
            cells.run_cells(args.out, args.drops, args.rounds, args.seed, args.workers, cells_agents(args.agent),
                            args.mlp_agent, args.quick, progress=not args.no_progress, ray_address=args.ray,
                            ks=tuple(args.ks) if args.ks else None, kinds=tuple(args.kinds) if args.kinds else None)
        except ValueError as e:
            ap.error(str(e))
        return 0
    if args.figure == "paired":
        try:
            cells.write_paired(args.out)
        except FileNotFoundError as e:
            ap.error(f"--out {args.out}: no cells run there ({e.filename})")
        except (ValueError, KeyError, TypeError, AttributeError) as e:  # JSONDecodeError is a ValueError
            ap.error(f"--out {args.out}: cells.json is not the result of a cells run ({type(e).__name__}: {e})")
        return 0
    if args.figure == "main-job-seeds":
        from .main_job import run_seeds

        run_seeds(args.out, args.workers, args.quick)
        return 0
    if args.figure == "replot":
        from .replot import replot

        try:
            written = replot(args.out)
        except FileNotFoundError as e:
            ap.error(f"--out {args.out}: {e}")
        print("wrote " + ", ".join(map(str, written)))
        return 0
    if args.figure in TRACE_COMMANDS:
        from . import traces

        kw = dict(episodes=args.drops, rounds=args.rounds, seed=args.seed, workers=args.workers,
                  progress=not args.no_progress)
        if args.figure == "traces-tune":
            traces.tune(args.out, **kw)
        elif args.figure == "traces-sensitivity":
            traces.sensitivity(args.out, **kw)
        elif args.figure == "traces-training":
            traces.training(args.out, args.runs, **kw)
        elif args.figure == "traces-presets":
            traces.presets_table(args.out)
        else:
            from baselines.tuned import TRACE_TUNED

            traces.headroom(args.out, TRACE_TUNED, **kw)
        print(f"{args.figure}: wrote {args.out}")
        return 0
    if args.figure == "budget":
        budget.run_budget(args.out, args.drops, args.seed, args.workers, args.quick, progress=not args.no_progress,
                          agent=agent or cells.DEFAULT_AGENT)
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
