"""The agent's observation: a float32 vector with every entry in [−1, 1].

Layout: ``K`` rows of per-device features, flattened device-major, then 2 global features. The
paper scenario has 5 features per device:

=====  ===========================================================
index  feature
=====  ===========================================================
5k+0   α_k (acceptance rate of device k's task)
5k+1   drafting-speed scale: (T_k^dft/T_dft,ref − lo)/(hi − lo) ∈ [0, 1]
5k+2   tanh((g_k^ul [dB] + 115) / 15)   current UL gain
5k+3   tanh((g_k^dl [dB] + 115) / 15)   current DL gain
5k+4   tanh((β_k [dB] + 115) / 15)      large-scale gain
5K+0   tanh((P_ul [dBm] − 15) / 20)
5K+1   tanh((P_dl [dBm] − 30) / 20)
=====  ===========================================================

Under model §11 the layout keeps these slots, with: slot 0 = the posterior mean of α when
``alpha_observed=False`` (the current α otherwise); slots 2–3 = the decision-time gains
(``csi="oracle"|"decision"``) or β (``"statistical"``, the mean gain); and appends per device
(``device_features(cfg)`` in all) ``2·sd`` of the α belief (hidden α), ``2·P(hard) − 1`` (the
"grid" belief: the filter's probability that the chain is in its hard state) and
``tanh(f_D / 10 Hz)`` (``gauss_markov``). Under the "grid" belief slot 0 is the predictive mean of
the coming round's α (request α and chain state together).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from gymnasium import spaces
from numba import njit

from ..config.system import SystemConfig
from ..model import acceptance
from ..model._numeric import ufunc
from ..model.slots import MOMENT


class DeviceSlots(NamedTuple):
    """The paper scenario's entries of one device row (offsets within the row)."""

    alpha: int
    speed: int
    g_ul: int
    g_dl: int
    beta: int


#: offsets of a device row's entries (compile-time constants in the kernels)
DS = DeviceSlots(*range(len(DeviceSlots._fields)))
DEVICE_FEATURES = len(DS)
GLOBAL_FEATURES = 2
GAIN_DB_CENTER, GAIN_DB_SCALE = -115.0, 15.0
#: each history round's entries (model §12): γ/γ_max, accepted/γ_max, +1 rejected / −1 all accepted
HISTORY_FEATURES = ("gamma", "accepted", "outcome")
#: the progress entry is tanh(tokens of the request so far / PROGRESS_SCALE)
PROGRESS_SCALE = 256.0
P_UL_CENTER, P_DL_CENTER, P_SCALE = 15.0, 30.0, 20.0
DOPPLER_SCALE_HZ = 10.0


@functools.lru_cache(maxsize=64)
def device_features(cfg: SystemConfig) -> int:
    """Observation entries per device (the paper and model §11 kernels' row width): 5, plus the
    α-belief spread (hidden α), P(hard) (the "grid" belief) and the Doppler (Gauss–Markov channel)
    — the number of :func:`device_feature_names`."""
    return len(device_feature_names(cfg))


def device_feature_names(cfg: SystemConfig) -> tuple[str, ...]:
    """The name of each entry of a device row under ``cfg``, in order (:func:`device_features` of
    them; :func:`feature_docs` says what each holds)."""
    if cfg.traces.trace_source is not None:  # model §12: the request's acceptance so far and its last rounds
        history = [f"h{h}_{x}" for h in range(1, cfg.traces.trace_history + 1) for x in HISTORY_FEATURES]
        return ("accept_rate", "draft_speed", "g_ul", "g_dl", "beta", *history, "progress")
    alpha = {None: "alpha", "beta": "alpha_posterior_mean", "grid": "alpha_predictive_mean"}[cfg.belief]
    names = [alpha, "draft_speed", "g_ul", "g_dl", "beta"]
    if cfg.alpha_hidden:
        names.append("alpha_sd")
    if cfg.belief == "grid":
        names.append("p_hard")
    if cfg.dynamics.channel_dynamics == "gauss_markov":
        names.append("doppler")
    return tuple(names)


def global_feature_names(cfg: SystemConfig) -> tuple[str, ...]:
    """The name of each global entry of the observation, in order."""
    return ("p_ul", "p_dl")


