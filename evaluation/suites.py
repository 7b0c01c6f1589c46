"""Benchmark suites: named, versioned lists of test cells with seeds nobody trains on.

A suite is to a benchmark what an id is to an environment: its content never changes under its
name (a change is a new version, ``paper-v1``), so two scores of one suite are comparable. Each
:class:`Cell` is an env id with config overrides, a number of episodes and rounds, and its first
test seed; episode ``i`` of a cell uses seed ``seed + i`` for the env and every controller (the
harness's pairing).

Every test seed lies in :data:`TEST_SEEDS` — a block that no training, validation or results
command of this repository uses (``tests/test_suites.py`` checks it against every command's
seed defaults and every seed written in the code and docs). Train and select on seeds below it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from msenv import ENV_IDS

#: the block of test seeds; every suite's episodes draw their seeds from it, nothing else does
TEST_SEEDS = range(1_000_000, 2_000_000)
#: the validation suite's seeds (choosing among trained agents): disjoint from the test block, from
#: training's, train.py's held-out (10000.., 60000..), the demonstrations' (500000..) and the experiments'
VALIDATION_SEEDS = range(200_000, 300_000)
#: the reserved blocks, by name: no training, tuning, experiment or train.py evaluation may use them
RESERVED_SEEDS: Mapping[str, range] = MappingProxyType({"test": TEST_SEEDS, "validation": VALIDATION_SEEDS})


def reserved_overlap(seeds: range | Iterable[int]) -> str | None:
    """``None`` if no seed of ``seeds`` lies in a reserved block; else a phrase naming the first
    such seed and its block (for a one-line refusal)."""
    if isinstance(seeds, range):
        for name, block in RESERVED_SEEDS.items():
            lo, hi = max(seeds.start, block.start), min(seeds.stop, block.stop)
            if seeds.step == 1 and lo < hi:
                return f"seed {lo} lies in the reserved {name} block [{block.start}, {block.stop})"
        if seeds.step == 1:
            return None
    for s in seeds:
        for name, block in RESERVED_SEEDS.items():
            if s in block:
                return f"seed {s} lies in the reserved {name} block [{block.start}, {block.stop})"
    return None


def seed_refusal(flag: str, value: int, seeds: range | Iterable[int]) -> str | None:
    """The one-line refusal of option ``flag`` (``value``) whose run would use ``seeds``, when one
    of them lies in a reserved block (:func:`reserved_overlap`); else ``None``."""
    clash = reserved_overlap(seeds)
    return None if clash is None else (f"{flag} {value} is invalid: {clash}, kept for the benchmark's suites "
                                       "(evaluation.suites); allowed: any other seed")


#: seeds between two cells' first seeds (a cell may have at most this many episodes)
CELL_STRIDE = 1_000


@dataclass(frozen=True)
class Cell:
    """One test cell: ``env_id`` with ``overrides`` (any config field of the id, e.g. a cell
    generator's ``k_range``), ``episodes`` × ``rounds``, seeds ``seed .. seed + episodes − 1``."""

    name: str  #: short name, unique in its suite (a column of the results)
    env_id: str  #: a registered id (``msenv.ENV_IDS``)
    episodes: int  #: test episodes
    rounds: int  #: rounds per episode (the config's ``episode_length``)
    seed: int  #: the first test seed
    overrides: Mapping[str, Any] = field(default_factory=dict)  #: config fields on top of the id's

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"cell name={self.name!r} is invalid; allowed: a non-empty string")
        for field_name in ("episodes", "rounds", "seed"):
            v = getattr(self, field_name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"cell {self.name!r}: {field_name}={v!r} is invalid; allowed: an integer")
        if not isinstance(self.overrides, Mapping):
            raise ValueError(f"cell {self.name!r}: overrides={self.overrides!r} is invalid; allowed: a mapping of "
                             "config fields")
        object.__setattr__(self, "overrides", MappingProxyType(dict(self.overrides)))
        if not (1 <= self.episodes <= CELL_STRIDE):
            raise ValueError(f"cell {self.name!r}: episodes={self.episodes} is invalid; allowed: 1 … {CELL_STRIDE}")
        if self.rounds < 2:
            raise ValueError(f"cell {self.name!r}: rounds={self.rounds} is invalid; allowed: an integer ≥ 2")
        block = VALIDATION_SEEDS if self.seed in VALIDATION_SEEDS else TEST_SEEDS
        if self.seed not in block or self.seed + self.episodes - 1 not in block:
            raise ValueError(f"cell {self.name!r}: seed={self.seed} is invalid; allowed: seeds in "
                             f"[{TEST_SEEDS.start}, {TEST_SEEDS.stop}) (the test block) or, for the validation "
                             f"suite, [{VALIDATION_SEEDS.start}, {VALIDATION_SEEDS.stop})")

    @property
    def seeds(self) -> range:
        return range(self.seed, self.seed + self.episodes)

    def config(self):
        """The cell's config (a SystemConfig or, for a generator id, a CellConfig)."""
        from msenv import env_config

        return env_config(self.env_id, **dict(self.overrides), episode_length=self.rounds)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "env_id": self.env_id, "overrides": dict(self.overrides),
                "episodes": self.episodes, "rounds": self.rounds, "seed": self.seed}


