"""Token goodput: the one round-evaluation kernel and the expected-goodput estimator (model §6).

:func:`evaluate_round` maps (draft lengths, outcome, context) → reactive solution → latency →
goodput, batched over leading axes. The environment's step, the SAA controllers and the
experiments all call it (or its communication part, :func:`communication_time`).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..config.system import SystemConfig
from . import acceptance, latency, reactive
from .latency import latency_rows
from .numeric import as_flat, as_rows
from .slots import INT_ROW, PER_ROUND, REAL_ROW, ROUND_PARAM, Ints, Reals, RoundParams, pack


class RoundResult(NamedTuple):
    """Everything that happened in a batch of rounds (leading axes shared)."""

    tokens: np.ndarray  #: int [..., K]  N_k = A_k + 1
    accepted: np.ndarray  #: int [..., K]  A_k
    rejected: np.ndarray  #: bool [..., K]
    modes: np.ndarray  #: int8 [..., K]  0 none, 1 UL, 2 DL
    dl_power: np.ndarray  #: W [..., K]
    ul_delay: np.ndarray  #: s [..., K]  τ^ul of rejected devices (0 otherwise)
    t_draft: np.ndarray  #: s [...]
    t_verify: np.ndarray  #: s [...]
    t_com: np.ndarray  #: s [...]
    latency: np.ndarray  #: s [...]  T = t_draft + t_verify + t_com
    goodput: np.ndarray  #: tokens/s [...]  G = Σ_k N_k / T
    #: int [..., K] tokens generated (A_k + 1 in the batch), before any request-end cap
    served: np.ndarray
    #: [...] Σ_k tokens of each round (as float)
    total_tokens: np.ndarray
    #: the engine's truth of the round beyond these fields (model §11: true α, correction-time gains, request
    #: ends; model §12: the trace's first rejections), by ``info`` key; None when there is none
    info: dict | None = None


def communication_time(
    rejected: np.ndarray,
    g_ul,
    g_dl,
    cfg: SystemConfig,
    *,
    p_ul_w=None,
    p_dl_w=None,
    coins=None,
    presorted: bool = False,
    policy: str | None = None,
    full: bool = True,
) -> reactive.ReactiveSolution:
    """Reactive solution for outcomes ``rejected`` under ``policy`` (default ``cfg.mode_policy``)."""
    return reactive.solve(
        rejected,
        g_ul,
        g_dl,
        p_ul_w=cfg.p_ul_w if p_ul_w is None else p_ul_w,
        p_dl_w=cfg.p_dl_w if p_dl_w is None else p_dl_w,
        n0_ul_w_hz=cfg.n0_server_w_hz,
        n0_dl_w_hz=cfg.n0_device_w_hz,
        bandwidth_hz=cfg.radio.bandwidth_hz,
        bits=cfg.payload_bits,
        policy=cfg.radio.mode_policy if policy is None else policy,
        coins=coins,
        presorted=presorted,
        full=full,
    )


@njit(cache=True, error_model="numpy")
def round_rows(gamma, first_rej, t_draft, g_ul, g_dl, p_ul, p_dl, coins, cap, has_cap, params,
                ints, reals, rejected, modes, per_round):
    """The round kernel over rows (compiled): outcome → reactive solution → latency → goodput.
    Rows of length 1 are shared; ``params`` = :func:`round_params`; outputs (:mod:`msenv.model.slots`):
    ``ints`` [≥ 3, N, K] (tokens, served, accepted), ``reals`` [≥ 2, N, K] (DL power, UL delay),
    ``per_round`` [6, N] (t_draft, t_verify, t_com, latency, goodput, Σ tokens)."""
    n, k = gamma.shape
    drafting_only = params[ROUND_PARAM.drafting_only] != 0.0
    tokens, served, accepted = ints[INT_ROW.tokens], ints[INT_ROW.served], ints[INT_ROW.accepted]
    for r in range(n):
        for i in range(k):
            g = gamma[r, i]
            f = first_rej[r if first_rej.shape[0] > 1 else 0, i]
            a = acceptance.accepted_scalar(f, g)
            accepted[r, i] = a
            rejected[r, i] = acceptance.rejected_scalar(f, g)
            served[r, i] = a + 1 if (g > 0 or not drafting_only) else 0  # N_k = A_k + 1 in the batch
    reactive.solve_rows(rejected, g_ul, g_dl, p_ul, p_dl, coins, params[ROUND_PARAM.n0_ul_w_hz],
                        params[ROUND_PARAM.n0_dl_w_hz],
                        params[ROUND_PARAM.bandwidth_hz], params[ROUND_PARAM.payload_bits],
                        int(params[ROUND_PARAM.policy]), False, True, modes,
                        reals[REAL_ROW.dl_power], reals[REAL_ROW.ul_delay], per_round[PER_ROUND.t_com])
    latency_rows(gamma, t_draft, params[ROUND_PARAM.t_verify_base_s], params[ROUND_PARAM.t_verify_per_device_s],
                 params[ROUND_PARAM.t_verify_per_token_s], params[ROUND_PARAM.t_verify_per_padded_token_s],
                 drafting_only,
                 per_round[PER_ROUND.t_draft], per_round[PER_ROUND.t_verify])
    for r in range(n):
        total = 0
        for i in range(k):
            tok = served[r, i]
            if has_cap:
                tok = min(tok, cap[r if cap.shape[0] > 1 else 0, i])
            tokens[r, i] = tok
            total += tok
        t = per_round[PER_ROUND.t_draft, r] + per_round[PER_ROUND.t_verify, r] + per_round[PER_ROUND.t_com, r]
        per_round[PER_ROUND.latency, r] = t
        per_round[PER_ROUND.goodput, r] = total / t
        per_round[PER_ROUND.total_tokens, r] = total


def evaluate_round(
    gamma: np.ndarray,
    first_rejection: np.ndarray,
    t_draft: np.ndarray,
    g_ul: np.ndarray,
    g_dl: np.ndarray,
    cfg: SystemConfig,
    *,
    p_ul_w=None,
    p_dl_w=None,
    coins=None,
    policy: str | None = None,
    token_cap: np.ndarray | None = None,
) -> RoundResult:
    """One round (or a batch of rounds): outcome → reactive solution → latency → goodput.

    ``token_cap`` [..., K]: tokens left in each device's request (model §11); tokens past it are
    not goodput (``tokens`` counts at most the cap; ``served`` counts them all). One compiled
    kernel serves a single round and a batch alike.
    """
    policy = cfg.radio.mode_policy if policy is None else policy
    if policy == "random" and coins is None:
        raise ValueError("policy='random' needs coins (uniform draws, one per device)")
    gamma = np.asarray(gamma)
    lead, k = gamma.shape[:-1], gamma.shape[-1]
    n = math.prod(lead)
    rows, flat = as_rows, as_flat
    ints, reals, rej, modes, per_round = kernel_outputs(n, k)
    round_rows(rows(gamma, lead, k, np.int64), rows(first_rejection, lead, k, np.int64), rows(t_draft, lead, k),
                rows(g_ul, lead, k), rows(g_dl, lead, k),
                flat(cfg.p_ul_w if p_ul_w is None else p_ul_w, lead),
               flat(cfg.p_dl_w if p_dl_w is None else p_dl_w, lead),
                reactive.NO_COINS if coins is None else rows(coins, lead, k),
                _NO_CAP if token_cap is None else rows(token_cap, lead, k, np.int64), token_cap is not None,
                round_params(cfg, policy), ints, reals, rej, modes, per_round)
    return kernel_result(ints, reals, rej, modes, per_round, lead)


# the slots of kernel_result as plain ints: it runs on every step, where each NamedTuple attribute
# lookup would cost ≈ 15 ns more
_TOKENS, _SERVED, _ACCEPTED, _DL_POWER, _UL_DELAY = (INT_ROW.tokens, INT_ROW.served, INT_ROW.accepted,
                                                     REAL_ROW.dl_power, REAL_ROW.ul_delay)
_T_DRAFT, _T_VERIFY, _T_COM, _LATENCY, _GOODPUT, _TOTAL_TOKENS = PER_ROUND


def kernel_result(ints, reals, rejected, modes, per_round, lead=None, info=None) -> RoundResult:
    """A :class:`RoundResult` over the outputs of :func:`round_rows` (rows reshaped to ``lead``
    when it is not one batch axis), with the engine's ``info`` of the round."""
    if lead is not None and len(lead) != 1:
        k = modes.shape[-1]
        ints = ints[: len(RoundInts)].reshape((len(RoundInts),) + lead + (k,))
        reals = reals[: len(RoundReals)].reshape((len(RoundReals),) + lead + (k,))
        rejected, modes = rejected.reshape(lead + (k,)), modes.reshape(lead + (k,))
        per_round = per_round.reshape((len(PER_ROUND),) + lead)
    return RoundResult(ints[_TOKENS], ints[_ACCEPTED], rejected, modes, reals[_DL_POWER], reals[_UL_DELAY],
                       per_round[_T_DRAFT], per_round[_T_VERIFY], per_round[_T_COM], per_round[_LATENCY],
                       per_round[_GOODPUT], ints[_SERVED], per_round[_TOTAL_TOKENS], info)