def feature_docs(cfg: SystemConfig) -> tuple[list[str], list[str]]:
    """What each entry of a device row, and each global entry, means under ``cfg`` (the source of
    the environment pages)."""
    gain = {"oracle": "the gain the coming correction will use", "decision": "the gain at decision time",
            "statistical": "β's entry (statistical CSI: no fading shown)"}[cfg.dynamics.csi]
    alpha = {None: "α, the acceptance rate of the device's task" + (" (the current request's)" if
                                                                       cfg.dynamics.alpha_dynamics != "fixed" else ""),
             "beta": "the Beta posterior's mean of the request's α",
             "grid": "the filter's predictive mean of the coming round's α"}[cfg.belief]
    if cfg.traces.trace_source is not None:
        alpha = ("(1 + A) / (2 + A + R): the acceptance of the device's request so far (A accepted drafted "
                 "tokens, R rejections since the request began; no α exists)")
    dev = [alpha, "the drafting-speed scale (T_k^dft/T_dft,ref − lo)/(hi − lo) ∈ [0, 1]",
           f"tanh((g_ul [dB] + 115)/15): UL, {gain}", f"tanh((g_dl [dB] + 115)/15): DL, {gain}",
           "tanh((β [dB] + 115)/15): the large-scale gain"]
    if cfg.traces.trace_source is not None:
        for h in range(1, cfg.traces.trace_history + 1):
            when = "the last round" if h == 1 else f"{h} rounds ago"
            dev += [f"γ / γ_max of {when} in the request (0 before its first rounds)",
                    f"accepted drafted tokens / γ_max of {when}",
                    f"+1 if {when} had a rejection, −1 if it drafted and all was accepted, 0 otherwise"]
        dev.append(f"tanh(tokens the request has generated / {PROGRESS_SCALE:g}) (never its length)")
        return dev, ["tanh((P_ul [dBm] − 15)/20): the UL budget", "tanh((P_dl [dBm] − 30)/20): the DL budget"]
    if cfg.alpha_hidden:
        dev.append("min(2·sd of the α belief, 1)")
    if cfg.belief == "grid":
        dev.append("2·P(hard) − 1: the filter's belief that the easy/hard chain is hard")
    if cfg.dynamics.channel_dynamics == "gauss_markov":
        dev.append("tanh(f_D / 10 Hz): the device's Doppler")
    return dev, ["tanh((P_ul [dBm] − 15)/20): the UL budget", "tanh((P_dl [dBm] − 30)/20): the DL budget"]


def _squash(g):
    return math.tanh((10.0 * math.log10(g) - GAIN_DB_CENTER) * (1.0 / GAIN_DB_SCALE))


#: a gain's observation entry tanh((g [dB] + 115) / 15): compiled scalar and numpy ufunc, one source
squash_scalar = njit(cache=True)(_squash)
squash_db = ufunc(["f8(f8)"], _squash)


@njit(cache=True)
def gain_slots(out, g_ul, g_dl, nf, statistical):
    """Fill the gain slots of every device row of the observation ``out`` (compiled); under
    statistical CSI they repeat β's entry."""
    b, k = g_ul.shape
    for r in range(b):
        for i in range(k):
            j = nf * i
            if statistical:
                out[r, j + DS.g_ul] = out[r, j + DS.g_dl] = out[r, j + DS.beta]
            else:
                out[r, j + DS.g_ul] = squash_scalar(g_ul[r, i])
                out[r, j + DS.g_dl] = squash_scalar(g_dl[r, i])


@njit(cache=True, error_model="numpy")
def belief_slots(out, nf, mode, alpha, post_a, post_b, belief, cells, doppler, gm):
    """The model §11 observation entries of every device row (compiled): the α slot = the belief's
    mean α (or α itself when observed), then 2·sd of the belief, 2·P(hard) − 1 (grid belief) and
    tanh(f_D / 10 Hz) (Gauss–Markov). ``mode``: ``acceptance.BELIEF_CODES``."""
    b, k = alpha.shape
    moments = np.empty((len(MOMENT), b * k))
    if mode == 2:
        acceptance.moment_rows(belief.reshape(b * k, belief.shape[2], 2), cells, moments)
    for r in range(b):
        for i in range(k):
            j, col = nf * i, nf * i + DEVICE_FEATURES
            if mode == 1:
                a, bb = post_a[r, i], post_b[r, i]
                n = a + bb
                out[r, j + DS.alpha] = a / n
                out[r, col] = min(2.0 * math.sqrt(a * bb / (n * n * (n + 1.0))), 1.0)
                col += 1
            elif mode == 2:
                d = r * k + i
                out[r, j + DS.alpha] = moments[MOMENT.mean, d]
                out[r, col] = min(2.0 * moments[MOMENT.sd, d], 1.0)
                out[r, col + 1] = 2.0 * moments[MOMENT.p_hard, d] - 1.0
                col += 2
            else:
                out[r, j + DS.alpha] = alpha[r, i]
            if gm:
                out[r, col] = math.tanh(doppler[r, i] * (1.0 / DOPPLER_SCALE_HZ))


def static_obs(alpha, t_draft, beta, p_ul_w, p_dl_w, cfg: SystemConfig) -> np.ndarray:
    """The per-episode observation entries [B, obs_size] (gain slots left at 0)."""
    b, k = alpha.shape
    nf = device_features(cfg)
    s_lo, s_hi = cfg.compute.draft_scale_range
    scale = t_draft / cfg.compute.t_draft_ref_s
    speed = (scale - s_lo) / (s_hi - s_lo) if s_hi > s_lo else np.zeros_like(scale)
    out = np.zeros((b, nf * k + GLOBAL_FEATURES), dtype=np.float32)
    dev = out[:, : nf * k].reshape(b, k, nf)
    dev[:, :, DS.alpha] = alpha
    dev[:, :, DS.speed] = speed
    dev[:, :, DS.beta] = squash_db(beta)
    p_dbm = 10.0 * np.log10(np.stack([p_ul_w, p_dl_w], axis=-1)) + 30.0
    out[:, -2:] = np.tanh((p_dbm - (P_UL_CENTER, P_DL_CENTER)) * (1.0 / P_SCALE))
    return out


