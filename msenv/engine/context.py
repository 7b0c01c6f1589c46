"""What a controller sees before it acts, and what it may answer.

:class:`RoundContext` is the one input every controller's ``act`` takes (model §7): the upcoming
round's acceptance rates, drafting speeds, channel gains and budgets. A kind whose server knows
less than the truth (model §11, §12) hands out a subclass with what it can know, unless an
explicitly named *oracle* context is asked for. :func:`validate_action` checks an answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..config.system import SystemConfig


@dataclass(frozen=True)
class RoundContext:
    """What a controller sees before acting (model §7): the upcoming round's inputs.

    Arrays are [K] for one environment (or [B, K] for a batch); ``p_ul_w``/``p_dl_w`` are the
    episode's power budgets (fixed unless the config randomises them). This is the paper
    scenario's context, where what a server sees is the truth; a kind with more to show (or to
    hide) has a subclass of its own (:class:`msenv.engine.kinds.dynamics.DynamicContext`,
    :class:`msenv.engine.kinds.traces.TraceContext`). Controllers ask the context's questions
    (:meth:`sample_alpha`, :attr:`knows_correction_gains`, :meth:`correction_gains`,
    :meth:`gain_samples`), whose answers here are the exact ones.
    """

    alpha: np.ndarray
    t_draft: np.ndarray
    g_ul: np.ndarray
    g_dl: np.ndarray
    p_ul_w: float | np.ndarray
    p_dl_w: float | np.ndarray
    config: SystemConfig
    beta: np.ndarray | None = None
    #: a controller's estimate of each device's acceptance beyond one α: P(F_k > j), j = 0 … γ_max
    #: [K, γ_max + 1] (non-increasing from 1); when set, the SAA controllers sample F from it and
    #: price E[N_k] with it (model §12: a depth profile estimated from a device's history)
    survival: np.ndarray | None = None
    oracle: bool = False  #: the context knows the correction-time channel (whatever the CSI mode)

    @property
    def gains_move(self) -> bool:
        """True when the correction-time gains differ from the gains shown (a moving channel)."""
        return False

    @property
    def knows_correction_gains(self) -> bool:
        """True when the context fixes the correction-time gains for every T_cmp (here: the gains
        shown are the gains the correction meets)."""
        return True

    def correction_gains(self, t_cmp) -> tuple[np.ndarray, np.ndarray]:
        """The gains the correction uses if the round's computation lasts ``t_cmp``: the gains shown."""
        return self.g_ul, self.g_dl

    def gain_samples(self, t_cmp, w_ul: np.ndarray, w_dl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Samples [S, K] of the correction-time gains given innovations ``w_ul``/``w_dl`` [S, K]
        (CN(0, 1)), where the context does not fix them; here it does: the gains shown."""
        return self.correction_gains(t_cmp)

    def sample_alpha(self, rng: np.random.Generator, samples: int) -> np.ndarray:
        """α per sample [S, K] (or [K] when certain) for an SAA estimate: here α is known, and no
        number is drawn from ``rng``."""
        return np.asarray(self.alpha, dtype=float)


#: what a context may know beyond the server's observations: nothing (False), everything (True),
#: only the true α ("alpha"), or only the correction-time channel ("csi") — the last two split the
#: value of exact information into its parts
ORACLE_MODES = (False, True, "alpha", "csi")


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
