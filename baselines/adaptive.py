"""Adaptive draft-length rules of the literature, which learn from each round's outcome
(:meth:`Controller.observe <baselines.base.Controller.observe>`), and a clairvoyant reference —
the rivals of learned control where acceptance is bursty and history-dependent (model §12).

Each observes what a server can (a device's draft length, accepted count, rejection, the round's
tokens and time; a request's end) unless it is the named oracle:

- :class:`HFHeuristic` — Hugging Face Transformers' assisted-generation schedule, per device:
  start at 5 drafted tokens, +2 after a fully accepted draft, −1 otherwise, never below 1, restarted
  with each request (the "heuristic" schedule of transformers ≤ 4.44, whose default start was 5;
  "heuristic_transient" restarts per call); optionally clipped to a common drafting-time budget per
  round (``hf-budget``), since a device's raise lengthens the slowest drafter everyone waits for;
- :class:`UCBLengths` — a UCB bandit per device over draft lengths, rewarded by the device's
  tokens per second, restarted with each request (BanditSpec's UCBSpec, Hou et al., ICML 2025,
  arXiv 2505.15141);
- :class:`UCBBudget` — one UCB bandit for the cell over the common drafting-time budget τ
  (γ_k = ⌊τ / T_k^dft⌋), rewarded by the round's goodput;
- :class:`LastOutcome` — per device: draft nothing after a rejected round, the budget after a fully
  accepted one;
- :class:`KaplanMeierGreedy` — the paper's greedy SAA on each device's acceptance by depth,
  estimated from its request's rounds by Kaplan–Meier (a fully accepted draft is censored at its
  length; the first drafted token's acceptance differs from the later ones' for an n-gram drafter);
- :class:`Clairvoyant` — the oracle reference: knowing every device's first rejection F_k this
  round, the best common time budget τ with γ_k = min(F_k − 1, ⌊τ / T_k^dft⌋), which never has a
  rejection. A reference, not an upper bound: a round's best plan is not the episode's.

- :class:`BestFixed` — the best fixed draft length of the trace's preset.

A tunable left at None takes the value chosen on the validation requests of the env's trace preset
(:mod:`baselines.tuned`, written by ``python -m experiments traces-tune``), else its class default;
budgets are in units of the reference device's time per drafted token, T_dft,ref.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from msenv.engine.context import RoundContext
from msenv.model import latency

from .base import Controller
from .greedy import GreedySAA
from .tuned import tuned


def _check_number(owner: str, name: str, value, lo: float, integer: bool = False) -> float:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < lo or (integer and int(value) != value):
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{owner} {name}={value!r} is invalid; allowed: {kind} ≥ {lo:g}")
    return float(value)


def _setting(rule: str, name: str, value, context: RoundContext, default: float) -> float:
    """A rule's tunable: ``value`` when given, else the one tuned for the context's trace source
    (:mod:`baselines.tuned`), else ``default``."""
    if value is not None:
        return value
    return tuned(context.config.traces.trace_source, rule).get(name, default)


def budget_lengths(tau: float, context: RoundContext) -> np.ndarray:
    """γ_k = min(⌊τ T_dft,ref / T_k^dft⌋, γ_max): as many tokens as fit in a common drafting time
    of τ reference tokens."""
    cfg = context.config
    fit = np.floor(tau * cfg.compute.t_draft_ref_s / np.asarray(context.t_draft) + 1e-9)
    return np.clip(fit, 0, cfg.gamma_max).astype(np.int64)


def _ended(info: dict, k: int) -> np.ndarray:
    """Which devices' requests ended this round (none without requests)."""
    done = info.get("request_done")
    return np.zeros(k, bool) if done is None else np.asarray(done, bool)[:k]


