"""The configuration: validated, frozen dataclasses — one per concern (:mod:`~msenv.config.groups`),
gathered by :class:`~msenv.config.system.SystemConfig` — and the checks they share. Imports nothing
of msenv; every other part reads it."""

from .groups import (ALPHA_BELIEFS, ALPHA_DYNAMICS, CHANNEL_DYNAMICS, CSI_MODES, FADING_MODELS, FADING_REDRAW,
                     GROUPS, MODE_POLICIES, SAA_OBJECTIVES, SPEED_OF_LIGHT, TASKS, VERIFY_BATCH, AcceptanceConfig,
                     ChannelConfig, ComputeConfig, DynamicsConfig, EpisodeConfig, RadioConfig, SAAConfig, TRACE_DRAFTERS,
                     TRACE_SPLITS, TraceConfig, dbm_to_watt)
from .cells import CellConfig, resolve_cells
from .system import (FIELD_NAMES, FIELD_ORDER, PRESETS, SystemConfig, check_fields, config_fields, field_docs,
                     parse_overrides, preset, resolve_config)

__all__ = [
    "ALPHA_BELIEFS", "CellConfig", "resolve_cells", "ALPHA_DYNAMICS", "CHANNEL_DYNAMICS", "CSI_MODES", "FADING_MODELS", "FADING_REDRAW",
    "FIELD_NAMES", "FIELD_ORDER", "GROUPS", "MODE_POLICIES", "PRESETS", "SAA_OBJECTIVES", "SPEED_OF_LIGHT", "TASKS",
    "VERIFY_BATCH", "AcceptanceConfig", "ChannelConfig", "ComputeConfig", "DynamicsConfig", "EpisodeConfig",
    "RadioConfig", "SAAConfig", "TRACE_DRAFTERS", "TRACE_SPLITS", "TraceConfig", "SystemConfig", "check_fields", "config_fields", "dbm_to_watt", "field_docs",
    "parse_overrides", "preset", "resolve_config",
]