#: what a suite is for → the block its seeds are drawn from
SUITE_KINDS: Mapping[str, range] = MappingProxyType({"test": TEST_SEEDS, "validation": VALIDATION_SEEDS})


@dataclass(frozen=True)
class Suite:
    """A named, versioned list of cells, the controller every score is relative to, and the
    rivals the suite's leaderboard runs. A test suite's cells draw seeds of the test block, a
    validation suite's (``kind="validation"``) seeds of the validation block; either is refused,
    in one line naming the cell and its seed, when a cell draws the other block's."""

    name: str  #: ``<family>-v<version>``
    description: str
    cells: tuple[Cell, ...]
    reference: str = "greedy-saa"  #: scores are throughput relative to this controller's, per episode
    #: the controllers of the suite's leaderboard (all affordable at its cells' K)
    controllers: tuple[str, ...] = ("greedy-saa", "budgeted-greedy", "optimal-uniform", "computation-only")
    #: "test" (scores reported as results) or "validation" (for choosing among agents; never a result)
    kind: str = "test"
    #: controllers of ``controllers`` that see what a server cannot (upper references): they play
    #: and are scored, but are never the best rival a method's P(improvement) is computed against
    oracles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in SUITE_KINDS:
            raise ValueError(f"suite {self.name!r}: kind={self.kind!r} is invalid; allowed: "
                             f"{', '.join(map(repr, SUITE_KINDS))}")
        names = [c.name for c in self.cells]
        if len(set(names)) != len(names):
            raise ValueError(f"suite {self.name!r}: cell names repeat: {names}")
        if len({c.episodes for c in self.cells}) != 1:  # the score matrix is (runs × episodes) × cells
            raise ValueError(f"suite {self.name!r}: every cell must have the same number of episodes")
        blocks = {c.seed in VALIDATION_SEEDS for c in self.cells}
        if len(blocks) != 1:
            raise ValueError(f"suite {self.name!r}: its cells mix test and validation seeds; allowed: every cell in the "
                             "test block, or (a validation suite) every cell in the validation block")
        if not set(self.oracles) <= set(self.controllers):
            raise ValueError(f"suite {self.name!r}: oracles={self.oracles!r} is invalid; allowed: controllers of the "
                             f"suite ({', '.join(self.controllers)})")
        block = SUITE_KINDS[self.kind]
        for c in self.cells:
            if c.seed not in block:
                hint = " (a suite for choosing among agents says kind='validation')" if self.kind == "test" else ""
                raise ValueError(f"suite {self.name!r} is a {self.kind} suite; allowed: seeds of the {self.kind} block "
                                 f"[{block.start}, {block.stop}), but cell {c.name!r} has seed={c.seed}: "
                                 f"{reserved_overlap(c.seeds)}{hint}")
        spans = sorted((c.seed, c.seed + c.episodes, c.name) for c in self.cells)
        for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
            if start < end:
                raise ValueError(f"suite {self.name!r}: cells {a!r} and {b!r} share test seeds (from {start}); allowed: "
                                 "each cell its own seeds")

    @property
    def episodes(self) -> int:
        return self.cells[0].episodes

    def unavailable(self) -> str | None:
        """None when every cell can play here; else one line saying which file is missing or does not
        match its pin (a suite of the published traces, which msenv does not ship)."""
        from msenv.traces import published_available

        for c in self.cells:
            source = dict(c.overrides).get("trace_source")
            if isinstance(source, str) and source.startswith("published:"):
                why = published_available(source)
                if why:
                    return f"cell {c.name}: {why}"
        return None

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "description": self.description, "reference": self.reference,
               "controllers": list(self.controllers), "cells": [c.to_dict() for c in self.cells]}
        return out | ({"oracles": list(self.oracles)} if self.oracles else {})