class HFHeuristic(Controller):
    """Hugging Face's assisted-generation schedule per device (module docstring).

    Args:
        start: draft length of a request's first round (HF: 5).
        floor: the smallest draft length it falls to (HF: 1).
        budget: None, or a common drafting-time budget per round in reference tokens: each device's
            length is clipped to ⌊budget · T_dft,ref / T_k^dft⌋.
    """

    name = "hf-heuristic"

    def __init__(self, start: int = 5, floor: int = 1, budget: float | None = None) -> None:
        super().__init__()
        owner = type(self).__name__
        self.start = int(_check_number(owner, "start", start, 0, integer=True))
        self.floor = int(_check_number(owner, "floor", floor, 0, integer=True))
        self.budget = None if budget is None else _check_number(owner, "budget", budget, 0)
        self._n: np.ndarray | None = None

    def reset(self, seed=None) -> None:
        super().reset(seed)
        self._n = None

    def act(self, context, obs=None):
        k = len(context.t_draft)
        if self._n is None or len(self._n) != k:
            self._n = np.full(k, float(self.start))
        gamma = np.minimum(self._n.astype(np.int64), context.config.gamma_max)
        if self.budget is not None:
            gamma = np.minimum(gamma, budget_lengths(self.budget, context))
        return gamma

    def observe(self, gamma, info):
        full = np.asarray(info["accepted"])[: len(gamma)] == gamma
        self._n = np.where(full, self._n + 2.0, np.maximum(float(self.floor), self._n - 1.0))
        self._n[_ended(info, len(gamma))] = float(self.start)


class HFBudget(HFHeuristic):
    """:class:`HFHeuristic` clipped to a common drafting-time budget per round (``budget``, in
    reference tokens; None: tuned per trace preset, else 4)."""

    name = "hf-budget"

    def __init__(self, start: int = 5, floor: int = 1, budget: float | None = None) -> None:
        super().__init__(start, floor, budget)
        self._given = budget

    def act(self, context, obs=None):
        self.budget = _setting(self.name, "budget", self._given, context, 4.0)
        return super().act(context, obs)


class UCBLengths(Controller):
    """A UCB1 bandit per device over the draft lengths ``arms``, rewarded by the device's tokens per
    second of round (its tokens / the round's latency, scaled by the first reward it saw), each
    arm tried once first; restarted with each request (BanditSpec's UCBSpec).

    Args:
        arms: the draft lengths it chooses among (default 1 … 8, capped at γ_max).
        exploration: c of the bonus √(c · ln t / n_arm) (None: tuned per trace preset, else 0.5).
    """

    name = "ucb-lengths"

    def __init__(self, arms: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8), exploration: float | None = None) -> None:
        super().__init__()
        if not arms or any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) or a < 0 for a in arms):
            raise ValueError(f"UCBLengths arms={arms!r} is invalid; allowed: a non-empty tuple of integers ≥ 0")
        self.arms = np.asarray(sorted(set(int(a) for a in arms)), np.int64)
        self._given = None if exploration is None else _check_number(type(self).__name__, "exploration",
                                                                       exploration, 0)
        self._n = self._sum = self._scale = None

    def reset(self, seed=None) -> None:
        super().reset(seed)
        self._n = self._sum = self._scale = None

    def _fresh(self, k: int) -> None:
        self._n, self._sum = np.zeros((k, len(self.arms))), np.zeros((k, len(self.arms)))
        self._scale = np.zeros(k)

    def act(self, context, obs=None):
        k = len(context.t_draft)
        if self._n is None or len(self._n) != k:
            self._fresh(k)
        arms = np.minimum(self.arms, context.config.gamma_max)
        self.exploration = _setting(self.name, "exploration", self._given, context, 0.5)
        t = self._n.sum(axis=1, keepdims=True)
        mean = self._sum / np.maximum(self._n, 1.0)
        bonus = np.sqrt(self.exploration * np.log(np.maximum(t, 1.0)) / np.maximum(self._n, 1e-12))
        score = np.where(self._n == 0, np.inf, mean + bonus)
        self._last = np.argmax(score, axis=1)  # the first untried arm, else the best bound
        return arms[self._last]

    def observe(self, gamma, info):
        k = len(gamma)
        rate = np.asarray(info["tokens"], float)[:k] / float(info["latency"])
        self._scale = np.where(self._scale > 0, self._scale, np.maximum(rate, 1e-12))
        rows = np.arange(k)
        self._n[rows, self._last] += 1.0
        self._sum[rows, self._last] += rate / self._scale
        ended = _ended(info, k)
        self._n[ended], self._sum[ended], self._scale[ended] = 0.0, 0.0, 0.0