def kernel_outputs(n: int, k: int, extra: int = 0) -> tuple[np.ndarray, ...]:
    """Output buffers of :func:`round_rows` for n rounds of K devices (``extra`` more [N, K]
    rows in the int and float blocks, for a step kernel's own outputs: :class:`~msenv.model.slots.Ints`,
    :class:`~msenv.model.slots.Reals`)."""
    return (np.empty((len(RoundInts) + extra, n, k), np.int64), np.empty((len(RoundReals) + extra, n, k)),
            np.empty((n, k), np.bool_), np.empty((n, k), np.int8), np.empty((len(PER_ROUND), n)))


#: the rows of the int and float output blocks the round kernel writes
RoundInts = ("tokens", "served", "accepted")
RoundReals = ("dl_power", "ul_delay")
assert Ints._fields[: len(RoundInts)] == RoundInts and Reals._fields[: len(RoundReals)] == RoundReals


@functools.lru_cache(maxsize=256)
def round_params(cfg: SystemConfig, policy: str) -> np.ndarray:
    """The config's numbers as the compiled round kernel takes them (:class:`~msenv.model.slots.RoundParams`)."""
    if policy not in reactive.POLICIES:
        raise ValueError(f"policy={policy!r} is not allowed; allowed: 'optimal', 'all_ul', 'all_dl', 'random'")
    t0, t1, t2, t3, drafting = latency.verify_args(cfg)
    return pack(RoundParams(
        n0_ul_w_hz=cfg.n0_server_w_hz, n0_dl_w_hz=cfg.n0_device_w_hz, bandwidth_hz=cfg.radio.bandwidth_hz,
        payload_bits=cfg.payload_bits, policy=reactive.POLICIES.index(policy), t_verify_base_s=t0,
        t_verify_per_device_s=t1, t_verify_per_token_s=t2, t_verify_per_padded_token_s=t3,
        drafting_only=float(drafting)))


