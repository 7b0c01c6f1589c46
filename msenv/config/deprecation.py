"""What msenv still accepts by an old name, until :data:`REMOVED_IN`, each said with a
``DeprecationWarning`` naming its new home: the SAA controllers' settings ``n_saa`` and
``saa_objective`` given to a config (the controllers' own since msenv 0.6,
``baselines.saa.SAAConfig``), and the modules that moved (:class:`MovedModules`: msenv's 0.5
paths, ``msenv.MOVED``, and the evaluation's, ``baselines.MOVED``)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
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


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module path of ``moved`` (old path → new path; a package's modules follow it)
    as the module at its new path — the same module object — with a DeprecationWarning naming the
    new path and :data:`REMOVED_IN`, said when the old path is first imported (Python's module cache
    makes that once per path and process), of the importing line; ``python -m <old path>`` runs the
    new module's code. :func:`install` puts one on ``sys.meta_path``."""

    def __init__(self, moved: dict[str, str], since: str = "0.6") -> None:
        self.moved, self.since = moved, since

    def paths(self, name: str) -> tuple[str, str] | None:
        """(the old path of ``moved`` that ``name`` is or lies under, ``name``'s new path), or None."""
        for old, new in self.moved.items():
            if name == old or name.startswith(old + "."):
                return old, new + name[len(old):]
        return None

    def warn(self, old: str, stacklevel: int) -> None:
        """The DeprecationWarning of the old path ``old``, attributed to the frame ``stacklevel`` up
        (1: this method; import machinery skipped)."""
        new = self.moved[old]
        warnings.warn(f"{old} is {new} since msenv {self.since}: import {new} (the old path is removed in "
                      f"msenv {REMOVED_IN})", DeprecationWarning, stacklevel=stacklevel)

    def find_spec(self, name, path=None, target=None):
        """A spec of this loader for an old path whose new module exists, else None."""
        found = self.paths(name)
        new = importlib.util.find_spec(found[1]) if found else None
        if new is None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=new.submodule_search_locations is not None)

    def create_module(self, spec):
        """The module at the new path (imported on first use, so an optional adapter still needs its
        library only when asked for), after the warning."""
        old, new = self.paths(spec.name)
        self.warn(old, stacklevel=3)
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__  # the import system overwrites it with the old path's
        return module

    def exec_module(self, module) -> None:
        """Nothing to run (the module ran at its new path); its spec is put back."""
        module.__spec__ = module.__spec__.loader_state

    def get_code(self, fullname):
        """The code of the new module, for ``python -m <old path>`` (runpy runs it as ``__main__``,
        so the warning is shown)."""
        from multiprocessing import parent_process

        old, new = self.paths(fullname)
        command = fullname.removesuffix(".__main__")
        if parent_process() is None:  # a spawned worker re-reads its parent's main module: the parent said it
            warnings.warn_explicit(f"python -m {command} is python -m {self.moved[old]}{command[len(old):]} since "
                                   f"msenv {self.since} (the old command is removed in msenv {REMOVED_IN})",
                                   DeprecationWarning, f"<python -m {command}>", 1, module="__main__")
        return importlib.util.find_spec(new).loader.get_code(new)

    def get_source(self, fullname):
        """The source of the new module (what ``inspect`` and tracebacks read)."""
        new = self.paths(fullname)[1]
        return importlib.util.find_spec(new).loader.get_source(new)

    def attribute(self, package: str, name: str):
        """``package.name`` for an old module path of ``moved`` (a package's ``__getattr__``), with
        the warning said of the line that asked; ``AttributeError`` for any other name."""
        old = f"{package}.{name}"
        if old not in self.moved:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        with warnings.catch_warnings():  # said once, below, of the caller's line (not of importlib's)
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module(old)
        self.warn(old, stacklevel=4)  # this method, the package's __getattr__, then the caller
        return module


def install(moved: dict[str, str], since: str = "0.6") -> MovedModules:
    """The :class:`MovedModules` of ``moved`` on ``sys.meta_path`` (first, so an old path is found
    before any file; a second call with the same paths — a reload — adds none)."""
    for finder in sys.meta_path:
        if isinstance(finder, MovedModules) and finder.moved == moved:
            return finder
    finder = MovedModules(moved, since)
    sys.meta_path.insert(0, finder)
    return finder


__all__ = ["REMOVED_IN", "SAA_FIELDS", "SAA_HOME", "SAA_OBJECTIVES", "MovedModules", "check_saa_settings", "install",
           "user_stacklevel", "warn_saa"]
