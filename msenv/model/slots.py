"""Named slots of every array block the compiled kernels read or write.

The kernels take their constants and outputs as a few packed arrays (one argument each, which
keeps numba's per-call dispatch cheap) and address them by name: a block's table is a
``NamedTuple`` whose fields name the slots in order, and the module-level instance of that
table holding ``0, 1, 2, …`` is the index of each slot — ``params[ROUND_PARAM.bandwidth_hz]``, never
``params[2]``. Numba reads such a global tuple as a compile-time constant, so a named slot
costs nothing inside compiled code (vectorbt's idiom). A block is built in one place from its
table (:func:`pack`), so adding a slot is adding a field.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class RoundParams(NamedTuple):
    """Constants of the round kernel (:func:`msenv.model.goodput.round_rows`), built by
    :func:`msenv.model.goodput.round_params`."""

    n0_ul_w_hz: float  #: noise density at the server (uplink), W/Hz
    n0_dl_w_hz: float  #: noise density at a device (downlink), W/Hz
    bandwidth_hz: float
    payload_bits: float  #: bits of one vocabulary-wide correction
    policy: float  #: index into ``reactive.POLICIES``
    t_verify_base_s: float  #: T0
    t_verify_per_device_s: float  #: T1
    t_verify_per_token_s: float  #: T2
    t_verify_per_padded_token_s: float  #: T3
    drafting_only: float  #: 1: only devices with γ_k > 0 are verified (``verify_batch="drafting"``)


class StepParams(NamedTuple):
    """Constants every step kernel reads after the round kernel's, built by
    :meth:`msenv.engine.base.Engine.step_params`; flags are 0/1."""

    gamma_cap: float  #: γ_max + 1, the cap of a sampled first rejection
    fading_redraw: float  #: i.i.d. fading redrawn every round
    independent_links: float  #: UL and DL fade independently (else one reciprocal gain)
    random_policy: float  #: the reactive policy draws its modes from coins
    device_features: float  #: observation entries per device


class DynamicParams(NamedTuple):
    """The model §11 step's own constants after :class:`StepParams`, built by
    :meth:`msenv.engine.kinds.dynamics.DynamicEngine.kind_params`; flags are 0/1."""

    statistical_csi: float  #: the observation's gain slots show β, not the fading
    gauss_markov: float  #: Gauss–Markov channel
    belief: float  #: 0 α observed, 1 Beta posterior, 2 the chain's grid filter
    alpha_mode: float  #: 0 fixed, 1 requests, 2 requests + easy/hard chain
    markov_stay: float  #: P(the chain's state stays) per round
    markov_delta: float  #: α_easy/hard = α ± δ·min(α, 1 − α)
    filter_stay: float  #: the grid filter's stay probability (1 without the chain)
    request_caps: float  #: tokens past a request's end are not counted


class StepDraws(NamedTuple):
    """Offsets of the parts of a step's uniforms (``state.layout(cfg)["step"]``; 0 for a part the
    config does not draw)."""

    outcome: int
    w_com: int
    w_next: int
    coins: int
    switch: int
    fading: int
    task: int
    length: int
    alpha: int


class Ints(NamedTuple):
    """Rows of the int64 output block [rows, N, K]: the round kernel writes the first three, a
    step kernel the rest."""

    tokens: int  #: N_k counted (capped at a request's end)
    served: int  #: A_k + 1 in the batch, before any cap
    accepted: int  #: A_k
    first_rejection: int  #: F_k of the step's outcome draw
    tokens_left: int  #: tokens left in the device's request after the round
    task: int  #: the task of the device's next round
    request_index: int  #: index of the device's current request


class Reals(NamedTuple):
    """Rows of the float output block [rows, N, K]: the round kernel writes the first two, the
    paper step the rest."""

    dl_power: int  #: W
    ul_delay: int  #: s
    g_ul_next: int  #: the next round's gains
    g_dl_next: int


class PerRound(NamedTuple):
    """Rows of the per-round output block [6, N] of the round kernel."""

    t_draft: int
    t_verify: int
    t_com: int
    latency: int
    goodput: int
    total_tokens: int


class DynamicFloats(NamedTuple):
    """Rows of the model §11 step's float output block [8, N, K]."""

    g_ul_corr: int  #: the gains the correction used
    g_dl_corr: int
    g_ul_next: int  #: the next decision's gains
    g_dl_next: int
    post_a: int  #: the Beta posterior after the round
    post_b: int
    alpha_next: int  #: α of the next round
    alpha_request_next: int  #: the request's α of the next round


class DynamicFlags(NamedTuple):
    """Rows of the model §11 step's bool output block [2, N, K]."""

    request_done: int
    hard: int  #: the chain's state of the next round


class ComplexRows(NamedTuple):
    """Rows of the model §11 step's complex output block [3, N, L, K]."""

    h_corr: int  #: the gains at the correction
    h_next: int  #: the next decision's gains
    w_next: int  #: the next round's decision → correction innovations


class Moments(NamedTuple):
    """Rows of the grid belief's moments [3, N] (:func:`msenv.model.acceptance.moment_rows`)."""

    mean: int  #: predictive mean of the coming round's α
    sd: int  #: its standard deviation
    p_hard: int  #: P(the chain is hard)


class HistoryEntries(NamedTuple):
    """The entries of one round of a device's trace history [..., H, 3] (model §12)."""

    gamma: int  #: the round's draft length
    accepted: int  #: its accepted drafted tokens
    rejected: int  #: 1 if it had a rejection


class AcceptCounts(NamedTuple):
    """The entries of a device's request counts [..., 2] (model §12)."""

    accepted: int  #: accepted drafted tokens so far in the request
    rejected: int  #: rejections so far in the request


def _index(table: type) -> NamedTuple:
    return table(*range(len(table._fields)))


#: slot indices of each table (compile-time constants in the kernels)
ROUND_PARAM: RoundParams = _index(RoundParams)
STEP_PARAM: StepParams = _index(StepParams)
DYN_PARAM: DynamicParams = _index(DynamicParams)
STEP_DRAW: StepDraws = _index(StepDraws)
INT_ROW: Ints = _index(Ints)
REAL_ROW: Reals = _index(Reals)
PER_ROUND: PerRound = _index(PerRound)
DYN_REAL: DynamicFloats = _index(DynamicFloats)
DYN_FLAG: DynamicFlags = _index(DynamicFlags)
COMPLEX_ROW: ComplexRows = _index(ComplexRows)
MOMENT: Moments = _index(Moments)
HISTORY: HistoryEntries = _index(HistoryEntries)
COUNT: AcceptCounts = _index(AcceptCounts)


def pack(block: NamedTuple, dtype=float) -> np.ndarray:
    """The packed array of a filled table (slot i = field i)."""
    return np.array(tuple(block), dtype=dtype)
