"""Controllers from other packages: the ``msenv.controllers`` entry-point group.

A package that declares, in its ``pyproject.toml``::

    [project.entry-points."msenv.controllers"]
    my-controller = "my_package.module:MyController"

makes ``my-controller`` a name of :func:`baselines.make_controller`, of the harness's
``name@policy`` entries and of ``python -m evaluation.evaluate --controllers``. A built-in name
is never replaced; a plugin that fails to import is skipped with a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, MutableMapping
from importlib.metadata import entry_points

GROUP = "msenv.controllers"  #: the entry-point group of third-party controllers


def register_entry_points(registry: MutableMapping[str, Callable], group: str = GROUP) -> list[str]:
    """Add every installed ``group`` entry point to ``registry`` (name → controller factory);
    returns the names added."""
    added = []
    for ep in entry_points(group=group):
        if ep.name in registry:
            continue
        reserved = _reserved(ep.name)
        if reserved:
            warnings.warn(f"controller entry point {ep.name!r} ({ep.value}) is skipped: {reserved}", stacklevel=2)
            continue
        try:
            factory = ep.load()
        except Exception as exc:  # a broken plugin must not break msenv's own controllers
            warnings.warn(f"controller entry point {ep.name!r} ({ep.value}) failed to load: {exc!r}",
                          stacklevel=2)
            continue
        if not callable(factory):
            warnings.warn(f"controller entry point {ep.name!r} ({ep.value}) is skipped: it names "
                          f"{type(factory).__name__} {factory!r}, not a controller class or factory", stacklevel=2)
            continue
        registry[ep.name] = factory
        added.append(ep.name)
    return added


def _reserved(name: str) -> str:
    """Why ``name`` cannot be a controller's name ("" when it can): ``fixed-<γ>`` is built in and
    ``@`` separates an entry's reactive policy (``name@policy``)."""
    if not name or "@" in name or name != name.strip():
        return "a name is non-empty, without '@' or surrounding spaces"
    head, _, tail = name.partition("-")
    if head == "fixed" and tail.lstrip("-").isdigit():
        return "fixed-<gamma> is a built-in name"
    return ""
