"""What every environment's config answers, whichever environment plays it: the env spec.

Two configs describe environments: :class:`~msenv.config.SystemConfig` (one cell: its devices,
radio, acceptance …) and :class:`~msenv.config.CellConfig` (a cell generator: a new cell every
episode, drawn around a base SystemConfig). Both satisfy :class:`EnvSpec`, so the registry
(``msenv.ENV_IDS``), the shells' factories, the layout of the spaces, saved agents and the
command lines treat them alike and never ask which one they hold: a config says which shells
play it (Gymnasium entry points), the model of its cells (``base``), its device slots, how its
observation pads its cells' layout, its flat fields and its label.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class EnvSpec(Protocol):
    """The questions an environment's config answers (see the module docstring)."""

    #: the Gymnasium entry point of its environment and of its batched vector environment
    entry: str
    vector_entry: str

    @property
    def base(self) -> Any:
        """The model every cell follows (a :class:`~msenv.config.SystemConfig`; a SystemConfig's is itself)."""

    @property
    def slots(self) -> int:
        """Device slots of the observation and the action (K, or a generator's ``k_max``)."""

    @property
    def gamma_max(self) -> int:
        """The longest draft length."""

    @property
    def episode_length(self) -> int:
        """Rounds per episode."""

    @property
    def reward_scale(self) -> float:
        """The reward's factor on the round's goodput."""

    @property
    def label(self) -> str:
        """One line that names the config (``qwen2.5, K=20, P_dl=30 dBm``)."""

    def fields(self) -> dict[str, Any]:
        """Every field by its flat name, as :meth:`replace` takes them."""

    def replace(self, **changes: Any) -> EnvSpec:
        """A validated copy with ``changes`` (flat field names)."""

    def to_dict(self) -> dict[str, Any]:
        """The config as a plain dict (what a saved agent records)."""

    def pad(self, layout: Any) -> Any:
        """The layout of its observation, given the layout of its cells' engine."""


def resolve_spec(config: Any = None, **overrides: Any) -> EnvSpec:
    """The config of ``config``: an :class:`EnvSpec` itself, a preset name, or a dict of fields — a
    cell generator's when it names a generator field (``k_range``, ``k_max``, ``base`` …), else a
    SystemConfig's — with ``overrides`` applied."""
    from .cells import CELL_FIELDS, resolve_cells
    from .system import resolve_config

    if isinstance(config, EnvSpec):
        return config.replace(**overrides) if overrides else config
    if isinstance(config, dict) and any(name in config for name in CELL_FIELDS):
        return resolve_cells(config, **overrides)
    return resolve_config(config, **overrides)


def spec_from_dict(data: dict[str, Any]) -> EnvSpec:
    """The config of a saved dict (:meth:`EnvSpec.to_dict`)."""
    return resolve_spec(dict(data))


__all__ = ["EnvSpec", "resolve_spec", "spec_from_dict"]