_NO_CAP = np.zeros((0, 0), np.int64)


def in_batch(gamma: np.ndarray, cfg: SystemConfig):
    """Which devices the verification pass serves (model §4 [R]): all of them
    (``verify_batch="all"``: a device with γ_k = 0 still gets the target model's next token) or
    only the drafting ones (``"drafting"``: a device with γ_k = 0 is not verified and gets nothing)."""
    return True if cfg.compute.verify_batch == "all" else np.asarray(gamma) > 0


def saa_objective(
    objective: str,
    gammas: np.ndarray,
    t_cmp: np.ndarray,
    t_com: np.ndarray,
    alpha: np.ndarray,
    first_rejection: np.ndarray | None = None,
    cfg: SystemConfig | None = None,
    survival: np.ndarray | None = None,
) -> np.ndarray:
    """Expected goodput of candidates ``gammas`` [C, K] from per-sample T_com [C, S] (model §6).

    ``"ratio"`` (paper): Σ_k E[N_k] / (T_cmp + mean_s T_com), E[N_k] in closed form;
    ``"mean_of_ratios"``: mean_s Σ_k N_k,s / (T_cmp + T_com,s) — the expected reward; needs the
    samples ``first_rejection`` [S, K]. ``alpha`` is [K], or [S, K] samples of an uncertain α
    (then E[N_k] is averaged over them). ``survival`` [K, γ_max + 1]: P(F_k > j) when the
    acceptance is not i.i.d. (a depth profile), used instead of ``alpha``. ``cfg`` decides which
    devices the batch serves (:func:`in_batch`; None = all).
    """
    served = True if cfg is None else in_batch(gammas, cfg)
    if objective == "ratio":
        alpha = np.asarray(alpha)
        if survival is not None:
            e_tokens = acceptance.expected_tokens_from_survival(survival, gammas)
        elif alpha.ndim == 2:  # α samples [S, K] (model §11): E[N_k] averaged over the posterior
            e_tokens = acceptance.expected_tokens(alpha[None], gammas[:, None]).mean(axis=1)
        else:
            e_tokens = acceptance.expected_tokens(alpha, gammas)
        tokens = (e_tokens * served).sum(axis=-1)
        return tokens / (t_cmp + t_com.mean(axis=-1))
    if objective == "mean_of_ratios":
        acc = acceptance.accepted_tokens(first_rejection[None], gammas[:, None])
        every = cfg is None or cfg.compute.verify_batch == "all"
        tokens = ((acc + 1) * (served if every else served[:, None])).sum(axis=-1)
        return (tokens / (t_cmp[:, None] + t_com)).mean(axis=-1)
    raise ValueError(f"objective={objective!r} is not allowed; allowed: 'ratio', 'mean_of_ratios'")


