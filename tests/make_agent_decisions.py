"""Record tests/data/agent_decisions.npz: every committed agent's draft lengths, round by round, on
fixed episodes of its own cells. ``test_agent_decisions.py`` holds each agent to its recording, so
a change to the environment, the observation or the decision code that alters any committed
agent's decisions fails. Run only to record a *new* agent: ``python tests/make_agent_decisions.py``;
recorded agents keep their recording."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PATH = Path(__file__).parent / "data" / "agent_decisions.npz"
COMMITTED = sorted(p.parent for p in (ROOT / "agents" / "pretrained").rglob("agent.json"))
ROUNDS, SEEDS = 4, (7, 8)


def cells(path: Path) -> dict[str, object]:
    """The configs an agent is recorded on: its own training config, and for a cell generator two
    fixed sizes inside its k_max."""
    from agents.controller import load_config

    cfg = load_config(json.loads((path / "agent.json").read_text())["config"])
    if not hasattr(cfg, "k_range"):
        return {"own": cfg.replace(episode_length=ROUNDS)}
    small, large = 5, min(cfg.k_max, 37)
    return {f"k{k}": cfg.replace(k_range=(k, k), episode_length=ROUNDS) for k in (small, large)}


def decisions(path: Path) -> dict[str, np.ndarray]:
    """``{cell/seed: (rounds, K) draft lengths}`` of the agent in ``path``."""
    from agents import load_agent
    from evaluation.harness import play

    agent = load_agent(path)
    out = {}
    for name, cfg in cells(path).items():
        for seed in SEEDS:
            out[f"{name}/{seed}"] = np.array([g for _, g, _, _, _ in play(agent, cfg, seed)], dtype=np.int64)
    return out


def key(path: Path) -> str:
    return str(path.relative_to(ROOT))


def main() -> None:
    old = dict(np.load(PATH)) if PATH.exists() else {}
    data = dict(old)
    for path in COMMITTED:
        if any(k.startswith(key(path) + "/") for k in old):
            continue  # recorded: never re-recorded
        for k, v in decisions(path).items():
            data[f"{key(path)}/{k}"] = v
    PATH.parent.mkdir(exist_ok=True)
    np.savez_compressed(PATH, **data)
    print(f"wrote {PATH} ({len(data)} arrays)")


if __name__ == "__main__":
    main()
