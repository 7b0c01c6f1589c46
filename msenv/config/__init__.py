"""The configuration: validated, frozen dataclasses and the checks they share. Imports nothing of
msenv; every other part reads it."""

from .system import (ALPHA_BELIEFS, ALPHA_DYNAMICS, CHANNEL_DYNAMICS, CSI_MODES, FADING_MODELS, FADING_REDRAW,
                     FIELD_NAMES, MODE_POLICIES, PRESETS, SAA_OBJECTIVES, SPEED_OF_LIGHT, TASKS, VERIFY_BATCH,
                     SystemConfig, check_fields, dbm_to_watt, field_docs, parse_overrides, preset, resolve_config)

__all__ = [
    "ALPHA_BELIEFS", "ALPHA_DYNAMICS", "CHANNEL_DYNAMICS", "CSI_MODES", "FADING_MODELS", "FADING_REDRAW",
    "FIELD_NAMES", "MODE_POLICIES", "PRESETS", "SAA_OBJECTIVES", "SPEED_OF_LIGHT", "TASKS", "VERIFY_BATCH",
    "SystemConfig", "check_fields", "dbm_to_watt", "field_docs", "parse_overrides", "preset", "resolve_config",
]
