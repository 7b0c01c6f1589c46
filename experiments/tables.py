"""The baselines table of a registered id: every controller that applies to it (and any trained
agents) on the same held-out episodes, paired per episode against the id's reference controller.

``python -m experiments table --env-id msenv/MultiSpin-v0 --agent runs/ppo-MultiSpin-v0/agent``
writes ``<out>/<id name>.csv`` (the summary: long-run throughput with 95% CIs, its ratio to the
reference paired per episode, decision time) and a ``.json`` beside it with every episode.
The documentation's per-id tables are these files.
"""

from __future__ import annotations

from pathlib import Path

from evaluation.entries import make_entries, run_and_report
from msenv import DYNAMIC_IDS, ENV_IDS, TRACE_IDS, resolve_config

#: the table's episodes: held out from training (train.py evaluates on seeds 10000..)
EPISODES, ROUNDS, SEED = 50, 30, 20_000
#: the paper's controllers and ours that run on every id (the first is the reference)
PAPER_CONTROLLERS = ("greedy-saa", "optimal-uniform", "computation-only", "local-search", "fixed-4", "random")
#: on the model §11 ids the greedy acts on what a server observes (plug-in); ours and the oracle join
DYNAMIC_CONTROLLERS = ("plug-in-greedy", "bayes-saa", "oracle-greedy", "optimal-uniform", "computation-only",
                       "local-search", "fixed-4")


#: on a trace id (model §12) the greedy plans on the request's acceptance so far (plug-in); the adaptive
#: rules, the best fixed draft length and the clairvoyant reference join
TRACE_CONTROLLERS = ("greedy-saa", "km-greedy", "trace-filter-saa", "hf-heuristic", "hf-budget", "ucb-lengths",
                     "ucb-budget", "last-outcome", "best-fixed", "clairvoyant")


def controllers_for(env_id: str) -> tuple[str, ...]:
    """The controllers of ``env_id``'s table, its reference first."""
    if env_id in TRACE_IDS:
        return TRACE_CONTROLLERS
    return DYNAMIC_CONTROLLERS if env_id in DYNAMIC_IDS else PAPER_CONTROLLERS


def table_name(env_id: str) -> str:
    """The file name (without suffix) of ``env_id``'s table."""
    return env_id.split("/")[-1]


def command(env_id: str, agent: str | list[str] | None = None, out: str = "docs/figures/tables") -> str:
    """The command line that writes ``env_id``'s table."""
    agents = [agent] if isinstance(agent, str) else list(agent or [])
    extra = f" --agent {' '.join(agents)}" if agents else ""
    return f"python -m experiments table --env-id {env_id}{extra} --workers 2 --out {out}"


def run_table(env_id: str, out: str | Path, agents: list[str] = (), episodes: int = EPISODES, rounds: int = ROUNDS,
              seed: int = SEED, workers: int = 1, progress: bool = True, ray_address: str | None = None) -> list[dict]:
    """Evaluate every controller of ``env_id`` (and ``agents``) on the same episodes; write the
    summary CSV and the episodes' JSON to ``out``; return the summary rows."""
    if env_id not in ENV_IDS:
        raise ValueError(f"--env-id {env_id!r} is not registered; allowed: {', '.join(ENV_IDS)}")
    cfg = resolve_config(ENV_IDS[env_id], episode_length=rounds)
    entries = make_entries(controllers_for(env_id), agents)
    return run_and_report(entries, cfg, episodes, seed, Path(out) / f"{table_name(env_id)}.csv",
                          f"{env_id}, {episodes} episodes × {rounds} rounds, seeds {seed}..", workers, progress,
                          ray_address, meta={"env_id": env_id, "command": command(env_id, list(agents))})
