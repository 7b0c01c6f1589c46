"""A config's trace source as the arrays the engine replays (model §12).

``trace_source`` names where acceptance comes from: a preset of the fitted model (a bank drawn with
``trace_requests`` and ``trace_seed``), a bank msenv ships, ``published:<set>-<drafter>``
(SpecDecode-Bench's files, read from ``$MSENV_TRACES_DIR``), ``mix:A,B,…`` (the union of named
banks, each split its own way) or a file's path. :func:`bank_of` resolves a config's source and
split into a :class:`Bank`, built once per source, split — and per version of every file it reads:
the cache is keyed by each file's identity and change time (``stat``: device, inode, size,
modification and change times — any write changes the last), so a file rewritten in place is read
again, under its new digest, never replayed stale. :func:`trace_files` names the files a config
reads, with their digests (what a result file records).

A field that does not apply to the source is refused in one line rather than ignored:
``trace_drop_limit`` for a preset or an ``.npz`` bank (their requests carry no prompt), a
``trace_drafter`` other than the default for a source that names its own drafter (a preset, a
published file's name, an ``.npz`` bank) and differs from it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..config.groups import MAX_TRACE_REQUESTS, TraceConfig
from ..config.system import SystemConfig
from .files import file_record, load_bank
from .presets import PRESETS, preset_bank, preset_hidden
from .published import DATA, PUBLISHED_LIMIT, SHIPPED, published_path, published_source, shipped_path
from .split import split_indices

#: the drafter a config names when it leaves trace_drafter at its default
DEFAULT_DRAFTER = next(f.default for f in dataclasses.fields(TraceConfig) if f.name == "trace_drafter")
#: the most banks a ``mix:`` source may join
MAX_MIX = 16


class Bank(NamedTuple):
    """A bank's requests as the compiled step reads them (:func:`bank_of`)."""

    acc_len: np.ndarray  #: int32, every request's acc_len concatenated
    offsets: np.ndarray  #: int64 [R + 1]: request i is acc_len[offsets[i]:offsets[i + 1]]
    requests: np.ndarray  #: int64: the indices of the requests of the config's split
    cap: int  #: the bank's cap (a value cap means "at least cap"; a mix: its components' smallest)
    source: str  #: where it came from (a preset with its seed, or a file)
    sha256: str  #: the source's SHA-256
    #: every file read, as :func:`~msenv.traces.files.file_record` gives it (a preset: none)
    files: tuple = ()
    #: the generating model's hidden part where the bank was drawn from it (presets, and mixes of
    #: them): each request's level z [R] and each position's state (uint8, 1: high); else None
    levels: np.ndarray | None = None
    high: np.ndarray | None = None


def _names(source: str) -> list[str]:
    """The single sources ``source`` joins: the names of a ``mix:``, else itself."""
    if not source.startswith("mix:"):
        return [source]
    names = [n.strip() for n in source[len("mix:"):].split(",")]
    twice = [n for i, n in enumerate(names) if n in names[:i]]
    if len(names) > MAX_MIX or twice or not all(names):
        raise ValueError(f"config field trace_source={source!r} is invalid; allowed: mix: and 1 … {MAX_MIX} distinct "
                         "names, separated by commas")
    return names


def _invalid_source(source: str) -> ValueError:
    return ValueError(f"config field trace_source={source!r} is invalid; allowed: a preset of the fitted model "
                      f"({', '.join(PRESETS)}), a bank msenv ships ({', '.join(SHIPPED)}), published:<set>-<drafter>, "
                      "mix:<preset>,<preset>…, or a bank file (.jsonl: SpecDecode-Bench's; .npz: msenv's)")


def _path_of(name: str) -> tuple[Path | None, str]:
    """(the file a single source reads, or None for a preset; its kind), nothing read yet."""
    if name in PRESETS:
        return None, "preset"
    if name in SHIPPED:
        return DATA / SHIPPED[name].file, "shipped"
    if name.startswith("published:"):
        return published_path(name)[0], "published"
    if Path(name).suffix not in (".jsonl", ".npz"):
        raise _invalid_source(name)
    return Path(name), Path(name).suffix[1:]


