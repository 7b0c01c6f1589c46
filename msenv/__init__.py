"""msenv: Gymnasium environment for multi-access speculative inference (Multi-SPIN).

``import msenv`` registers every id of :data:`ENV_IDS` (idempotently); :data:`ENV_NOTES` says
what each is for, and the documentation has a page per id: the paper's scenario with either
model pair, the model-§11 dynamics (hidden acceptance, moving users), and heterogeneous devices
in a weak cell.
"""

from __future__ import annotations

import gymnasium

from .model.numeric import compile_notice

with compile_notice("msenv's numeric kernels"):  # numpy ufuncs of the model, built at import
    from .config import PRESETS, CellConfig, DynamicsConfig, EnvSpec, SystemConfig, preset, resolve_config, resolve_spec
    from .config.deprecation import install
    from .engine.base import INFO_KEYS
    from .engine.context import RoundContext
    from .envs.env import MultiSpinEnv
    from .envs.shell import layout_of, make_env, make_vector_env

__version__ = "0.5.0"  #: the one version string (pyproject.toml reads it)

_STATIC = dict(channel_dynamics="gauss_markov", speed_range_mps=(0.0, 0.05), csi="decision")
_PEDESTRIAN = dict(channel_dynamics="gauss_markov", speed_range_mps=(0.5, 1.5), csi="decision")
_HIDDEN_REQUESTS = dict(alpha_dynamics="request", alpha_observed=False)
#: heterogeneous devices (drafting up to 2× slower than the reference) in a weak cell
_HETERO = dict(draft_scale_range=(1.0, 2.0), p_dl_dbm=10.0)
#: acceptance from traces (model §12): a bank of the fitted model by default; γ_max below every
#: preset's cap (the smallest, gsm8k-EAGLE's, is 16)
_TRACES = dict(trace_source="cnn-ngram", gamma_max=12)

#: the single-cell ids → their config (a preset name, or a dict of fields with its ``preset``)
_SINGLE_CELL: dict[str, str | dict] = {
    "msenv/MultiSpin-v0": "qwen2.5",
    "msenv/MultiSpin-DeepSeek-v0": "deepseek-r1",
    "msenv/MultiSpin-HiddenAlpha-v0": dict(preset="qwen2.5", **_STATIC, **_HIDDEN_REQUESTS),
    "msenv/MultiSpin-Mobile-v0": dict(preset="qwen2.5", **_PEDESTRIAN),
    "msenv/MultiSpin-Dynamic-v0": dict(preset="qwen2.5", **_PEDESTRIAN, alpha_dynamics="markov", alpha_observed=False),
    "msenv/MultiSpin-Dynamic-Small-v0": dict(preset="qwen2.5", **_PEDESTRIAN, alpha_dynamics="markov",
                                             alpha_observed=False, num_devices=6, p_dl_dbm=15.0,
                                             alpha_concentration=5.0),
    "msenv/MultiSpin-Hetero-v0": dict(preset="qwen2.5", **_HETERO),
    "msenv/MultiSpin-Hetero-DR-v0": dict(preset="qwen2.5", **_HETERO, p_dl_dbm_range=(10.0, 20.0),
                                         p_ul_dbm_range=(10.0, 20.0)),
    "msenv/MultiSpin-Traces-v0": dict(preset="qwen2.5", **_TRACES),
}
#: the cell-generator ids → their :class:`~msenv.config.CellConfig` (a dict of its fields): a new cell,
#: with its own number of devices, every episode
_GENERATORS: dict[str, dict] = {
    "msenv/MultiSpin-Cells-v0": dict(preset="qwen2.5", k_range=(5, 50), k_max=50, draft_scale_max_range=(1.15, 2.0),
                                     p_ul_dbm_range=(10.0, 20.0), p_dl_dbm_range=(10.0, 30.0)),
}
#: every registered id → its config's source (a preset name, or a dict of fields:
#: :func:`~msenv.config.resolve_spec` makes the config — a SystemConfig, or a cell generator's CellConfig)
ENV_IDS: dict[str, str | dict] = {**_SINGLE_CELL, **_GENERATORS}
#: what each id is for, in one line (its documentation page starts with it)
ENV_NOTES: dict[str, str] = {
    "msenv/MultiSpin-v0": "The paper's scenario with the Qwen2.5-0.5B → Qwen2.5-14B pair: K = 20 devices, "
                          "i.i.d. block fading seen exactly, each device's α fixed by its task.",
    "msenv/MultiSpin-DeepSeek-v0": "The paper's scenario with the R1-Distill-Qwen-1.5B → 32B pair (slower "
                                   "drafting and verification, lower acceptance on chat tasks).",
    "msenv/MultiSpin-HiddenAlpha-v0": "(Quasi-)static devices (v ≤ 0.05 m/s, f_D ≤ 0.6 Hz) with decision-time "
                                      "CSI, serving back-to-back requests whose α (Beta, κ = 20) the server "
                                      "never sees: it tracks each request's Beta posterior.",
    "msenv/MultiSpin-Mobile-v0": "Pedestrians (v ~ U[0.5, 1.5] m/s) with decision-time CSI: the channel moves "
                                 "between the decision and the correction; α fixed and known, as in the paper.",
    "msenv/MultiSpin-Dynamic-v0": "Pedestrians and hidden α with requests and an easy/hard chain: the server "
                                  "tracks α with the chain's forward filter.",
    "msenv/MultiSpin-Dynamic-Small-v0": "The Dynamic model in a small, weak, diverse cell: K = 6, P_dl = 15 dBm, "
                                        "diverse prompts (κ = 5).",
    "msenv/MultiSpin-Hetero-v0": "Heterogeneous devices in a weak cell: drafting speeds spread over U[1, 2]× the "
                                 "reference (phones of different generations), P_dl = 10 dBm; the paper's model "
                                 "otherwise. Here per-device draft lengths matter: the paper's greedy is "
                                 "well below the best known decision.",
    "msenv/MultiSpin-Hetero-DR-v0": "The Hetero cell with budgets drawn per episode, P_ul and P_dl ~ U[10, 20] "
                                    "dBm: one policy for a range of weak cells.",
    "msenv/MultiSpin-Traces-v0": "The paper's cell and radio, acceptance replayed from traces of a real drafter: each "
                                 "device serves requests of a trace bank (a preset of the fitted model, or a file: "
                                 "trace_source), bursty and history-dependent; the server sees each device's last "
                                 "rounds, never α (there is none) nor the trace ahead.",
    "msenv/MultiSpin-Cells-v0": "A new cell every episode: K ~ U{5 … 50} devices (padded to 50 slots with a "
                                "device mask), the slowest drafting scale ~ U[1.15, 2], P_ul ~ U[10, 20] dBm, "
                                "P_dl ~ U[10, 30] dBm; the paper's model otherwise. Any K with "
                                "k_range/k_max: one policy for every cell.",
}
assert ENV_NOTES.keys() == ENV_IDS.keys()


