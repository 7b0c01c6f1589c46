"""``train.py``'s defaults per env id (as rl-zoo3 keeps hyperparameters per id): the options an
id trains best with, each measured against the same held-out episodes (the docs' "Learning"
results page). An option given on the command line wins; ids not listed use the main job's
defaults (``agents.ppo.DEFAULT_PPO``, an MLP policy, 500k steps)."""

from __future__ import annotations

from typing import Any

#: env id → train.py options (argparse destinations). On the Hetero cells the device-set policy
#: is 1.09× the greedy where the MLP is 0.88× (500k steps each, the same held-out episodes;
#: 1M steps: 1.091×, the defaults below)
ID_DEFAULTS: dict[str, dict[str, Any]] = {
    "msenv/MultiSpin-Hetero-v0": {"policy": "set", "timesteps": 1_000_000},
    "msenv/MultiSpin-Hetero-DR-v0": {"policy": "set"},
    "msenv/MultiSpin-Cells-v0": {"policy": "budget", "reward": "counterfactual", "timesteps": 500_000},
}
#: env id → config fields the id trains on unless the command line sets them (``--set`` or a flag).
#: The fields of one group go together: setting any of them leaves the whole group to the user.
ID_CONFIG: dict[str, tuple[dict[str, Any], ...]] = {
    # the generalist trains on cells of 5 to 200 devices, small ones as common as large ones, 20
    # rounds each (five times the cells per update of the id's 100-round episodes), with devices
    # 100–800 m from the server (the id's 100–500 m left it behind the local search where devices
    # are far: docs/results/cells-tried.md)
    "msenv/MultiSpin-Cells-v0": ({"k_range": (5, 200), "k_max": 200, "k_law": "log_uniform"},
                                 {"episode_length": 20}, {"distance_range_m": (100.0, 800.0)}),
}
#: env id → controllers train.py's final table adds to its baselines (the best known rival there)
ID_BASELINES: dict[str, tuple[str, ...]] = {
    "msenv/MultiSpin-Hetero-v0": ("local-search",),
    "msenv/MultiSpin-Hetero-DR-v0": ("local-search",),
}


def id_baselines(env_id: str) -> tuple[str, ...]:
    """The controllers ``train.py`` adds to its table on ``env_id``."""
    return ID_BASELINES.get(env_id, ())


def id_defaults(env_id: str) -> dict[str, Any]:
    """The options ``env_id`` trains with unless told otherwise."""
    return dict(ID_DEFAULTS.get(env_id, {}))


def id_config(env_id: str, given) -> dict[str, Any]:
    """The config fields ``env_id`` trains on (:data:`ID_CONFIG`) where none of their group is
    among ``given`` (the fields the command line sets)."""
    out: dict[str, Any] = {}
    for group in ID_CONFIG.get(env_id, ()):
        if not set(group) & set(given):
            out.update(group)
    return out
