"""The published traces: the figures the presets are calibrated to (one entry per data set and
drafter), the published files themselves (which msenv does not ship), and the banks msenv ships.

Source: SpecDecode-Bench/simulator's files ``data/llama3.1-8B/combined_{gsm8k,sharegpt,cnn,
instructcoder}.jsonl`` (Llama-3.1-8B target; EAGLE and n-gram drafters), the data of
"Speculative Decoding: Performance or Illusion?" (arXiv 2601.11580). Measured from those files
with this package's statistics (each request decoded from its start at a fixed γ, rounds pooled
over requests); the requests at the 8,192-token generation limit (sharegpt, instructcoder: 3–5
per set, likely repetition loops) left out. Keys are those of :func:`~msenv.traces.stats.measure`.

Named sources beyond the presets:

- :data:`SHIPPED` — banks msenv generated from its fitted presets and ships as package data, replayed
  from their files like any bank (``trace_source="eagle-mix-v1"``); each pinned by its file's SHA-256.
- :data:`PUBLISHED_FILES` — SpecDecode-Bench's profiled traces ("Speculative Decoding: Performance or
  Illusion?", arXiv 2601.11580; repository SpecDecode-Bench/simulator, ``data/llama3.1-8B/``), which
  msenv does not redistribute: ``trace_source="published:<set>-<drafter>"`` reads
  ``$MSENV_TRACES_DIR/combined_<set>.jsonl`` (default folder ``traces/``) with the requests at the
  profiling's 8,192-token limit left out, as the published figures were measured. Each file is
  pinned by the SHA-256 and size of the file as published (repository commit 2fdccbd, 2026-04-01):
  a file whose digest differs — another version, another data set under the name — is refused in
  one line naming the file, its digest and the pin.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from .files import file_record
from .stats import N_DEPTHS, ROUND_STATS, key

#: data set → (length median, length p90) in tokens (the same requests for both drafters)
LENGTHS = {"gsm8k": (160, 235), "sharegpt": (574, 1217), "cnn": (334, 453), "instructcoder": (144, 350)}

# name: (requests, α_0 … α_5, cap, share at cap, per-request α_0 p10 / median / p90,
#        {γ: (tokens per round, i.i.d. prediction at α_0, P(nothing accepted), after full, after rejected, lag-1)})
_ROWS = {
    "gsm8k-eagle": (300, (0.72, 0.67, 0.65, 0.65, 0.65, 0.67), 16, 0.000, (0.65, 0.71, 0.78),
                    {2: (2.12, 2.23, 0.32, 0.74, 0.65, 0.10), 4: (2.54, 2.86, 0.34, 0.73, 0.66, 0.08),
                     8: (2.77, 3.34, 0.34, 0.80, 0.67, 0.07)}),
    "gsm8k-ngram": (300, (0.16, 0.61, 0.65, 0.68, 0.70, 0.70), 21, 0.000, (0.07, 0.14, 0.24),
                    {2: (1.15, 1.18, 0.91, 0.45, 0.07, 0.28), 4: (1.17, 1.19, 0.92, 0.52, 0.07, 0.18),
                     8: (1.18, 1.19, 0.93, 0.54, 0.07, 0.06)}),
    "sharegpt-eagle": (307, (0.70, 0.68, 0.69, 0.72, 0.75, 0.78), 20, 0.000, (0.56, 0.68, 0.79),
                       {2: (2.07, 2.19, 0.35, 0.75, 0.58, 0.22), 4: (2.46, 2.78, 0.38, 0.77, 0.59, 0.23),
                        8: (2.71, 3.20, 0.39, 0.83, 0.60, 0.23)}),
    "sharegpt-ngram": (306, (0.27, 0.80, 0.84, 0.87, 0.89, 0.90), 21, 0.056, (0.03, 0.19, 0.46),
                       {2: (1.25, 1.34, 0.86, 0.72, 0.07, 0.59), 4: (1.31, 1.37, 0.89, 0.77, 0.07, 0.54),
                        8: (1.35, 1.37, 0.91, 0.84, 0.07, 0.47)}),
    "cnn-eagle": (300, (0.69, 0.67, 0.66, 0.68, 0.71, 0.74), 18, 0.000, (0.60, 0.69, 0.76),
                  {2: (2.08, 2.17, 0.34, 0.72, 0.62, 0.13), 4: (2.48, 2.74, 0.36, 0.74, 0.62, 0.14),
                   8: (2.72, 3.14, 0.37, 0.78, 0.63, 0.13)}),
    "cnn-ngram": (300, (0.30, 0.77, 0.80, 0.81, 0.82, 0.83), 21, 0.014, (0.16, 0.28, 0.44),
                  {2: (1.29, 1.39, 0.83, 0.64, 0.10, 0.45), 4: (1.36, 1.42, 0.87, 0.67, 0.10, 0.34),
                   8: (1.40, 1.43, 0.89, 0.71, 0.10, 0.21)}),
    "instructcoder-eagle": (496, (0.77, 0.77, 0.76, 0.78, 0.80, 0.81), 18, 0.000, (0.68, 0.79, 0.88),
                            {2: (2.28, 2.37, 0.27, 0.80, 0.66, 0.19), 4: (2.90, 3.20, 0.29, 0.83, 0.67, 0.23),
                             8: (3.37, 3.99, 0.32, 0.87, 0.68, 0.25)}),
    "instructcoder-ngram": (495, (0.54, 0.92, 0.93, 0.94, 0.94, 0.95), 21, 0.231, (0.29, 0.56, 0.82),
                            {2: (1.61, 1.84, 0.68, 0.86, 0.10, 0.73), 4: (1.83, 2.08, 0.76, 0.89, 0.10, 0.70),
                             8: (2.00, 2.18, 0.83, 0.90, 0.10, 0.63)}),
}


def _targets(name: str) -> dict[str, float]:
    """The targets of one row as measure()'s keys."""
    requests, alphas, cap, at_cap, a0q, rounds = _ROWS[name]
    out = {key(f"alpha_{d}"): a for d, a in zip(range(N_DEPTHS), alphas)}
    out.update(at_cap=at_cap, cap=float(cap), requests=float(requests))
    for g, row in rounds.items():
        out.update({key(s, g): v for s, v in zip(ROUND_STATS, row)})
    med, p90 = LENGTHS[name.split("-")[0]]
    out.update(length_median=float(med), length_p90=float(p90), alpha0_p10=a0q[0], alpha0_median=a0q[1],
               alpha0_p90=a0q[2])
    return out


