"""Token goodput: the one round-evaluation kernel and the expected-goodput estimator (SPEC §6).

:func:`evaluate_round` maps (draft lengths, outcome, context) → reactive solution → latency →
goodput, batched over leading axes. The environment's step, the SAA controllers and the
experiments all call it (or its communication part, :func:`communication_time`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import acceptance, latency, reactive
from .config import SystemConfig


@dataclass(frozen=True)
class RoundResult:
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
    #: SPEC §11 truth of the round (true α, correction-time gains, request ends), else None
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
        bandwidth_hz=cfg.bandwidth_hz,
        bits=cfg.payload_bits,
        policy=cfg.mode_policy if policy is None else policy,
        coins=coins,
        presorted=presorted,
        full=full,
    )


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

    ``token_cap`` [..., K]: tokens left in each device's request (SPEC §11); tokens past it are
    not goodput (``tokens`` counts at most the cap)."""
    gamma = np.asarray(gamma)
    acc = acceptance.accepted_tokens(first_rejection, gamma)
    rej = acceptance.rejected(first_rejection, gamma)
    sol = communication_time(rej, g_ul, g_dl, cfg, p_ul_w=p_ul_w, p_dl_w=p_dl_w, coins=coins, policy=policy)
    t_d = latency.draft_latency(gamma, t_draft)
    t_v = latency.verify_latency(gamma, cfg)
    t = t_d + t_v + sol.t_com
    tokens = round_tokens(acc, gamma, cfg)
    if token_cap is not None:
        tokens = np.minimum(tokens, token_cap)
    return RoundResult(
        tokens=tokens,
        accepted=acc,
        rejected=rej,
        modes=sol.modes,
        dl_power=sol.dl_power,
        ul_delay=sol.ul_delay,
        t_draft=t_d,
        t_verify=t_v,
        t_com=sol.t_com,
        latency=t,
        goodput=tokens.sum(axis=-1) / t,
    )


def in_batch(gamma: np.ndarray, cfg: SystemConfig):
    """Which devices the verification pass serves (SPEC §4 [R]): all of them
    (``verify_batch="all"``: a device with γ_k = 0 still gets the target model's next token) or
    only the drafting ones (``"drafting"``: a device with γ_k = 0 is not verified and gets nothing)."""
    return True if cfg.verify_batch == "all" else np.asarray(gamma) > 0


def round_tokens(accepted: np.ndarray, gamma: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """Output tokens N_k = A_k + 1 of the devices in the batch, 0 for the others."""
    return (accepted + 1) * in_batch(gamma, cfg)


def saa_objective(
    objective: str,
    gammas: np.ndarray,
    t_cmp: np.ndarray,
    t_com: np.ndarray,
    alpha: np.ndarray,
    first_rejection: np.ndarray | None = None,
    cfg: SystemConfig | None = None,
) -> np.ndarray:
    """Expected goodput of candidates ``gammas`` [C, K] from per-sample T_com [C, S] (SPEC §6).

    ``"ratio"`` (paper): Σ_k E[N_k] / (T_cmp + mean_s T_com), E[N_k] in closed form;
    ``"mean_of_ratios"``: mean_s Σ_k N_k,s / (T_cmp + T_com,s) — the expected reward; needs the
    samples ``first_rejection`` [S, K]. ``alpha`` is [K], or [S, K] samples of an uncertain α
    (then E[N_k] is averaged over them). ``cfg`` decides which devices the batch serves
    (:func:`in_batch`; None = all).
    """
    served = True if cfg is None else in_batch(gammas, cfg)
    if objective == "ratio":
        alpha = np.asarray(alpha)
        if alpha.ndim == 2:  # α samples [S, K] (SPEC §11): E[N_k] averaged over the posterior
            e_tokens = acceptance.expected_tokens(alpha[None], gammas[:, None]).mean(axis=1)
        else:
            e_tokens = acceptance.expected_tokens(alpha, gammas)
        tokens = (e_tokens * served).sum(axis=-1)
        return tokens / (t_cmp + t_com.mean(axis=-1))
    if objective == "mean_of_ratios":
        acc = acceptance.accepted_tokens(first_rejection[None], gammas[:, None])
        tokens = ((acc + 1) * (served if cfg is None or cfg.verify_batch == "all" else served[:, None])).sum(axis=-1)
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
    """SAA estimate of the expected goodput of each candidate (SPEC §6), plain batched form.

    ``gammas`` [C, K] candidates, ``first_rejection`` [S, K] shared samples (common random
    numbers). Returns [C]. :class:`msenv.saa.SAAEstimator` computes the same numbers
    incrementally (re-solving only the samples whose rejected set changes).
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