def env_config(env_id: str, **overrides) -> EnvSpec:
    """The config of a registered id with ``overrides``: a :class:`SystemConfig`, or a cell
    generator's :class:`~msenv.config.CellConfig` (both :class:`~msenv.config.EnvSpec`); an id not
    registered here raises ``ValueError``."""
    if env_id not in ENV_IDS:
        raise ValueError(f"env id {env_id!r} is not registered; allowed: {', '.join(ENV_IDS)}")
    return resolve_spec(ENV_IDS[env_id], **overrides)


#: the ids with the model-§11 dynamics (the others follow the paper's assumptions)
DYNAMIC_IDS = tuple(i for i in ENV_IDS if env_config(i).base.dynamics != DynamicsConfig())
#: the ids whose acceptance is replayed from traces (model §12)
TRACE_IDS = tuple(i for i in ENV_IDS if env_config(i).base.traces.trace_source is not None)


def register_envs() -> None:
    """Register every msenv id with Gymnasium (its config's shells: :class:`~msenv.config.EnvSpec`);
    a second call is harmless."""
    for env_id, source in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            spec = env_config(env_id)
            gymnasium.register(id=env_id, entry_point=spec.entry, vector_entry_point=spec.vector_entry,
                               kwargs={"config": source})


register_envs()

#: the import paths of 0.5 (one flat folder) → where each module lives now; ``import msenv.cells``,
#: ``from msenv.env import MultiSpinEnv`` and ``msenv.sb3`` keep working (the same module object as
#: the new path's) with a DeprecationWarning naming the new path, until msenv 0.7
MOVED: dict[str, str] = {
    **{f"msenv.{m}": f"msenv.model.{m}" for m in ("slots", "channel", "acceptance", "latency", "reactive",
                                                 "goodput")},
    "msenv._numeric": "msenv.model.numeric",
    **{f"msenv.{m}": f"msenv.engine.{m}" for m in ("state", "observation", "context", "functional")},
    "msenv.dynamics": "msenv.engine.kinds.dynamics",
    "msenv.seeding": "msenv.envs.seeding",
    "msenv.saa": "baselines.saa", "msenv.engine.saa": "baselines.saa",
    **{f"msenv.{m}": f"msenv.envs.{m}" for m in ("env", "vector", "cells", "cells_vector", "marl", "sb3", "render")},
    "msenv.validation": "msenv.config.validation",
}
_FINDER = install(MOVED)


#: 0.5's separate registry of the cell generators, now part of :data:`ENV_IDS` (until msenv 0.7)
_MOVED_NAMES = {"CELL_IDS": ("msenv.ENV_IDS", _GENERATORS),
                "CELL_NOTES": ("msenv.ENV_NOTES", {i: ENV_NOTES[i] for i in _GENERATORS})}


def __getattr__(name: str):
    """``msenv.cells`` and the other 0.5 module names of :data:`MOVED`, as attributes; 0.5's
    ``CELL_IDS`` / ``CELL_NOTES`` (the cell generators' entries of :data:`ENV_IDS` / :data:`ENV_NOTES`)."""
    if name in _MOVED_NAMES:
        import warnings

        new, value = _MOVED_NAMES[name]
        warnings.warn(f"msenv.{name} is deprecated: every id is in {new} (msenv.{name} is removed in 0.7)",
                      DeprecationWarning, stacklevel=2)
        return value
    return _FINDER.attribute("msenv", name)


__all__ = [
    "CellConfig",
    "EnvSpec",
    "layout_of",
    "make_env",
    "make_vector_env",
    "ENV_IDS",
    "env_config",
    "DYNAMIC_IDS",
    "TRACE_IDS",
    "ENV_NOTES",
    "INFO_KEYS",
    "MultiSpinEnv",
    "PRESETS",
    "RoundContext",
    "SystemConfig",
    "preset",
    "register_envs",
    "resolve_config",
]
