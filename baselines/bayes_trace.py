"""The paper's greedy SAA on the exact Bayes filter of the fitted trace model (model §12).

Where acceptance is replayed from a bank drawn from a preset of :mod:`msenv.traces`, the server
knows the generative model (:mod:`msenv.traces.model`); where it is replayed from a file, the server
knows the model fitted to the file's train requests (a shipped bank carries its fit; for any other
file, ``python -m msenv.traces fit FILE --split train`` writes one). It does not know a request's hidden level z nor the
per-position state S_q ∈ {low, high}. :class:`TraceFilterSAA` keeps, per device, the posterior of
(z, S_p) at the device's current position p given every round of its current request, and hands
the predictive survival P(acc_len[p] > j) to the greedy SAA (as
:class:`~baselines.adaptive.KaplanMeierGreedy` hands its Kaplan–Meier estimate).

The filter (:mod:`msenv.traces.model`: its likelihoods, the forward algorithm of the predictive
survival, each written once there) starts every request from the prior (z ~ N(0, 1), S at its
stationary law given z); a request's end (``info["request_done"]``) resets the device to it. The
request's length, which the model ties to z (ρ), is not used as evidence (the engine starts each
device's first request at a random position, so how long a request has lasted is only weak,
engine-specific evidence).

Both kernels are compiled (numba): at K = 20 with 24 levels the filter (survival and update) is
about 1 % of a decision's time, the rest the greedy search (``python -m benchmarks.trace_filter``).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from msenv.engine.context import RoundContext
from msenv.traces import PRESETS, SHIPPED, fitted_model, read_fit
from msenv.traces.model import FilterModel, filter_model, filter_update, predictive_survival

from .greedy import GreedySAA

#: the trace sources with a fitted model: the presets and the shipped banks with a fit
_FITTED = (*sorted(PRESETS), *sorted(n for n, b in SHIPPED.items() if b.fit is not None))


# ---------------------------------------------------------------------- the controller
class TraceFilterSAA(GreedySAA):
    """The paper's greedy SAA on each device's predictive survival from the exact Bayes filter of
    the fitted trace model (module docstring).

    Args:
        preset: the trace source whose fitted model is filtered (:func:`~msenv.traces.fitted_model`: a
            preset, a shipped bank); default: the config's ``trace_source``, which must then have one.
        params: instead, a PARAMS.json written by ``python -m msenv.traces fit`` (for a bank file or a
            published file: fit its train requests with ``--split train``).
        levels: points of the Gauss–Hermite grid of the request's level z (2 … 128).
        **kwargs: :class:`~baselines.greedy.GreedySAA`'s ``n_samples``, ``objective``, ``policy``.
    """

    name = "trace-filter-saa"

    def __init__(self, preset: str | None = None, levels: int = 24, params=None, **kwargs) -> None:
        super().__init__(**kwargs)
        owner = type(self).__name__
        if preset is not None and (not isinstance(preset, str) or fitted_model(preset) is None):
            raise ValueError(f"{owner} preset={preset!r} is unknown; allowed: None (the config's trace_source) or "
                             f"a source with a fitted model: {' | '.join(_FITTED)}")
        if params is not None and preset is not None:
            raise ValueError(f"{owner} preset={preset!r} and params={params!r} are both given; allowed: at most one")
        if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or not 2 <= levels <= 128:
            raise ValueError(f"{owner} levels={levels!r} is invalid; allowed: an integer in [2, 128]")
        if params is not None and not isinstance(params, (str, os.PathLike)):
            raise ValueError(f"{owner} params={params!r} is invalid; allowed: the path of a PARAMS.json written by "
                             "`python -m msenv.traces fit`")
        self.preset, self.levels = preset, int(levels)
        #: the model given as a PARAMS.json of ``python -m msenv.traces fit`` (read now: a bad file fails here)
        self.params = None if params is None else (str(params), *read_fit(params))
        self._models: dict[str, FilterModel] = {}
        self.model: FilterModel | None = None  #: the model filtered in this episode
        self.belief: np.ndarray | None = None  #: [K, G, 2] each device's posterior of (z, S) at its position

    def reset(self, seed=None) -> None:
        super().reset(seed)
        self.belief = None

    def model_for(self, config) -> FilterModel:
        """The filtered model of ``config``: ``params`` or ``preset`` when given, else the model
        fitted to its ``trace_source`` (a preset's, a shipped bank's fit of its train requests);
        ``ValueError`` in one line for a source with no fitted model."""
        name, params, cap = self.fit_for(config)
        if name not in self._models:
            self._models[name] = filter_model(params, cap, self.levels)
        return self._models[name]

    def fit_for(self, config):
        """``(name, params, cap)`` of the model :meth:`model_for` filters on ``config`` (its checks)."""
        if self.params is not None:
            name, params, cap = self.params
        else:
            name = self.preset if self.preset is not None else config.traces.trace_source
            fitted = None if name is None else fitted_model(name)
            if fitted is None:
                what = "no trace" if name is None else "a source with no fitted model (a bank file, a mix)"
                raise ValueError(f"config field trace_source={name!r} is invalid for {type(self).__name__}: it is "
                                 f"{what}; allowed: {' | '.join(_FITTED)}, or params=PARAMS.json (`python -m "
                                 f"msenv.traces fit FILE --split train --out PARAMS.json`) or preset=")
            params, cap = fitted
        gamma_max = config.gamma_max
        if gamma_max >= cap:  # the engine refuses the same mismatch for a bank
            what = f"params={name!r}" if self.params is not None else (
                f"preset={name!r}" if self.preset is not None else f"the model of trace_source={name!r}")
            raise ValueError(f"{type(self).__name__} {what}: cap={cap} is invalid for gamma_max={gamma_max} (the model "
                             f"prices drafts of at most cap − 1 = {cap - 1} tokens); allowed: a model whose cap is "
                             f"above gamma_max={gamma_max}")
        return name, params, cap

    def survival(self, gamma_max: int) -> np.ndarray:
        """Each device's predictive P(acc_len > j), j = 0 … γ_max [K, γ_max + 1]."""
        m = self.model
        out = np.empty((self.belief.shape[0], gamma_max + 1))
        predictive_survival(self.belief, m.trans, m.first, m.cont, m.tail, m.cap, out)
        return out

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        model = self.model_for(context.config)
        k = len(context.t_draft)
        if self.belief is None or self.belief.shape[0] != k or model is not self.model:
            self.model, self.belief = model, np.repeat(model.prior[None], k, axis=0)
        return self.decide(context, self.survival(context.config.gamma_max))

    def decide(self, context: RoundContext, survival: np.ndarray) -> np.ndarray:
        """The draft lengths this rule plays in ``context`` with each device's predictive survival
        ``survival`` [K, γ_max + 1] (its search on the SAA estimator of that survival)."""
        self.last_trace = []
        return self.search(self.estimator(dataclasses.replace(context, survival=survival)))

    def observe(self, gamma, info) -> None:
        k, m = len(gamma), self.model
        filter_update(self.belief, m.trans, m.first, m.cont, m.tail, np.asarray(gamma, np.int64),
                      np.asarray(info["accepted"], np.int64)[:k], np.asarray(info["rejected"], np.bool_)[:k],
                      np.asarray(info["tokens"], np.int64)[:k])
        done = info.get("request_done")
        if done is not None:
            self.belief[np.asarray(done, bool)[:k]] = m.prior


__all__ = ["TraceFilterSAA"]
