"""A cell generator: one environment whose every episode is a new cell, with any number of devices.

``msenv/MultiSpin-Cells-v0`` (:class:`MultiSpinCellsEnv`) draws, per episode, a cell from the
distribution of a :class:`CellConfig`: the number of devices K, the spread of drafting speeds,
and — through the base :class:`~msenv.config.SystemConfig` — distances, UL/DL budgets (its
``p_*_dbm_range`` fields), tasks and, optionally, the model §11 dynamics. The cell's episode is
then exactly the episode of a :class:`~msenv.env.MultiSpinEnv` of that cell (same seed, same
trajectory), so every controller and formula is the one of the single-cell ids.

Spaces stay fixed, as SB3 and the vector envs need:

- Action: ``MultiDiscrete([γ_max + 1] * k_max)``; the episode's K devices are slots ``0 … K−1``.
  Slots ``K … k_max−1`` are padding: their entries must be valid draft lengths (they are members
  of the space) and are ignored — the round is played with ``action[:K]`` only, so padded slots
  never change tokens, latency or goodput.
- Observation: float32 in [−1, 1], ``k_max`` rows of ``F + 1`` entries, then ``G + 1`` globals.
  Row k < K is device k's row of the single-cell observation (F entries,
  :func:`msenv.observation.feature_docs`) with the drafting-speed slot replaced by
  ``tanh(T_k^dft / T_dft,ref − 1)`` (the same meaning in every cell, whatever its spread), and a
  last entry 1 (a device); a padded row is all zeros (its last entry 0 is the mask). The globals
  are the single-cell ones (P_ul, P_dl) and ``tanh(ln K / 4)`` (the cell's size).
- ``info``: the single-cell ``info``, per-device arrays padded to ``k_max`` entries with zeros
  (so vector envs can stack them), and ``num_devices``: K; ``reset`` returns ``{"num_devices": K}``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..config.system import FIELD_NAMES, SystemConfig, resolve_config
from ..engine.context import validate_action
from .env import MultiSpinEnv
from .shell import check_render_mode, episode_seed
from ..engine.observation import DS, GLOBAL_FEATURES, device_features
from ..config.validation import fail

#: the SystemConfig fields the generator sets per episode (a base may not fix them)
DRAWN_FIELDS = ("num_devices",)
K_SCALE = 4.0  #: the size feature is tanh(ln K / K_SCALE)
K_LAWS = ("uniform", "log_uniform")  #: the allowed values of :attr:`CellConfig.k_law`


@dataclass(frozen=True)
class CellConfig:
    """The distribution of cells of :class:`MultiSpinCellsEnv`, validated and frozen; fields not
    listed here are the base :class:`~msenv.config.SystemConfig`'s (budgets, distances, tasks,
    dynamics)."""

    #: the model every cell follows: a SystemConfig (or its preset name / dict of fields); its
    #: ``num_devices`` is replaced by the drawn K, and its ``draft_scale_range`` by the drawn spread
    #: unless ``draft_scale_max_range`` is None
    base: SystemConfig = SystemConfig()
    #: the number of devices K of an episode: an integer lo … hi, drawn by ``k_law``
    k_range: tuple[int, int] = (5, 50)
    #: device slots of the spaces (≥ the largest K): slots K … k_max − 1 are padding
    k_max: int = 50
    #: how K is drawn from ``k_range``: ``"uniform"`` (every K equally likely) or
    #: ``"log_uniform"`` (P(K = k) ∝ 1/k: every range k … 2k about equally likely, so small cells
    #: are as common as large ones)
    k_law: str = "uniform"
    #: drafting heterogeneity: per episode the slowest possible scale s ~ U[lo, hi], then each
    #: device drafts at T_dft,ref × U[1, s]; None keeps the base's ``draft_scale_range``
    draft_scale_max_range: tuple[float, float] | None = (1.15, 2.0)

    def __post_init__(self) -> None:
        if not isinstance(self.base, SystemConfig):
            object.__setattr__(self, "base", resolve_config(self.base))
        k = self.k_range
        if (not isinstance(k, tuple) or len(k) != 2 or any(isinstance(x, bool) or not isinstance(x, int) for x in k)
                or not 1 <= k[0] <= k[1] <= 10_000):
            fail("k_range", k, "a (low, high) pair of integers with 1 ≤ low ≤ high ≤ 10000")
        if isinstance(self.k_max, bool) or not isinstance(self.k_max, int) or not k[1] <= self.k_max <= 10_000:
            fail("k_max", self.k_max, f"an integer in [{k[1]} (the largest K of k_range), 10000]")
        if self.k_law not in K_LAWS:
            fail("k_law", self.k_law, " or ".join(map(repr, K_LAWS)))
        s = self.draft_scale_max_range
        if s is not None:
            ok = (isinstance(s, tuple) and len(s) == 2
                  and all(not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) for x in s))
            if not ok or not 1.0 <= s[0] <= s[1] <= 1e3:
                fail("draft_scale_max_range", s, "None or a (low, high) pair with 1 ≤ low ≤ high ≤ 1000")
            default = SystemConfig().draft_scale_range
            if self.base.draft_scale_range != default:  # the generator would overwrite it without a word
                fail("draft_scale_range", self.base.draft_scale_range,
                     f"the default {default} while draft_scale_max_range={s} draws each episode's spread; set "
                     "draft_scale_max_range=None to keep a fixed draft_scale_range")

    @property
    def episode_length(self) -> int:
        """Rounds per episode (the base's)."""
        return self.base.episode_length

    @property
    def gamma_max(self) -> int:
        return self.base.gamma_max

    @property
    def reward_scale(self) -> float:
        return self.base.reward_scale

    def replace(self, **changes: Any) -> CellConfig:
        """A validated copy with ``changes`` applied: the generator's fields here, any other
        SystemConfig field on the base (``TypeError`` for an unknown name, ``ValueError`` for a bad
        value or for ``num_devices``, which the generator draws)."""
        own = {k: _tupled(v) for k, v in changes.items() if k in CELL_FIELDS}
        rest = {k: v for k, v in changes.items() if k not in CELL_FIELDS}
        check_cell_fields("CellConfig.replace()", rest)
        for name in DRAWN_FIELDS:
            if name in rest:
                raise ValueError(f"config field {name}={rest[name]!r} is invalid for a cell generator: K is drawn "
                                 f"per episode; allowed: set k_range (and k_max), e.g. k_range=[200, 200] k_max=200")
        if "base" in own:
            own["base"] = resolve_config(own["base"])
        out = dataclasses.replace(self, **own)
        return dataclasses.replace(out, base=out.base.replace(**rest)) if rest else out

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base.to_dict(), "k_range": list(self.k_range), "k_max": self.k_max, "k_law": self.k_law,
                "draft_scale_max_range": None if self.draft_scale_max_range is None
                else list(self.draft_scale_max_range)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CellConfig:
        return resolve_cells(dict(data))


CELL_FIELDS = tuple(f.name for f in dataclasses.fields(CellConfig))


def _tupled(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def check_cell_fields(owner: str, names) -> None:
    """Python's ``TypeError`` for a name that is neither a generator nor a SystemConfig field."""
    for key in names:
        if key not in CELL_FIELDS and key not in FIELD_NAMES:
            raise TypeError(f"{owner} got an unexpected keyword argument {key!r} (allowed: the generator's fields "
                            f"{', '.join(CELL_FIELDS)} and the config fields)")


def resolve_cells(config: CellConfig | dict[str, Any] | None = None, **overrides: Any) -> CellConfig:
    """A CellConfig from a CellConfig, a dict (generator fields, ``base``, and SystemConfig fields
    for the base, ``preset`` included) or None, plus overrides."""
    if config is None:
        cells = CellConfig()
    elif isinstance(config, CellConfig):
        cells = config
    elif isinstance(config, dict):
        data = dict(config)
        base = data.pop("base", None)
        base_fields = {k: data.pop(k) for k in list(data) if k not in CELL_FIELDS}
        name = base_fields.pop("preset", None)
        if base is None:
            base = resolve_config(name) if name is not None else SystemConfig()
        elif name is not None:
            base_fields["preset"] = name
        cells = CellConfig(base=resolve_config(base), **{k: _tupled(v) for k, v in data.items()})
        if base_fields:
            cells = cells.replace(**base_fields)
    else:
        raise ValueError(f"config={config!r} is not allowed; give a CellConfig, a dict of its fields, or None")
    return cells.replace(**overrides) if overrides else cells


def draw_cell(cells: CellConfig, rng: np.random.Generator) -> SystemConfig:
    """The SystemConfig of one episode's cell: K from ``k_range`` by ``k_law``, the drafting
    spread s ~ U[draft_scale_max_range] (scales then U[1, s] per device, drawn by the episode's
    reset)."""
    lo, hi = cells.k_range
    if cells.k_law == "uniform":
        k = int(rng.integers(lo, hi + 1))
    else:
        w = 1.0 / np.arange(lo, hi + 1)
        k = lo + int(np.searchsorted(np.cumsum(w), rng.random() * w.sum(), side="right"))
        k = min(k, hi)
    changes: dict[str, Any] = {"num_devices": k}
    if cells.draft_scale_max_range is not None:
        a, b = cells.draft_scale_max_range
        changes["draft_scale_range"] = (1.0, float(a + (b - a) * rng.random()))
    return dataclasses.replace(cells.base, **changes)  # validated by SystemConfig.__post_init__


def cell_rng(seed: int) -> np.random.Generator:
    """The generator of episode ``seed``'s cell (independent of the episode's own stream, which is
    Gymnasium's ``np_random(seed)`` as in the single-cell env)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))


def size_feature(k: int) -> float:
    """The observation's global entry for a cell of ``k`` devices: tanh(ln k / 4)."""
    return math.tanh(math.log(k) / K_SCALE)


@functools.lru_cache(maxsize=16)
def row_size(base: SystemConfig) -> int:
    """Entries per device row of the padded observation: the single-cell row plus the mask."""
    return device_features(base) + 1


def pad_observation(obs: np.ndarray, cell: SystemConfig, t_draft: np.ndarray, k_max: int) -> np.ndarray:
    """The padded observation (module docstring) of a single-cell observation ``obs`` of ``cell``
    whose devices draft at ``t_draft`` s per token [K]."""
    k, f = cell.num_devices, device_features(cell)
    out = np.zeros(k_max * (f + 1) + GLOBAL_FEATURES + 1, dtype=np.float32)
    rows = out[: k_max * (f + 1)].reshape(k_max, f + 1)
    rows[:k, :f] = obs[: k * f].reshape(k, f)
    rows[:k, DS.speed] = np.tanh(t_draft / cell.t_draft_ref_s - 1.0)
    rows[:k, f] = 1.0
    out[k_max * (f + 1): -1] = obs[k * f:]
    out[-1] = size_feature(k)
    return out


class MultiSpinCellsEnv(gym.Env):
    """Draft-length control in a new cell every episode (see the module docstring).

    Args:
        config: a :class:`CellConfig`, a dict of its fields (SystemConfig fields go to the base), or
            None (the defaults).
        render_mode: as :class:`~msenv.env.MultiSpinEnv`.
        **overrides: generator or SystemConfig fields (e.g. ``k_range=(200, 200), k_max=200``);
            any other keyword raises ``TypeError``.
    """

    metadata = {"render_modes": ["human", "rgb_array", "ansi"], "render_fps": 4}

    def __init__(self, config: CellConfig | dict | None = None, render_mode: str | None = None, **overrides: Any):
        check_cell_fields(f"{type(self).__name__}.__init__()", overrides)
        self.config = resolve_cells(config, **overrides)
        check_render_mode(render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self._window = None
        if render_mode == "human":  # one window for every episode's cell
            from .render import HumanWindow

            self._window = HumanWindow(self.metadata["render_fps"])
        base, k_max = self.config.base, self.config.k_max
        self.action_space = spaces.MultiDiscrete(np.full(k_max, base.gamma_max + 1, dtype=np.int64))
        size = k_max * row_size(base) + GLOBAL_FEATURES + 1
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(size,), dtype=np.float32)
        self.cell: SystemConfig | None = None  #: the current episode's cell
        self._inner: MultiSpinEnv | None = None
        self._seeds: np.random.Generator | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw a cell and start its episode. Episode seed: ``seed`` when given, else the next draw
        of a generator seeded by the last given seed; the cell comes from :func:`cell_rng` of it, the
        episode itself is the single-cell env's ``reset(seed=…)``, so a cell of fixed K and spread
        replays :class:`~msenv.env.MultiSpinEnv` exactly. ``options={"config": {...}}`` changes the
        generator's or the base's fields (not ``k_max``/``gamma_max``, which fix the spaces)."""
        super().reset(seed=seed)
        if options and "config" in options:
            self.config = reset_option_config(self.config, options["config"])
        self._seeds, ep_seed = episode_seed(self._seeds, seed)
        self.cell = draw_cell(self.config, cell_rng(ep_seed))
        self._inner = MultiSpinEnv(self.cell, render_mode="rgb_array" if self._window else self.render_mode)
        obs, _ = self._inner.reset(seed=ep_seed)
        if self._window is not None:
            self._window.show(self._inner.render())
        return self._observe(obs), {"num_devices": self.cell.num_devices}

    def step(self, action):
        """Play one round with draft lengths ``action[:K]`` (``action``: [k_max] integers in [0, γ_max];
        the padded entries are ignored): as :meth:`MultiSpinEnv.step`, observation padded."""
        if self._inner is None:
            raise RuntimeError("call reset() before step()")
        a = validate_action(action, self.config.base, num_devices=self.config.k_max)
        k = self.cell.num_devices
        obs, reward, term, trunc, info = self._inner.step(a[:k])
        pad = self.config.k_max - k
        info = dict(info)  # the inner env keeps its own (for render)
        for key, val in info.items():
            if isinstance(val, np.ndarray) and val.shape == (k,) and pad:
                info[key] = np.pad(val, (0, pad))
        info["num_devices"] = k
        if self._window is not None:
            self._window.show(self._inner.render())
        return self._observe(obs), reward, term, trunc, info

    def what_if(self, action) -> tuple[float, float]:
        """:meth:`MultiSpinEnv.what_if` of the current cell (``action``: [k_max], padding ignored)."""
        if self._inner is None:
            raise RuntimeError("call reset() before what_if()")
        a = validate_action(action, self.config.base, num_devices=self.config.k_max)
        return self._inner.what_if(a[: self.cell.num_devices])

    def _observe(self, obs: np.ndarray) -> np.ndarray:
        return pad_observation(obs, self.cell, self._inner.state.t_draft[0], self.config.k_max)

    @property
    def draft_times(self) -> np.ndarray:
        """Each device slot's drafting time T_k^dft, s per token [k_max] (a padded slot: 0) — what an
        action type such as :class:`~msenv.envs.actions.BudgetAction` maps to draft lengths."""
        if self._inner is None:
            raise RuntimeError("call reset() first")
        return np.pad(self._inner.state.t_draft[0], (0, self.config.k_max - self.cell.num_devices))

    @property
    def num_devices(self) -> int:
        """K of the current episode's cell."""
        if self.cell is None:
            raise RuntimeError("call reset() first")
        return self.cell.num_devices

    @property
    def context(self):
        """The current cell's :attr:`MultiSpinEnv.context` (K devices)."""
        if self._inner is None:
            raise RuntimeError("call reset() before reading the context")
        return self._inner.context

    @property
    def oracle_context(self):
        if self._inner is None:
            raise RuntimeError("call reset() before reading the context")
        return self._inner.oracle_context

    @property
    def state(self):
        """The current cell's functional state (batch of one)."""
        return None if self._inner is None else self._inner.state

    def render(self):
        """As :meth:`MultiSpinEnv.render` for the current cell (``"human"``: nothing; ``reset`` and
        ``step`` show each round)."""
        if self.render_mode is None or self._window is not None:
            return None
        if self._inner is None:
            raise RuntimeError("call reset() before render()")
        return self._inner.render()

    def close(self) -> None:
        """Close the ``"human"`` window, if one is open."""
        if self._window is not None:
            self._window.close()
        super().close()


def make_env(config: SystemConfig | CellConfig, render_mode: str | None = None) -> gym.Env:
    """The env of a config: a :class:`~msenv.env.MultiSpinEnv` for a SystemConfig, a
    :class:`MultiSpinCellsEnv` (a new cell per episode) for a :class:`CellConfig`."""
    cls = MultiSpinCellsEnv if isinstance(config, CellConfig) else MultiSpinEnv
    return cls(config, render_mode=render_mode)


def reset_option_config(current: CellConfig, value: Any) -> CellConfig:
    """The CellConfig of ``reset(options={"config": value})``: ``current`` with the fields of the
    dict ``value`` changed; the fields that fix the spaces may not change."""
    if not isinstance(value, dict):
        raise ValueError(f"options['config']={value!r} is invalid; allowed: a dict of CellConfig fields")
    new = current.replace(**dict(value))
    for name in ("k_max", "gamma_max"):
        if getattr(new, name) != getattr(current, name):
            raise ValueError(f"reset option config.{name}={getattr(new, name)!r} is not allowed: it changes "
                             f"the spaces (current {getattr(current, name)!r}); make a new env instead")
    return new


__all__ = ["CELL_FIELDS", "CellConfig", "MultiSpinCellsEnv", "cell_rng", "draw_cell", "make_env", "pad_observation",
           "reset_option_config", "resolve_cells", "size_feature"]