class UCBBudget(Controller):
    """One UCB1 bandit for the cell over common drafting-time budgets τ (γ_k = ⌊τ T_dft,ref /
    T_k^dft⌋), rewarded by the round's goodput (scaled by the first goodput it saw), each budget
    tried once first; it learns over the whole episode (requests end device by device).

    Args:
        arms: the budgets τ it chooses among, in reference tokens (default 0 … 8).
        exploration: c of the bonus √(c · ln t / n_arm) (None: tuned per trace preset, else 0.5).
    """

    name = "ucb-budget"

    def __init__(self, arms: tuple[float, ...] = (0, 1, 2, 3, 4, 5, 6, 7, 8), exploration: float | None = None) -> None:
        super().__init__()
        owner = type(self).__name__
        if not arms:
            raise ValueError(f"{owner} arms={arms!r} is invalid; allowed: a non-empty tuple of budgets ≥ 0")
        self.arms = np.asarray(sorted(set(_check_number(owner, "arms", a, 0) for a in arms)))
        self._given = None if exploration is None else _check_number(owner, "exploration", exploration, 0)
        self.reset()

    def reset(self, seed=None) -> None:
        super().reset(seed)
        self._n, self._sum, self._scale = np.zeros(len(self.arms)), np.zeros(len(self.arms)), 0.0

    def act(self, context, obs=None):
        self.exploration = _setting(self.name, "exploration", self._given, context, 0.5)
        t = self._n.sum()
        mean = self._sum / np.maximum(self._n, 1.0)
        bonus = np.sqrt(self.exploration * np.log(max(t, 1.0)) / np.maximum(self._n, 1e-12))
        self._last = int(np.argmax(np.where(self._n == 0, np.inf, mean + bonus)))
        return budget_lengths(self.arms[self._last], context)

    def observe(self, gamma, info):
        good = float(info["goodput"])
        self._scale = self._scale or max(good, 1e-12)
        self._n[self._last] += 1.0
        self._sum[self._last] += good / self._scale


class LastOutcome(Controller):
    """Per device: no draft after a round with a rejection, the budget after a fully accepted round
    (and at a request's start). ``budget``: the drafting time in reference tokens (None: tuned per
    trace preset, else 4)."""

    name = "last-outcome"

    def __init__(self, budget: float | None = None) -> None:
        super().__init__()
        self._given = None if budget is None else _check_number(type(self).__name__, "budget", budget, 0)
        self._off: np.ndarray | None = None

    def reset(self, seed=None) -> None:
        super().reset(seed)
        self._off = None

    def act(self, context, obs=None):
        k = len(context.t_draft)
        if self._off is None or len(self._off) != k:
            self._off = np.zeros(k, bool)
        self.budget = _setting(self.name, "budget", self._given, context, 4.0)
        return np.where(self._off, 0, budget_lengths(self.budget, context))

    def observe(self, gamma, info):
        self._off = np.asarray(info["rejected"], bool)[: len(gamma)] & ~_ended(info, len(gamma))


