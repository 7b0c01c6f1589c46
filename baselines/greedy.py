"""Greedy SAA draft-length control (paper §V, model §7) and its relatives.

- :class:`GreedySAA` — the paper's algorithm: phase 1 synchronized all-ones increments from
  γ = 0 while the SAA goodput improves; phase 2 coordinate refinement (best single-device +1)
  until none improves.
- :class:`ComputationOnly` — the same greedy with T_com ≡ 0 while choosing (paper baseline).
- :class:`LocalSearch` — **ours, beyond the paper**: best-improvement ±1 moves started from
  the better of greedy and optimal uniform; on its SAA objective it is never worse than either.
- :class:`ExactSAA` — **ours**: exact maximiser of the SAA objective for small K (exhaustive
  over (γ_max+1)^K with a per-subset T_com table), to measure the greedy's optimality gap.

Under model §11 (hidden α, stale CSI):

- :class:`PlugInGreedy` — the paper's greedy as it could be deployed: the same algorithm on the
  observable context (posterior-mean α, the gains it is shown, as if they were exact);
- :class:`BayesianSAA` — **ours**: the same two-phase greedy on
  :class:`~baselines.saa.DynamicSAAEstimator`, whose samples draw α from the posterior and the
  correction-time gains from the fading law given the CSI and ρ(T_cmp(γ)), per candidate;
- :class:`OracleGreedy` — the greedy on the *oracle* context (true α, the correction-time gains
  of every candidate): an upper reference no real server can run.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from baselines.saa import DynamicSAAEstimator, SAAEstimator, check_saa_args, saa_config
from msenv.engine.functional import RoundContext
from msenv.model import latency
from msenv.model.goodput import communication_time, saa_objective

from .base import Controller
from .simple import best_uniform


def greedy_search(est: SAAEstimator, trace: list | None = None,
                  deadline: float | None = None) -> tuple[np.ndarray, float]:
    """Paper §V greedy on an estimator's samples. Returns (γ, SAA value).

    ``trace`` (a list) receives ``(phase, γ, value)`` for every accepted move. ``deadline`` (a
    ``time.perf_counter()`` value): stop improving once it has passed and return the best so far.
    """
    k, gmax = len(est.context.alpha), est.config.gamma_max
    gamma = np.zeros(k, dtype=np.int64)
    value = float(est.evaluate(gamma))
    if trace is not None:
        trace.append((0, gamma.copy(), value))
    def late() -> bool:
        return deadline is not None and time.perf_counter() > deadline

    # phase 1: synchronized all-ones updates
    while not late():
        cand = np.minimum(gamma + 1, gmax)
        if np.array_equal(cand, gamma):
            break
        v = float(est.evaluate(cand, base=gamma))
        if v <= value:
            break
        gamma, value = cand, v
        if trace is not None:
            trace.append((1, gamma.copy(), value))
    # phase 2: coordinate refinement, best single-device +1
    while not late():
        idx = np.flatnonzero(gamma < gmax)
        if len(idx) == 0:
            break
        cands = np.repeat(gamma[None], len(idx), axis=0)
        cands[np.arange(len(idx)), idx] += 1
        vals = est.evaluate(cands, base=gamma)
        best = int(np.argmax(vals))
        if vals[best] <= value:
            break
        gamma, value = cands[best], float(vals[best])
        if trace is not None:
            trace.append((2, gamma.copy(), value))
    return gamma, value


def local_search(est: SAAEstimator, start: np.ndarray, value: float | None = None) -> tuple[np.ndarray, float]:
    """Best-improvement ±1 coordinate moves from ``start`` until no move improves."""
    k, gmax = len(start), est.config.gamma_max
    gamma = np.asarray(start, dtype=np.int64).copy()
    value = float(est.evaluate(gamma)) if value is None else value
    moves = np.concatenate([np.eye(k, dtype=np.int64), -np.eye(k, dtype=np.int64)])
    while True:
        cands = gamma[None] + moves
        ok = np.all((cands >= 0) & (cands <= gmax), axis=1)
        cands = cands[ok]
        vals = est.evaluate(cands, base=gamma)
        best = int(np.argmax(vals))
        if vals[best] <= value:
            return gamma, value
        gamma, value = cands[best], float(vals[best])


class GreedySAA(Controller):
    """Paper's proactive draft-length control (§V): two-phase greedy on the SAA goodput.

    Args:
        n_samples: N_SAA (default :class:`~baselines.saa.SAAConfig`'s, 1000), drawn once per decision.
        objective: ``"ratio"`` (paper) or ``"mean_of_ratios"`` (default: :class:`~baselines.saa.SAAConfig`'s).
        policy: reactive policy assumed while choosing (default: the config's).
    """

    name = "greedy-saa"
    communication = True

    def __init__(self, n_samples: int | None = None, objective: str | None = None, policy: str | None = None) -> None:
        super().__init__()
        self.n_samples, self.objective, self.policy = check_saa_args(type(self).__name__, n_samples, objective, policy)
        self.last_trace: list = []

    def estimator(self, context: RoundContext) -> SAAEstimator:
        return SAAEstimator(context, self.rng, self.n_samples, self.policy, self.objective, self.communication)

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        self.last_trace = []
        return self.search(self.estimator(context))

    def search(self, est: SAAEstimator) -> np.ndarray:
        """The draft lengths of the search on ``est`` (the paper's greedy; its accepted moves in
        ``last_trace``)."""
        return greedy_search(est, self.last_trace)[0]


def greedy_local_search(est: SAAEstimator, trace: list | None = None) -> np.ndarray:
    """The paper's greedy, then :func:`local_search` from its decision on the same estimator (its
    samples): never below the greedy's SAA value."""
    gamma, value = greedy_search(est, trace)
    return local_search(est, gamma, value)[0]


class BudgetedGreedy(GreedySAA):
    """The paper's greedy cut to a per-decision time budget (default 1 ms): its passes stop at the
    budget (the best vector so far is returned), and its N_SAA adapts from decision to decision —
    shrunk when a decision overran, grown back (up to its N_SAA) when it used under half. The
    fair real-time rival: its decisions depend on the machine's speed, not only on the seed."""

    name = "budgeted-greedy"
    timed = True

    def __init__(self, budget_ms: float = 1.0, **kwargs) -> None:
        if isinstance(budget_ms, bool) or not (isinstance(budget_ms, (int, float)) and budget_ms > 0):
            raise ValueError(f"budget_ms={budget_ms!r} is invalid; allowed: a number of milliseconds > 0")
        super().__init__(**kwargs)
        self.budget_ms = float(budget_ms)
        self._n: int | None = None

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._n = None

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        t0 = time.perf_counter()
        cap = self.n_samples or saa_config(context.config).n_saa
        n = self._n = min(self._n or cap, cap)
        est = SAAEstimator(context, self.rng, n, self.policy, self.objective, self.communication)
        self.last_trace = []
        gamma = greedy_search(est, self.last_trace, deadline=t0 + self.budget_ms / 1e3)[0]
        used = (time.perf_counter() - t0) * 1e3
        if used > self.budget_ms:
            self._n = max(16, int(n * 0.7 * self.budget_ms / used))
        elif used < 0.5 * self.budget_ms:
            self._n = min(cap, int(n * 1.5) + 1)
        return gamma


class PlugInGreedy(GreedySAA):
    """The paper's greedy on what a server observes (posterior-mean α, gains as shown)."""

    name = "plug-in-greedy"


class BayesianSAA(GreedySAA):
    """Ours (model §11): the two-phase greedy on the Bayesian SAA estimate — α samples from the
    posterior, correction-time gains from h_corr | h_seen ~ CN(ρ(T_cmp(γ))·h_seen, 1 − ρ²) —
    so a candidate is priced with both its estimation error and its CSI staleness."""

    name = "bayes-saa"

    def estimator(self, context: RoundContext) -> DynamicSAAEstimator:
        return DynamicSAAEstimator(context, self.rng, self.n_samples, self.policy, self.objective, self.communication)


class OracleGreedy(BayesianSAA):
    """Upper reference: the greedy on the oracle context (true α and the exact correction-time
    gains of every candidate). The harness hands it ``env.oracle_context``."""

    name = "oracle-greedy"
    oracle = True


class OracleAlphaSAA(BayesianSAA):
    """Diagnostic: Bayesian SAA told the true α (the channel as the server sees it)."""

    name = "oracle-alpha-saa"
    oracle = "alpha"


class OracleCSISAA(BayesianSAA):
    """Diagnostic: Bayesian SAA told the correction-time channel (α as the server sees it)."""

    name = "oracle-csi-saa"
    oracle = "csi"


class ComputationOnly(GreedySAA):
    """Paper baseline: the greedy run with T_com ≡ 0 while choosing."""

    name = "computation-only"
    communication = False


class LocalSearch(GreedySAA):
    """Ours: ±1 local search from the better of greedy and optimal uniform (same samples)."""

    name = "local-search"

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        est = self.estimator(context)
        g1, v1 = greedy_search(est)
        g2, v2 = best_uniform(est)
        start, v = (g1, v1) if v1 >= v2 else (g2, v2)
        return local_search(est, start, v)[0]


class ExactSAA(GreedySAA):
    """Ours: the exact SAA maximiser by exhaustive search, for small K only.

    T_com depends on a sample only through its rejected set R, so T_com(R) is tabulated for
    all 2^K subsets once; each candidate's mean T_com is then a histogram of R over samples.
    """

    name = "exact-saa"
    max_candidates = 2_000_000

    def act(self, context: RoundContext, obs=None) -> np.ndarray:
        return self.solve(self.estimator(context))[0]

    def solve(self, est: SAAEstimator, chunk: int = 2048) -> tuple[np.ndarray, float]:
        cfg = est.config
        k, gmax = len(est.context.alpha), cfg.gamma_max
        n_cand = (gmax + 1) ** k
        if n_cand > self.max_candidates or k > 16:
            raise ValueError(
                f"ExactSAA needs (gamma_max+1)^K ≤ {self.max_candidates} candidates; got "
                f"({gmax}+1)^{k} = {n_cand}: use a smaller num_devices or gamma_max"
            )
        f = est.samples  # [S, K]
        subsets = np.array(list(itertools.product([False, True], repeat=k)))[:, ::-1]  # bit j ↔ device j
        if est.communication:
            if est.policy == "random":  # coins differ per sample: no subset table
                raise ValueError("ExactSAA supports the deterministic reactive policies only (not 'random')")
            table = communication_time(
                subsets, est.context.g_ul, est.context.g_dl, cfg, p_ul_w=est.context.p_ul_w,
                p_dl_w=est.context.p_dl_w, policy=est.policy,
            ).t_com
        else:
            table = np.zeros(len(subsets))
        weights = 1 << np.arange(k)
        best_v, best_g = -np.inf, None
        for start in range(0, n_cand, chunk):
            idx = np.arange(start, min(start + chunk, n_cand))
            gammas = (idx[:, None] // (gmax + 1) ** np.arange(k)) % (gmax + 1)  # [C, K]
            code = ((f[None] <= gammas[:, None]) * weights).sum(-1)  # [C, S] subset index
            t_com = table[code]
            t_cmp = latency.compute_latency(gammas, est.context.t_draft, cfg)
            vals = saa_objective(est.objective, gammas, t_cmp, t_com, est.context.alpha, f, cfg)
            i = int(np.argmax(vals))
            if vals[i] > best_v:
                best_v, best_g = float(vals[i]), gammas[i].copy()
        return best_g, best_v