def _cells(index: int, specs: list[tuple]) -> tuple[Cell, ...]:
    """Cells of suite number ``index``: each gets its own block of test seeds."""
    base = TEST_SEEDS.start + index * 100 * CELL_STRIDE
    return tuple(Cell(name, env_id, episodes, rounds, base + i * CELL_STRIDE, overrides)
                 for i, (name, env_id, episodes, rounds, overrides) in enumerate(specs))


CELLS = "msenv/MultiSpin-Cells-v0"
#: strong links, weak downlinks, far devices: budgets and distances of the generator's base config
STRONG = {"p_ul_dbm_range": [20.0, 20.0], "p_dl_dbm_range": [30.0, 30.0]}
WEAK_DL = {"p_dl_dbm_range": [11.0, 14.0]}
FAR = {"distance_range_m": [400.0, 800.0]}

#: the cells of each suite family, shared by its versions (a version changes the seeds or the rivals)
PAPER_CELLS = [("qwen", "msenv/MultiSpin-v0", 10, 30, {}),
               ("qwen-weak-dl", "msenv/MultiSpin-v0", 10, 30, {"p_dl_dbm": 10.0}),
               ("deepseek", "msenv/MultiSpin-DeepSeek-v0", 10, 30, {}),
               ("deepseek-weak-dl", "msenv/MultiSpin-DeepSeek-v0", 10, 30, {"p_dl_dbm": 10.0})]
CELLS_IN = [(f"k{k}", CELLS, 6, 10, {"k_range": [k, k], "k_max": 50}) for k in (5, 20, 50)]
CELLS_OUT = [("k100", CELLS, 4, 10, {"k_range": [100, 100], "k_max": 100}),
             ("k200", CELLS, 4, 10, {"k_range": [200, 200], "k_max": 200}),
             ("k20-strong", CELLS, 4, 10, {"k_range": [20, 20], "k_max": 50, **STRONG}),
             ("k20-weak-dl", CELLS, 4, 10, {"k_range": [20, 20], "k_max": 50, **WEAK_DL}),
             ("k20-far", CELLS, 4, 10, {"k_range": [20, 20], "k_max": 50, **FAR})]
DYNAMIC_CELLS = [("dynamic", "msenv/MultiSpin-Dynamic-v0", 6, 30, {}),
                 ("dynamic-small", "msenv/MultiSpin-Dynamic-Small-v0", 6, 30, {}),
                 ("mobile", "msenv/MultiSpin-Mobile-v0", 6, 30, {})]
TRACES = "msenv/MultiSpin-Traces-v0"
#: acceptance from traces (model §12): each preset's test requests, and a bank msenv ships replayed from its file;
#: the observation shows the exact filter's rows (trace_posterior: what the learned agents read; the rounds,
#: the draws and every controller's decisions are the same without them)
TRACE_CELLS = [(name, TRACES, 10, 100, {"trace_source": name, "trace_split": "test", "trace_posterior": True})
               for name in ("cnn-ngram", "sharegpt-ngram", "gsm8k-eagle", "sharegpt-eagle", "eagle-mix-v1")]
#: the published files themselves, when a user supplies them (msenv.traces.published)
TRACE_REAL_CELLS = [(f"{s}-{d}", TRACES, 10, 100, {"trace_source": f"published:{s}-{d}", "trace_split": "test"})
                    for s in ("gsm8k", "sharegpt", "cnn", "instructcoder") for d in ("eagle", "ngram")]
#: the rivals of the trace suites: the plug-in greedy, the adaptive rules of the literature, the exact filter and
#: Kaplan–Meier each with the greedy and the local search (trace-filter-ls, km-ls: the rules learned control has to
#: beat), the best fixed draft length, and the clairvoyant reference (an oracle: it knows each round's first
#: rejections). The state oracle (state-oracle) is not among them: it needs a bank drawn from the fitted model, and
#: eagle-mix-v1 and the published files are replayed from files (``python -m experiments traces-shares`` plays it)
TRACE_RIVALS = dict(reference="greedy-saa", controllers=(
    "greedy-saa", "km-greedy", "trace-filter-saa", "trace-filter-ls", "km-ls", "hf-heuristic", "hf-budget",
    "ucb-lengths", "ucb-budget", "last-outcome", "best-fixed", "clairvoyant"), oracles=("clairvoyant",))
WITH_LOCAL_SEARCH = ("greedy-saa", "budgeted-greedy", "optimal-uniform", "computation-only", "local-search")
DYNAMIC_RIVALS = dict(reference="plug-in-greedy", controllers=("plug-in-greedy", "bayes-saa", "optimal-uniform",
                                                              "computation-only"))

