"""What the config still accepts by an old name, until :data:`REMOVED_IN`: the SAA controllers'
settings ``n_saa`` and ``saa_objective`` (the controllers' own since msenv 0.6,
``baselines.saa.SAAConfig``), each said with a ``DeprecationWarning`` naming its new home."""

from __future__ import annotations

import sys
import warnings
from typing import Any

from .validation import check_choice, check_int

#: the release that drops every deprecated name of msenv (config fields and 0.5/0.6 module paths)
REMOVED_IN = "0.7"
#: the objectives of the SAA controllers (model §6): the paper's ratio, or the mean of ratios
SAA_OBJECTIVES = ("ratio", "mean_of_ratios")
#: SystemConfig's deprecated fields → their default (``baselines.saa.SAAConfig``'s: a test holds
#: them equal)
SAA_FIELDS: dict[str, Any] = {"n_saa": 1000, "saa_objective": "ratio"}
#: where the deprecated fields live now
SAA_HOME = "baselines.saa.SAAConfig / the controller's n_samples, objective"


class _Given:
    """The deprecated values given, as attributes (what the validation checks read)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update({**SAA_FIELDS, **values})


def check_saa_settings(values: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The deprecated SAA settings ``values`` (old flat name → value) validated, as sorted
    ``(name, value)`` pairs of those that differ from their default (a ``ValueError`` names a bad
    one, the value and what is allowed)."""
    given = _Given(values)
    check_int(given, "n_saa", 1, 10**7)
    check_choice(given, "saa_objective", SAA_OBJECTIVES)
    return tuple(sorted((k, v) for k, v in values.items() if v != SAA_FIELDS[k]))


def warn_saa(names) -> None:
    """The DeprecationWarning of the SAA settings ``names`` given to a SystemConfig, attributed to
    the first caller outside msenv (and the ``dataclasses`` and ``gymnasium`` machinery between)."""
    said = ", ".join(f"{name}=…" for name in sorted(names))
    warnings.warn(f"SystemConfig({said}) is deprecated: the SAA controllers' settings are {SAA_HOME} since msenv "
                  f"0.6 (until this is removed in msenv {REMOVED_IN}, the config still sets the controllers' defaults)",
                  DeprecationWarning, stacklevel=user_stacklevel())


#: modules whose frames a deprecation warning skips to reach the user's line
_MACHINERY = ("msenv", "dataclasses", "gymnasium", "importlib")


def user_stacklevel() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` in the function that calls this one) of the first
    frame outside msenv and the machinery of :data:`_MACHINERY`: the line a user wrote."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _MACHINERY:
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2


__all__ = ["REMOVED_IN", "SAA_FIELDS", "SAA_HOME", "SAA_OBJECTIVES", "check_saa_settings", "user_stacklevel", "warn_saa"]
