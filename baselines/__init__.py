"""Draft-length controllers (paper baselines and ours) behind one interface: :class:`Controller`,
:data:`REGISTRY` and :func:`make_controller`. They are evaluated by the :mod:`evaluation` package
(the paired harness, the benchmark; command line ``python -m evaluation.evaluate``), which lived
here until msenv 0.6: its old import paths (:data:`MOVED`) keep working until msenv 0.7."""

from msenv.config.deprecation import REMOVED_IN as REMOVED_IN  # the release that drops the paths of MOVED
from msenv.config.deprecation import install

from .adaptive import (
    BestFixed,
    Clairvoyant,
    HFBudget,
    HFHeuristic,
    KaplanMeierGreedy,
    LastOutcome,
    UCBBudget,
    UCBLengths,
)
from .base import ContextPredictor, Controller, check_output
from .bayes_trace import TraceFilterSAA
from .greedy import (
    BayesianSAA,
    BudgetedGreedy,
    ComputationOnly,
    ExactSAA,
    GreedySAA,
    LocalSearch,
    OracleAlphaSAA,
    OracleCSISAA,
    OracleGreedy,
    PlugInGreedy,
    greedy_local_search,
    greedy_search,
    local_search,
)
from .saa import SAAConfig
from .simple import Fixed, OptimalUniform, RandomLengths, best_uniform
from .trace_rules import KaplanMeierLS, StateOracle, TraceFilterLS

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
    "trace-filter-ls": TraceFilterLS,
    "km-ls": KaplanMeierLS,
    "state-oracle": StateOracle,
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
    "BestFixed", "Clairvoyant", "HFBudget", "HFHeuristic", "KaplanMeierGreedy", "LastOutcome", "UCBBudget",
    "UCBLengths", "BayesianSAA", "BudgetedGreedy", "OracleAlphaSAA", "OracleCSISAA", "OracleGreedy", "PlugInGreedy",
    "ComputationOnly", "ContextPredictor",
    "KaplanMeierLS", "StateOracle", "TraceFilterLS", "greedy_local_search", "Controller", "ExactSAA", "Fixed",
    "GreedySAA",
    "LocalSearch", "OptimalUniform", "REGISTRY", "RandomLengths", "SAAConfig", "TraceFilterSAA", "best_uniform",
    "check_output", "greedy_search", "local_search", "make_controller",
]


# Controllers installed by other packages (entry-point group "msenv.controllers") join REGISTRY.
from .registry import register_entry_points  # noqa: E402

register_entry_points(REGISTRY)


#: the evaluation modules that lived here until msenv 0.6 → their path now. ``import baselines.harness``,
#: ``from baselines.report import save_figure`` and ``python -m baselines.evaluate`` keep working (the
#: same module object as the new path's) with a DeprecationWarning naming the new path, until msenv 0.7
MOVED: dict[str, str] = {f"baselines.{m}": f"evaluation.{m}" for m in (
    "benchmark", "evaluate", "harness", "leaderboard", "parallel", "provenance", "report", "stats", "suites")}
_FINDER = install(MOVED)


def __getattr__(name: str):
    """``baselines.harness`` and the other old module names of :data:`MOVED`, as attributes."""
    return _FINDER.attribute("baselines", name)
