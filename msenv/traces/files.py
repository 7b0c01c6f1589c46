"""Reading and writing trace banks: SpecDecode-Bench's JSONL as published, and msenv's ``.npz``.

Every bad input is answered by one ``ValueError`` line that names the file, the request (its id,
or its line number in a JSONL file) and the field; a file that does not exist or cannot be read
is a ``ValueError`` with the path too (never a bare ``OSError``).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path

import numpy as np

from .bank import DRAFTERS, TraceBank

#: the ``format`` entry of msenv's bank files (``.npz``), and its version
NPZ_FORMAT, NPZ_VERSION = "msenv-trace-bank", 1
#: the arrays and scalars of an msenv bank file
NPZ_FIELDS = ("format", "version", "acc_len", "offsets", "ids", "cap", "drafter")
#: the token id written in place of real ids by :func:`write_jsonl`
PLACEHOLDER_TOKEN = 0


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, or a ValueError naming the path."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise ValueError(f"{path}: cannot read the file ({e.strerror or e})") from None


def _check_drafter(path, drafter) -> str:
    """``drafter`` if it is one of DRAFTERS, else a ValueError listing them."""
    if drafter not in DRAFTERS:
        raise ValueError(f"{path}: drafter={drafter!r} is unknown; allowed: {' | '.join(DRAFTERS)}")
    return drafter


def _check_cap(cap) -> int | None:
    """An explicit cap as int (None stays None), else a ValueError."""
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 1):
        raise ValueError(f"cap={cap!r} is invalid; allowed: an integer ≥ 1, or None (the largest value read)")
    return None if cap is None else int(cap)


def _check_values(path, where: str, field: str, values: list, cap: int | None) -> np.ndarray:
    """``values`` as int32 after checking each is an integer in 1 … cap (one-line error otherwise)."""
    if not isinstance(values, list):
        raise ValueError(f"{path}: {where}: field {field} is {type(values).__name__}; "
                         "allowed: a list of integers ≥ 1")
    if not values:
        raise ValueError(f"{path}: {where}: field {field} is empty (a request of length zero); allowed: ≥ 1 value")
    hi = np.iinfo(np.int32).max if cap is None else cap
    for i, v in enumerate(values):
        if type(v) is not int or not 1 <= v <= hi:
            allowed = "an integer ≥ 1" if cap is None else f"an integer in [1, cap={cap}]"
            raise ValueError(f"{path}: {where}: field {field}[{i}] = {v!r} is invalid; allowed: {allowed}")
    return np.asarray(values, dtype=np.int32)


def _field(path, where: str, obj: dict, key: str):
    """``obj[key]``, or a ValueError naming the file, the request and the field."""
    if key not in obj:
        raise ValueError(f"{path}: {where}: field {key} is missing")
    return obj[key]


def read_jsonl(path, drafter: str, cap: int | None = None, drop_limit: int | None = None) -> TraceBank:
    """A bank from SpecDecode-Bench's published JSONL (one JSON object a line: ``id``,
    ``prompt_token_ids``, ``generated_token_ids`` and per drafter ``acc_<drafter>: {"acc_len": [...]}``).

    ``drafter``: "eagle" or "ngram" (which ``acc_*`` object to read). ``cap``: the bank's cap; None
    takes the largest acc_len in the file, an explicit cap makes a larger value an error.
    ``drop_limit``: None keeps every request (the default); an integer N leaves out each request
    whose prompt + generated length reaches N (the published profiling stopped generation at
    8,192 tokens; requests that ran into it, likely repetition loops, are left out by
    ``drop_limit=8192``). Blank lines are skipped. The bank's ``sha256`` is the file's."""
    path = Path(path)
    drafter = _check_drafter(path, drafter)
    cap = _check_cap(cap)
    if drop_limit is not None and (isinstance(drop_limit, bool) or not isinstance(drop_limit, (int, np.integer))
                                   or drop_limit < 1):
        raise ValueError(f"drop_limit={drop_limit!r} is invalid; "
                         "allowed: an integer ≥ 1, or None (keep every request)")
    raw = _read_bytes(path)
    key = f"acc_{drafter}"
    arrays, ids, lines, dropped = [], [], {}, 0
    for n, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: line {n}: malformed JSON ({getattr(e, 'msg', e)})") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{path}: line {n}: a JSON {type(obj).__name__}, not an object")
        rid = _field(path, f"line {n}", obj, "id")
        if isinstance(rid, (dict, list)) or rid is None:
            raise ValueError(f"{path}: line {n}: field id = {rid!r} is invalid; allowed: a string or an integer")
        rid = str(rid)
        where = f"request {rid!r} (line {n})"
        if rid in lines:
            raise ValueError(f"{path}: {where}: field id repeats line {lines[rid]}")
        lines[rid] = n
        acc = _field(path, where, obj, key)
        if not isinstance(acc, dict):
            raise ValueError(f"{path}: {where}: field {key} is {type(acc).__name__}; allowed: an object with acc_len")
        values = _check_values(path, where, f"{key}.acc_len", _field(path, where, acc, "acc_len"), cap)
        if drop_limit is not None:
            total = 0
            for name in ("prompt_token_ids", "generated_token_ids"):
                tokens = _field(path, where, obj, name)
                if not isinstance(tokens, list):
                    raise ValueError(f"{path}: {where}: field {name} is {type(tokens).__name__}; allowed: a list")
                total += len(tokens)
            if total >= drop_limit:
                dropped += 1
                continue
        arrays.append(values)
        ids.append(rid)
    if not arrays:
        why = f" after drop_limit={drop_limit} left out {dropped}" if dropped else ""
        raise ValueError(f"{path}: no request (an empty bank){why}")
    flat = np.concatenate(arrays)
    return TraceBank(flat, _offsets([a.size for a in arrays]), tuple(ids), int(flat.max()) if cap is None else cap,
                     drafter, str(path), hashlib.sha256(raw).hexdigest())


def _offsets(lengths: Sequence[int]) -> np.ndarray:
    """Offsets [R + 1] of requests of these lengths."""
    off = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=off[1:])
    return off


def write_jsonl(path, banks: TraceBank | Sequence[TraceBank], prompt_lens=None) -> Path:
    """Write banks in SpecDecode-Bench's published JSONL layout, one line per request.

    ``banks``: one bank, or one per drafter (distinct drafters, the same ids in the same order);
    each request's line holds ``acc_<drafter>: {"acc_len": [...]}`` for every bank. Token ids are
    placeholders (:data:`PLACEHOLDER_TOKEN`) of the right lengths: ``generated_token_ids`` as long
    as the first bank's request, ``prompt_token_ids`` as long as ``prompt_lens[i]`` (default 0).
    Cap values are written as they are (the format has no cap: a reader takes the largest value)."""
    banks = [banks] if isinstance(banks, TraceBank) else list(banks)
    if not banks or not all(isinstance(b, TraceBank) for b in banks):
        raise ValueError(f"banks={banks!r} is invalid; allowed: a TraceBank or a non-empty sequence of them")
    if len({b.drafter for b in banks}) != len(banks) or any(b.ids != banks[0].ids for b in banks):
        raise ValueError("banks are invalid; allowed: one bank per drafter, all with the same ids in the same order")
    n = len(banks[0])
    prompts = np.zeros(n, dtype=np.int64) if prompt_lens is None else np.asarray(prompt_lens)
    if prompts.shape != (n,) or prompts.dtype.kind not in "iu" or (n and prompts.min() < 0):
        raise ValueError(f"prompt_lens={prompt_lens!r} is invalid; allowed: {n} integers ≥ 0, one per request")
    path = Path(path)
    lines = []
    for i, rid in enumerate(banks[0].ids):
        obj = {"id": rid, "prompt_token_ids": [PLACEHOLDER_TOKEN] * int(prompts[i]),
               "generated_token_ids": [PLACEHOLDER_TOKEN] * int(banks[0].lengths[i])}
        for b in banks:
            obj[f"acc_{b.drafter}"] = {"acc_len": b.request(i).tolist()}
        lines.append(json.dumps(obj))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_npz(path, bank: TraceBank) -> Path:
    """Write ``bank`` in msenv's format: a compressed ``.npz`` holding :data:`NPZ_FIELDS` —
    ``format`` ("msenv-trace-bank"), ``version`` (1), ``acc_len`` (int32, flat), ``offsets``
    (int64, R + 1), ``ids`` (unicode, R), ``cap`` (int64) and ``drafter`` (unicode). Writes to
    ``path`` exactly (numpy would otherwise append ``.npz``)."""
    if not isinstance(bank, TraceBank):
        raise ValueError(f"bank={bank!r} is invalid; allowed: a TraceBank")
    path = Path(path)
    with path.open("wb") as f:
        np.savez_compressed(f, format=np.str_(NPZ_FORMAT), version=np.int64(NPZ_VERSION), acc_len=bank.acc_len,
                 offsets=bank.offsets, ids=np.array(bank.ids, dtype=np.str_), cap=np.int64(bank.cap),
                 drafter=np.str_(bank.drafter))
    return path


def read_npz(path, drafter: str | None = None, cap: int | None = None) -> TraceBank:
    """A bank from msenv's ``.npz`` (see :func:`write_npz`); ``sha256`` is the file's. ``drafter`` /
    ``cap``, when given, must be the file's (a check, not a conversion)."""
    path = Path(path)
    raw = _read_bytes(path)
    try:
        z = np.load(BytesIO(raw), allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("a single array, not an archive")
        with z:
            data = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{path}: not an msenv bank file (.npz): {e}") from None
    for key in NPZ_FIELDS:
        if key not in data:
            raise ValueError(f"{path}: field {key} is missing")
    if str(data["format"]) != NPZ_FORMAT or int(data["version"]) != NPZ_VERSION:
        raise ValueError(f"{path}: field format/version = {data['format']!s}/{data['version']!s} is invalid; "
                         f"allowed: {NPZ_FORMAT}/{NPZ_VERSION}")
    file_drafter = _check_drafter(path, str(data["drafter"]))
    if drafter is not None and drafter != file_drafter:
        _check_drafter(path, drafter)
        raise ValueError(f"{path}: field drafter = {file_drafter!r} is not the requested drafter={drafter!r}")
    file_cap = int(data["cap"])
    if file_cap < 1 or (_check_cap(cap) is not None and cap != file_cap):
        raise ValueError(f"{path}: field cap = {file_cap} is invalid; allowed: an integer ≥ 1"
                         + ("" if cap is None else f" equal to the requested cap={cap}"))
    acc, off, ids = data["acc_len"], data["offsets"], data["ids"]
    if acc.ndim != 1 or acc.dtype.kind not in "iu":
        raise ValueError(f"{path}: field acc_len is a {acc.dtype} array of shape {acc.shape}; allowed: 1-D integers")
    if off.ndim != 1 or off.dtype.kind not in "iu" or off.size < 2 or off[0] != 0 or off[-1] != acc.size:
        raise ValueError(f"{path}: field offsets is invalid; allowed: R + 1 ≥ 2 integers from 0 to len(acc_len)")
    if ids.shape != (off.size - 1,) or ids.dtype.kind != "U":
        raise ValueError(f"{path}: field ids is invalid; allowed: {off.size - 1} strings, one per request")
    lengths = np.diff(off)
    for i in np.flatnonzero(lengths < 1)[:1]:
        raise ValueError(f"{path}: request {str(ids[i])!r}: field acc_len has length {lengths[i]}; "
                         "allowed: ≥ 1 value")
    bad = np.flatnonzero((acc < 1) | (acc > file_cap))
    if bad.size:
        i = int(np.searchsorted(off, bad[0], side="right") - 1)
        raise ValueError(f"{path}: request {str(ids[i])!r}: field acc_len[{bad[0] - off[i]}] = {acc[bad[0]]} is "
                         f"invalid; allowed: an integer in [1, cap={file_cap}]")
    if np.unique(ids).size != ids.size:
        raise ValueError(f"{path}: field ids repeats an id; allowed: unique ids")
    return TraceBank(acc.astype(np.int32), off.astype(np.int64), tuple(str(i) for i in ids), file_cap,
                     file_drafter, str(path), hashlib.sha256(raw).hexdigest())


def load_bank(path, drafter: str | None = None, cap: int | None = None, drop_limit: int | None = None) -> TraceBank:
    """A bank from a file, by its suffix: ``.jsonl`` (SpecDecode-Bench's, ``drafter`` required) via
    :func:`read_jsonl`, ``.npz`` (msenv's) via :func:`read_npz` (``drop_limit`` does not apply:
    its requests carry no prompt)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        if drafter is None:
            raise ValueError(f"{path}: drafter=None is invalid for a JSONL file; allowed: {' | '.join(DRAFTERS)}")
        return read_jsonl(path, drafter, cap=cap, drop_limit=drop_limit)
    if path.suffix == ".npz":
        if drop_limit is not None:
            raise ValueError(f"{path}: drop_limit={drop_limit!r} is invalid for an .npz bank; allowed: None "
                             "(only the JSONL format records prompt and generated lengths)")
        return read_npz(path, drafter=drafter, cap=cap)
    raise ValueError(f"{path}: suffix {path.suffix!r} is unknown; allowed: .jsonl (SpecDecode-Bench) | .npz (msenv)")


def save_bank(path, bank: TraceBank) -> Path:
    """Write ``bank`` by the suffix of ``path``: ``.npz`` (msenv's) or ``.jsonl`` (the published layout)."""
    path = Path(path)
    if path.suffix == ".npz":
        return write_npz(path, bank)
    if path.suffix == ".jsonl":
        return write_jsonl(path, bank)
    raise ValueError(f"{path}: suffix {path.suffix!r} is unknown; allowed: .jsonl | .npz")


__all__ = ["NPZ_FIELDS", "NPZ_FORMAT", "NPZ_VERSION", "PLACEHOLDER_TOKEN", "load_bank", "read_jsonl", "read_npz",
           "save_bank", "write_jsonl", "write_npz"]
