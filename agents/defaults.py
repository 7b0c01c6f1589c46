"""``train.py``'s defaults per env id (as rl-zoo3 keeps hyperparameters per id): the options an
id trains best with, each measured against the same held-out episodes (the docs' "Learning"
results page). An option given on the command line wins; ids not listed use the main job's
defaults (``agents.ppo.DEFAULT_PPO``, an MLP policy, 500k steps)."""

from __future__ import annotations

from typing import Any

#: env id → train.py options (argparse destinations)
ID_DEFAULTS: dict[str, dict[str, Any]] = {}


def id_defaults(env_id: str) -> dict[str, Any]:
    """The options ``env_id`` trains with unless told otherwise."""
    return dict(ID_DEFAULTS.get(env_id, {}))