class KaplanMeierGreedy(GreedySAA):
    """The paper's greedy SAA on each device's acceptance by depth, estimated from its request's
    rounds (Kaplan–Meier): h_d = P(token d + 1 rejected | tokens 1 … d accepted) from the rounds
    that reached depth d, a fully accepted draft censored at its length; each depth's estimate is
    shrunk towards the pooled estimate of every request seen so far with ``prior`` pseudo-rounds
    (None: tuned per trace preset, else 4).
    The survival P(F > j) = Π_{d<j} (1 − h_d) goes to the SAA in the context
    (:attr:`~msenv.engine.context.RoundContext.survival`)."""

    name = "km-greedy"

    def __init__(self, prior: float | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._given = None if prior is None else _check_number(type(self).__name__, "prior", prior, 0)
        self.prior = 4.0 if prior is None else self._given
        self._events = self._risk = None

    def reset(self, seed=None) -> None:
        super().reset(seed)
        self._events = self._risk = None

    def survival(self, gamma_max: int) -> np.ndarray:
        """Each device's survival P(F > j), j = 0 … γ_max [K, γ_max + 1] from its counts."""
        pool_e, pool_r = self._pool_events, self._pool_risk
        pooled = (pool_e + 0.5) / (pool_r + 1.0)  # the pooled hazard by depth, Jeffreys-smoothed
        weight = self._risk + self.prior  # a depth never reached (and no prior): the pooled hazard
        hazard = np.where(weight > 0, (self._events + self.prior * pooled) / np.maximum(weight, 1e-300), pooled)
        hazard = np.clip(hazard[:, :gamma_max], 0.0, 1.0)
        surv = np.cumprod(np.concatenate([np.ones((len(hazard), 1)), 1.0 - hazard], axis=1), axis=1)
        return surv

    def act(self, context, obs=None):
        k, gmax = len(context.t_draft), context.config.gamma_max
        if self._events is None or self._events.shape != (k, gmax):
            self._events, self._risk = np.zeros((k, gmax)), np.zeros((k, gmax))
            self._pool_events, self._pool_risk = np.zeros(gmax), np.zeros(gmax)
        self.prior = _setting(self.name, "prior", self._given, context, 4.0)
        ctx = dataclasses.replace(context, survival=self.survival(gmax))
        self.last_trace = []
        return self.search(self.estimator(ctx))

    def observe(self, gamma, info):
        k, depth = len(gamma), self._events.shape[1]
        acc = np.asarray(info["accepted"])[:k]
        rej = np.asarray(info["rejected"], bool)[:k]
        d = np.arange(depth)
        # tokens 1 … A accepted: depths 0 … A − 1 survived; a rejection is an event at depth A
        event = rej[:, None] & (d[None] == acc[:, None])
        risk = (d[None] < acc[:, None]) | event
        self._risk += risk
        self._events += event
        self._pool_risk += risk.sum(axis=0)
        self._pool_events += event.sum(axis=0)
        ended = _ended(info, k)
        self._events[ended], self._risk[ended] = 0.0, 0.0


class BestFixed(Controller):
    """The best fixed draft length of the env's trace preset, chosen on its validation requests
    (:mod:`baselines.tuned`); ``gamma`` overrides it; on another source, 3."""

    name = "best-fixed"

    def __init__(self, gamma: int | None = None) -> None:
        super().__init__()
        self._given = None if gamma is None else int(_check_number(type(self).__name__, "gamma", gamma, 0, True))

    def act(self, context, obs=None):
        gamma = int(_setting("fixed", "gamma", self._given, context, 3))
        return np.full(len(context.t_draft), min(gamma, context.config.gamma_max), dtype=np.int64)


class Clairvoyant(Controller):
    """Oracle reference (module docstring): the best common time budget τ with γ_k = min(F_k − 1,
    ⌊τ / T_k^dft⌋) for the coming round, F_k from the trace's future (the oracle context's
    ``first_rejection``). No rejection: its round's goodput is Σ (γ_k + 1) / T_cmp(γ), maximised
    exactly over every τ at which some device's length changes."""

    name = "clairvoyant"
    oracle = True

    def act(self, context, obs=None):
        if getattr(context, "first_rejection", None) is None:
            raise ValueError("the clairvoyant reference needs a trace's oracle context (first_rejection); this env's "
                             "acceptance is not from a trace: use an id with trace_source set")
        cfg = context.config
        t = np.asarray(context.t_draft, float)
        top = np.minimum(np.asarray(context.first_rejection) - 1, cfg.gamma_max)  # no draft past the rejection
        steps = np.arange(cfg.gamma_max + 1)
        taus = np.unique((steps[:, None] * t[None]).reshape(-1))  # every τ where some γ_k changes
        gammas = np.minimum(np.floor(taus[:, None] / t[None] + 1e-9), top[None]).astype(np.int64)
        gammas = np.unique(gammas, axis=0)
        tokens = (gammas + 1).sum(axis=1) if cfg.compute.verify_batch == "all" else ((gammas + 1) * (gammas > 0)).sum(axis=1)
        good = tokens / latency.compute_latency(gammas, t, cfg)
        return gammas[int(np.argmax(good))]


__all__ = ["BestFixed", "Clairvoyant", "HFBudget", "HFHeuristic", "KaplanMeierGreedy", "LastOutcome", "UCBBudget", "UCBLengths",
           "budget_lengths"]
