"""The rivals of learned control on traces (model §12): the exact filter and the Kaplan–Meier
estimate each followed by the paper's greedy *and* the local search, and the state oracle.

- ``trace-filter-ls`` (:class:`TraceFilterLS`): the exact Bayes filter's predictive survival
  (:class:`~baselines.bayes_trace.TraceFilterSAA`, 24 levels), the paper's greedy on the SAA estimator
  (N_SAA = 1000), then :func:`~baselines.greedy.local_search` from the greedy's decision on the same
  estimator (:func:`~baselines.greedy.greedy_local_search`). The filter is the exact posterior of the
  fitted model: on a preset's bank (drawn from that model) this is the myopic optimum of what the
  server has seen, up to the search and the samples.
- ``km-ls`` (:class:`KaplanMeierLS`): :class:`~baselines.adaptive.KaplanMeierGreedy`'s survival
  (its tuned prior), the same search.
- ``state-oracle`` (:class:`StateOracle`, a named oracle: it plays and is shown, never the best
  rival): knows each request's hidden level z and the hidden state S_p at the device's position of
  the fitted model that drew the bank — never the coin flips — and hands the survival of that point
  mass (the filter's own forward algorithm on a one-level model at the true z) to the same search.
  Only where the hidden state exists: a bank drawn from the fitted model (the presets and mixes of
  them); a bank replayed from a file (``eagle-mix-v1``, the published traces) has none, and it refuses
  such a source in one line.
"""

from __future__ import annotations

import numpy as np

from msenv.engine.context import RoundContext
from msenv.traces.model import filter_model, predictive_survival

from .adaptive import KaplanMeierGreedy
from .bayes_trace import TraceFilterSAA
from .greedy import greedy_local_search
from .saa import SAAEstimator


class TraceFilterLS(TraceFilterSAA):
    """The exact filter's predictive survival, the paper's greedy, then the ±1 local search from its
    decision on the same SAA samples (module docstring). Arguments: :class:`TraceFilterSAA`'s."""

    name = "trace-filter-ls"

    def search(self, est: SAAEstimator) -> np.ndarray:
        return greedy_local_search(est, self.last_trace)


class KaplanMeierLS(KaplanMeierGreedy):
    """:class:`~baselines.adaptive.KaplanMeierGreedy`'s survival, the paper's greedy, then the ±1
    local search from its decision on the same SAA samples. Arguments: ``KaplanMeierGreedy``'s."""

    name = "km-ls"

    def search(self, est: SAAEstimator) -> np.ndarray:
        return greedy_local_search(est, self.last_trace)


class StateOracle(TraceFilterLS):
    """Named oracle: the survival of each device's true hidden level z and state S_p (of the fitted
    model that drew the bank; not the coin flips), then greedy + local search (module docstring).
    It reads the context's ``hidden_level`` / ``hidden_high`` (``oracle = "alpha"``: the server's
    channel, the trace's hidden part)."""

    name = "state-oracle"
    oracle = "alpha"

    def state_survival(self, context: RoundContext) -> np.ndarray:
        """P(acc_len > j), j = 0 … γ_max [K, γ_max + 1] of the point mass at each device's (z, S_p)."""
        level, high = getattr(context, "hidden_level", None), getattr(context, "hidden_high", None)
        if level is None or high is None:
            raise ValueError(f"config field trace_source is invalid for {type(self).__name__}: the context holds "
                             "no hidden state (a bank replayed from a file); allowed: a bank drawn from the fitted "
                             "model (a preset, a mix of presets)")
        _, params, cap = self.fit_for(context.config)
        z = np.asarray(level, dtype=np.float64)
        k = len(z)
        # one level per device: device k's belief is the point mass at (level k, its state)
        model = filter_model(params, cap, z=z, weights=np.ones(k))
        belief = np.zeros((k, k, 2))
        belief[np.arange(k), np.arange(k), np.asarray(high, dtype=np.int64)] = 1.0
        out = np.empty((k, context.config.gamma_max + 1))
        predictive_survival(belief, model.trans, model.first, model.cont, model.tail, model.cap, out)
        return out

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        return self.decide(context, self.state_survival(context))

    def observe(self, gamma, info) -> None:
        """Nothing to learn: the state is told, not inferred."""


__all__ = ["KaplanMeierLS", "StateOracle", "TraceFilterLS"]