#: the suites of the leaderboard. v1 (msenv 0.6): every affordable rival, and each description says which
#: controllers it leaves out and why; fresh test seeds (blocks 4–7)
_SUITES = (
    Suite("paper-v1", "The paper's two single-cell ids (K = 20), each with its default budgets and with a weak "
          "downlink (P_dl 10 dBm). Every rival of the paper ids plays; left out: the exact SAA (an exhaustive "
          "search, 21^20 vectors).",
          _cells(4, PAPER_CELLS),
          controllers=WITH_LOCAL_SEARCH),
    Suite("cells-in-v1", "Cells of the generator inside the generalist's training range: K = 5, 20, 50 "
          "(k_max 50, budgets and drafting spread drawn per episode as in training). Every rival plays, the local "
          "search included.",
          _cells(5, CELLS_IN),
          controllers=WITH_LOCAL_SEARCH),
    Suite("cells-out-v1", "Cells outside the Cells id's draws: more devices (K = 100, 200), and K = 20 cells "
          "that fix its budgets or distances at an extreme (strong links, weak downlinks, devices 400–800 m away). "
          "Left out: the local search, whose decisions take seconds at K = 100 and 200 (every cell of a suite "
          "plays the same rivals).",
          _cells(6, CELLS_OUT)),
    Suite("dynamic-v1", "The §11 dynamic ids: pedestrians, hidden acceptance with requests, in the paper's cell "
          "and the small weak one. Scores are relative to the plug-in greedy (the greedy on the server's "
          "beliefs). Left out: the oracle controllers (they see what a server cannot: upper references, not "
          "rivals).",
          _cells(7, DYNAMIC_CELLS),
          **DYNAMIC_RIVALS),
    Suite("traces-v1", "Acceptance replayed from traces (model §12), the paper's cell (K = 20): the test requests of "
          "four presets of the fitted model (two n-gram, two EAGLE) and of a bank msenv ships (eagle-mix-v1, "
          "replayed from its file). Episodes draw their requests independently from the test split, so the bootstrap "
          "over episodes resamples requests too. The observation shows the exact filter's rows (trace_posterior; the "
          "rounds and every rule's decisions are the same without them). The clairvoyant plays as a reference (it "
          "knows each round's first rejections), not a rival; the state oracle, which needs a bank drawn from the "
          "fitted model, is left out (eagle-mix-v1 is replayed from its file).",
          _cells(8, TRACE_CELLS),
          **TRACE_RIVALS),
    Suite("traces-real-v1", "The published SpecDecode-Bench traces themselves (arXiv 2601.11580; EAGLE and n-gram "
          "drafters on gsm8k, sharegpt, cnn and instructcoder), test requests, when a user supplies the files "
          "(msenv does not redistribute them): $MSENV_TRACES_DIR/combined_<set>.jsonl, requests at the "
          "8,192-token limit left out. Skipped, in one line, where the files are absent.",
          _cells(9, TRACE_REAL_CELLS),
          **TRACE_RIVALS),
)
#: msenv ≤ 0.5's versions: their result files (docs/leaderboard/archive) stay readable by --check
_ARCHIVED = (
    Suite("paper-v0", "The paper's two single-cell ids (K = 20), each with its default budgets and with a weak "
          "downlink (P_dl 10 dBm).",
          _cells(0, PAPER_CELLS),
          controllers=WITH_LOCAL_SEARCH),
    Suite("cells-in-v0", "Cells of the generator inside the generalist's training range: K = 5, 20, 50 "
          "(k_max 50, budgets and drafting spread drawn per episode as in training).",
          _cells(1, CELLS_IN)),
    Suite("cells-out-v0", "Cells outside the Cells id's draws: more devices (K = 100, 200), and K = 20 cells "
          "that fix its budgets or distances at an extreme (strong links, weak downlinks, devices 400–800 m away).",
          _cells(2, CELLS_OUT)),
    Suite("dynamic-v0", "The §11 dynamic ids: pedestrians, hidden acceptance with requests, in the paper's cell "
          "and the small weak one. Scores are relative to the plug-in greedy (the greedy on the server's "
          "beliefs).",
          _cells(3, DYNAMIC_CELLS),
          **DYNAMIC_RIVALS),
)

