"""Named bank sources beyond the presets: banks msenv ships, and the published files a user supplies.

- :data:`SHIPPED` — banks msenv generated from its fitted presets and ships as package data, replayed
  from their files like any bank (``trace_source="eagle-mix-v1"``); each pinned by its file's SHA-256.
- :data:`PUBLISHED_FILES` — SpecDecode-Bench's profiled traces ("Speculative Decoding: Performance or
  Illusion?", arXiv 2601.11580; repository SpecDecode-Bench/simulator, ``data/llama3.1-8B/``), which
  msenv does not redistribute: ``trace_source="published:<set>-<drafter>"`` reads
  ``$MSENV_TRACES_DIR/combined_<set>.jsonl`` (default folder ``traces/``) with the requests at the
  profiling's 8,192-token limit left out, as the published figures were measured. A file whose
  SHA-256 differs from its pin is refused in one line; a pin that is None (the digest of the published
  file was not available where this table was written) is reported, and the run records the digest
  of the file it read (:attr:`~msenv.traces.TraceBank.sha256`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import NamedTuple

#: the folder of the shipped banks (package data)
DATA = Path(__file__).resolve().parent / "data"
#: the environment variable naming the folder of the published files
TRACES_DIR_VAR = "MSENV_TRACES_DIR"
#: the profiling's generation limit: requests whose prompt and output reached it are left out
PUBLISHED_LIMIT = 8192


class Shipped(NamedTuple):
    """A bank msenv ships."""

    file: str  #: its file in :data:`DATA`
    sha256: str  #: the file's SHA-256
    description: str


#: name → a bank msenv ships
SHIPPED: dict[str, Shipped] = {
    "eagle-mix-v1": Shipped("eagle-mix-v1.npz", "cf32b45ad0844cf32cb328ce59e8a3b07ad8358bdf690b89d4bdebdb9fb317a9",
                            "400 requests, 100 drawn from each EAGLE preset (gsm8k, sharegpt, cnn, instructcoder) "
                            "with seed 2027, written by msenv's .npz writer: a heterogeneous workload replayed from "
                            "a file"),
}

#: data set → (the published file's name, its pinned SHA-256 or None)
PUBLISHED_FILES: dict[str, tuple[str, str | None]] = {
    name: (f"combined_{name}.jsonl", None) for name in ("gsm8k", "sharegpt", "cnn", "instructcoder")
}


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def shipped_path(name: str) -> Path:
    """The file of shipped bank ``name``, its SHA-256 checked against the pin (``ValueError`` in one
    line naming the file otherwise)."""
    item = SHIPPED[name]
    path = DATA / item.file
    if not path.exists():
        raise ValueError(f"{path}: the shipped bank {name!r} is missing from the installation; reinstall msenv")
    digest = _digest(path)
    if digest != item.sha256:
        raise ValueError(f"{path}: sha256 {digest} differs from the pinned {item.sha256} of the shipped bank {name!r}")
    return path


def published_source(name: str) -> tuple[Path, str]:
    """(path, drafter) of ``published:<set>-<drafter>``: the supplied file, its pin checked.
    ``ValueError`` in one line naming the file when it is absent or its SHA-256 differs."""
    set_name, _, drafter = name.partition(":")[2].rpartition("-")
    if set_name not in PUBLISHED_FILES or drafter not in ("eagle", "ngram"):
        allowed = ", ".join(f"published:{s}-{d}" for s in PUBLISHED_FILES for d in ("eagle", "ngram"))
        raise ValueError(f"config field trace_source={name!r} is invalid; allowed: {allowed}")
    file, pin = PUBLISHED_FILES[set_name]
    path = Path(os.environ.get(TRACES_DIR_VAR, "traces")) / file
    if not path.exists():
        raise ValueError(f"{path}: not found — {name} replays SpecDecode-Bench's published {file} (not shipped "
                         f"with msenv): put it there, or set {TRACES_DIR_VAR} to its folder")
    if pin is not None and (digest := _digest(path)) != pin:
        raise ValueError(f"{path}: sha256 {digest} differs from the pinned {pin} of the published {file}")
    return path, drafter


def published_available(name: str) -> str | None:
    """None when ``published:<set>-<drafter>`` can be replayed here; else the one line saying why not."""
    try:
        published_source(name)
    except ValueError as e:
        return str(e)
    return None


__all__ = ["DATA", "PUBLISHED_FILES", "PUBLISHED_LIMIT", "SHIPPED", "Shipped", "TRACES_DIR_VAR", "published_available",
           "published_source", "shipped_path"]
