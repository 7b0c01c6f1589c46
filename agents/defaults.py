"""The one source of training defaults: :data:`MAIN_JOB`, the settings every env id trains with,
and :data:`PER_ID`, what an id changes (as rl-zoo3 keeps hyperparameters per id). A setting given
on the command line, or to :class:`agents.training.TrainingConfig`, wins over both; a smoke run
(``--quick``) takes :data:`QUICK` first. ``train.py``, ``agents.make_ppo`` and rl-zoo3's
``agents/hyperparams/ppo.yml`` (generated from this table: ``python -m agents.hyperparams``) all
read their numbers here. Each number was measured against the same held-out episodes (the docs'
"Learning" results page).

To give an id new defaults, edit (or add) its row of :data:`PER_ID`, then regenerate the YAML."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from msenv import layout_of
from msenv.config import DynamicsConfig

#: every id's settings unless its row of :data:`PER_ID` says otherwise (the main job, ``python
#: train.py`` on msenv/MultiSpin-v0, changes the policy, its epochs, learning rate and budget), each a
#: field of :class:`agents.training.TrainingConfig`. The default scenario is a contextual bandit (rounds are
#: independent given the observed context, and actions do not move the next context), so the
#: discount is 0 and the advantage is reward − V(obs); the other PPO values follow SB3's defaults
#: unless measured better. ``gae_lambda`` follows ``gamma``: 0 where it is 0, else 0.95.
MAIN_JOB: dict[str, Any] = dict(
    policy="mlp",  # an MLP over the flat observation
    reward="goodput",  # the env's per-round N/T
    timesteps=500_000,
    n_envs=16,
    action_prior=0.3,  # the untrained policy's logits −0.3·γ: short drafts first
    learning_rate=3e-4,
    n_steps=64,
    batch_size=256,
    n_epochs=10,
    gamma=0.0,
    clip_range=0.2,
    ent_coef=0.0,
    vf_coef=0.5,
    max_grad_norm=0.5,
    net_arch=(128, 128),  # the MLP's hidden layers, actor and critic alike
    eval_episodes=10,
    eval_freq=50_000,
    checkpoint_freq=250_000,
)

#: env id → its row: the settings (fields of :class:`agents.training.TrainingConfig`) it trains
#: with where they differ from :data:`MAIN_JOB`, and two keys of its own: ``config``, groups of
#: env config fields it trains on (the fields of one group go together: a run that sets any of
#: them leaves the whole group to the run), and ``rivals``, controllers ``train.py``'s table adds
#: to its baselines (the best known rival there).
PER_ID: dict[str, dict[str, Any]] = {
    # the main job: the device-set policy (one network shared by every device),
    # 4 epochs at learning rate 1e-3, reaches the best rule in 75k steps — median
    # 1.0011, lowest 0.9982 of its throughput over training seeds 0–4 on validation
    # episodes (50k steps: median 0.9985, lowest 0.9948; SB3's 10 epochs at 3e-4,
    # 100k steps: lowest 0.9943; MAIN_JOB's MLP, 500k steps: 0.982 on paper-v1).
    # Every candidate: python -m experiments.main_job candidates; the five seeds of
    # these defaults: python -m experiments main-job-seeds
    "msenv/MultiSpin-v0": {
        "policy": "set", "n_epochs": 4, "learning_rate": 1e-3, "timesteps": 75_000,
    },
    # on the Hetero cells the device-set policy is 1.09× the greedy where the MLP is
    # 0.88× (500k steps each, the same held-out episodes; 1M steps: 1.091×)
    "msenv/MultiSpin-Hetero-v0": {
        "policy": "set", "timesteps": 1_000_000, "rivals": ("local-search",),
    },
    "msenv/MultiSpin-Hetero-DR-v0": {"policy": "set", "rivals": ("local-search",)},
    # the generalist trains on cells of 5 to 200 devices, small ones as common as
    # large ones, 20 rounds each (five times the cells per update of the id's
    # 100-round episodes), with devices 100–800 m from the server (the id's
    # 100–500 m left it behind the local search where devices are far:
    # docs/results/cells-tried.md)
    "msenv/MultiSpin-Cells-v0": {
        "policy": "budget", "reward": "counterfactual", "timesteps": 500_000,
        "config": ({"k_range": (5, 200), "k_max": 200, "k_law": "log_uniform"},
                   {"episode_length": 20}, {"distance_range_m": (100.0, 800.0)}),
    },
}

#: a smoke run's settings (``--quick``): a tiny budget that checks every phase runs, saves and
#: reloads; ``episode_length`` is an env config field
QUICK: dict[str, Any] = dict(timesteps=4096, n_envs=8, eval_episodes=2, eval_freq=2048, checkpoint_freq=4096,
                             episode_length=50)

#: the controllers of the held-out comparison (greedy-saa first: the table is relative to it)
BASELINES = ("greedy-saa", "optimal-uniform", "computation-only", "fixed-4")
#: added on the model §11 ids (there greedy-saa is the plug-in greedy: posterior-mean α, gains as shown)
DYNAMIC_BASELINES = ("oracle-greedy", "bayes-saa")
#: the keys of a :data:`PER_ID` row that are not settings
ROW_KEYS = ("config", "rivals")
#: the settings SB3's ``PPO`` takes as keywords, as they are named there
PPO_KEYS = ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef",
            "vf_coef", "max_grad_norm")


def id_settings(env_id: str) -> dict[str, Any]:
    """The settings ``env_id`` trains with: :data:`MAIN_JOB` updated by its row of :data:`PER_ID`."""
    row = PER_ID.get(env_id, {})
    return {**MAIN_JOB, **{k: v for k, v in row.items() if k not in ROW_KEYS}}


def gae_lambda_for(gamma: float) -> float:
    """GAE's λ where none is given: 0 with the bandit's zero discount (the advantage is then the
    reward minus the value), else 0.95 (SB3's)."""
    return 0.95 if gamma > 0 else 0.0


def ppo_kwargs(settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """SB3 ``PPO``'s keyword arguments of ``settings`` (any of :data:`MAIN_JOB`'s keys and
    ``gae_lambda``, ``policy_kwargs``; the rest from :data:`MAIN_JOB`): the values of
    :data:`PPO_KEYS` and ``policy_kwargs`` — ``net_arch`` as the actor's and the critic's layers,
    updated by the settings' own ``policy_kwargs``."""
    s = {**MAIN_JOB, **(settings or {})}
    if s.get("gae_lambda") is None:
        s["gae_lambda"] = gae_lambda_for(s["gamma"])
    arch = [int(n) for n in s["net_arch"]]
    out = {k: s[k] for k in PPO_KEYS}
    out["policy_kwargs"] = {"net_arch": {"pi": arch, "vf": list(arch)}, **(s.get("policy_kwargs") or {})}
    return out


def id_config(env_id: str, given: Iterable[str]) -> dict[str, Any]:
    """The config fields ``env_id`` trains on (its row's ``config`` groups) where none of a group's
    fields is among ``given`` (the fields the run sets)."""
    given = set(given)
    out: dict[str, Any] = {}
    for group in PER_ID.get(env_id, {}).get("config", ()):
        if not set(group) & given:
            out.update(group)
    return out


def id_baselines(env_id: str) -> tuple[str, ...]:
    """The controllers ``train.py`` adds to its table on ``env_id`` (its row's ``rivals``)."""
    return tuple(PER_ID.get(env_id, {}).get("rivals", ()))


def id_defaults(env_id: str) -> dict[str, Any]:
    """The settings ``env_id``'s row changes (without its ``config`` and ``rivals``)."""
    return {k: v for k, v in PER_ID.get(env_id, {}).items() if k not in ROW_KEYS}


def default_baselines(env_id: str, config) -> tuple[str, ...]:
    """The controllers of the held-out comparison unless the run names them: :data:`BASELINES`,
    :data:`DYNAMIC_BASELINES` on a single cell with the model §11 dynamics (on a cell generator of
    up to 200 devices they would take hours: at K = 100 one decision of bayes-saa took 109 s, of
    oracle-greedy 40 s), and the id's rivals (:func:`id_baselines`)."""
    dynamic = not layout_of(config).masked and config.dynamics != DynamicsConfig()
    return BASELINES + (DYNAMIC_BASELINES if dynamic else ()) + id_baselines(env_id)


# ---------------------------------------------------------------------- the names of msenv 0.6
#: the release that drops the old names of this module and of ``agents.ppo``
REMOVED_IN = "0.7"


def _old_tables() -> dict[str, tuple[Any, str]]:
    """The tables this module had until msenv 0.6 → (their value, read from :data:`PER_ID`; the new name)."""
    return {
        "ID_DEFAULTS": ({i: id_defaults(i) for i in PER_ID if id_defaults(i)}, "agents.defaults.PER_ID (its settings)"),
        "ID_CONFIG": ({i: r["config"] for i, r in PER_ID.items() if "config" in r},
                      "agents.defaults.PER_ID (each row's 'config')"),
        "ID_BASELINES": ({i: r["rivals"] for i, r in PER_ID.items() if "rivals" in r},
                         "agents.defaults.PER_ID (each row's 'rivals')"),
    }


def deprecated(old: str, new: str, stacklevel: int = 3) -> None:
    """The DeprecationWarning of the old name ``old`` (now ``new``), attributed to the caller's line."""
    warnings.warn(f"{old} is {new} since msenv 0.6 (the old name is removed in msenv {REMOVED_IN})",
                  DeprecationWarning, stacklevel=stacklevel)


def __getattr__(name: str):
    """``ID_DEFAULTS``, ``ID_CONFIG`` and ``ID_BASELINES``: read from :data:`PER_ID`, with a
    DeprecationWarning naming it."""
    old = _old_tables()
    if name in old:
        deprecated(f"agents.defaults.{name}", old[name][1])
        return old[name][0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BASELINES", "DYNAMIC_BASELINES", "MAIN_JOB", "PER_ID", "PPO_KEYS", "QUICK", "ROW_KEYS", "default_baselines",
           "gae_lambda_for", "id_baselines", "id_config", "id_defaults", "id_settings", "ppo_kwargs"]