#: preset name → the published figures (a dict of measure()'s keys, with ``cap`` and ``requests``)
PUBLISHED: dict[str, dict[str, float]] = {name: _targets(name) for name in _ROWS}

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
    #: the model fitted to the bank's train requests, a PARAMS.json in :data:`DATA` written by
    #: ``python -m msenv.traces fit FILE --split train`` (what a model-based controller filters)
    fit: str | None = None


#: name → a bank msenv ships
SHIPPED: dict[str, Shipped] = {
    "eagle-mix-v1": Shipped("eagle-mix-v1.npz", "cf32b45ad0844cf32cb328ce59e8a3b07ad8358bdf690b89d4bdebdb9fb317a9",
                            "400 requests, 100 drawn from each EAGLE preset (gsm8k, sharegpt, cnn, instructcoder) "
                            "with seed 2027, written by msenv's .npz writer: a heterogeneous workload replayed from "
                            "a file",
                            fit="eagle-mix-v1.fit.json"),
}


class PublishedFile(NamedTuple):
    """A published file and its pin."""

    file: str  #: its name in the published folder
    sha256: str  #: the SHA-256 of the whole file as published
    bytes: int  #: its size as published


#: data set → its published file, pinned (SpecDecode-Bench/simulator ``data/llama3.1-8B/``, commit 2fdccbd)
PUBLISHED_FILES: dict[str, PublishedFile] = {
    "gsm8k": PublishedFile("combined_gsm8k.jsonl",
                           "6d6bfb9993f4a540ff73cb330bdd4348dc3e6a6c77a111d3e35b96caf83c26f1", 769_056),
    "sharegpt": PublishedFile("combined_sharegpt.jsonl",
                              "748df2df1e89b986009aad1a42fee604b1fe57558b690aef0da7d9c7b9708b75", 3_329_829),
    "cnn": PublishedFile("combined_cnn.jsonl",
                         "90637b8cb4c410b3de6cdf2898ef1104d41b0fc5bff5e8692a6bfc836101899b", 2_605_070),
    "instructcoder": PublishedFile("combined_instructcoder.jsonl",
                                   "cfd6b6b156076a704f7aff0f060920bb7c5e4c3b80ef32efbe858b62d85cd910", 2_114_054),
}


