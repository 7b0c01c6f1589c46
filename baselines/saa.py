"""Sample average approximation of the expected goodput (model §6, paper §V).

:class:`SAAEstimator` draws N_SAA verification outcomes once per decision (common random
numbers: every candidate draft-length vector is scored on the same samples) and scores
candidates with the shared kernel pieces (:func:`msenv.model.goodput.communication_time`,
:func:`msenv.model.goodput.saa_objective`). :class:`SAAConfig` holds the SAA controllers'
defaults (N_SAA, the objective). Two exact speed-ups, no approximation:

- gains are shared by all samples of a decision, so the devices are sorted once by UL gain
  (= ascending UL delay, whatever the bandwidth split) and the reactive solve skips its
  per-row sort (``presorted=True``);
- a candidate is scored against a cached base vector: only the samples whose rejected set
  differs are re-solved (a single-device +1 changes ≈ α^γ(1−α) of them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msenv.config import MODE_POLICIES, SAA_OBJECTIVES, SystemConfig
from msenv.config.validation import check_choice, check_int
from msenv.engine.context import RoundContext
from msenv.model import acceptance, latency
from msenv.model.goodput import communication_time, saa_objective


@dataclass(frozen=True)
class SAAConfig:
    """The SAA controllers' defaults (the greedy, exact and uniform SAA baselines and the
    estimators): what a controller uses when it is not given ``n_samples`` / ``objective``. They
    were SystemConfig's fields ``n_saa`` / ``saa_objective`` until msenv 0.6; a config given them
    still sets them (:func:`saa_config`), with a DeprecationWarning, until msenv 0.7."""

    #: N_SAA, the sampled outcomes the SAA controllers average over per decision
    n_saa: int = 1000
    #: [R] the SAA controllers' objective: "ratio" (Σ E[N] / (T_cmp + E[T_com]), the paper's
    #: long-run throughput) or "mean_of_ratios" (E[Σ N / T], the expected reward)
    saa_objective: str = "ratio"

    def __post_init__(self) -> None:
        check_int(self, "n_saa", 1, 10**7)
        check_choice(self, "saa_objective", SAA_OBJECTIVES)


def saa_config(config: SystemConfig) -> SAAConfig:
    """The SAA controllers' defaults under ``config``: :class:`SAAConfig`'s, or — until msenv 0.7 —
    the deprecated ``n_saa`` / ``saa_objective`` the config was given."""
    return SAAConfig(**dict(config.saa_settings)) if config.saa_settings else DEFAULTS


DEFAULTS = SAAConfig()


def check_saa_args(owner: str, n_samples, objective, policy):
    """Validate SAA settings (None = :func:`saa_config`'s); returns them unchanged.

    Raises ValueError naming ``owner``, the argument, its value and what is allowed.
    """
    if n_samples is not None and (
        isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or not 1 <= n_samples <= 10**7
    ):
        raise ValueError(f"{owner} n_samples={n_samples!r} is invalid; allowed: None (SAAConfig's n_saa) or an integer "
                         "in [1, 10000000]")
    if objective is not None and objective not in SAA_OBJECTIVES:
        raise ValueError(f"{owner} objective={objective!r} is invalid; allowed: None, "
                         f"{', '.join(map(repr, SAA_OBJECTIVES))}")
    if policy is not None and policy not in MODE_POLICIES:
        raise ValueError(f"{owner} policy={policy!r} is invalid; allowed: None, {', '.join(map(repr, MODE_POLICIES))}")
    return n_samples, objective, policy


class SAAEstimator:
    """SAA scores of candidate draft-length vectors for one round context.

    Args:
        context: the round's inputs (arrays [K]).
        rng: generator for the samples.
        n_samples: N_SAA (default :class:`SAAConfig`'s ``n_saa``, see :func:`saa_config`).
        policy: reactive policy (default ``config.radio.mode_policy``).
        objective: ``"ratio"`` or ``"mean_of_ratios"`` (default :class:`SAAConfig`'s ``saa_objective``).
        communication: False scores with T_com ≡ 0 (computation-only baseline).
    """

    def __init__(
        self,
        context: RoundContext,
        rng: np.random.Generator,
        n_samples: int | None = None,
        policy: str | None = None,
        objective: str | None = None,
        communication: bool = True,
    ) -> None:
        check_saa_args("SAAEstimator", n_samples, objective, policy)
        cfg = context.config
        self.config = cfg
        self.context = context
        self.policy = cfg.radio.mode_policy if policy is None else policy
        self.objective = saa_config(cfg).saa_objective if objective is None else objective
        self.communication = communication
        s = saa_config(cfg).n_saa if n_samples is None else int(n_samples)
        k = len(context.alpha)
        #: samples of F (first-rejection positions) [S, K], original device order: from α (i.i.d.),
        #: or from the context's survival profile when it holds one
        if context.survival is None:
            self.samples = acceptance.sample_first_rejection(rng, context.alpha, cfg.gamma_max + 1, size=(s, k))
        else:
            self.samples = acceptance.first_rejection_from_survival(1.0 - rng.random((s, k)), context.survival)
        self.coins = rng.random((s, k)) if self.policy == "random" else None
        self._order = np.argsort(-np.asarray(context.g_ul), kind="stable")
        self._f = self.samples[:, self._order]
        self._f_t = np.ascontiguousarray(self._f.T)  # [K, S]: one device's samples contiguous
        self._coins = None if self.coins is None else self.coins[:, self._order]
        self._g_ul = np.asarray(context.g_ul)[self._order]
        self._g_dl = np.asarray(context.g_dl)[self._order]
        self._cache: dict[bytes, np.ndarray] = {}  # per-sample T_com of the vectors scored alone
        self._recent: dict[bytes, np.ndarray] = {}  # ... and of the last batch's candidates
        self.n_solved = 0  #: outcomes passed to the reactive solver so far

    # ------------------------------------------------------------------ T_com
    def _solve(self, rej_sorted: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """T_com of outcomes (rows of rejected masks in sorted device order); outcomes with
        nothing rejected cost 0 and are not passed to the solver."""
        out = np.zeros(len(rej_sorted))
        busy = np.flatnonzero(rej_sorted.any(axis=-1))
        if len(busy) == 0:
            return out
        coins = None
        if self._coins is not None:
            coins = self._coins[busy if rows is None else rows[busy]]
        self.n_solved += len(busy)
        out[busy] = communication_time(
            rej_sorted[busy], self._g_ul, self._g_dl, self.config, p_ul_w=self.context.p_ul_w,
            p_dl_w=self.context.p_dl_w, coins=coins, presorted=True, policy=self.policy, full=False,
        ).t_com
        return out

    def t_com(self, gamma: np.ndarray) -> np.ndarray:
        """Per-sample T_com [S] of one candidate (cached)."""
        gamma = np.asarray(gamma, dtype=np.int64)
        key = gamma.tobytes()
        hit = self._cache.get(key)
        if hit is None:
            hit = self._recent.get(key)  # e.g. the move the search just took
        if hit is None:
            hit = self._solve(self._f <= gamma[self._order]) if self.communication else np.zeros(len(self._f))
        self._cache[key] = hit
        return hit

    def _t_com_many(self, gammas: np.ndarray, base: np.ndarray | None) -> np.ndarray:
        """[C, S] per-sample T_com, re-solving only samples that differ from ``base``.

        A sample's rejected set changes only at the devices where a candidate differs from the
        base, so the test runs over those (candidate, device) pairs — O(S × changed devices), not
        O(C × S × K) — and only the changed samples' rejected sets are built and solved."""
        c, s = len(gammas), len(self._f)
        if not self.communication:
            return np.zeros((c, s))
        if base is None:
            return np.stack([self.t_com(g) for g in gammas])
        base = np.asarray(base, dtype=np.int64)
        t_base = self.t_com(base)
        out = np.broadcast_to(t_base, (c, s)).copy()
        gs, bs = gammas[:, self._order], base[self._order]
        ci, ji = np.nonzero(gs != bs[None])  # row-major: pairs grouped by candidate
        if len(ci) == 0:
            return out
        f = self._f_t[ji]  # [P, S]
        changed = (f <= gs[ci, ji, None]) != (f <= bs[ji, None])
        diff = np.zeros((c, s), dtype=bool)
        starts = np.flatnonzero(np.r_[True, ci[1:] != ci[:-1]])
        diff[ci[starts]] = changed if len(starts) == len(ci) else np.logical_or.reduceat(changed, starts, axis=0)
        ci, si = np.nonzero(diff)
        if len(ci):
            out[ci, si] = self._solve(self._f[si] <= gs[ci], rows=si)
        self._recent = {g.tobytes(): row for g, row in zip(gammas, out)}
        return out

    # ------------------------------------------------------------------ scores
    def evaluate(self, gammas: np.ndarray, base: np.ndarray | None = None) -> np.ndarray:
        """SAA expected goodput of each row of ``gammas`` [C, K] (or one vector [K]).

        ``base``: a vector scored before (or to be scored); only samples whose rejected set
        differs from the base's are re-solved. The result does not depend on ``base``.
        """
        gammas = np.asarray(gammas, dtype=np.int64)
        single = gammas.ndim == 1
        gammas = np.atleast_2d(gammas)
        t_com = self._t_com_many(gammas, base)
        t_cmp = latency.compute_latency(gammas, self.context.t_draft, self.config)
        vals = saa_objective(self.objective, gammas, t_cmp, t_com, self.context.alpha, self.samples, self.config,
                             self.context.survival)
        return vals[0] if single else vals


class DynamicSAAEstimator:
    """SAA scores under model §11 uncertainty, with the same ``evaluate`` interface as
    :class:`SAAEstimator` (so the greedy, uniform and local searches run on it unchanged).

    Each of the S samples (drawn once per decision: common random numbers for every candidate)
    carries an α vector (the context's :meth:`~msenv.engine.context.RoundContext.sample_alpha`: a
    draw from the server's belief where α is hidden), its verification outcome, and an innovation
    w ~ CN(0, 1) per link and device. A candidate γ is priced with the gains its correction will
    meet, T_cmp(γ) after the decision (the context's
    :meth:`~msenv.engine.context.RoundContext.gain_samples`): the gains the context fixes (i.i.d.
    block fading seen exactly, or oracle innovations), shared by all samples; under decision-time
    CSI of a Gauss–Markov channel h_corr | h_seen ~ CN(ρ·h_seen, 1 − ρ²), ρ = J0(2π f_D T_cmp(γ)) —
    longer drafts, staler CSI; under statistical CSI h_corr ~ CN(0, 1) (only β is known).

    Candidates with the same T_cmp share the gains and are solved in one batched call.
    """

    def __init__(self, context: RoundContext, rng: np.random.Generator, n_samples: int | None = None,
                 policy: str | None = None, objective: str | None = None, communication: bool = True) -> None:
        from msenv.model import channel

        check_saa_args("DynamicSAAEstimator", n_samples, objective, policy)
        cfg = context.config
        self.config, self.context = cfg, context
        self.policy = cfg.radio.mode_policy if policy is None else policy
        self.objective = saa_config(cfg).saa_objective if objective is None else objective
        self.communication = communication
        s = saa_config(cfg).n_saa if n_samples is None else int(n_samples)
        k = len(context.alpha)
        self.alpha = context.sample_alpha(rng, s)  #: α per sample [S, K] (or [K]: known)
        u = 1.0 - rng.random((s, k))
        self.samples = acceptance.first_rejection_from_uniform(u, self.alpha, cfg.gamma_max + 1)
        self.coins = rng.random((s, k)) if self.policy == "random" else None
        links = 2 if cfg.channel.fading == "independent" else 1
        w = channel.complex_gain_from_uniform(rng.random((links, s, k)), rng.random((links, s, k)))
        self._w_ul, self._w_dl = w[0], w[-1]
        self._cache: dict[bytes, float] = {}
        self._gains: dict[float, tuple[np.ndarray, np.ndarray]] = {}
        self.n_solved = 0

    def gains(self, t_cmp: float) -> tuple[np.ndarray, np.ndarray]:
        """(g_ul, g_dl) the correction meets after ``t_cmp`` seconds: [K] or per sample [S, K]."""
        hit = self._gains.get(t_cmp)
        if hit is not None:
            return hit
        out = self.context.gain_samples(t_cmp, self._w_ul, self._w_dl)
        self._gains[t_cmp] = out
        return out

    def evaluate(self, gammas: np.ndarray, base: np.ndarray | None = None) -> np.ndarray:
        """SAA expected goodput of each row of ``gammas`` [C, K] (or one vector [K]); ``base``
        is accepted for interface compatibility (the result does not depend on it)."""
        gammas = np.asarray(gammas, dtype=np.int64)
        single = gammas.ndim == 1
        gammas = np.atleast_2d(gammas)
        out = np.empty(len(gammas))
        todo = []
        for i, g in enumerate(gammas):
            hit = self._cache.get(g.tobytes())
            if hit is None:
                todo.append(i)
            else:
                out[i] = hit
        if todo:
            cand = gammas[todo]
            t_cmp = latency.compute_latency(cand, self.context.t_draft, self.config)
            t_com = np.zeros((len(cand), len(self.samples)))
            if self.communication:
                for t in np.unique(t_cmp):
                    rows = np.flatnonzero(t_cmp == t)
                    g_ul, g_dl = self.gains(float(t))
                    rej = self.samples[None] <= cand[rows][:, None, :]  # [c, S, K]
                    busy = rej.any(axis=-1)
                    if not busy.any():
                        continue
                    ci, si = np.nonzero(busy)
                    gu = g_ul if g_ul.ndim == 1 else g_ul[si]
                    gd = g_dl if g_dl.ndim == 1 else g_dl[si]
                    coins = None if self.coins is None else self.coins[si]
                    self.n_solved += len(si)
                    t_com[rows[ci], si] = communication_time(
                        rej[ci, si], gu, gd, self.config, p_ul_w=self.context.p_ul_w, p_dl_w=self.context.p_dl_w,
                        coins=coins, policy=self.policy, full=False,
                    ).t_com
            vals = saa_objective(self.objective, cand, t_cmp, t_com, self.alpha, self.samples, self.config)
            for j, i in enumerate(todo):
                out[i] = vals[j]
                self._cache[gammas[i].tobytes()] = float(vals[j])
        return out[0] if single else out
