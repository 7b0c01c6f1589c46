"""msenv: Gymnasium environment for multi-access speculative inference (Multi-SPIN).

``import msenv`` registers the environment ids (idempotently):

- ``msenv/MultiSpin-v0``           — Qwen2.5-0.5B → Qwen2.5-14B pair (model §2 defaults)
- ``msenv/MultiSpin-DeepSeek-v0``  — R1-Distill-Qwen-1.5B → 32B pair

Beyond the paper (model §11; Qwen2.5 pair, K = 20 unless said; parameters in :data:`ENV_IDS`):

- ``msenv/MultiSpin-HiddenAlpha-v0``   — (quasi-)static devices (v ≤ 0.05 m/s: f_D ≤ 0.6 Hz) with
  decision-time CSI; back-to-back requests whose α (Beta, κ = 20) the server never sees;
- ``msenv/MultiSpin-Mobile-v0``        — pedestrians (v ~ U[0.5, 1.5] m/s) with decision-time CSI;
  α fixed and known, as in the paper;
- ``msenv/MultiSpin-Dynamic-v0``       — pedestrians + hidden α with requests and the easy/hard chain;
- ``msenv/MultiSpin-Dynamic-Small-v0`` — the same in a small, weak, diverse cell: K = 6,
  P_dl = 15 dBm, diverse prompts (κ = 5).
"""

from __future__ import annotations

import gymnasium

from ._numeric import compile_notice

with compile_notice("msenv's numeric kernels"):  # numpy ufuncs of the model, built at import
    from .config import PRESETS, SystemConfig, preset, resolve_config
    from .context import RoundContext
    from .env import INFO_KEYS, MultiSpinEnv

__version__ = "0.2.0"  #: the one version string (pyproject.toml reads it)

_STATIC = dict(channel_dynamics="gauss_markov", speed_range_mps=(0.0, 0.05), csi="decision")
_PEDESTRIAN = dict(channel_dynamics="gauss_markov", speed_range_mps=(0.5, 1.5), csi="decision")
_HIDDEN_REQUESTS = dict(alpha_dynamics="request", alpha_observed=False)

#: registered id → config (a preset name, or a dict of fields with its ``preset``)
ENV_IDS: dict[str, str | dict] = {
    "msenv/MultiSpin-v0": "qwen2.5",
    "msenv/MultiSpin-DeepSeek-v0": "deepseek-r1",
    "msenv/MultiSpin-HiddenAlpha-v0": dict(preset="qwen2.5", **_STATIC, **_HIDDEN_REQUESTS),
    "msenv/MultiSpin-Mobile-v0": dict(preset="qwen2.5", **_PEDESTRIAN),
    "msenv/MultiSpin-Dynamic-v0": dict(preset="qwen2.5", **_PEDESTRIAN, alpha_dynamics="markov", alpha_observed=False),
    "msenv/MultiSpin-Dynamic-Small-v0": dict(preset="qwen2.5", **_PEDESTRIAN, alpha_dynamics="markov",
                                             alpha_observed=False, num_devices=6, p_dl_dbm=15.0,
                                             alpha_concentration=5.0),
}
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
}
assert ENV_NOTES.keys() == ENV_IDS.keys()
#: the ids beyond the paper (model §11)
DYNAMIC_IDS = tuple(ENV_IDS)[2:]


def register_envs() -> None:
    """Register every msenv id with Gymnasium; a second call is harmless."""
    for env_id, name in ENV_IDS.items():
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id,
            entry_point="msenv.env:MultiSpinEnv",
            vector_entry_point="msenv.vector:MultiSpinVectorEnv",
            kwargs={"config": name},
        )


register_envs()

__all__ = [
    "ENV_IDS",
    "DYNAMIC_IDS",
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