def _does_not_apply(field: str, value, name: str, why: str, allowed: str) -> ValueError:
    return ValueError(f"config field {field}={value!r} does not apply to trace_source={name!r} ({why}); "
                      f"allowed: {allowed}")


def _drafter_mismatch(name: str, drafter: str, own: str, why: str) -> ValueError:
    allowed = f"leave it at its default ({DEFAULT_DRAFTER!r})" if own == DEFAULT_DRAFTER else \
        f"{own!r}, or leave it at its default"
    return _does_not_apply("trace_drafter", drafter, name, f"{why}, {own}", allowed)


def _check_fields(name: str, kind: str, drafter: str, requests: int, drop_limit: int | None, count: int) -> None:
    """Refuse a field that the single source ``name`` (of ``kind``) would ignore (module docstring)."""
    own = {"preset": PRESETS[name].drafter if kind == "preset" else None,
           "published": name.rpartition("-")[2] if kind == "published" else None}.get(kind)
    if drafter != DEFAULT_DRAFTER and own is not None and drafter != own:
        raise _drafter_mismatch(name, drafter, own, "it names its own drafter")
    if drop_limit is not None and kind in ("preset", "shipped", "npz"):
        what = "a preset of the fitted model" if kind == "preset" else "an .npz bank"
        raise _does_not_apply("trace_drop_limit", drop_limit, name,
                              f"{what}: its requests carry no prompt length", "None")
    if kind == "preset" and count * requests > MAX_TRACE_REQUESTS:
        raise ValueError(f"config field trace_requests={requests} is invalid for trace_source={name!r} in a mix of "
                         f"{count} presets (each draws trace_requests requests); allowed: at most "
                         f"{MAX_TRACE_REQUESTS // count} ({MAX_TRACE_REQUESTS} requests in all)")


def _bank(name: str, kind: str, path: Path | None, drafter: str, requests: int, seed: int, drop_limit: int | None):
    """The :class:`~msenv.traces.TraceBank` of a single source (module docstring of
    :mod:`msenv.traces.published` for the named ones)."""
    if kind == "preset":
        return preset_bank(name, requests=requests, seed=seed)
    if kind in ("shipped", "npz"):  # an .npz bank names its own drafter
        bank = load_bank(shipped_path(name) if kind == "shipped" else path)
        if drafter != DEFAULT_DRAFTER and drafter != bank.drafter:
            raise _drafter_mismatch(name, drafter, bank.drafter, "an .npz bank names its own drafter")
        return bank
    if kind == "published":  # as the published figures were measured
        path, own = published_source(name)
        return load_bank(path, drafter=own, drop_limit=PUBLISHED_LIMIT if drop_limit is None else drop_limit)
    return load_bank(path, drafter=drafter, drop_limit=drop_limit)  # a JSONL file: every drafter, the config names one


def _shown(path: Path, kind: str) -> str:
    """How a result file names a trace file: a bank msenv ships by its path in the package
    (``msenv/traces/data/…``, the same on every machine), any other file as the config gives it."""
    return f"msenv/traces/data/{path.name}" if kind == "shipped" else str(path)


