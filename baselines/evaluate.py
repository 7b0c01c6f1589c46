"""Compare controllers and trained agents on the same episodes (paired seeds).

Every entry plays episodes with seeds ``--seed .. --seed + episodes − 1``; the table gives each
metric's mean ± 95% CI over episodes and the throughput relative to the first entry, paired per
episode. An entry ``name@policy`` runs the environment (and the controller's SAA) under the
reactive policy ``policy`` (optimal, all_ul, all_dl, random). ``--agent DIR`` adds a saved agent:
it is loaded by the agent loader installed under the ``msenv.agents`` entry-point group (msenv's
own: PPO from ``train.py``), so this command does not depend on any agent package.

Example: ``python -m baselines.evaluate --controllers greedy-saa optimal-uniform fixed-4 --episodes 5``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import asdict
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from msenv import env_config, resolve_config
from msenv.config import parse_overrides

from . import REGISTRY
from .harness import Entry, agent_label, evaluate, parse_entry
from .parallel import connect_or_exit
from .report import print_table, summarize, write_csv, write_json

#: the entry-point group of agent loaders: ``name = "package.module:Factory"``, where
#: ``Factory(path, label)`` is a picklable callable returning a controller
AGENT_LOADERS = "msenv.agents"
DEFAULT_CONTROLLERS = ("greedy-saa", "optimal-uniform", "computation-only", "local-search", "fixed-4")


def agent_loader(kind: str = "ppo") -> Callable:
    """The agent factory class installed under ``msenv.agents`` as ``kind``."""
    found = {ep.name: ep for ep in entry_points(group=AGENT_LOADERS)}
    if kind not in found:
        raise ValueError(f"no agent loader {kind!r} is installed (entry-point group {AGENT_LOADERS!r}: "
                         f"{', '.join(found) or 'none'}); msenv's PPO loader needs: pip install 'msenv[train]'")
    return found[kind].load()


def check_agent_dir(path: str | Path, flag: str = "--agent") -> None:
    """Refuse (``ValueError`` naming ``flag`` and ``path``) a directory that holds no saved agent."""
    if not (Path(path) / "agent.json").exists():
        raise ValueError(f"{flag} {path}: no saved agent there (expected agent.json and policy.npz)")


def check_entries(entries: Sequence[Entry], config, flag: str = "--agent") -> None:
    """Refuse (``ValueError``), before any episode starts, an entry that cannot play in the env of
    ``config``: an agent whose observation or draft lengths differ (the message starts with
    ``flag``; agent loaders with a ``check(config)`` method are asked — msenv's PPO loader has
    one —, others are trusted), or a ``fixed-<γ>`` beyond the config's ``gamma_max``."""
    from .harness import ControllerFactory
    from .simple import Fixed

    gamma_max = getattr(config, "base", config).gamma_max
    for e in entries:
        if isinstance(e.factory, ControllerFactory):
            ctrl = e.factory()
            if isinstance(ctrl, Fixed) and ctrl.gamma > gamma_max:
                raise ValueError(f"controller {e.label!r} drafts {ctrl.gamma} tokens; this env allows 0..{gamma_max} "
                                 f"(gamma_max={gamma_max})")
            continue
        check = getattr(e.factory, "check", None)
        if callable(check):
            try:
                check(config)
            except ValueError as err:
                raise ValueError(f"{flag} {err}") from None


def controller_help() -> str:
    """One line per name ``--controllers`` accepts (from the registry's docstrings)."""
    lines = []
    for name, cls in REGISTRY.items():
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        lines.append(f"  {name:<18} {' '.join(doc.split())}")
    lines.append(f"  {'fixed-<γ>':<18} γ_k = γ for every device, every round (e.g. fixed-4).")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m baselines.evaluate``."""
    ap = argparse.ArgumentParser(prog="python -m baselines.evaluate", description=__doc__,
                                 epilog="controllers (--controllers NAME or NAME@policy):\n" + controller_help(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--controllers", nargs="+", default=list(DEFAULT_CONTROLLERS), metavar="NAME",
                    help="entries: a controller name (listed below), optionally @policy (default: %(default)s)")
    ap.add_argument("--preset", default="qwen2.5", help="qwen2.5 | deepseek-r1 (ignored with --env-id)")
    ap.add_argument("--env-id", default=None, help="a registered id, e.g. msenv/MultiSpin-Dynamic-v0 (its config), or the cell generator "
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
    ap.add_argument("--out", default="results/evaluate.csv", help="where the summary table is written as CSV, relative to the current directory; the "
                    "folder is created if needed and a file there is overwritten (default: "
                    "results/evaluate.csv); a .json beside it holds the config and every episode")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def make_entries(controllers: Sequence[str], agents: Sequence[str] = ()) -> list[Entry]:
    """Harness entries for controller names (``name`` or ``name@policy``) and saved agents' directories
    (labelled ``ppo:<run>``); a bad name or a directory without an agent raises ``ValueError``."""
    entries = [parse_entry(s) for s in controllers]
    for path in agents:
        label = agent_label(path, [e.label for e in entries])
        check_agent_dir(path)
        entries.append(Entry(label, agent_loader()(path, label)))
    return entries


def run_and_report(entries: Sequence[Entry], config, episodes: int, seed: int, out: str | Path, title: str,
                   workers: int = 1, progress: bool = True, ray_address: str | None = None,
                   meta: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Evaluate ``entries`` on the same episodes, print the table, write the summary CSV to ``out``
    and a JSON beside it (config, ``meta``, summary, every episode); return the summary rows."""
    results = evaluate(entries, config, episodes, seed, workers, progress=progress, ray_address=ray_address)
    rows = summarize(results)
    print_table(rows, title=title)
    write_csv(rows, out)
    write_json({**(meta or {}), "config": config.to_dict(), "summary": rows, "episodes": [asdict(r) for r in results]},
               Path(out).with_suffix(".json"))
    print(f"wrote {out}")
    return rows


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
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
        entries = make_entries(args.controllers, args.agent)
        check_entries(entries, cfg)
    except (ValueError, TypeError) as e:
        ap.error(str(e))
    connect_or_exit(ap, args.ray)
    title = f"{args.env_id or args.preset}, {args.episodes} episodes × {cfg.episode_length} rounds, seeds {args.seed}.."
    return run_and_report(entries, cfg, args.episodes, args.seed, args.out, title, args.workers,
                          progress=not args.no_progress, ray_address=args.ray)


if __name__ == "__main__":
    main()
