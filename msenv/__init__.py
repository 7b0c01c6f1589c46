"""msenv: Gymnasium environment for multi-access speculative inference (Multi-SPIN).

``import msenv`` registers the environment ids (idempotently):

- ``msenv/MultiSpin-v0``           — Qwen2.5-0.5B → Qwen2.5-14B pair (SPEC §2 defaults)
- ``msenv/MultiSpin-DeepSeek-v0``  — R1-Distill-Qwen-1.5B → 32B pair
"""

from __future__ import annotations

import gymnasium

from .config import PRESETS, SystemConfig, preset, resolve_config
from .env import INFO_KEYS, MultiSpinEnv
from .functional import RoundContext

__version__ = "0.1.0"

#: registered id → preset name
ENV_IDS = {
    "msenv/MultiSpin-v0": "qwen2.5",
    "msenv/MultiSpin-DeepSeek-v0": "deepseek-r1",
}


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
    "INFO_KEYS",
    "MultiSpinEnv",
    "PRESETS",
    "RoundContext",
    "SystemConfig",
    "preset",
    "register_envs",
    "resolve_config",
]
