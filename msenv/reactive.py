"""Reactive stage: mode selection and power allocation for a realised outcome (SPEC §5).

Batched over any leading axes (rounds × devices, or samples × devices); the last axis is
the devices. No Python loop over samples.

- **Lemma 1** (:func:`dl_delay`, :func:`dl_powers`): for a DL set D, the min-max DL delay under
  Σ p_k ≤ P_dl equalises the delays; closed form with S = Σ_{k∈D} 1/g_k^dl.
- **Lemma 2 / Proposition 1** (:func:`solve` with ``policy="optimal"``): sort the rejected
  devices by UL delay; an optimal UL set is a prefix; scan the M + 1 prefixes with suffix
  sums of 1/g^dl and take the best max(τ^ul(n), τ^dl(n)).
- Baselines of paper §VI-A4: ``all_ul``, ``all_dl``, ``random`` (coins < ½ → UL).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .channel import rate_from_snr, shannon_rate, transmission_delay

MODE_NONE, MODE_UL, MODE_DL = 0, 1, 2


@dataclass(frozen=True)
class ReactiveSolution:
    """Reactive decisions for a batch of outcomes (arrays share the leading axes)."""

    modes: np.ndarray | None  #: int8 [..., K]: 0 none (accepted), 1 UL, 2 DL
    dl_power: np.ndarray | None  #: W [..., K]; 0 off DL
    ul_delay: np.ndarray | None  #: s [..., K]; τ_k^ul at full power for rejected devices, 0 otherwise
    t_com: np.ndarray  #: s [...]; correction-exchange time T_com
    # modes, dl_power and ul_delay are None when solve(..., full=False) (T_com only, for SAA)


def dl_delay(inv_gain_sum, p_dl_w, n0_w_hz: float, bandwidth_hz, bits: float) -> np.ndarray:
    """Lemma 1: τ^dl(D) = L / (b·log2(1 + P_dl / (N0·b·S))), S = Σ_{k∈D} 1/g_k^dl; 0 when D = ∅.

    It is the Shannon delay of one virtual link of gain 1/S at the full budget P_dl.
    """
    s = np.asarray(inv_gain_sum, dtype=float)
    empty = s == 0.0
    t = transmission_delay(bits, shannon_rate(p_dl_w, 1.0 / np.where(empty, 1.0, s), n0_w_hz, bandwidth_hz))
    return np.where(empty, 0.0, t)


def dl_powers(dl_mask: np.ndarray, inv_g_dl: np.ndarray, p_dl_w) -> np.ndarray:
    """Lemma 1 powers p_k = P_dl · (1/g_k) / Σ_{j∈D} 1/g_j (delay-equalising), 0 off D."""
    w = np.where(dl_mask, inv_g_dl, 0.0)
    s = w.sum(axis=-1, keepdims=True)
    return np.asarray(p_dl_w)[..., None] * w / np.where(s > 0.0, s, 1.0)


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
    computes T_com only (modes, powers and delays are None).
    """
    rejected = np.asarray(rejected, dtype=bool)
    lead, k = rejected.shape[:-1], rejected.shape[-1]
    if rejected.ndim != 2:  # work on [N, K]; reshape back at the end
        sol = solve(
            rejected.reshape(-1, k), _rows(g_ul, lead, k), _rows(g_dl, lead, k),
            p_ul_w=_flat(p_ul_w, lead), p_dl_w=_flat(p_dl_w, lead), n0_ul_w_hz=n0_ul_w_hz,
            n0_dl_w_hz=n0_dl_w_hz, bandwidth_hz=bandwidth_hz, bits=bits, policy=policy,
            coins=None if coins is None else _rows(coins, lead, k), presorted=presorted, full=full,
        )
        if not full:
            return ReactiveSolution(None, None, None, sol.t_com.reshape(lead))
        return ReactiveSolution(
            sol.modes.reshape(lead + (k,)), sol.dl_power.reshape(lead + (k,)),
            sol.ul_delay.reshape(lead + (k,)), sol.t_com.reshape(lead),
        )
    p_ul = np.asarray(p_ul_w, dtype=float)
    p_ul = p_ul[:, None] if p_ul.ndim else p_ul
    p_dl = np.asarray(p_dl_w, dtype=float)
    m = np.count_nonzero(rejected, axis=-1)
    b = bandwidth_hz / np.maximum(m, 1)  # OFDMA equal split among the rejected devices
    g_ul = np.asarray(g_ul, dtype=float)
    inv_g = 1.0 / np.asarray(g_dl, dtype=float)  # [N, K] or [K]
    # UL SNR at full power; τ^ul = L / (b·log2(1 + snr)) is decreasing in it
    snr_ul = (p_ul * g_ul) * (1.0 / (n0_ul_w_hz * b))[:, None]  # [N, K]

    def tau_ul_of(snr, bandwidth=b):
        return transmission_delay(bits, rate_from_snr(bandwidth, snr))

    if policy == "optimal":
        ul_mask, t_com = _optimal_split(rejected, g_ul, snr_ul, inv_g, p_dl, n0_dl_w_hz, b, bits, tau_ul_of, presorted, full)
        if not full:
            return ReactiveSolution(None, None, None, t_com)
    else:
        if policy == "all_ul":
            ul_mask = rejected
        elif policy == "all_dl":
            ul_mask = np.zeros_like(rejected)
        elif policy == "random":
            if coins is None:
                raise ValueError("policy='random' needs coins (uniform draws, one per device)")
            ul_mask = rejected & (np.asarray(coins) < 0.5)
        else:
            raise ValueError(
                f"policy={policy!r} is not allowed; allowed: 'optimal', 'all_ul', 'all_dl', 'random'"
            )
        weakest = np.min(np.where(ul_mask, snr_ul, np.inf), axis=-1)  # slowest UL device
        t_ul = np.where(np.isinf(weakest), 0.0, tau_ul_of(np.where(np.isinf(weakest), 1.0, weakest)))
        s = np.sum(np.where(rejected & ~ul_mask, inv_g, 0.0), axis=-1)
        t_com = np.maximum(t_ul, dl_delay(s, p_dl, n0_dl_w_hz, b, bits))
        if not full:
            return ReactiveSolution(None, None, None, t_com)

    dl_mask = rejected & ~ul_mask
    modes = np.where(ul_mask, MODE_UL, np.where(dl_mask, MODE_DL, MODE_NONE)).astype(np.int8)
    return ReactiveSolution(
        modes=modes,
        dl_power=dl_powers(dl_mask, inv_g, p_dl),
        ul_delay=np.where(rejected, tau_ul_of(snr_ul, b[:, None]), 0.0),
        t_com=t_com,
    )


