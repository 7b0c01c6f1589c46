"""The entries of a comparison, built and checked before any episode starts: controllers by name,
saved agents through the agent loader installed under the ``msenv.agents`` entry point (msenv's
own: PPO from ``train.py``, so evaluation never imports an agent package), and the paired run
that prints and writes their summary (:func:`run_and_report`, what ``python -m evaluation.evaluate``
and ``python -m experiments table`` do)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from baselines import REGISTRY, Fixed

from .harness import ControllerFactory, Entry, agent_label, evaluate, parse_entry
from .report import print_table, summarize, write_csv, write_json

#: the entry-point group of agent loaders: ``name = "package.module:Factory"``, where
#: ``Factory(path, label)`` is a picklable callable returning a controller
AGENT_LOADERS = "msenv.agents"


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
    gamma_max = config.gamma_max
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
    """One line per controller name an entry may have (from the registry's docstrings)."""
    lines = []
    for name, cls in REGISTRY.items():
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        lines.append(f"  {name:<18} {' '.join(doc.split())}")
    lines.append(f"  {'fixed-<γ>':<18} γ_k = γ for every device, every round (e.g. fixed-4).")
    return "\n".join(lines)


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


__all__ = ["AGENT_LOADERS", "agent_loader", "check_agent_dir", "check_entries", "controller_help", "make_entries",
           "run_and_report"]
