"""The calibrated presets: one set of model parameters per published data set and drafter.

Each preset's parameters were fitted by :func:`~msenv.traces.fit.fit` to the figures of
:data:`~msenv.traces.published.PUBLISHED` (measured from SpecDecode-Bench/simulator's
``data/llama3.1-8B/combined_<set>.jsonl``, the data of arXiv 2601.11580, requests at the
8,192-token limit left out), on banks of 8 × the source's requests drawn from seed 2026 —
``python -m msenv.traces fit --published NAME --out NAME.json`` reproduces a preset. A preset also
carries its drafter, its cap and its source's request count (a default bank has the same size).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..config.groups import MAX_TRACE_REQUESTS
from .bank import DRAFTERS, MAX_CAP, TraceBank
from .files import read_regular
from .model import ModelParams, generate_bank, hidden_states
from .published import DATA, SHIPPED


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


#: preset name → calibrated model and metadata (values written by the fit command above, 6 digits)
PRESETS: dict[str, Preset] = {
    # gsm8k, EAGLE: targets PUBLISHED['gsm8k-eagle'] (arXiv 2601.11580; SpecDecode-Bench/simulator's
    # data/llama3.1-8B/combined_gsm8k.jsonl, measured from that file, requests at the 8,192-token limit
    # left out); fit objective 1.679
    "gsm8k-eagle": Preset(
        _p(stay=0.718692, stay_spread=0.0705598, high_share=0.482219, high_spread=0.265873, first_low=0.549428,
           first_high=0.887294, cont_low=0.519086, cont_high=0.743163, level_spread=0.0396823, tail=0.863038,
           length_median=160.0, length_sigma=0.299958, length_level_corr=0.0268791),
        drafter="eagle", cap=16, requests=300, source=_source("gsm8k")),
    # gsm8k, n-gram: targets PUBLISHED['gsm8k-ngram'] (arXiv 2601.11580; SpecDecode-Bench/simulator's
    # data/llama3.1-8B/combined_gsm8k.jsonl, measured from that file, requests at the 8,192-token limit
    # left out); fit objective 0.868
    "gsm8k-ngram": Preset(
        _p(stay=0.605226, stay_spread=0.334089, high_share=0.100247, high_spread=0.768649, first_low=0.0287744,
           first_high=0.983357, cont_low=0.108665, cont_high=0.983865, level_spread=-0.611002, tail=0.999211,
           length_median=160.0, length_sigma=0.299958, length_level_corr=-0.0286182),
        drafter="ngram", cap=21, requests=300, source=_source("gsm8k")),
    # sharegpt, EAGLE: targets PUBLISHED['sharegpt-eagle'] (arXiv 2601.11580; SpecDecode-Bench/simulator's
    # data/llama3.1-8B/combined_sharegpt.jsonl, measured from that file, requests at the 8,192-token limit
    # left out); fit objective 0.766
    "sharegpt-eagle": Preset(
        _p(stay=0.755434, stay_spread=0.811005, high_share=0.512361, high_spread=0.230285, first_low=0.465812,
           first_high=0.882019, cont_low=0.413442, cont_high=0.791917, level_spread=0.367898, tail=0.811983,
           length_median=574.0, length_sigma=0.58641, length_level_corr=0.36301),
        drafter="eagle", cap=20, requests=307, source=_source("sharegpt")),
    # sharegpt, n-gram: targets PUBLISHED['sharegpt-ngram'] (arXiv 2601.11580; SpecDecode-Bench/simulator's
    # data/llama3.1-8B/combined_sharegpt.jsonl, measured from that file, requests at the 8,192-token limit
    # left out); fit objective 0.642
    "sharegpt-ngram": Preset(
        _p(stay=0.609005, stay_spread=1.28202, high_share=0.174885, high_spread=1.0677, first_low=0.0130169,
           first_high=0.970073, cont_low=0.0665511, cont_high=0.969892, level_spread=0.998081, tail=0.999301,
           length_median=574.0, length_sigma=0.58641, length_level_corr=0.416774),
        drafter="ngram", cap=21, requests=306, source=_source("sharegpt")),
    # cnn, EAGLE: targets PUBLISHED['cnn-eagle'] (arXiv 2601.11580; SpecDecode-Bench/simulator's
    # data/llama3.1-8B/combined_cnn.jsonl, measured from that file, requests at the 8,192-token limit
    # left out); fit objective 0.853
    "cnn-eagle": Preset(
        _p(stay=0.791578, stay_spread=0.602367, high_share=0.45551, high_spread=0.361006, first_low=0.536349,
           first_high=0.853707, cont_low=0.492161, cont_high=0.78378, level_spread=0.141812, tail=0.767974,
           length_median=334.0, length_sigma=0.237799, length_level_corr=0.282207),
        drafter="eagle", cap=18, requests=300, source=_source("cnn")),
    # cnn, n-gram: targets PUBLISHED['cnn-ngram'] (arXiv 2601.11580; SpecDecode-Bench/simulator's
    # data/llama3.1-8B/combined_cnn.jsonl, measured from that file, requests at the 8,192-token limit
    # left out); fit objective 0.311
    "cnn-ngram": Preset(
        _p(stay=0.690728, stay_spread=0.534463, high_share=0.276742, high_spread=0.423829, first_low=0.0187583,
           first_high=0.97891, cont_low=0.0624357, cont_high=0.99572, level_spread=0.596384, tail=0.999158,
           length_median=334.0, length_sigma=0.237799, length_level_corr=-0.161805),
        drafter="ngram", cap=21, requests=300, source=_source("cnn")),
    # instructcoder, EAGLE: targets PUBLISHED['instructcoder-eagle'] (arXiv 2601.11580; SpecDecode-Bench/simulator's
    # data/llama3.1-8B/combined_instructcoder.jsonl, measured from that file, requests at the 8,192-token limit
    # left out); fit objective 0.792
    "instructcoder-eagle": Preset(
        _p(stay=0.87049, stay_spread=-0.158029, high_share=0.582298, high_spread=0.282931, first_low=0.586774,
           first_high=0.928832, cont_low=0.585827, cont_high=0.862843, level_spread=0.183951, tail=0.777876,
           length_median=144.0, length_sigma=0.693004, length_level_corr=-0.378029),
        drafter="eagle", cap=18, requests=496, source=_source("instructcoder")),
    # instructcoder, n-gram: targets PUBLISHED['instructcoder-ngram'] (arXiv 2601.11580; SpecDecode-Bench/simulator's
    # data/llama3.1-8B/combined_instructcoder.jsonl, measured from that file, requests at the 8,192-token limit
    # left out); fit objective 2.378
    "instructcoder-ngram": Preset(
        _p(stay=0.926092, stay_spread=-0.147062, high_share=0.562243, high_spread=0.41174, first_low=0.0388989,
           first_high=0.941116, cont_low=0.125774, cont_high=0.996761, level_spread=-0.374319, tail=0.999482,
           length_median=144.0, length_sigma=0.693004, length_level_corr=-0.493718),
        drafter="ngram", cap=21, requests=495, source=_source("instructcoder")),
}

__all__ = ["MAX_FIT_BYTES", "PRESETS", "FitFile", "Preset", "fitted_model", "preset_bank", "preset_hidden", "read_fit",
           "read_fit_file"]

#: the largest PARAMS.json a reader opens (one written by fit is about 5 KB)
MAX_FIT_BYTES = 2**20


class FitFile(NamedTuple):
    """What a PARAMS.json of ``python -m msenv.traces fit`` holds, checked."""

    params: ModelParams  #: the fitted model
    cap: int  #: the cap of the banks it draws (an integer ≥ 2: acc_len 1 … cap)
    drafter: str | None  #: "eagle" or "ngram" (None: the file does not say)
    requests: int | None  #: the request count of the bank it was fitted to (a drawn bank's default size), or None


def read_fit_file(path) -> FitFile:
    """The model of a PARAMS.json written by ``python -m msenv.traces fit``; ``ValueError`` in one
    line naming the file and the field (a regular file of at most :data:`MAX_FIT_BYTES`; ``params``
    every parameter of :class:`~msenv.traces.ModelParams`; ``cap`` an integer in 2 … 2^31 − 1;
    ``drafter``, when there, one of eagle | ngram; ``requests``, when there, an integer ≥ 1)."""
    path = Path(path)
    raw = read_regular(path, MAX_FIT_BYTES)
    try:
        doc = json.loads(raw)
    except RecursionError:
        raise ValueError(f"{path}: not a PARAMS.json of `python -m msenv.traces fit` (JSON nested too deep)") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a PARAMS.json of `python -m msenv.traces fit` (JSON: {e})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a PARAMS.json of `python -m msenv.traces fit` (a JSON {type(doc).__name__}, "
                         "not an object)")
    for key in ("params", "cap"):
        if key not in doc:
            raise ValueError(f"{path}: not a PARAMS.json of `python -m msenv.traces fit`: field {key} is missing")
    cap, drafter, requests, values = doc["cap"], doc.get("drafter"), doc.get("requests"), doc["params"]
    if isinstance(cap, bool) or not isinstance(cap, int) or not 2 <= cap <= MAX_CAP:
        raise ValueError(f"{path}: field cap = {repr(cap)[:40]} is invalid; allowed: an integer in [2, {MAX_CAP}] "
                         "(the model drafts up to cap − 1 tokens)")
    if drafter is not None and drafter not in DRAFTERS:
        raise ValueError(f"{path}: field drafter = {repr(drafter)[:40]} is invalid; allowed: {' | '.join(DRAFTERS)}")
    if requests is not None and (isinstance(requests, bool) or not isinstance(requests, int) or requests < 1):
        raise ValueError(f"{path}: field requests = {repr(requests)[:40]} is invalid; allowed: an integer ≥ 1")
    if not isinstance(values, dict):
        raise ValueError(f"{path}: field params is {type(values).__name__}; allowed: an object of the model's "
                         "parameters")
    try:
        params = ModelParams(**values)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: field params: {e}") from None
    return FitFile(params, cap, drafter, requests)


def read_fit(path) -> tuple[ModelParams, int]:
    """(parameters, cap) of a PARAMS.json written by ``python -m msenv.traces fit``
    (:func:`read_fit_file`); ``ValueError`` in one line naming the file and the field."""
    fitted = read_fit_file(path)
    return fitted.params, fitted.cap


def fitted_model(source: str) -> tuple[ModelParams, int] | None:
    """(parameters, cap) of the model fitted to trace source ``source``: a preset's own; a shipped
    bank's fit of its train requests (:attr:`~msenv.traces.published.Shipped.fit`); a published
    file's preset (``published:gsm8k-eagle`` → ``gsm8k-eagle``, fitted to the published figures of
    the whole file, its test requests included); None for any other source (a bank file, a mix: fit
    one with ``python -m msenv.traces fit FILE --split train``)."""
    if isinstance(source, str) and source.startswith("published:"):
        source = source[len("published:"):]
    if source in PRESETS:
        return PRESETS[source].params, PRESETS[source].cap
    if source in SHIPPED and SHIPPED[source].fit is not None:
        return read_fit(DATA / SHIPPED[source].fit)
    return None


def preset_bank(name: str, requests: int | None = None, seed: int | np.random.Generator = 0) -> TraceBank:
    """A bank drawn from preset ``name``: ``requests`` requests (default: its source's count),
    seeded by ``seed`` (an integer or a Generator); ``source`` names the preset, size and seed."""
    if name not in PRESETS:
        raise ValueError(f"preset={name!r} is unknown; allowed: {' | '.join(sorted(PRESETS))}")
    p = PRESETS[name]
    n = p.requests if requests is None else requests
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_TRACE_REQUESTS:
        raise ValueError(f"requests={n!r} is invalid; allowed: an integer in [1, {MAX_TRACE_REQUESTS}] (≈ 47 KB of "
                         "memory per request while drawn)")
    where = f"seed {seed}" if not isinstance(seed, np.random.Generator) else "a Generator"
    return generate_bank(p.params, n, seed=seed, cap=p.cap, drafter=p.drafter,
                         source=f"preset {name} ({n} requests, {where})")


def preset_hidden(name: str, requests: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The hidden levels [R] and states [positions] of :func:`preset_bank`'s bank of the same
    arguments (:func:`~msenv.traces.model.hidden_states`)."""
    p = PRESETS[name]
    return hidden_states(p.params, p.requests if requests is None else requests, seed=seed, cap=p.cap)