def _rows(x, lead, k):
    """Reshape an array broadcastable to lead + (K,) into [N, K] (or keep a shared [K] row)."""
    x = np.asarray(x, dtype=float)
    if x.ndim <= 1:
        return x
    return np.broadcast_to(x, lead + (k,)).reshape(-1, k)


def _flat(x, lead):
    x = np.asarray(x, dtype=float)
    return x if x.ndim == 0 else np.broadcast_to(x, lead).reshape(-1)


def _optimal_split(rejected, g_ul, snr_ul, inv_g, p_dl, n0, b, bits, tau_ul_of, presorted, need_mask):
    """Proposition 1: the best prefix split of the rejected devices in ascending UL delay.

    Along the sorted rejected devices, τ^ul(n) rises and τ^dl(n) falls, so the optimum sits at
    their crossing. The crossing test τ^ul_j ≥ τ^dl(suffix after j) is, by monotonicity of
    L/(b·log2(1+x)), the log-free SNR test snr^ul_j ≤ P_dl / (N0·b·S_after_j). With j* the first
    rejected position passing it, T_com* = min(τ^ul_{j*}, τ^dl(S from j* on)): devices before
    j* go UL, j* itself goes UL if that is the smaller term. Only two delays per row are
    evaluated (an O(M) scan with suffix sums after the sort, no per-candidate logarithm).
    Returns (UL mask or None, T_com).
    """
    n, k = rejected.shape
    rows = np.arange(n)
    if presorted:
        rej_s, snr_s, order = rejected, snr_ul, None
        w = np.where(rej_s, inv_g, 0.0)
    else:
        key = np.where(rejected, -g_ul, np.inf)  # ascending τ^ul (broadcasts a shared [K] row)
        order = np.argsort(key, axis=-1, kind="stable")
        r = rows[:, None]
        rej_s = rejected[r, order]
        snr_s = snr_ul[r, order]
        w = np.where(rej_s, (inv_g if inv_g.ndim == 2 else np.broadcast_to(inv_g, (n, k)))[r, order], 0.0)
    # suffix sums by reverse cumsum (no cancellation, unlike total − prefix)
    suffix_incl = np.cumsum(w[:, ::-1], axis=-1)[:, ::-1]
    suffix_excl = np.zeros_like(suffix_incl)
    suffix_excl[:, :-1] = suffix_incl[:, 1:]
    p_col = p_dl[:, None] if p_dl.ndim else p_dl
    cross = rej_s & (snr_s * (n0 * b)[:, None] * suffix_excl <= p_col)
    j = np.argmax(cross, axis=-1)  # first crossing (exists whenever M ≥ 1: the last rejected)
    any_rej = cross[rows, j]
    t_ul = tau_ul_of(np.where(any_rej, snr_s[rows, j], 1.0))
    t_dl = dl_delay(suffix_incl[rows, j], p_dl, n0, b, bits)
    j_ul = t_ul <= t_dl
    t_com = np.where(any_rej, np.where(j_ul, t_ul, t_dl), 0.0)
    if not need_mask:
        return None, t_com
    pos = np.arange(k)
    ul_s = rej_s & ((pos < j[:, None]) | ((pos == j[:, None]) & j_ul[:, None]))
    if order is None:
        return ul_s, t_com
    ul_mask = np.empty_like(ul_s)
    ul_mask[rows[:, None], order] = ul_s
    return ul_mask, t_com
