"""A config's trace source as the arrays the engine replays (model §12).

``trace_source`` names where acceptance comes from: a preset of the fitted model (a bank drawn with
``trace_requests`` and ``trace_seed``), a bank msenv ships, ``published:<set>-<drafter>``
(SpecDecode-Bench's files, read from ``$MSENV_TRACES_DIR``), ``mix:A,B,…`` (the union of named
banks, each split its own way) or a file's path. :func:`bank_of` resolves a config's source and
split into a :class:`Bank` (built once per source and split).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..config.system import SystemConfig
from .files import load_bank
from .presets import PRESETS, preset_bank
from .published import PUBLISHED_LIMIT, SHIPPED, published_source, shipped_path
from .split import split_indices


class Bank(NamedTuple):
    """A bank's requests as the compiled step reads them (:func:`bank_of`)."""

    acc_len: np.ndarray  #: int32, every request's acc_len concatenated
    offsets: np.ndarray  #: int64 [R + 1]: request i is acc_len[offsets[i]:offsets[i + 1]]
    requests: np.ndarray  #: int64: the indices of the requests of the config's split
    cap: int  #: the bank's cap (a value cap means "at least cap"; a mix: its components' smallest)
    source: str  #: where it came from (a preset with its seed, or a file)
    sha256: str  #: the source's SHA-256


def _bank(source: str, drafter: str, requests: int, seed: int, drop_limit: int | None):
    """The :class:`~msenv.traces.TraceBank` a single source names (module docstring of
    :mod:`msenv.traces.published` for the named ones)."""

    if source in PRESETS:
        return preset_bank(source, requests=requests, seed=seed)
    if source in SHIPPED:
        return load_bank(shipped_path(source))
    if source.startswith("published:"):  # as the published figures were measured
        path, drafter = published_source(source)
        return load_bank(path, drafter=drafter, drop_limit=PUBLISHED_LIMIT if drop_limit is None else drop_limit)
    if Path(source).suffix not in (".jsonl", ".npz"):
        raise ValueError(f"config field trace_source={source!r} is invalid; allowed: a preset of the fitted model "
                         f"({', '.join(PRESETS)}), a bank msenv ships ({', '.join(SHIPPED)}), "
                         "published:<set>-<drafter>, mix:<preset>,<preset>…, or a bank file (.jsonl: "
                         "SpecDecode-Bench's; .npz: msenv's)")
    if Path(source).suffix == ".jsonl":  # a published file holds every drafter: the config names one
        return load_bank(source, drafter=drafter, drop_limit=drop_limit)
    return load_bank(source, drop_limit=drop_limit)  # msenv's .npz names its own drafter


@functools.lru_cache(maxsize=16)
def _load(source: str, drafter: str, split: str, requests: int, seed: int, drop_limit: int | None) -> Bank:
    """The requests of ``source``'s ``split`` as arrays. ``mix:A,B,…`` is the union of the named
    sources' banks (``requests`` each for a preset) whose splits are the union of theirs, so that a
    request of A's test split is never in the mix's training split."""
    names = source[len("mix:"):].split(",") if source.startswith("mix:") else [source]
    acc, offsets, idx, cap, digests = [], [0], [], None, []
    for name in names:
        bank = _bank(name.strip(), drafter, requests, seed, drop_limit)
        parts = split_indices(bank)
        own = np.arange(len(bank.offsets) - 1) if split == "all" else np.sort(parts[split])
        idx.append(own + len(offsets) - 1)
        acc.append(bank.acc_len)
        offsets += list(bank.offsets[1:] + offsets[-1])
        cap = int(bank.cap) if cap is None else min(cap, int(bank.cap))  # the bound every component prices
        digests.append(bank.sha256)
    requests_of_split = np.concatenate(idx)
    if len(requests_of_split) == 0:
        raise ValueError(f"config field trace_split={split!r} is invalid for trace_source={source!r}: it holds no "
                         "request; allowed: a split with requests or 'all'")
    digest = digests[0] if len(digests) == 1 else hashlib.sha256(" ".join(digests).encode()).hexdigest()
    return Bank(np.ascontiguousarray(np.concatenate(acc), np.int32), np.asarray(offsets, np.int64),
                np.ascontiguousarray(requests_of_split, np.int64), cap, source, digest)


def bank_of(cfg: SystemConfig) -> Bank:
    """The bank of a trace config (built once per source and split): a preset's bank drawn from
    the fitted model, or a file's; ``ValueError`` in one line naming the file, request and field
    for a bad file, and naming ``gamma_max`` when the bank cannot price its drafts."""
    bank = _load(cfg.traces.trace_source, cfg.traces.trace_drafter, cfg.traces.trace_split,
                 cfg.traces.trace_requests, cfg.traces.trace_seed, cfg.traces.trace_drop_limit)
    if cfg.gamma_max >= bank.cap:
        raise ValueError(f"config field gamma_max={cfg.gamma_max} is invalid for trace bank {bank.source}: its cap is "
                         f"{bank.cap} (a draft of cap tokens or more cannot be priced from it); allowed: integers "
                         f"below {bank.cap}")
    return bank


__all__ = ["Bank", "bank_of"]
