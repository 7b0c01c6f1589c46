"""The agent's observation: a float32 vector with every entry in [−1, 1], built from a feature table.

Layout: ``K`` rows of per-device entries, flattened device-major, then the global entries. Which
entries a config shows, what each means and how it is computed is one table per engine kind: a
tuple of :class:`Feature` rows, each with its name (or a block's names), what it holds and its
writer. From the table of a config (the rows its ``shown`` admits, in table order) derive

- the :class:`Layout` (the spaces, the saved agents and the padding read it),
- the documentation of every entry (:attr:`Observation.docs`: the environment pages),
- the observation itself: per-episode rows are computed at reset (numpy writers, into the
  state's ``static_obs``), per-round rows after every round by the kind's compiled step
  (:func:`round_writer` compiles one driver over the kind's round writers).

So a new feature is one row of its kind's table (and its test); nothing else names it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces
from numba import njit

from ..config.system import SystemConfig
from ..model.numeric import ufunc

#: gain entries: tanh((g [dB] − GAIN_DB_CENTER) / GAIN_DB_SCALE)
GAIN_DB_CENTER, GAIN_DB_SCALE = -115.0, 15.0
#: budget entries: tanh((P [dBm] − center) / P_SCALE)
P_UL_CENTER, P_DL_CENTER, P_SCALE = 15.0, 30.0, 20.0
#: the per-round rows a table may hold (written by the kind's compiled step); the others are written at reset
PER = ("round", "episode")


def _always(cfg: SystemConfig) -> bool:
    return True


@dataclass(frozen=True)
class Feature:
    """One row of a kind's observation table.

    A device row writes ``width`` consecutive entries of every device row of the observation (a
    global row: entries after the device rows). ``per="episode"``: ``write(state, cfg)`` returns the
    values (numpy; [B, K] for a one-entry device row, [B, K, width] for a block, [B] for a global),
    computed once at reset; ``per="round"``: ``write(out, nf, col, view)`` is a compiled function
    that writes column ``col`` (to ``col + width − 1``) of every device row of ``out`` [B, obs]
    (``nf`` entries per row) from the kind's round view, after every round — for a global row,
    ``col`` is the entry's index in the observation."""

    #: the entry's name (a block's first part: its entries are named by ``names``)
    name: str
    #: what the entry holds (a block: by ``names``); a function of the config when it depends on it
    doc: str | Callable[[SystemConfig], str]
    #: the writer (see the class docstring)
    write: Callable
    #: "round" (the compiled step writes it after every round) or "episode" (written at reset)
    per: str = "round"
    #: whether a config shows this row (default: every config of the kind)
    shown: Callable[[SystemConfig], bool] = _always
    #: a block's entries under a config: ((name, doc), …) — None for a one-entry row
    names: Callable[[SystemConfig], tuple[tuple[str, str], ...]] | None = None

    def __post_init__(self) -> None:
        if self.per not in PER:
            raise ValueError(f"Feature {self.name!r}: per={self.per!r} is invalid; allowed: {', '.join(PER)}")

    def entries(self, cfg: SystemConfig) -> tuple[tuple[str, str], ...]:
        """(name, meaning) of each entry this row writes under ``cfg``."""
        if self.names is not None:
            return tuple(self.names(cfg))
        return ((self.name, self.doc(cfg) if callable(self.doc) else self.doc),)


# ---------------------------------------------------------------------- the shared writers
def _squash(g):
    return math.tanh((10.0 * math.log10(g) - GAIN_DB_CENTER) * (1.0 / GAIN_DB_SCALE))


#: a gain's observation entry tanh((g [dB] + 115) / 15): compiled scalar and numpy ufunc, one source
squash_scalar = njit(cache=True)(_squash)
squash_db = ufunc(["f8(f8)"], _squash)


@njit(cache=True)
def write_g_ul(out, nf, col, view):
    """The UL gain entry tanh((g_ul [dB] + 115)/15) of every device (``view.g_ul`` [B, K])."""
    b, k = view.g_ul.shape
    for r in range(b):
        for i in range(k):
            out[r, nf * i + col] = squash_scalar(view.g_ul[r, i])


