"""Controllers from other packages: the ``msenv.controllers`` entry-point group.

A package that declares, in its ``pyproject.toml``::

    [project.entry-points."msenv.controllers"]
    my-controller = "my_package.module:MyController"

makes ``my-controller`` a name of :func:`baselines.make_controller`, of the harness's
``name@policy`` entries and of ``python -m baselines.evaluate --controllers``. A built-in name
is never replaced; a plugin that fails to import is skipped with a warning.
"""

from __future__ import annotations

import warnings
from importlib.metadata import entry_points
from typing import Callable, MutableMapping

GROUP = "msenv.controllers"  #: the entry-point group of third-party controllers


def register_entry_points(registry: MutableMapping[str, Callable], group: str = GROUP) -> list[str]:
    """Add every installed ``group`` entry point to ``registry`` (name → controller factory);
    returns the names added."""
    added = []
    for ep in entry_points(group=group):
        if ep.name in registry:
            continue
        try:
            registry[ep.name] = ep.load()
        except Exception as exc:  # a broken plugin must not break msenv's own controllers
            warnings.warn(f"controller entry point {ep.name!r} ({ep.value}) failed to load: {exc!r}",
                          stacklevel=2)
            continue
        added.append(ep.name)
    return added
