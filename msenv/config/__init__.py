"""The configuration: validated, frozen dataclasses — one per concern (:mod:`~msenv.config.groups`),
gathered by :class:`~msenv.config.system.SystemConfig`; the cell generator's
:class:`~msenv.config.cells.CellConfig`; the protocol both satisfy (:class:`~msenv.config.spec.EnvSpec`);
the checks they share, and what the config still accepts by an old name
(:mod:`~msenv.config.deprecation`). Imports nothing of msenv; every other part reads it."""

from .cells import CellConfig, resolve_cells
from .deprecation import REMOVED_IN, SAA_OBJECTIVES
from .groups import (
    ALPHA_BELIEFS,
    ALPHA_DYNAMICS,
    CHANNEL_DYNAMICS,
    CSI_MODES,
    FADING_MODELS,
    FADING_REDRAW,
    GROUPS,
    MODE_POLICIES,
    SPEED_OF_LIGHT,
    TASKS,
    TRACE_DRAFTERS,
    TRACE_SPLITS,
    VERIFY_BATCH,
    AcceptanceConfig,
    ChannelConfig,
    ComputeConfig,
    DynamicsConfig,
    EpisodeConfig,
    RadioConfig,
    TraceConfig,
    dbm_to_watt,
)
from .spec import EnvSpec, resolve_spec, spec_from_dict
from .system import (
    FIELD_NAMES,
    FIELD_ORDER,
    PRESETS,
    SystemConfig,
    check_fields,
    config_fields,
    field_docs,
    parse_overrides,
    preset,
    resolve_config,
)

__all__ = [
    "ALPHA_BELIEFS", "ALPHA_DYNAMICS", "CHANNEL_DYNAMICS", "CSI_MODES", "FADING_MODELS", "FADING_REDRAW", "FIELD_NAMES",
    "FIELD_ORDER", "GROUPS", "MODE_POLICIES", "PRESETS", "REMOVED_IN", "SAA_OBJECTIVES", "SPEED_OF_LIGHT", "TASKS",
    "TRACE_DRAFTERS", "TRACE_SPLITS", "VERIFY_BATCH", "AcceptanceConfig", "CellConfig", "ChannelConfig",
    "ComputeConfig", "DynamicsConfig", "EnvSpec", "EpisodeConfig", "RadioConfig", "SystemConfig", "TraceConfig",
    "check_fields",
    "config_fields", "dbm_to_watt", "field_docs", "parse_overrides", "preset", "resolve_cells", "resolve_config",
    "resolve_spec", "spec_from_dict",
]
