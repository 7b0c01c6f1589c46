"""CLI: ``python -m experiments SUBCOMMAND [options]``: the paper's figures, the studies, the
traces' experiments and the main job's seeds, one subcommand each; ``python -m experiments
SUBCOMMAND --help`` lists the options it reads, with its defaults."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from evaluation.parallel import connect_or_exit

from . import budget, cells, hetero, tables
from .figures import FIGURES, run_figure
from .traces import EPISODES as TRACES_EPISODES
from .traces import ROUNDS as TRACES_ROUNDS
from .traces import SEEDS as TRACES_SEEDS

#: the subcommands of model §12's experiments (experiments.traces)
TRACE_COMMANDS = ("traces-tune", "traces-headroom", "traces-sensitivity", "traces-presets", "traces-training",
                  "traces-shares")
#: the most drops (episodes) per point and worker processes a run may ask for
MAX_DROPS, MAX_WORKERS = 100_000, 256


class Bounded(argparse.Action):
    """An integer option (each of its integers, with ``nargs``) from ``low`` to ``high`` (None: no
    bound), refused otherwise in the parser's one line: ``--drops 0 is invalid; allowed: …``."""

    def __init__(self, option_strings, dest, low: int = 0, high: int | None = None, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.low, self.high = low, high

    def __call__(self, parser, namespace, values, option_string=None):
        for v in values if isinstance(values, list) else [values]:
            if v < self.low or (self.high is not None and v > self.high):
                allowed = (f"an integer in {self.low} … {self.high:,}" if self.high is not None else
                           f"{'integers' if isinstance(values, list) else 'an integer'} ≥ {self.low}")
                parser.error(f"{self.option_strings[0]} {v} is invalid; allowed: {allowed}")
        setattr(namespace, self.dest, values)


class ConfigField(argparse.Action):
    """An option that sets the config field ``field``: refused, in the config's own words, where the
    config refuses the value (``--rounds 1 is invalid (config field episode_length=1 …)``)."""

    def __init__(self, option_strings, dest, field: str = "", **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.field = field

    def __call__(self, parser, namespace, value, option_string=None):
        from msenv import resolve_config

        try:
            resolve_config("qwen2.5", **{self.field: value})
        except ValueError as e:
            parser.error(f"{self.option_strings[0]} {value} is invalid ({e})")
        setattr(namespace, self.dest, value)


@dataclass(frozen=True)
class Command:
    """A subcommand: its one-line help, the function that runs it, the options it reads beyond
    ``--out`` and ``--no-progress`` (names of :func:`_option_adders`), the defaults and meanings of
    its drops, rounds and first seed, and what it checks before any work starts (``check``, after
    each option's own check and the seeds')."""

    help: str
    run: Callable[[argparse.ArgumentParser, argparse.Namespace], object]
    options: tuple[str, ...] = ()
    drops: tuple[int, str] = (50, "independent drops per point")
    rounds: tuple[int, str] = (10, "rounds per drop")
    seed: tuple[int, str] = (0, "first drop seed")
    check: Callable[[argparse.ArgumentParser, argparse.Namespace], None] | None = None


#: what adds an option to a subcommand's parser: called with the parser's ``add_argument`` and the command
Adder = Callable[[Callable[..., argparse.Action], Command], object]


def _option_adders() -> dict[str, Adder]:
    """Each option a subcommand may read → how it is added to the subcommand's parser."""
    def add(*flags, **kw):
        return lambda p, c: p(*flags, **kw)

    return {
        "drops": lambda p, c: p("--drops", type=int, default=c.drops[0], action=Bounded, low=1, high=MAX_DROPS,
                                help=f"{c.drops[1]} (default %(default)s)"),
        "rounds": lambda p, c: p("--rounds", type=int, default=c.rounds[0], action=ConfigField,
                                 field="episode_length", help=f"{c.rounds[1]} (default %(default)s)"),
        "seed": lambda p, c: p("--seed", type=int, default=c.seed[0], action=Bounded, low=0,
                               help=f"{c.seed[1]} (default %(default)s)"),
        "workers": add("--workers", type=int, default=2, action=Bounded, low=1, high=MAX_WORKERS,
                       help="processes (default %(default)s)"),
        "ray": add("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="run the drops as Ray tasks: a local Ray instance, or the cluster at ADDRESS "
                        "(e.g. ray://head:10001); same results as a local run"),
        "quick": add("--quick", action="store_true", help="small sweep for tests"),
        "agent": add("--agent", default=None, metavar="DIR",
                     help="a trained agent's directory (adds its row; default: none)"),
        "agents": add("--agent", nargs="*", default=[], metavar="DIR", help="trained agents' directories (any number)"),
        "env-id": add("--env-id", default="msenv/MultiSpin-v0", help="the registered id (default %(default)s)"),
        "runs": add("--runs", default="runs/traces", metavar="DIR",
                    help="the folder of the trained agents (default %(default)s)"),
        "num-devices": add("--num-devices", type=int, default=3, action=ConfigField, field="num_devices",
                           help="K (default %(default)s)"),
        "gamma-max": add("--gamma-max", type=int, default=20, action=ConfigField, field="gamma_max",
                         help="γ_max (default %(default)s)"),
        "readings": add("--readings", nargs="+", default=None, help="only these readings (default all)"),
        "extended": add("--extended", action="store_true",
                        help="Fig 9 also at K = 20 and Fig 11 at all four ratios (≈ 1.6× the work)"),
    }


def _cells_options(p: Callable[..., argparse.Action], c: Command) -> None:
    """The cells sweep's own options: its agents, the MLP agent, the sizes and the cell types."""
    p("--agent", nargs="*", default=[], metavar="[LABEL=]DIR",
      help="agents to compare, any number of LABEL=DIR (a plain DIR is the 'generalist'; default: the committed "
           f"generalist, {cells.DEFAULT_AGENT})")
    p("--mlp-agent", default=None, metavar="DIR",
      help="a per-K MLP agent of the paper cell at K = 20 (train.py's runs/ppo-MultiSpin-v0/agent)")
    p("--ks", type=int, nargs="+", default=None, metavar="K", action=Bounded, low=1,
      help="only these numbers of devices (default " + " ".join(map(str, cells.KS)) + ")")
    p("--kinds", nargs="+", default=None, metavar="TYPE", choices=cells.CELL_TYPES,
      help="only these cell types (default all: " + ", ".join(cells.CELL_TYPES) + ")")


# ---------------------------------------------------------------------- checks before any work
def _check_seeds(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The drops' seeds: a traces experiment's in the validation block (choices are made on
    validation requests and seeds), any other's outside every reserved block."""
    from evaluation.suites import VALIDATION_SEEDS, seed_refusal

    seeds = range(args.seed, args.seed + args.drops)
    if args.command in TRACE_COMMANDS:
        if seeds.start not in VALIDATION_SEEDS or seeds.stop - 1 not in VALIDATION_SEEDS:
            ap.error(f"--seed {args.seed} is invalid for {args.command}: its {args.drops} episodes must draw seeds of "
                     f"the validation block [{VALIDATION_SEEDS.start}, {VALIDATION_SEEDS.stop}) (choices are made on "
                     "validation requests and seeds)")
    elif (refusal := seed_refusal("--seed", args.seed, seeds)) is not None:
        ap.error(refusal)


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


def _fig11_agent(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """fig11 / all: the agent acts in every env of Fig. 11 that plays it."""
    from .figures import QUICK, fig11_jobs

    if args.agent is None:
        return
    params = {**FIGURES["fig11"][1], **(QUICK["fig11"] if args.quick else {})}  # as run_figure builds them
    jobs = fig11_jobs(drops=1, seed=args.seed, rounds=args.rounds, agent=args.agent, **params)
    _check_agent(ap, "--agent", args.agent, [j.config for j in jobs if j.agent])


def _dynamics_agent(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """dynamics: the agent plays the points of its K; one of them has it."""
    from .dynamics import agent_devices, build_jobs

    if args.agent is None:
        return
    _check_agent(ap, "--agent", args.agent, [])  # a directory with an agent, before its K is read
    jobs = [j for j in build_jobs(1, args.seed, args.rounds, args.quick, args.agent) if j.agent]
    if not jobs:
        k = agent_devices(args.agent)
        ks = sorted({j.config.num_devices for j in build_jobs(1, 0, 2, args.quick)})
        ap.error(f"--agent {args.agent}: the dynamics sweep plays an agent at the points of its K, and "
                 + (f"no point has K = {k}" if k else "a cell generator's agent has no K")
                 + f"; allowed: an agent trained at K in {', '.join(map(str, ks))}")
    _check_agent(ap, "--agent", args.agent, [j.config for j in jobs])


def _hetero_agent(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    from msenv import ENV_IDS, resolve_config

    if args.agent is not None:
        _check_agent(ap, "--agent", args.agent, [resolve_config(ENV_IDS[hetero.HETERO], episode_length=args.rounds)])


def _budget_agent(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.agent is not None:
        _check_agent(ap, "--agent", args.agent, [cells.cell_config(kind, k, 2) for kind in budget.KINDS
                                                 for k in budget.KS])


def _table_agents(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    from msenv import env_config

    try:
        configs = [env_config(args.env_id, episode_length=args.rounds)]
    except ValueError as e:
        ap.error(str(e))
    for path in args.agent:
        _check_agent(ap, "--agent", path, configs)


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


def _cells_check(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """cells: every point a valid cell, each agent able to act in one of them at least, the MLP
    agent in the paper cell at K = 20 (where the sweep plays it)."""
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
    for path in table.values():
        _check_agent(ap, "--agent", path, points, any_of=True)
    if args.mlp_agent is not None:
        _check_agent(ap, "--mlp-agent", args.mlp_agent,
                     [cells.cell_config("paper", 20, args.rounds).base.replace(num_devices=20)])


# ---------------------------------------------------------------------- what each subcommand runs
def _progress(args: argparse.Namespace) -> dict:
    return {"progress": not args.no_progress}


def _figures(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    names = list(FIGURES) if args.command == "all" else [args.command]
    for name in names:
        t0 = time.perf_counter()
        extra = {"agent": args.agent} if name == "fig11" and getattr(args, "agent", None) else {}
        rows = run_figure(name, args.out, args.drops, args.seed, args.rounds, args.workers, args.quick,
                          ray_address=args.ray, **_progress(args), **extra)
        print(f"{name}: {len(rows)} points → {args.out}/{name}.csv, {args.out}/{name}.png "
              f"({time.perf_counter() - t0:.0f} s)")


def _gap(ap, args):
    from .gap import run_gap

    run_gap(args.out, args.drops, args.seed, args.num_devices, args.gamma_max, workers=args.workers,
            ray_address=args.ray, **_progress(args))


def _sensitivity(ap, args):
    from .sensitivity import run_sensitivity

    try:
        run_sensitivity(args.out, args.drops, args.seed, args.rounds, args.workers, args.quick, ray_address=args.ray,
                        only=args.readings, extended=args.extended, **_progress(args))
    except ValueError as e:
        ap.error(str(e))


def _dynamics(ap, args):
    from .dynamics import run_dynamics

    run_dynamics(args.out, args.drops, args.seed, args.rounds, args.workers, args.quick, ray_address=args.ray,
                 agent=args.agent, **_progress(args))


def _table(ap, args):
    try:
        tables.run_table(args.env_id, args.out, args.agent, args.drops, args.rounds, args.seed, args.workers,
                         ray_address=args.ray, **_progress(args))
    except ValueError as e:
        ap.error(str(e))


def _hetero(ap, args):
    hetero.run_hetero(args.out, args.drops, args.rounds, args.seed, args.workers, args.agent, args.quick,
                      ray_address=args.ray, **_progress(args))


def _cells(ap, args):
    try:
        cells.run_cells(args.out, args.drops, args.rounds, args.seed, args.workers, cells_agents(args.agent),
                        args.mlp_agent, args.quick, ray_address=args.ray, ks=tuple(args.ks) if args.ks else None,
                        kinds=tuple(args.kinds) if args.kinds else None, **_progress(args))
    except ValueError as e:
        ap.error(str(e))


def _budget(ap, args):
    agent = args.agent or cells.DEFAULT_AGENT
    budget.run_budget(args.out, args.drops, args.seed, args.workers, args.quick, agent=agent, **_progress(args))


def _paired(ap, args):
    try:
        cells.write_paired(args.out)
    except FileNotFoundError as e:
        ap.error(f"--out {args.out}: no cells run there ({e.filename})")
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # JSONDecodeError is a ValueError
        ap.error(f"--out {args.out}: cells.json is not the result of a cells run ({type(e).__name__}: {e})")


def _replot(ap, args):
    from .replot import replot

    try:
        written = replot(args.out)
    except FileNotFoundError as e:
        ap.error(f"--out {args.out}: {e}")
    print("wrote " + ", ".join(map(str, written)))


def _traces(ap, args):
    from . import traces

    if args.command == "traces-presets":
        traces.presets_table(args.out)
    else:
        kw = dict(episodes=args.drops, rounds=args.rounds, seed=args.seed, workers=args.workers, **_progress(args))
        if args.command == "traces-tune":
            traces.tune(args.out, **kw)
        elif args.command == "traces-sensitivity":
            traces.sensitivity(args.out, **kw)
        elif args.command == "traces-training":
            traces.training(args.out, args.runs, **kw)
        else:
            from baselines.tuned import TRACE_TUNED

            traces.headroom(args.out, TRACE_TUNED, **kw)
    print(f"{args.command}: wrote {args.out}")


def _seed_list(text: str) -> list[int]:
    """``0-4`` or ``0,2,5`` as a list of training seeds (argparse type)."""
    try:
        out = []
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid; allowed: seeds as 0-4 or 0,2,5") from None
    if not out or min(out) < 0 or len(set(out)) != len(out):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid; allowed: distinct seeds ≥ 0, as 0-4 or 0,2,5")
    return out


def _agent_training_options(p: Callable[..., argparse.Action], c: Command) -> None:
    """traces-agent's options: its training seeds and the recipe's lengths (for short runs)."""
    from .traces import AGENT_RECIPE

    p("--seeds", type=_seed_list, default=[0, 1, 2, 3, 4], metavar="SEEDS",
      help="training seeds, e.g. 0-4 or 0,2 (default 0-4); each agent goes to --out/traces-capped-s<seed>")
    p("--timesteps", type=int, default=AGENT_RECIPE["timesteps"], action=Bounded, low=0,
      help="PPO rounds per agent (default %(default)s)")
    p("--bc-rounds", type=int, default=AGENT_RECIPE["bc_rounds"], action=Bounded, low=1,
      help="the teacher's rounds per training env (default %(default)s)")
    p("--bc-epochs", type=int, default=AGENT_RECIPE["bc_epochs"], action=Bounded, low=1,
      help="behaviour-cloning epochs (default %(default)s)")


def _traces_agent(ap, args):
    from . import traces

    command = "python -m experiments " + " ".join(sys.argv[1:] or ["traces-agent"])
    traces.train_agents(args.out, args.seeds, command=command, progress=not args.no_progress,
                        timesteps=args.timesteps, bc_rounds=args.bc_rounds, bc_epochs=args.bc_epochs)
    print(f"traces-agent: wrote {args.out}")


def _traces_shares(ap, args):
    from . import traces

    agents = {}
    for spec in args.agent:
        label, _, path = spec.rpartition("=")
        agents.setdefault(label or "agent", []).append(path)
    rows = traces.shares(args.out, agents, split=args.split, episodes=args.drops, rounds=args.rounds, seed=args.seed,
                         workers=args.workers, result=args.result, **_progress(args))
    print(traces.shares_table(rows))
    print(f"traces-shares: wrote {args.out}")


def _shares_options(p: Callable[..., argparse.Action], c: Command) -> None:
    p("--agent-dir", nargs="*", default=[], metavar="[LABEL=]DIR", dest="agent",
      help="a learned method's seeds, LABEL=DIR once per seed (default label 'agent')")
    p("--result", default=None, metavar="FILE",
      help="a traces-v1 result file: its episodes give every controller and learned method it holds (test split); "
           "only the state oracle is played (default: play everything)")
    p("--split", choices=("test", "validation"), default="test",
      help="test: traces-v1's cells and seeds (the page); validation: the presets' validation requests from --seed "
           "(for choosing) (default %(default)s)")


def _main_job_seeds(ap, args):
    from .main_job import run_seeds

    run_seeds(args.out, args.workers, args.quick)


# ---------------------------------------------------------------------- the subcommands
#: the options of a drops sweep (the paper's figures, the studies)
SWEEP = ("drops", "rounds", "seed", "workers", "ray", "quick")
#: the options of a traces experiment (validation seeds, no Ray)
TRACE = ("drops", "rounds", "seed", "workers")
EPISODES = "episodes per cell"


def _trace(name: str, help: str, options: tuple[str, ...] = (), episodes: int = TRACES_EPISODES) -> Command:
    """A traces experiment: validation seeds of its own (:data:`experiments.traces.SEEDS`), 8 × 100 rounds."""
    return Command(help, _traces, options, drops=(episodes, EPISODES), rounds=(TRACES_ROUNDS, "rounds per episode"),
                   seed=(TRACES_SEEDS[name], "first episode seed (in the validation block)"))


FIGURE_HELP = {"fig7": "Fig. 7: the Qwen pair's throughput against P_dl", "fig8": "Fig. 8: the DeepSeek pair's "
               "throughput against P_dl", "fig9": "Fig. 9: mode selection against K (Qwen pair)",
               "fig10": "Fig. 10: mode selection against K (DeepSeek pair)",
               "fig11": "Fig. 11: draft-length control (--agent adds a PPO row)"}
COMMANDS: dict[str, Command] = {
    **{name: Command(FIGURE_HELP[name], _figures, SWEEP + (("agent",) if name == "fig11" else ()),
                     check=_fig11_agent if name == "fig11" else None) for name in FIGURES},
    "all": Command("fig7 … fig11, one after the other (--agent: fig11's)", _figures, (*SWEEP, "agent"),
                   check=_fig11_agent),
    "gap": Command("the greedy's optimality gap against brute force on small instances", _gap,
                   ("drops", "seed", "workers", "ray", "num-devices", "gamma-max")),
    "sensitivity": Command("the paper's claims under each [R] reading (reduced Figs 7, 9 and 11)", _sensitivity,
                           (*SWEEP, "readings", "extended"), drops=(14, "independent drops per point")),
    "dynamics": Command("the controllers under model §11's dynamics (--agent adds a PPO row)", _dynamics,
                        (*SWEEP, "agent"), drops=(20, "independent drops per point"), rounds=(30, "rounds per drop"),
                        check=_dynamics_agent),
    "table": Command("the baselines table of --env-id (and of any --agent)", _table,
                     ("env-id", "drops", "rounds", "seed", "workers", "ray", "agents"),
                     drops=(tables.EPISODES, "episodes"), rounds=(tables.ROUNDS, "rounds per episode"),
                     seed=(tables.SEED, "first episode seed"), check=_table_agents),
    "hetero": Command("why the greedy falls short on heterogeneous devices in a weak cell", _hetero,
                      (*SWEEP, "agent"), drops=(hetero.EPISODES, "episodes"),
                      rounds=(hetero.ROUNDS, "rounds per episode"), seed=(hetero.SEED, "first episode seed"),
                      check=_hetero_agent),
    "cells": Command("the generalist agent against every rival, K from 5 to 400", _cells, (*SWEEP, "cells"),
                     drops=(cells.EPISODES, EPISODES), rounds=(cells.ROUNDS, "rounds per episode"),
                     seed=(cells.SEED, "first episode seed"), check=_cells_check),
    "budget": Command("the best budget action against the best model-based action", _budget,
                      ("drops", "seed", "workers", "quick", "agent"), drops=(budget.EPISODES, EPISODES),
                      seed=(budget.SEED, "first episode seed"), check=_budget_agent),
    "paired": Command("each agent against each rival, episode by episode, from a cells run's --out folder",
                      _paired),
    "replot": Command("redraw the figures of an --out folder from the CSVs a run wrote there, playing nothing",
                      _replot),
    "traces-tune": _trace("traces-tune", "every adaptive rule's tunables chosen on each trace preset's "
                          "validation requests (writes baselines/tuned.py)", TRACE),
    "traces-headroom": _trace("traces-headroom", "every rule, the best fixed draft length and the clairvoyant "
                              "reference on each preset's validation requests", TRACE),
    "traces-sensitivity": _trace("traces-sensitivity", "the same headroom as the drafting cost and the DL budget "
                                 "change", TRACE, episodes=4),
    "traces-presets": _trace("traces-presets", "each fitted preset's bank beside the published figures"),
    "traces-training": _trace("traces-training", "the trace agents of the ablation (the budget policy at H = 1, 4, "
                              "16, the per-device policy at H = 4, the budget policy at H = 4 with 3× the rounds), "
                              "trained under --runs (unless there) and scored on validation requests (rows already in "
                              "the CSV kept)", (*TRACE, "runs")),
    "traces-shares": Command("each controller's share of the clairvoyant's gain over the best fixed draft length "
                             "per trace preset (filter + LS, KM + LS, the state oracle, --agent seeds), 95 %% "
                             "bootstrap intervals", _traces_shares, ("shares", *TRACE),
                             drops=(10, "episodes per preset (validation only; test: the suite's)"),
                             rounds=(TRACES_ROUNDS, "rounds per episode (validation only)"),
                             seed=(TRACES_SEEDS["traces-shares"], "first validation episode seed")),
    "traces-agent": Command("the capped trace agents: behaviour cloning from trace-filter-ls on the presets' "
                            "training requests, then PPO (one agent per training seed, one after the other)",
                            _traces_agent, ("agent-training",)),
    "main-job-seeds": Command("python train.py's defaults on training seeds 0–4, each against the best rule: "
                              "--out/main_job_seeds.csv", _main_job_seeds, ("workers", "quick")),
}

class ExperimentsParser(argparse.ArgumentParser):
    """``python -m experiments``'s parser: an option that another subcommand reads, given to one
    that does not, is refused naming the subcommands that read it (rather than ignored)."""

    #: each subcommand's parser, and the option strings it reads
    subcommands: dict[str, argparse.ArgumentParser]
    flags: dict[str, set[str]]

    def parse_args(self, args=None, namespace=None):
        words = list(sys.argv[1:] if args is None else args)
        if words and words[0].startswith("-") and words[0] not in ("-h", "--help"):
            self.error(f"{words[0]} is given before the subcommand; allowed: python -m experiments SUBCOMMAND "
                       "[options] (each subcommand's --help lists its options)")
        ns, extras = self.parse_known_args(words, namespace)
        if extras:
            flag = next((e.partition("=")[0] for e in extras if e.startswith("-")), None)
            users = [name for name, flags in self.flags.items() if flag in flags]
            sub = self.subcommands[ns.command]
            if users:
                sub.error(f"{flag} is not used by {ns.command}; allowed with: {', '.join(users)}")
            sub.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns


def build_parser() -> ExperimentsParser:
    """The command line of ``python -m experiments``: one subparser per :data:`COMMANDS` entry."""
    ap = ExperimentsParser(prog="python -m experiments", description=__doc__)
    subs = ap.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    adders = {**_option_adders(), "cells": _cells_options, "agent-training": _agent_training_options,
               "shares": _shares_options}
    ap.subcommands, ap.flags = {}, {}
    for name, c in COMMANDS.items():
        # no abbreviations: an option of another subcommand (--seed) must not pass as a prefix of
        # one of this one's (--seeds)
        described = (c.help[0].upper() + c.help[1:] + ".").replace("%%", "%")  # a help text writes % as %%
        p = subs.add_parser(name, help=c.help, description=described, allow_abbrev=False)
        flags = ap.flags[name] = set()

        def add(*args, _p=p, _flags=flags, **kwargs):
            action = _p.add_argument(*args, **kwargs)
            _flags.update(action.option_strings)
            return action

        add("--out", default="results", help="output directory (default %(default)s)")
        for option in c.options:
            adders[option](add, c)
        add("--no-progress", action="store_true", help="no progress bar")
        ap.subcommands[name] = p
    return ap


def parse_args(ap: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """``argv`` parsed by ``build_parser()``'s parser and checked before any work starts: the drops'
    seeds, and what the subcommand checks itself (its agents, its cells)."""
    args = ap.parse_args(argv)
    sub, command = ap.subcommands[args.command], COMMANDS[args.command]
    if "seed" in command.options:
        _check_seeds(sub, args)
    if command.check is not None:
        command.check(sub, args)
    return args


def main(argv: list[str] | None = None) -> int:
    """Parse and check ``argv``, connect to Ray when ``--ray`` asks, and run the subcommand (0)."""
    ap = build_parser()
    args = parse_args(ap, argv)
    sub = ap.subcommands[args.command]
    connect_or_exit(sub, getattr(args, "ray", None))
    from evaluation.parallel import run_stoppable

    run = COMMANDS[args.command].run
    return run_stoppable(sub, lambda: run(sub, args) or 0,
                         "every worker ended; the files already written stay as they are")


if __name__ == "__main__":
    sys.exit(main())
