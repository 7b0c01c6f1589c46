"""Reactive stage: mode selection and power allocation for a realised outcome (model §5).

Batched over any leading axes (rounds × devices, or samples × devices); the last axis is
the devices. One compiled (numba) row kernel serves a single outcome and a batch alike.

- **Lemma 1** (:func:`dl_delay`, the DL powers of :func:`solve`): for a DL set D, the min-max DL delay under
  Σ p_k ≤ P_dl equalises the delays; closed form with S = Σ_{k∈D} 1/g_k^dl.
- **Lemma 2 / Proposition 1** (:func:`solve` with ``policy="optimal"``): sort the rejected
  devices by UL delay; an optimal UL set is a prefix; scan the M + 1 prefixes with suffix
  sums of 1/g^dl and take the best max(τ^ul(n), τ^dl(n)).
- Baselines of paper §VI-A4: ``all_ul``, ``all_dl``, ``random`` (coins < ½ → UL).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .channel import delay_scalar, rate_scalar
from .numeric import as_flat, as_rows, pairwise_sum

MODE_NONE, MODE_UL, MODE_DL = 0, 1, 2


@dataclass(frozen=True)
class ReactiveSolution:
    """Reactive decisions for a batch of outcomes (arrays share the leading axes)."""

    modes: np.ndarray | None  #: int8 [..., K]: 0 none (accepted), 1 UL, 2 DL
    dl_power: np.ndarray | None  #: W [..., K]; 0 off DL
    ul_delay: np.ndarray | None  #: s [..., K]; τ_k^ul at full power for rejected devices, 0 otherwise
    t_com: np.ndarray  #: s [...]; correction-exchange time T_com
    # modes, dl_power and ul_delay are None when solve(..., full=False) (T_com only, for SAA)


#: policy codes of the compiled solver
POLICIES = ("optimal", "all_ul", "all_dl", "random")


@njit(cache=True, error_model="numpy")
def dl_delay(inv_gain_sum, p_dl_w, n0_w_hz, bandwidth_hz, bits):
    """Lemma 1: τ^dl(D) = L / (b·log2(1 + P_dl / (N0·b·S))), S = Σ_{k∈D} 1/g_k^dl; 0 when D = ∅.
    It is the Shannon delay of one virtual link of gain 1/S at the full budget P_dl."""
    if inv_gain_sum == 0.0:
        return 0.0
    snr = p_dl_w * (1.0 / inv_gain_sum) / (n0_w_hz * bandwidth_hz)
    return delay_scalar(bits, rate_scalar(bandwidth_hz, snr))


@njit(cache=True, error_model="numpy")
def solve_rows(rejected, g_ul, g_dl, p_ul, p_dl, coins, n0_ul, n0_dl, bandwidth, bits, policy, presorted, full,
                modes, dl_power, ul_delay, t_com):
    """The reactive stage of each row (compiled; rows of g_ul/g_dl/p_ul/p_dl/coins of length 1
    are shared by every row). Writes T_com, and with ``full`` the modes, Lemma 1 DL powers
    p_k = P_dl·(1/g_k)/Σ_D 1/g_j and the full-power UL delays of the rejected devices."""
    n, k = rejected.shape
    order = np.empty(k, np.int64)
    inv = np.empty(k)
    snr = np.empty(k)
    is_ul = np.zeros(k, np.bool_)
    w = np.zeros(k)
    suffix = np.empty(k + 1)
    for r in range(n):
        rej = rejected[r]
        gu = g_ul[r if g_ul.shape[0] > 1 else 0]
        gd = g_dl[r if g_dl.shape[0] > 1 else 0]
        pu = p_ul[r if p_ul.shape[0] > 1 else 0]
        pd = p_dl[r if p_dl.shape[0] > 1 else 0]
        m = 0
        for i in range(k):
            is_ul[i] = False
            if rej[i]:
                order[m] = i
                m += 1
        if m == 0:
            t_com[r] = 0.0
            if full:
                for i in range(k):
                    modes[r, i] = MODE_NONE
                    dl_power[r, i] = 0.0
                    ul_delay[r, i] = 0.0
            continue
        b = bandwidth / m  # OFDMA equal split among the rejected devices
        c = 1.0 / (n0_ul * b)
        for i in range(k):
            inv[i] = 1.0 / gd[i]
            snr[i] = (pu * gu[i]) * c  # UL SNR at full power; τ^ul is decreasing in it
        if policy == 0:
            # Proposition 1: rejected devices in ascending UL delay (descending g_ul, stable)
            if not presorted:
                for a in range(1, m):
                    cur = order[a]
                    j = a
                    while j > 0 and gu[order[j - 1]] < gu[cur]:
                        order[j] = order[j - 1]
                        j -= 1
                    order[j] = cur
            suffix[m] = 0.0
            for a in range(m - 1, -1, -1):
                suffix[a] = suffix[a + 1] + inv[order[a]]
            # first crossing τ^ul_j ≥ τ^dl(after j), as the log-free SNR test (exists: the last)
            nb = n0_dl * b
            jx = m - 1
            for a in range(m):
                if snr[order[a]] * nb * suffix[a + 1] <= pd:
                    jx = a
                    break
            t_ul = delay_scalar(bits, rate_scalar(b, snr[order[jx]]))
            t_dl = dl_delay(suffix[jx], pd, n0_dl, b, bits)
            j_ul = t_ul <= t_dl
            t_com[r] = t_ul if j_ul else t_dl
            if full:
                for a in range(jx):
                    is_ul[order[a]] = True
                if j_ul:
                    is_ul[order[jx]] = True
        else:
            weakest = math.inf
            for a in range(m):
                i = order[a]
                if policy == 1:
                    up = True
                elif policy == 2:
                    up = False
                else:
                    up = coins[r if coins.shape[0] > 1 else 0, i] < 0.5
                is_ul[i] = up
                if up and snr[i] < weakest:
                    weakest = snr[i]
            t_ul = 0.0 if weakest == math.inf else delay_scalar(bits, rate_scalar(b, weakest))
            for i in range(k):
                w[i] = inv[i] if rej[i] and not is_ul[i] else 0.0
            t_com[r] = max(t_ul, dl_delay(pairwise_sum(w), pd, n0_dl, b, bits))
        if full:
            for i in range(k):
                w[i] = inv[i] if rej[i] and not is_ul[i] else 0.0
            s = pairwise_sum(w)
            for i in range(k):
                if not rej[i]:
                    modes[r, i] = MODE_NONE
                    ul_delay[r, i] = 0.0
                else:
                    modes[r, i] = MODE_UL if is_ul[i] else MODE_DL
                    ul_delay[r, i] = delay_scalar(bits, rate_scalar(b, snr[i]))
                dl_power[r, i] = pd * w[i] / (s if s > 0.0 else 1.0)


def solve(
    rejected: np.ndarray,
    g_ul: np.ndarray,
    g_dl: np.ndarray,
    *,
    p_ul_w,
    p_dl_w,
    n0_ul_w_hz: float,
    n0_dl_w_hz: float,
    bandwidth_hz: float,
    bits: float,
    policy: str = "optimal",
    coins: np.ndarray | None = None,
    presorted: bool = False,
    full: bool = True,
) -> ReactiveSolution:
    """Modes, powers and T_com for outcomes ``rejected`` (bool [..., K]).

    ``g_ul``, ``g_dl`` broadcast against ``rejected``; ``p_ul_w``, ``p_dl_w`` are scalars or
    arrays over the leading axes. ``coins`` (uniforms, shape of ``rejected``) drive
    ``policy="random"``. ``presorted=True`` promises that the devices (last axis) are already
    in ascending order of UL delay, i.e. descending g_ul, in every row (true when gains are
    shared across rows and sorted, as in SAA); it skips the per-row sort. ``full=False``
    computes T_com only (modes, powers and delays are None). One compiled kernel serves a
    single outcome and a batch alike.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy={policy!r} is not allowed; allowed: 'optimal', 'all_ul', 'all_dl', 'random'")
    if policy == "random" and coins is None:
        raise ValueError("policy='random' needs coins (uniform draws, one per device)")
    rejected = np.asarray(rejected, dtype=bool)
    lead, k = rejected.shape[:-1], rejected.shape[-1]
    rej = np.ascontiguousarray(rejected.reshape(-1, k))
    n = rej.shape[0]
    shape = (n, k) if full else (0, 0)
    modes, dl_power, ul_delay = np.empty(shape, np.int8), np.empty(shape), np.empty(shape)
    t_com = np.empty(n)
    solve_rows(rej, as_rows(g_ul, lead, k), as_rows(g_dl, lead, k), as_flat(p_ul_w, lead), as_flat(p_dl_w, lead),
                as_rows(coins, lead, k) if coins is not None else NO_COINS, float(n0_ul_w_hz), float(n0_dl_w_hz),
                float(bandwidth_hz), float(bits), POLICIES.index(policy), bool(presorted), bool(full),
                modes, dl_power, ul_delay, t_com)
    if not full:
        return ReactiveSolution(None, None, None, t_com.reshape(lead))
    return ReactiveSolution(modes.reshape(lead + (k,)), dl_power.reshape(lead + (k,)),
                            ul_delay.reshape(lead + (k,)), t_com.reshape(lead))


NO_COINS = np.zeros((1, 1))