def _stamp(path: Path | None) -> tuple | None:
    """What changes whenever ``path``'s content may have: its stat's device, inode, size,
    modification and change times (None for no file, or one that cannot be stat'ed: then the
    reader says why)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@functools.lru_cache(maxsize=16)
def _load(source: str, drafter: str, split: str, requests: int, seed: int, drop_limit: int | None,
          stamps: tuple) -> Bank:
    """The requests of ``source``'s ``split`` as arrays (``stamps``: the files' versions, the part
    of the key that makes a rewritten file a new entry). ``mix:A,B,…`` is the union of the named
    sources' banks (``requests`` each for a preset) whose splits are the union of theirs, so that a
    request of A's test split is never in the mix's training split."""
    names = _names(source)
    acc, offsets, idx, cap, digests, files, levels, high = [], [0], [], None, [], [], [], []
    for name in names:
        path, kind = _path_of(name)
        bank = _bank(name, kind, path, drafter, requests, seed, drop_limit)
        if path is not None:
            files.append({"path": _shown(path, kind), "sha256": bank.sha256, "bytes": int(os.stat(path).st_size)})
        parts = split_indices(bank)
        own = np.arange(len(bank.offsets) - 1) if split == "all" else np.sort(parts[split])
        idx.append(own + len(offsets) - 1)
        acc.append(bank.acc_len)
        offsets += list(bank.offsets[1:] + offsets[-1])
        cap = int(bank.cap) if cap is None else min(cap, int(bank.cap))  # the bound every component prices
        digests.append(bank.sha256)
        if kind == "preset":  # what a state oracle knows: drawn again from the same seed
            z, states = preset_hidden(name, requests=requests, seed=seed)
            levels.append(z)
            high.append(states)
    requests_of_split = np.concatenate(idx)
    if len(requests_of_split) == 0:
        raise ValueError(f"config field trace_split={split!r} is invalid for trace_source={source!r}: it holds no "
                         "request; allowed: a split with requests or 'all'")
    digest = digests[0] if len(digests) == 1 else hashlib.sha256(" ".join(digests).encode()).hexdigest()
    hidden = len(levels) == len(names)
    return Bank(np.ascontiguousarray(np.concatenate(acc), np.int32), np.asarray(offsets, np.int64),
                np.ascontiguousarray(requests_of_split, np.int64), cap, source, digest, tuple(files),
                np.concatenate(levels) if hidden else None, np.concatenate(high) if hidden else None)


def _checked(cfg: SystemConfig) -> list[tuple[str, str, Path | None]]:
    """(name, kind, path) of each single source of a trace config, its fields checked against it."""
    names = _names(cfg.traces.trace_source)
    out = []
    for name in names:
        path, kind = _path_of(name)
        _check_fields(name, kind, cfg.traces.trace_drafter, cfg.traces.trace_requests, cfg.traces.trace_drop_limit,
                      sum(n in PRESETS for n in names))
        out.append((name, kind, path))
    return out


def version_of(cfg: SystemConfig) -> tuple:
    """The version of the files a trace config reads (each file's device, inode, size and times;
    () for a preset): equal versions, the same bank."""
    return tuple(_stamp(path) for _, _, path in _checked(cfg))


def bank_of(cfg: SystemConfig) -> Bank:
    """The bank of a trace config (built once per source, split and version of its files): a
    preset's bank drawn from the fitted model, or a file's; ``ValueError`` in one line naming the
    file, request and field for a bad file, a field that does not apply to the source (module
    docstring), and ``gamma_max`` when the bank cannot price its drafts."""
    stamps = version_of(cfg)
    bank = _load(cfg.traces.trace_source, cfg.traces.trace_drafter, cfg.traces.trace_split, cfg.traces.trace_requests,
                 cfg.traces.trace_seed, cfg.traces.trace_drop_limit, stamps)
    if cfg.gamma_max >= bank.cap:
        raise ValueError(f"config field gamma_max={cfg.gamma_max} is invalid for trace bank {bank.source}: its cap is "
                         f"{bank.cap} (a draft of cap tokens or more cannot be priced from it); allowed: integers "
                         f"below {bank.cap}")
    return bank


def trace_files(cfg, missing_ok: bool = False) -> list[dict]:
    """The trace files config ``cfg`` reads (a cell generator's: its base's), each as
    ``{"path", "sha256", "bytes"}`` (:func:`~msenv.traces.files.file_record`; a bank msenv ships
    under its path in the package, ``msenv/traces/data/…``), in the order of its source; [] for no
    trace or a preset. ``missing_ok``: leave out a file that cannot be read here (else the
    reader's ``ValueError``). Reads each file's bytes (to hash them), never parses them."""
    base = cfg.base  # a cell generator's config reads its base's source
    if base.traces.trace_source is None:
        return []
    out = []
    for name in _names(base.traces.trace_source):
        path, kind = _path_of(name)
        if path is None:
            continue
        try:
            record = file_record(path)
        except ValueError:
            if missing_ok:
                continue
            raise
        out.append({**record, "path": _shown(path, kind)})
    return out


__all__ = ["Bank", "DEFAULT_DRAFTER", "MAX_MIX", "bank_of", "trace_files", "version_of"]