@njit(cache=True)
def write_g_dl(out, nf, col, view):
    """The DL gain entry tanh((g_dl [dB] + 115)/15) of every device (``view.g_dl`` [B, K])."""
    b, k = view.g_dl.shape
    for r in range(b):
        for i in range(k):
            out[r, nf * i + col] = squash_scalar(view.g_dl[r, i])


def speed_entry(state, cfg: SystemConfig) -> np.ndarray:
    """The drafting-speed scale (T_k^dft/T_dft,ref − lo)/(hi − lo) ∈ [0, 1] (0 without a spread)."""
    s_lo, s_hi = cfg.compute.draft_scale_range
    scale = state.t_draft / cfg.compute.t_draft_ref_s
    return (scale - s_lo) / (s_hi - s_lo) if s_hi > s_lo else np.zeros_like(scale)


def beta_entry(state, cfg: SystemConfig) -> np.ndarray:
    """tanh((β [dB] + 115)/15), the large-scale gain's entry."""
    return squash_db(state.beta)


def _budget_dbm(p_w: np.ndarray) -> np.ndarray:
    return 10.0 * np.log10(p_w) + 30.0


def p_ul_entry(state, cfg: SystemConfig) -> np.ndarray:
    """tanh((P_ul [dBm] − 15)/20)."""
    return np.tanh((_budget_dbm(state.p_ul_w) - P_UL_CENTER) * (1.0 / P_SCALE))


def p_dl_entry(state, cfg: SystemConfig) -> np.ndarray:
    """tanh((P_dl [dBm] − 30)/20)."""
    return np.tanh((_budget_dbm(state.p_dl_w) - P_DL_CENTER) * (1.0 / P_SCALE))


def _gain_doc(link: str) -> Callable[[SystemConfig], str]:
    def doc(cfg: SystemConfig) -> str:
        shown = {"oracle": "the gain the coming correction will use", "decision": "the gain at decision time",
                 "statistical": "β's entry (statistical CSI: no fading shown)"}[cfg.dynamics.csi]
        return f"tanh((g_{link} [dB] + 115)/15): {link.upper()}, {shown}"
    return doc


#: the rows every kind shares: drafting speed, the gains, β (devices) and the budgets (globals)
SPEED = Feature("draft_speed", "the drafting-speed scale (T_k^dft/T_dft,ref − lo)/(hi − lo) ∈ [0, 1]", speed_entry,
                per="episode")
G_UL = Feature("g_ul", _gain_doc("ul"), write_g_ul)
G_DL = Feature("g_dl", _gain_doc("dl"), write_g_dl)
BETA = Feature("beta", "tanh((β [dB] + 115)/15): the large-scale gain", beta_entry, per="episode")
P_UL = Feature("p_ul", "tanh((P_ul [dBm] − 15)/20): the UL budget", p_ul_entry, per="episode")
P_DL = Feature("p_dl", "tanh((P_dl [dBm] − 30)/20): the DL budget", p_dl_entry, per="episode")
GLOBALS = (P_UL, P_DL)


# ---------------------------------------------------------------------- a config's observation
def round_writer(writers: tuple) -> Callable:
    """The compiled driver of a kind's per-round rows: ``write(out, nf, cols, view)`` calls
    ``writers[j](out, nf, cols[j], view)`` for every j with ``cols[j] ≥ 0`` (a row the config does
    not show has −1). Kinds call it inside their compiled step; numba calls each writer directly
    (no function pointers).

    The driver is one function written for its writers, named after them (a digest of their module
    and name, in order). Its compiled code lives inside each kernel that calls it, in numba's on-disk
    cache too, and numba links such inner functions by name, taking two of one name for the same
    code: so no two drivers of different writers may ever share a name — in one process or across
    the processes whose cached kernels meet in one (closures of one function, say, would)."""
    import hashlib

    writers = tuple(writers)
    ids = [f"{w.py_func.__module__}.{w.py_func.__qualname__}" for w in writers]
    name = "write_rows_" + hashlib.sha256("|".join(ids).encode()).hexdigest()[:16]
    body = "".join(f"    if cols[{j}] >= 0:\n        w{j}(out, nf, cols[{j}], view)\n" for j in range(len(writers)))
    scope = {f"w{j}": w for j, w in enumerate(writers)}
    exec(f"def {name}(out, nf, cols, view):\n" + (body or "    pass\n"), scope)
    return njit(scope[name])


