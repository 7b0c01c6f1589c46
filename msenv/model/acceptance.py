"""Verification outcome: i.i.d. token acceptance with common random numbers (model §3).

Each drafted token of device k is accepted independently with probability α_k [R].
The outcome of a round is summarised by F_k, the position of the first rejection if the
device drafted forever: F_k = ⌊ln U / ln α_k⌋ + 1, U ~ U(0, 1]. Every candidate draft length
then shares that draw (common random numbers):

    A_k = min(F_k − 1, γ_k)  accepted tokens,   rejected iff F_k ≤ γ_k,   N_k = A_k + 1.

F_k > γ_max behaves exactly like F_k = ∞ for every allowed γ, so samples are stored capped at
``cap = γ_max + 1`` (an exact representation, not an approximation).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from .numeric import pairwise_sum, scipy_special, ufunc
from .slots import MOMENT


def _first_rejection(u, alpha, cap):
    if alpha >= 1.0:
        return cap
    x = math.log(u) / math.log(alpha)
    if math.isnan(x):
        return cap
    return int(min(math.floor(x) + 1.0, cap))


#: F = min(⌊ln u / ln α⌋ + 1, cap) of one device, compiled (called by the compiled step kernel)
first_rejection_scalar = njit(cache=True, error_model="numpy")(_first_rejection)
_first_rejection_ufunc = ufunc(["i8(f8, f8, i8)"], first_rejection_scalar)


@njit(cache=True, error_model="numpy")
def outcome_rows(u, start, alpha, cap, first_rej):
    """F of every device row from the uniforms ``u[:, start:start + K]`` (compiled; U = 1 − u ∈ (0, 1])."""
    n, k = first_rej.shape
    for r in range(n):
        for i in range(k):
            first_rej[r, i] = first_rejection_scalar(1.0 - u[r, start + i], alpha[r, i], cap)


def _task_scalar(u, n_tasks):
    return min(int(u * n_tasks), n_tasks - 1)


#: a request's task, uniform over the config's tasks, from one uniform: compiled and numpy ufunc
task_scalar = njit(cache=True)(_task_scalar)
_task_ufunc = ufunc(["i8(f8, i8)"], _task_scalar)


def task_from_uniform(u: np.ndarray, n_tasks: int) -> np.ndarray:
    """Task indices (uniform over ``n_tasks`` tasks) from uniforms."""
    return _task_ufunc(u, n_tasks)


def task_alpha(task: np.ndarray, rates) -> np.ndarray:
    """The mean acceptance rate of each task index (``rates``: each task's)."""
    return np.asarray(rates)[task]


def request_length(u_len, task, mean_tokens) -> np.ndarray:
    """A request's length in tokens, geometric with its task's mean (``mean_tokens``: each task's)."""
    return geometric_from_uniform(u_len, np.asarray(mean_tokens)[task])


def first_rejection_from_uniform(u: np.ndarray, alpha: np.ndarray, cap: int) -> np.ndarray:
    """F = min(⌊ln u / ln α⌋ + 1, cap) for u ∈ (0, 1]; α = 1 gives F = cap (never rejected).
    A numpy ufunc (broadcasts) built from the compiled scalar formula; int32."""
    return _first_rejection_ufunc(u, alpha, cap).astype(np.int32)


def sample_first_rejection(rng: np.random.Generator, alpha: np.ndarray, cap: int, size=None) -> np.ndarray:
    """Draw F (shape ``size``, default ``alpha.shape``) with P(F > j) = α^j, capped at ``cap``."""
    alpha = np.asarray(alpha, dtype=float)
    shape = alpha.shape if size is None else size
    u = 1.0 - rng.random(shape)  # U(0, 1]
    return first_rejection_from_uniform(u, alpha, cap)


def _accepted(first_rejection, gamma):
    return min(first_rejection - 1, gamma)


def _rejected(first_rejection, gamma):
    return first_rejection <= gamma


#: A_k = min(F_k − 1, γ_k) and "a correction iff F_k ≤ γ_k" of one device, compiled (the round
#: kernel's); the array forms below are numpy ufuncs of the same source
accepted_scalar = njit(cache=True)(_accepted)
rejected_scalar = njit(cache=True)(_rejected)
#: A_k = min(F_k − 1, γ_k) (a numpy ufunc: broadcasts; int64)
accepted_tokens = ufunc(["i8(i8, i8)"], _accepted)
#: device k needs a correction iff F_k ≤ γ_k, never when γ_k = 0 (a numpy ufunc: broadcasts)
rejected = ufunc(["b1(i8, i8)"], _rejected)


def first_rejection_from_survival(u: np.ndarray, survival: np.ndarray) -> np.ndarray:
    """F by inverse CDF from uniforms ``u`` [..., K] and each device's survival function
    ``survival`` [K, J], ``survival[k, j]`` = P(F_k > j) (non-increasing, ``survival[k, 0]`` = 1):
    F = 1 + #{j ≥ 1 : P(F > j) > u}, so P(F > j) is exactly ``survival[k, j]`` and F ≤ J (the cap).
    The i.i.d. model is ``survival[k, j] = α_k^j``; a depth profile α_d gives Π_{d<j} α_d."""
    u = np.asarray(u, dtype=float)
    return 1 + (np.asarray(survival)[..., 1:] > u[..., None]).sum(axis=-1)


def expected_tokens_from_survival(survival: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """E[N_k] = E[min(F_k, γ_k + 1)] = Σ_{j=0}^{γ_k} P(F_k > j) from ``survival`` [K, J] (as
    :func:`first_rejection_from_survival`), for draft lengths ``gamma`` [..., K] below J."""
    cum = np.cumsum(np.asarray(survival, dtype=float), axis=-1)  # [K, J]
    gamma = np.asarray(gamma, dtype=np.int64)
    k = np.arange(cum.shape[0])
    return cum[k, gamma]


def rejection_probability(alpha: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """P(rejected) = 1 − α^γ."""
    return 1.0 - np.power(alpha, gamma)


def expected_tokens(alpha: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """E[N_k] = (1 − α^(γ+1)) / (1 − α), and γ + 1 when α = 1 (model §3)."""
    alpha = np.asarray(alpha, dtype=float)
    gamma = np.asarray(gamma)
    one = alpha >= 1.0
    safe = np.where(one, 0.5, alpha)
    val = -np.expm1((gamma + 1) * np.log(safe)) / (1.0 - safe)
    return np.where(one, gamma + 1.0, val)


# ---------------------------------------------------------------------- dynamics (model §11)
#: smallest α a Beta draw is allowed to take (α must lie in (0, 1])
MIN_ALPHA = 1e-6


def beta_prior(mean: np.ndarray, concentration: float) -> tuple[np.ndarray, np.ndarray]:
    """Beta(κ·m, κ·(1 − m)) parameters of a request's α (m = the task's mean acceptance)."""
    m = np.asarray(mean, dtype=float)
    return concentration * m, concentration * (1.0 - m)


_betaincinv = scipy_special("betaincinv", 3)


def _beta_from_uniform(u, a, b):
    if b <= 0.0:  # a task mean of 1
        return 1.0
    return min(max(_betaincinv(a, b, u, 0), MIN_ALPHA), 1.0)


def _geometric_from_uniform(u, mean):
    p = 1.0 / mean
    if p >= 1.0:
        return 1
    return int(min(1.0 + math.floor(math.log1p(-u) / math.log1p(-min(p, 1.0 - 1e-16))), 2.0**62))


#: compiled scalar forms (the dynamic step kernel's)
beta_from_uniform_scalar = njit(cache=True, error_model="numpy")(_beta_from_uniform)
geometric_from_uniform_scalar = njit(cache=True, error_model="numpy")(_geometric_from_uniform)
#: α ~ Beta(a, b) by inverse CDF (SciPy's betaincinv), kept in [MIN_ALPHA, 1]; b = 0 (a task mean
#: of 1) gives 1 — a numpy ufunc of (u, a, b)
beta_from_uniform = ufunc(["f8(f8, f8, f8)"], _beta_from_uniform)
#: request length L ∈ {1, 2, …} with P(L = n) = (1 − p)^(n−1) p, p = 1/mean (so E[L] = mean) — a
#: numpy ufunc of (u, mean)
geometric_from_uniform = ufunc(["i8(f8, f8)"], _geometric_from_uniform)


def _markov_alpha(alpha, hard, delta):
    step = delta * min(alpha, 1.0 - alpha)
    return alpha - step if hard else alpha + step


#: α_easy/hard = α ± δ·min(α, 1 − α) of one device, compiled (the dynamic step kernel's)
markov_alpha_scalar = njit(cache=True)(_markov_alpha)
#: α_easy/hard = α ± δ·min(α, 1 − α): both stay in (0, 1] and average to α (model §11); a numpy ufunc
#: of (α, hard, δ)
markov_alpha = ufunc(["f8(f8, b1, f8)"], _markov_alpha)


# ---------------------------------------------------------------------- the chain's forward filter
def grid_points(n: int) -> np.ndarray:
    """Midpoints of n equal bins of (0, 1): the support of the "grid" belief about a request's α."""
    return (np.arange(n) + 0.5) / n


def grid_prior(mean: np.ndarray, concentration: float, n: int) -> np.ndarray:
    """Prior masses [..., n] of the request's α ~ Beta(κm, κ(1 − m)) on the n bins of (0, 1)
    (exact bin probabilities; a task mean of 1 puts all mass in the top bin)."""
    from scipy.special import betainc

    a, b = beta_prior(mean, concentration)
    a, b = np.asarray(a)[..., None], np.asarray(b)[..., None]
    edges = np.arange(n + 1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        cdf = betainc(a, np.maximum(b, 1e-300), edges)
    mass = np.diff(cdf, axis=-1)
    top = np.zeros(n)
    top[-1] = 1.0
    mass = np.where(b <= 0.0, top, np.maximum(mass, 0.0))
    return mass / mass.sum(axis=-1, keepdims=True)


def grid_alpha(n: int, delta: float) -> np.ndarray:
    """α of each belief cell [n, 2]: request α on the grid × chain state (easy, hard) — the
    same law as :func:`markov_alpha` (δ = 0 when there is no chain)."""
    pts = grid_points(n)[:, None]
    return markov_alpha(pts, np.array([False, True]), delta)


@njit(cache=True, error_model="numpy")
def filter_rows(belief, accepted, rejected, likelihoods, stay, out):
    """Bayes update then the chain's step, per device (compiled; see :func:`filter_step`);
    ``likelihoods[A, rejected]`` = α^A·(1 − α)^rejected of every cell."""
    n, g, _ = belief.shape
    move = 1.0 - stay
    for d in range(n):
        lik = likelihoods[accepted[d], 1 if rejected[d] else 0].reshape(2 * g)
        prior, post = belief[d].reshape(2 * g), out[d].reshape(2 * g)
        for j in range(2 * g):
            post[j] = prior[j] * lik[j]
        total = pairwise_sum(post)
        for j in range(2 * g):
            post[j] = post[j] / total
        for j in range(0, 2 * g, 2):  # the state stays with probability `stay`, else flips
            e, h = post[j], post[j + 1]
            post[j] = stay * e + move * h
            post[j + 1] = stay * h + move * e


def filter_likelihoods(alpha_cells: np.ndarray, max_accepted: int) -> np.ndarray:
    """α^A·(1 − α)^r of every belief cell for A = 0..max_accepted, r = 0, 1: [max_accepted + 1, 2, n, 2]."""
    powers = np.power(alpha_cells[None], np.arange(max_accepted + 1.0)[:, None, None])
    return np.stack([powers, powers * (1.0 - alpha_cells)], axis=1)


def filter_step(belief: np.ndarray, accepted: np.ndarray, rejected: np.ndarray, alpha_cells: np.ndarray,
                stay: float, likelihoods: np.ndarray | None = None) -> np.ndarray:
    """One round of the forward filter of (request α, chain state), belief [..., n, 2]:
    the Bayes update after a round with ``accepted`` tokens and the ``rejected`` flag (model §11:
    likelihood α^A·(1 − α)^rejected, normalised; a round with γ = 0 carries no information),
    then the chain's step (the state stays with probability ``stay``, else flips).
    ``likelihoods``: :func:`filter_likelihoods` of the cells, covering every A (computed when None)."""
    lead, g = belief.shape[:-2], belief.shape[-2]
    acc = np.asarray(accepted, dtype=np.int64).reshape(-1)
    if likelihoods is None or len(acc) and acc.max() >= len(likelihoods):
        likelihoods = filter_likelihoods(alpha_cells, int(acc.max(initial=0)))
    out = np.empty(lead + (g, 2))
    filter_rows(np.ascontiguousarray(belief).reshape(-1, g, 2), acc, np.asarray(rejected, dtype=np.bool_).reshape(-1),
                 likelihoods, float(stay), out.reshape(-1, g, 2))
    return out


@njit(cache=True, error_model="numpy")
def moment_rows(belief, alpha_cells, out):
    n, g, _ = belief.shape
    for d in range(n):
        mean = second = hard = 0.0
        for j in range(g):
            for h in range(2):
                p = belief[d, j, h]
                a = alpha_cells[j, h]
                mean += p * a
                second += p * (a * a)
            hard += belief[d, j, 1]
        out[MOMENT.mean, d] = mean
        out[MOMENT.sd, d] = math.sqrt(max(second - mean * mean, 0.0))
        out[MOMENT.p_hard, d] = hard


def filter_moments(belief: np.ndarray, alpha_cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predictive mean and standard deviation of the coming round's α, and P(hard), from the
    belief [..., n, 2] (one compiled pass)."""
    lead, g = belief.shape[:-2], belief.shape[-2]
    out = np.empty((3, math.prod(lead)))
    moment_rows(np.ascontiguousarray(belief).reshape(-1, g, 2), alpha_cells, out)
    out = out.reshape((len(MOMENT),) + lead)
    return out[MOMENT.mean], out[MOMENT.sd], out[MOMENT.p_hard]


#: codes of ``cfg.belief`` in the compiled kernels: none (α observed), Beta posterior, chain filter
BELIEF_CODES = {None: 0, "beta": 1, "grid": 2}


@functools.lru_cache(maxsize=64)
def grid_belief(cfg) -> dict[str, np.ndarray | float]:
    """The "grid" belief's constants for a config: α of each cell [n, 2], the likelihood table of
    :func:`filter_likelihoods`, the per-task prior [tasks, n, 2] (request α ~ Beta, the chain at
    its stationary law ½, ½) and the chain's stay probability."""
    n = cfg.dynamics.alpha_grid_size
    markov = cfg.dynamics.alpha_dynamics == "markov"
    prior = grid_prior(np.asarray(cfg.acceptance.acceptance_rates), cfg.dynamics.alpha_concentration, n)
    cells = grid_alpha(n, cfg.dynamics.markov_delta if markov else 0.0)
    return {
        "alpha": cells,
        "likelihoods": filter_likelihoods(cells, cfg.gamma_max),
        "prior": np.repeat(0.5 * prior[..., None], 2, axis=-1),
        "stay": cfg.dynamics.markov_stay if markov else 1.0,
    }