def expected_goodput(
    gammas: np.ndarray,
    first_rejection: np.ndarray,
    alpha: np.ndarray,
    t_draft: np.ndarray,
    g_ul: np.ndarray,
    g_dl: np.ndarray,
    cfg: SystemConfig,
    *,
    p_ul_w=None,
    p_dl_w=None,
    coins=None,
    objective: str | None = None,
    policy: str | None = None,
) -> np.ndarray:
    """SAA estimate of the expected goodput of each candidate (model §6), plain batched form.

    ``gammas`` [C, K] candidates, ``first_rejection`` [S, K] shared samples (common random
    numbers). Returns [C]. :class:`baselines.saa.SAAEstimator` computes the same numbers
    incrementally (re-solving only the samples whose rejected set changes). ``objective``: as
    :func:`saa_objective`; None is ``"ratio"`` (or, until msenv 0.7, the deprecated
    ``saa_objective`` a config was given).
    """
    gammas = np.atleast_2d(np.asarray(gammas))
    rej = acceptance.rejected(first_rejection[None], gammas[:, None])  # [C, S, K]
    sol = communication_time(
        rej, g_ul, g_dl, cfg, p_ul_w=p_ul_w, p_dl_w=p_dl_w,
        coins=None if coins is None else coins[None], policy=policy, full=False,
    )
    t_cmp = latency.compute_latency(gammas, t_draft, cfg)  # [C]
    objective = cfg.saa_objective if objective is None else objective
    return saa_objective(objective, gammas, t_cmp, sol.t_com, alpha, first_rejection, cfg)