class Observation:
    """A config's observation, derived from its kind's tables (module docstring).

    Args:
        config: the config.
        slots: device rows (K).
        devices: the kind's device rows, in order (those ``shown`` under the config are kept).
        globals_: the kind's global rows.
        round_rows: the kind's per-round rows as its compiled driver calls them (:func:`round_writer`),
            each of which is in ``devices`` or ``globals_``.
    """

    def __init__(self, config: SystemConfig, slots: int, devices: tuple[Feature, ...], globals_: tuple[Feature, ...],
                 round_rows: tuple[Feature, ...] = ()) -> None:
        self.config = config
        shown = [f for f in devices if f.shown(config)]
        self.devices = tuple(shown)  #: the device rows this config shows, in order
        self.globals = tuple(f for f in globals_ if f.shown(config))  #: its global rows
        dev_entries = [f.entries(config) for f in shown]
        #: each device row's first column in its row, and each global row's index in the observation
        self.columns: dict[str, int] = {}
        col = 0
        for f, entries in zip(shown, dev_entries):
            self.columns[f.name] = col
            col += len(entries)
        names = tuple(n for entries in dev_entries for n, _ in entries)
        glob = [e for f in self.globals for e in f.entries(config)]
        #: (device docs, global docs): what each entry of a device row, and each global entry, holds
        self.docs = ([d for entries in dev_entries for _, d in entries], [d for _, d in glob])
        #: the shapes the config fixes
        self.layout = Layout(slots, names, tuple(n for n, _ in glob), config.gamma_max)
        at = slots * col  # the globals follow the device rows
        for f in self.globals:
            self.columns[f.name] = at
            at += len(f.entries(config))
        #: the column of each per-round row the kind's driver calls (a global's: its index in the
        #: observation; −1: not shown)
        self.cols = np.array([self.columns[f.name] if f in shown or f in self.globals else -1 for f in round_rows],
                             np.int64)
        self._episode = [(self.columns[f.name], len(e), f.write) for f, e in zip(shown, dev_entries)
                         if f.per == "episode"]

    def episode(self, state) -> np.ndarray:
        """The per-episode entries [B, obs_size] of ``state`` (float32; per-round entries 0): every
        episode row's values, written once at reset (the state's ``static_obs``)."""
        lay, cfg = self.layout, self.config
        b, k, nf = len(state.t_draft), lay.slots, lay.row
        out = np.zeros((b, lay.obs_size), dtype=np.float32)
        dev = out[:, : nf * k].reshape(b, k, nf)
        for col, width, write in self._episode:
            if width == 1:
                dev[:, :, col] = write(state, cfg)
            else:
                dev[:, :, col: col + width] = write(state, cfg)
        for f in self.globals:
            if f.per == "episode":
                out[:, self.columns[f.name]] = f.write(state, cfg)
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


def changed_by(current: Any, new: Any, layout_of: Callable, fields: Callable) -> str | None:
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


__all__ = ["BETA", "Feature", "G_DL", "G_UL", "GLOBALS", "Layout", "MASK_FEATURE", "Observation", "P_DL", "P_UL",
           "SIZE_FEATURE", "SPEED", "beta_entry", "changed_by", "p_dl_entry", "p_ul_entry", "round_writer",
           "speed_entry", "squash_db", "squash_scalar", "write_g_dl", "write_g_ul"]