#: stand-ins for the belief arrays of a config without them (the kernels take arrays)
NO_FLOATS = np.zeros((1, 1))
NO_BELIEF = np.zeros((1, 1, 1, 2))
NO_CELLS = np.zeros((1, 2))


def observe_paper(state, cfg: SystemConfig) -> np.ndarray:
    """The paper scenario's observation [B, obs_size(cfg)] of a :class:`~msenv.engine.state.State`
    (layout in the module docstring): the cached per-episode entries plus this round's gains."""
    if state.obs is not None:
        return state.obs
    out = state.static_obs.copy()
    gain_slots(out, state.g_ul, state.g_dl, device_features(cfg), cfg.dynamics.csi == "statistical")
    return out


def observe_dynamic(state, cfg: SystemConfig) -> np.ndarray:
    """The model §11 observation [B, obs_size(cfg)]: the paper's entries plus the α belief and the
    Doppler slots."""
    if state.obs is not None:
        return state.obs
    out = observe_paper(state, cfg)
    nf = device_features(cfg)
    grid, gm, beta = cfg.belief == "grid", cfg.dynamics.channel_dynamics == "gauss_markov", cfg.belief == "beta"
    belief_slots(out, nf, acceptance.BELIEF_CODES[cfg.belief], state.alpha,
                 state.post_a if beta else NO_FLOATS, state.post_b if beta else NO_FLOATS,
                 state.belief if grid else NO_BELIEF, acceptance.grid_belief(cfg)["alpha"] if grid else NO_CELLS,
                 state.doppler if gm else NO_FLOATS, gm)
    return out


# ---------------------------------------------------------------------- the layout
#: the entry a padded device row appends (1: a device, 0: a padded slot)
MASK_FEATURE = "device_mask"
#: the global entry a padded observation appends: tanh(ln K / 4), the cell's size
SIZE_FEATURE = "cell_size"


class Layout(NamedTuple):
    """The shapes a config fixes (equal layouts: the same spaces and the same meaning of every
    observation entry).

    The observation is ``slots`` device rows of ``len(device)`` entries each, flattened
    device-major, then ``len(globals)`` global entries; the action is one draft length in
    ``[0, gamma_max]`` per device slot."""

    slots: int  #: device slots of the observation and the action (K, or a cell generator's k_max)
    device: tuple[str, ...]  #: the name of each entry of a device row, in order
    globals: tuple[str, ...]  #: the name of each global entry, in order
    gamma_max: int  #: the longest draft length

    @property
    def row(self) -> int:
        """Entries per device row."""
        return len(self.device)

    @property
    def n_globals(self) -> int:
        """Global entries."""
        return len(self.globals)

    @property
    def masked(self) -> bool:
        """True when device rows carry a mask (a cell generator's padded observation)."""
        return MASK_FEATURE in self.device

    @property
    def obs_size(self) -> int:
        """The observation's width: slots × row + globals."""
        return self.slots * self.row + self.n_globals

    @property
    def action_nvec(self) -> np.ndarray:
        """``MultiDiscrete``'s nvec: γ_max + 1 choices per device slot."""
        return np.full(self.slots, self.gamma_max + 1, dtype=np.int64)

    def padded(self, slots: int) -> Layout:
        """The layout of cells with this layout padded to ``slots`` device slots: each row gains
        the mask entry, the globals the cell's size."""
        return Layout(slots, self.device + (MASK_FEATURE,), self.globals + (SIZE_FEATURE,), self.gamma_max)

    def spaces(self) -> tuple[spaces.MultiDiscrete, spaces.Box]:
        """The action space (a draft length per device slot) and the observation space (float32 in
        [−1, 1]) of this layout."""
        return (spaces.MultiDiscrete(self.action_nvec),
                spaces.Box(-1.0, 1.0, shape=(self.obs_size,), dtype=np.float32))


def changed_by(current, new, layout_of, fields) -> str | None:
    """The first config field whose change from ``current`` to ``new`` changes the layout by itself
    (or, if only changes together do, the first changed field), None when the layouts are equal.
    ``layout_of`` maps a config to its :class:`Layout`, ``fields`` a config to the dict of its flat
    fields, which its ``replace`` takes."""
    if layout_of(new) == layout_of(current):
        return None
    old, now = fields(current), fields(new)
    changed = [name for name, value in now.items() if value != old.get(name)]
    for name in changed:
        if layout_of(current.replace(**{name: now[name]})) != layout_of(current):
            return name
    return changed[0]
