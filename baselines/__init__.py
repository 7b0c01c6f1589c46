"""Draft-length controllers (paper baselines and ours) behind one interface: :class:`Controller`,
:data:`REGISTRY` and :func:`make_controller`. They are evaluated by the :mod:`evaluation` package
(the paired harness, the benchmark; command line ``python -m evaluation.evaluate``), which lived
here until msenv 0.6: its old import paths (:data:`MOVED`) keep working until msenv 0.7."""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

from .adaptive import BestFixed, Clairvoyant, HFBudget, HFHeuristic, KaplanMeierGreedy, LastOutcome, UCBBudget, UCBLengths
from .bayes_trace import TraceFilterSAA
from .base import ContextPredictor, Controller, check_output
from .greedy import (BayesianSAA, BudgetedGreedy, ComputationOnly, ExactSAA, GreedySAA, LocalSearch, OracleAlphaSAA, OracleCSISAA,
                     OracleGreedy, PlugInGreedy, greedy_search, local_search)
from .saa import SAAConfig
from .simple import Fixed, OptimalUniform, RandomLengths, best_uniform

#: name → factory, for the CLI and experiments
REGISTRY = {
    "greedy-saa": GreedySAA,
    "optimal-uniform": OptimalUniform,
    "computation-only": ComputationOnly,
    "local-search": LocalSearch,
    "exact-saa": ExactSAA,
    "random": RandomLengths,
    "plug-in-greedy": PlugInGreedy,
    "bayes-saa": BayesianSAA,
    "oracle-greedy": OracleGreedy,
    "oracle-alpha-saa": OracleAlphaSAA,
    "oracle-csi-saa": OracleCSISAA,
    "budgeted-greedy": BudgetedGreedy,
    "hf-heuristic": HFHeuristic,
    "hf-budget": HFBudget,
    "ucb-lengths": UCBLengths,
    "ucb-budget": UCBBudget,
    "last-outcome": LastOutcome,
    "km-greedy": KaplanMeierGreedy,
    "best-fixed": BestFixed,
    "clairvoyant": Clairvoyant,
    "trace-filter-saa": TraceFilterSAA,
}


def make_controller(name: str, **kwargs) -> Controller:
    """Controller by name: a REGISTRY key or ``fixed-<γ>``."""
    if not isinstance(name, str):
        raise TypeError(f"controller name={name!r} is not a string; allowed: {', '.join(REGISTRY)}, fixed-<gamma>")
    if name.startswith("fixed-"):
        try:
            gamma = int(name.split("-", 1)[1])
        except ValueError:
            gamma = None
        if gamma is not None:
            if kwargs:
                raise TypeError(f"controller {name!r} takes no keyword arguments; got {', '.join(sorted(kwargs))}")
            return Fixed(gamma)
    if name not in REGISTRY:
        raise ValueError(f"controller {name!r} is not known; allowed: {', '.join(REGISTRY)}, fixed-<gamma>")
    import inspect

    cls = REGISTRY[name]
    try:
        inspect.signature(cls).bind(**kwargs)
    except TypeError as e:  # name the controller, not the base class whose __init__ it inherits
        raise TypeError(f"controller {name!r} ({cls.__name__}): {e}") from None
    return cls(**kwargs)


__all__ = [
    "BestFixed", "Clairvoyant", "HFBudget", "HFHeuristic", "KaplanMeierGreedy", "LastOutcome", "UCBBudget", "UCBLengths",
    "BayesianSAA", "BudgetedGreedy", "OracleAlphaSAA", "OracleCSISAA", "OracleGreedy", "PlugInGreedy",
    "ComputationOnly", "ContextPredictor", "Controller", "ExactSAA", "Fixed", "GreedySAA",
    "LocalSearch", "OptimalUniform", "REGISTRY", "RandomLengths", "SAAConfig", "TraceFilterSAA", "best_uniform", "check_output",
    "greedy_search", "local_search", "make_controller",
]


# Controllers installed by other packages (entry-point group "msenv.controllers") join REGISTRY.
from .registry import register_entry_points  # noqa: E402

register_entry_points(REGISTRY)


#: the evaluation modules that lived here until msenv 0.6 → their path now. ``import baselines.harness``,
#: ``from baselines.report import save_figure`` and ``python -m baselines.evaluate`` keep working (the
#: same module object as the new path's) with a DeprecationWarning naming the new path, until msenv 0.7
MOVED: dict[str, str] = {f"baselines.{m}": f"evaluation.{m}" for m in (
    "benchmark", "evaluate", "harness", "leaderboard", "parallel", "provenance", "report", "stats", "suites")}
#: the release that drops the paths of :data:`MOVED`
REMOVED_IN = "0.7"


def _moved(name: str) -> tuple[str, str] | None:
    """(the old path of :data:`MOVED` that ``name`` is or lies under, ``name``'s new path), or None."""
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return old, new + name[len(old):]
    return None


def _warn(old: str, stacklevel: int) -> None:
    """The DeprecationWarning of the old path ``old``, attributed to the frame ``stacklevel`` up from
    the caller (import machinery skipped). Said when the old path is first imported: Python's
    module cache makes that once per path and process."""
    warnings.warn(f"{old} is {MOVED[old]} since msenv 0.6: import {MOVED[old]} (the old path is removed in "
                  f"msenv {REMOVED_IN})", DeprecationWarning, stacklevel=stacklevel)


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path of :data:`MOVED` as the module at its new path (with a DeprecationWarning),
    and hands ``python -m <old path>`` the new module's code."""

    def find_spec(self, name, path=None, target=None):
        found = _moved(name)
        new = importlib.util.find_spec(found[1]) if found else None
        if new is None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=new.submodule_search_locations is not None)

    def create_module(self, spec):
        old, new = _moved(spec.name)
        _warn(old, stacklevel=3)
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__  # the import system overwrites it with the old path's
        return module

    def exec_module(self, module) -> None:
        module.__spec__ = module.__spec__.loader_state

    def get_code(self, fullname):
        """The code of the new module, for ``python -m <old path>`` (runpy runs it as ``__main__``,
        so the warning is shown)."""
        from multiprocessing import parent_process

        old, new = _moved(fullname)
        command = fullname.removesuffix(".__main__")
        if parent_process() is None:  # a spawned worker re-reads its parent's main module: the parent said it
            warnings.warn_explicit(f"python -m {command} is python -m {MOVED[old]}{command[len(old):]} since msenv 0.6 "
                                   f"(the old command is removed in msenv {REMOVED_IN})", DeprecationWarning,
                                   f"<python -m {command}>", 1, module="__main__")
        return importlib.util.find_spec(new).loader.get_code(new)

    def get_source(self, fullname):
        """The source of the new module (what ``inspect`` and tracebacks read)."""
        new = _moved(fullname)[1]
        return importlib.util.find_spec(new).loader.get_source(new)


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())


def __getattr__(name: str):
    """``baselines.harness`` and the other old module names of :data:`MOVED`, as attributes."""
    old = f"baselines.{name}"
    if old in MOVED:
        with warnings.catch_warnings():  # said once, below, of the caller's line (not of importlib's)
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module(old)
        _warn(old, stacklevel=3)
        return module
    raise AttributeError(f"module 'baselines' has no attribute {name!r}")