def shipped_path(name: str) -> Path:
    """The file of shipped bank ``name``, its SHA-256 checked against the pin (``ValueError`` in one
    line naming the file otherwise)."""
    item = SHIPPED[name]
    path = DATA / item.file
    if not path.exists():
        raise ValueError(f"{path}: the shipped bank {name!r} is missing from the installation; reinstall msenv")
    digest = file_record(path)["sha256"]
    if digest != item.sha256:
        raise ValueError(f"{path}: sha256 {digest} differs from the pinned {item.sha256} of the shipped bank {name!r}")
    return path


def published_dir() -> Path:
    """The folder of the published files: ``$MSENV_TRACES_DIR``, or ``traces`` when it is unset;
    ``ValueError`` in one line when the variable is set to an empty value."""
    value = os.environ.get(TRACES_DIR_VAR)
    if value is None:
        return Path("traces")
    if not value.strip():
        raise ValueError(f"{TRACES_DIR_VAR}={value!r} is invalid; allowed: the folder of the published files "
                         "(unset: ./traces)")
    return Path(value)


def published_path(name: str) -> tuple[Path, str, PublishedFile]:
    """(path, drafter, pin) of ``published:<set>-<drafter>``, the file not read yet; ``ValueError``
    in one line for an unknown name."""
    set_name, _, drafter = name.partition(":")[2].rpartition("-")
    if set_name not in PUBLISHED_FILES or drafter not in ("eagle", "ngram"):
        allowed = ", ".join(f"published:{s}-{d}" for s in PUBLISHED_FILES for d in ("eagle", "ngram"))
        raise ValueError(f"config field trace_source={name!r} is invalid; allowed: {allowed}")
    pin = PUBLISHED_FILES[set_name]
    return published_dir() / pin.file, drafter, pin


def published_source(name: str) -> tuple[Path, str]:
    """(path, drafter) of ``published:<set>-<drafter>``: the supplied file, its pin checked.
    ``ValueError`` in one line naming the file when it is absent, not a regular file, or its
    SHA-256 differs from the pin (naming both digests)."""
    path, drafter, pin = published_path(name)
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{TRACES_DIR_VAR}={str(folder)!r} is a file; allowed: the folder of the published files")
    if not path.exists() and not path.is_symlink():
        raise ValueError(f"{path}: not found — {name} replays SpecDecode-Bench's published {pin.file} (not shipped "
                         f"with msenv): put it there, or set {TRACES_DIR_VAR} to its folder")
    record = file_record(path)
    if record["sha256"] != pin.sha256:
        raise ValueError(f"{path}: sha256 {record['sha256']} ({record['bytes']} bytes) differs from the pinned "
                         f"{pin.sha256} ({pin.bytes} bytes) of the published {pin.file}")
    return path, drafter


def published_available(name: str) -> str | None:
    """None when ``published:<set>-<drafter>`` can be replayed here; else the one line saying why not."""
    try:
        published_source(name)
    except ValueError as e:
        return str(e)
    return None


__all__ = ["LENGTHS", "PUBLISHED", "DATA", "PUBLISHED_FILES", "PUBLISHED_LIMIT", "PublishedFile", "SHIPPED", "Shipped",
           "TRACES_DIR_VAR", "published_available", "published_dir", "published_path", "published_source",
           "shipped_path"]