#: name → suite
SUITES: Mapping[str, Suite] = MappingProxyType({s.name: s for s in _SUITES})
#: name → a suite superseded by a later version (runnable, checkable, off the leaderboard)
ARCHIVED_SUITES: Mapping[str, Suite] = MappingProxyType({s.name: s for s in _ARCHIVED})

#: not a test: the cells on which trained cell agents are compared to choose the one to commit (its
#: seeds lie outside the test block; its scores are never reported as results, nor on the leaderboard)
VALIDATION_SUITE = Suite("cells-val-v0", "Validation, for choosing among trained cell agents (not a test: its scores are never "
      "reported as results): K = 5, 20, 50, 100, 200 with the generator's draws, strong links, weak downlinks "
      "and far devices. Scores are relative to computation-only (affordable at every K).",
      tuple(Cell(f"k{k}-{kind}", CELLS, 4, 10, VALIDATION_SEEDS.start + (5 * j + i) * CELL_STRIDE,
                 {"k_range": [k, k], "k_max": max(k, 50), **extra})
            for j, (kind, extra) in enumerate((("drawn", {}), ("strong", STRONG), ("weak-dl", WEAK_DL),
                                                ("far", FAR)))
            for i, k in enumerate((5, 20, 50, 100, 200))),
      reference="computation-only", controllers=("computation-only", "optimal-uniform"), kind="validation")
#: the model §11 dynamics of msenv/MultiSpin-Dynamic-v0 (pedestrians, CSI as of the decision, hidden
#: acceptance rates with requests) on the generator's cells: that id's fields but its preset (ranges
#: as lists, as a result file writes them)
DYNAMIC = {name: list(value) if isinstance(value, tuple) else value
           for name, value in ENV_IDS["msenv/MultiSpin-Dynamic-v0"].items() if name != "preset"}
#: not a test either: the cells on which agents trained on dynamic cells are compared (seeds after
#: cells-val-v0's)
DYNAMIC_VALIDATION_SUITE = Suite(
    "cells-dyn-val-v0", "Validation for agents of dynamic cells (not a test): the generator's cells with the "
    "§11 dynamics of msenv/MultiSpin-Dynamic-v0, K = 5, 20, 50, 100, 200. Scores are relative to computation-only.",
    tuple(Cell(f"k{k}-dynamic", CELLS, 4, 10, VALIDATION_SEEDS.start + (20 + i) * CELL_STRIDE,
               {"k_range": [k, k], "k_max": max(k, 50), **DYNAMIC})
          for i, k in enumerate((5, 20, 50, 100, 200))),
    reference="computation-only", controllers=("computation-only", "optimal-uniform"), kind="validation")
VALIDATION_SUITES: Mapping[str, Suite] = MappingProxyType({s.name: s for s in (VALIDATION_SUITE, DYNAMIC_VALIDATION_SUITE)})


def check_registry(test: Mapping[str, Suite], validation: Mapping[str, Suite]) -> None:
    """Test suites draw from the test block, validation suites from the validation block, and no
    two suites share a seed; ``ValueError`` naming the first that does not."""
    spans = []
    for suites, block, kind in ((test, TEST_SEEDS, "test"), (validation, VALIDATION_SEEDS, "validation")):
        for s in suites.values():
            if s.kind != kind:
                raise ValueError(f"suite {s.name!r}: kind={s.kind!r} among the {kind} suites; allowed: kind={kind!r}")
            if any(c.seed not in block for c in s.cells):
                raise ValueError(f"suite {s.name!r} is a {kind} suite; allowed: seeds of the {kind} block "
                                 f"[{block.start}, {block.stop})")
            spans += [(c.seed, c.seed + c.episodes, s.name) for c in s.cells]
    spans.sort()
    for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
        if start < end and a != b:
            raise ValueError(f"suites {a!r} and {b!r} share seeds (from {start}); allowed: each suite its own seeds")


check_registry({**SUITES, **ARCHIVED_SUITES}, VALIDATION_SUITES)


def get_suite(name: str) -> Suite:
    """The suite called ``name`` (a key of :data:`SUITES`)."""
    every = {**SUITES, **VALIDATION_SUITES, **ARCHIVED_SUITES}
    if not isinstance(name, str) or name not in every:
        raise ValueError(f"suite={name!r} is not known; allowed: {', '.join(every)}")
    return every[name]


__all__ = ["ARCHIVED_SUITES", "CELL_STRIDE", "Cell", "RESERVED_SEEDS", "SUITES", "SUITE_KINDS", "Suite", "TEST_SEEDS",
           "VALIDATION_SEEDS", "get_suite", "reserved_overlap", "seed_refusal"]
