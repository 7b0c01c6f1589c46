"""The cell generator's config: the distribution of cells a :class:`CellConfig` describes (the
number of devices K, the spread of drafting speeds, and through its base
:class:`~msenv.config.SystemConfig` everything else), validated and frozen, and the draw of one
episode's cell (:func:`draw_cell`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .system import FIELD_NAMES, SystemConfig, resolve_config
from .validation import fail

#: the SystemConfig fields the generator sets per episode (a base may not fix them)
DRAWN_FIELDS = ("num_devices",)
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

    #: the shells that play a cell generator (:class:`~msenv.config.spec.EnvSpec`)
    entry: ClassVar[str] = "msenv.envs.cells:MultiSpinCellsEnv"
    vector_entry: ClassVar[str] = "msenv.envs.cells_vector:cells_vector_env"

    @property
    def slots(self) -> int:
        """Device slots: ``k_max``."""
        return self.k_max

    @property
    def label(self) -> str:
        """``qwen2.5, cells of K 5…50 (k_max 50)``."""
        return f"{self.base.preset}, cells of K {self.k_range[0]}…{self.k_range[1]} (k_max {self.k_max})"

    def fields(self) -> dict[str, Any]:
        """The generator's fields and its base's, but those it draws per episode, by flat name."""
        base = {k: v for k, v in self.base.to_dict().items() if k not in DRAWN_FIELDS}
        return {**base, **{name: getattr(self, name) for name in CELL_FIELDS if name != "base"}}

    def pad(self, layout):
        """Cells padded to ``k_max`` slots (each device row gains its mask, the globals the cell's size)."""
        return layout.padded(self.k_max)

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


__all__ = ["CELL_FIELDS", "DRAWN_FIELDS", "K_LAWS", "CellConfig", "cell_rng", "check_cell_fields", "draw_cell",
           "resolve_cells"]
