"""Trace banks of measured draft acceptance: reading and writing them, their statistics, a split
into training / validation / test requests, and a fitted generative model with one calibrated
preset per published data set and drafter. The data layer of trace-driven acceptance: it sits
below the engine (it may import :mod:`msenv.config` and :mod:`msenv.model`, never
:mod:`msenv.engine` or :mod:`msenv.envs`) and holds no environment logic.

What a bank holds
-----------------
Per request an integer array ``acc_len``, one value per output token of the request, and per bank
a cap c. ``acc_len[p]`` is the number of tokens a round emits when drafting starts at output
position p with a draft long enough: the accepted drafted tokens plus the one token the target
adds (the correction after a rejection, or the bonus token). p = 0 is the first speculative step
after the token of the prefill. Every value is ≥ 1; the value c means "c or more".

Replaying a bank: a round with draft length γ at position p

* emits ``min(acc_len[p], γ + 1, len − p)`` tokens (never past the request's end),
* has a rejection iff ``acc_len[p] ≤ γ`` (γ = 0: one token and no rejection),
* accepted ``A = min(acc_len[p] − 1, γ)`` of its drafted tokens,

and the next round starts at p + emitted. This is the i.i.d. model's first-rejection position F
(:mod:`msenv.model.acceptance`) read from the data instead of drawn: ``acc_len[p]`` plays F.

n-gram drafters: ``acc_len = 1`` is counted as a rejected first token. The data cannot tell "the
n-gram found no match, so nothing was drafted" from "a drafted token was rejected"; both emit one
token, and this package treats both as a rejection.

The API (small and stable; the engine needs only plain arrays)
--------------------------------------------------------------
* :class:`TraceBank` — frozen: ``acc_len`` (int32, flat), ``offsets`` (int64, R + 1), ``ids``,
  ``cap``, ``drafter``, ``source``, ``sha256``; ``len(bank)``, ``bank.lengths``,
  ``bank.request(i)``, ``bank.subset(indices)``.
* :func:`load_bank(path, drafter=None, cap=None, drop_limit=None) <load_bank>` — SpecDecode-Bench's
  published JSONL (``drafter`` "eagle" | "ngram"; ``drop_limit=8192`` leaves out requests that
  reached the generation limit; off by default) or msenv's ``.npz``; :func:`save_bank`,
  :func:`write_jsonl` (the published layout, placeholder token ids), :func:`write_npz`.
* :func:`split_indices(bank) <split_indices>` → ``{"train", "validation", "test"}`` index arrays
  (60 / 20 / 20, stratified, fixed by the bank's sha256).
* :func:`measure(bank, gammas) <measure>` → every statistic by key; :func:`bootstrap` → their 95 %
  intervals over requests; one function per statistic in :mod:`~msenv.traces.stats`.
* :data:`PRESETS` (name → :class:`Preset`: parameters, drafter, cap, source request count) and
  :func:`preset_bank(name, requests=None, seed=0) <preset_bank>`; :class:`ModelParams`,
  :func:`generate_bank`; :func:`fit` (calibration by simulation); :data:`PUBLISHED` (the targets).
* ``python -m msenv.traces stats | fit | generate`` (see :mod:`msenv.traces.__main__`).
"""

from .bank import DRAFTERS, TraceBank
from .files import load_bank, read_jsonl, read_npz, save_bank, write_jsonl, write_npz
from .fit import fit
from .model import ModelParams, generate_bank
from .presets import PRESETS, Preset, fitted_model, preset_bank, read_fit
from .published import PUBLISHED, PUBLISHED_FILES, SHIPPED, published_available, published_source, shipped_path
from .split import split_indices
from .stats import bootstrap, measure

__all__ = ["DRAFTERS", "PRESETS", "PUBLISHED", "PUBLISHED_FILES", "SHIPPED", "published_available", "published_source",
           "shipped_path", "ModelParams", "Preset", "TraceBank", "bootstrap", "fit",
           "generate_bank", "load_bank", "measure", "preset_bank", "read_jsonl", "read_npz", "save_bank",
           "split_indices", "write_jsonl", "write_npz", "fitted_model", "read_fit"]
