"""What a controller sees before it acts, and what it may answer.

:class:`RoundContext` is the one input every controller's ``act`` takes (model §7, §11): the
upcoming round's acceptance rates, drafting speeds, channel gains and budgets — under the model §11
dynamics only what a server can know (the α belief, decision-time or statistical CSI), unless an
explicitly named *oracle* context is asked for. :func:`validate_action` checks an answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..config.system import SystemConfig
from ..model import acceptance, channel
from .state import State


@dataclass(frozen=True)
class RoundContext:
    """What a controller sees before acting (model §7, §11): the upcoming round's inputs.

    Arrays are [K] for one environment (or [B, K] for a batch); ``p_ul_w``/``p_dl_w`` are the
    episode's power budgets (fixed unless the config randomises them). In the paper scenario
    only the first seven fields are set. Under model §11 the *observable* context
    (``env.context``) holds ``alpha`` = the posterior mean when α is hidden (with ``alpha_a``,
    ``alpha_b``), the gains the CSI mode shows, and the complex CSI / Doppler when the channel
    is Gauss–Markov (with ``csi="oracle"`` also the innovations ``w_ul``/``w_dl`` that fix the
    correction-time gains for any T_cmp); the *oracle* context (``env.oracle_context``,
    ``oracle=True``) holds the true α and those innovations whatever the CSI mode.
    """

    alpha: np.ndarray
    t_draft: np.ndarray
    g_ul: np.ndarray
    g_dl: np.ndarray
    p_ul_w: float | np.ndarray
    p_dl_w: float | np.ndarray
    config: SystemConfig
    beta: np.ndarray | None = None
    h_ul: np.ndarray | None = None  #: complex decision-time CSI (gauss_markov, not "statistical")
    h_dl: np.ndarray | None = None
    doppler_hz: np.ndarray | None = None
    alpha_a: np.ndarray | None = None  #: Beta posterior of α (hidden α, belief "beta")
    alpha_b: np.ndarray | None = None
    #: hidden α, belief "grid": the predictive law of the coming round's α — values [M] and
    #: probabilities [K, M] (or [B, K, M]), M = 2·alpha_grid_size
    alpha_support: np.ndarray | None = None
    alpha_weights: np.ndarray | None = None
    w_ul: np.ndarray | None = None  #: oracle CSI only: decision → correction innovations
    w_dl: np.ndarray | None = None
    oracle: bool = False  #: the context knows the correction-time channel (whatever the CSI mode)
    #: acceptance from traces (model §12): each device's last rounds in its request, newest first,
    #: int [K, H, 3] (γ, accepted, rejected; :data:`~msenv.model.slots.HISTORY`), the rounds it
    #: holds [K], and the tokens the request has generated so far [K]
    history: np.ndarray | None = None
    history_rounds: np.ndarray | None = None
    request_tokens: np.ndarray | None = None
    #: a controller's estimate of each device's acceptance beyond one α: P(F_k > j), j = 0 … γ_max
    #: [K, γ_max + 1] (non-increasing from 1); when set, the SAA controllers sample F from it and
    #: price E[N_k] with it (model §12: a depth profile estimated from a device's history)
    survival: np.ndarray | None = None
    #: the oracle context of a trace: each device's first-rejection position this round, F_k =
    #: acc_len at its position, capped at γ_max + 1 (a draft of γ_k emits min(F_k, γ_k + 1) tokens,
    #: rejected iff F_k ≤ γ_k) — the trace's future, for named oracle controllers only
    first_rejection: np.ndarray | None = None

    @property
    def gains_move(self) -> bool:
        """True when the correction-time gains differ from the gains shown (Gauss–Markov)."""
        return self.doppler_hz is not None

    @property
    def knows_correction_gains(self) -> bool:
        """True when the context fixes the correction-time gains for every T_cmp: i.i.d. block
        fading seen exactly, or Gauss–Markov with the innovations (oracle CSI); False under
        statistical CSI (only β shown) and Gauss–Markov decision-time CSI."""
        if not self.oracle and self.config.dynamics.csi == "statistical":
            return False
        return not self.gains_move or self.w_ul is not None

    def correction_gains(self, t_cmp) -> tuple[np.ndarray, np.ndarray]:
        """The gains the correction uses if the round's computation lasts ``t_cmp`` (scalar or
        [C] → [C, K]) when :attr:`knows_correction_gains`; otherwise the gains shown."""
        if not self.gains_move or self.w_ul is None:
            return self.g_ul, self.g_dl
        t = np.asarray(t_cmp, dtype=float)[..., None]
        rho = channel.jakes_correlation(self.doppler_hz, t)
        g_ul = channel.power_gain(channel.evolve_gain(self.h_ul, rho, self.w_ul), self.beta)
        if self.config.channel.fading == "reciprocal":
            return g_ul, g_ul
        return g_ul, channel.power_gain(channel.evolve_gain(self.h_dl, rho, self.w_dl), self.beta)


#: what a context may know beyond the server's observations: nothing (False), everything (True),
#: only the true α ("alpha"), or only the correction-time channel ("csi") — the last two split the
#: value of exact information into its parts
ORACLE_MODES = (False, True, "alpha", "csi")


def paper_context(state: State, cfg: SystemConfig, index: int | None = None,
                  oracle: bool | str = False) -> RoundContext:
    """The paper scenario's round context of row ``index`` (arrays [K]) or of the whole batch
    (``None``): what the server sees is the truth, so ``oracle`` changes nothing."""
    i = slice(None) if index is None else index
    p_ul = state.p_ul_w[i] if index is None else float(state.p_ul_w[i])
    p_dl = state.p_dl_w[i] if index is None else float(state.p_dl_w[i])
    return RoundContext(state.alpha[i], state.t_draft[i], state.g_ul[i], state.g_dl[i], p_ul, p_dl, cfg)


def dynamic_context(state: State, cfg: SystemConfig, index: int | None = None,
                    oracle: bool | str = False) -> RoundContext:
    """The model §11 round context of row ``index`` (arrays [K]) or of the whole batch (``None``).

    ``oracle=False``: what the server can know; ``True``: the truth (true α, the innovations that
    fix the correction-time gains); ``"alpha"`` / ``"csi"``: the server's view plus only that part
    of the truth (:data:`ORACLE_MODES`, checked by the caller).
    """
    i = slice(None) if index is None else index
    p_ul = state.p_ul_w[i] if index is None else float(state.p_ul_w[i])
    p_dl = state.p_dl_w[i] if index is None else float(state.p_dl_w[i])
    know_alpha, know_csi = oracle in (True, "alpha"), oracle in (True, "csi")
    gm = cfg.dynamics.channel_dynamics == "gauss_markov"
    show_csi = know_csi or cfg.dynamics.csi != "statistical"
    beta = state.beta[i]
    g_ul, g_dl = (state.g_ul[i], state.g_dl[i]) if show_csi else (beta, beta)
    extra = dict(beta=beta, doppler_hz=state.doppler[i] if gm else None)
    if gm and show_csi:
        extra.update(h_ul=state.h[i][..., 0, :], h_dl=state.h[i][..., -1, :])
    if gm and (know_csi or cfg.dynamics.csi == "oracle"):  # the gains the correction will use, for any T_cmp
        extra.update(w_ul=state.w[i][..., 0, :], w_dl=state.w[i][..., -1, :])
    if not know_alpha and cfg.belief == "beta":
        a, b = state.post_a[i], state.post_b[i]
        alpha = a / (a + b)
        extra.update(alpha_a=a, alpha_b=b)
    elif not know_alpha and cfg.belief == "grid":
        cells = acceptance.grid_belief(cfg)["alpha"]
        bel = state.belief[i]
        alpha = acceptance.filter_moments(bel, cells)[0]
        extra.update(alpha_support=cells.reshape(-1), alpha_weights=bel.reshape(bel.shape[:-2] + (-1,)))
    else:
        alpha = state.alpha[i]
    return RoundContext(alpha, state.t_draft[i], g_ul, g_dl, p_ul, p_dl, cfg, oracle=know_csi, **extra)


def validate_action(action, cfg: SystemConfig, batch: int | None = None, num_devices: int | None = None) -> np.ndarray:
    """Check draft lengths: shape (K,) (or (B, K)), integer values in [0, γ_max]; ``num_devices``
    replaces ``cfg.num_devices`` as K (e.g. a cell generator's ``k_max`` slots).

    Raises ValueError naming the device (and env row) and what is allowed.
    """
    k, gmax = cfg.num_devices if num_devices is None else num_devices, cfg.gamma_max
    shape = (k,) if batch is None else (batch, k)
    a = action if isinstance(action, np.ndarray) else np.asarray(action)
    if a.shape != shape:
        raise ValueError(f"action shape {a.shape} is invalid; expected {shape}: one draft length per device")
    kind = a.dtype.kind
    if kind in "iu":
        if a.size and _out_of_range(a.reshape(-1), gmax):
            bad = np.argwhere((a < 0) | (a > gmax))[0]
            raise ValueError(
                f"action for device {_where(bad, batch)} is {a[tuple(bad)]!r}; allowed: integers in [0, {gmax}]"
            )
        return a
    if kind == "f":
        bad_mask = ~np.isfinite(a) | (a != np.round(a)) | (a < 0) | (a > gmax)
        if bad_mask.any():
            bad = np.argwhere(bad_mask)[0]
            raise ValueError(
                f"action for device {_where(bad, batch)} is {a[tuple(bad)]!r}; allowed: integers in [0, {gmax}]"
            )
        return a.astype(np.int64)
    raise ValueError(f"action dtype {a.dtype} is invalid; allowed: integer draft lengths in [0, {gmax}]")


@njit(cache=True)
def _out_of_range(a, gmax):
    """True if an integer draft length lies outside [0, γ_max] (one compiled pass)."""
    for x in a:
        if x < 0 or x > gmax:
            return True
    return False


def _where(idx: np.ndarray, batch: int | None) -> str:
    return str(int(idx[0])) if batch is None else f"{int(idx[1])} of env {int(idx[0])}"
