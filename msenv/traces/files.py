"""Reading and writing trace banks: SpecDecode-Bench's JSONL as published, and msenv's ``.npz``.

Every bad input is answered by one ``ValueError`` line that names the file, the request (its id,
or its line number in a JSONL file) and the field; a file that does not exist or cannot be read
is a ``ValueError`` with the path too (never a bare ``OSError``).

The readers trust nothing in a file before they allocate for it. They read regular files only
(a folder, a FIFO, a device — ``/dev/zero`` behind a symlink — is refused before it is read), of
at most :data:`MAX_FILE_BYTES`; a JSONL line holds at most :data:`MAX_LINE_BYTES`, nested no
deeper than Python's parser goes; an ``.npz`` bank holds exactly the members of
:data:`NPZ_FIELDS`, each an ``.npy`` array whose header (dtype, shape) is checked before its data
is read, the sizes its headers declare bounded by :data:`MAX_POSITIONS`, :data:`MAX_REQUESTS` and
:data:`MAX_ID_CHARS`; a bank's cap is an integer in 1 … :data:`MAX_CAP` (acc_len is stored as
int32, so no value is ever wrapped). The writers write through :func:`msenv.atomic.atomic_write`:
a bank file is replaced whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import zipfile
import zlib
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path

import numpy as np

from ..atomic import atomic_write, write_text
from .bank import DRAFTERS, MAX_CAP, TraceBank

#: the ``format`` entry of msenv's bank files (``.npz``), and its version
NPZ_FORMAT, NPZ_VERSION = "msenv-trace-bank", 1
#: the arrays and scalars of an msenv bank file
NPZ_FIELDS = ("format", "version", "acc_len", "offsets", "ids", "cap", "drafter")
#: the token id written in place of real ids by :func:`write_jsonl`
PLACEHOLDER_TOKEN = 0
#: the largest bank file (either format) a reader opens: 256 MiB (the largest published file is 3.3 MB)
MAX_FILE_BYTES = 256 * 2**20
#: the longest line of a JSONL bank (one request): 16 MiB
MAX_LINE_BYTES = 16 * 2**20
#: the most acc_len values (positions) a bank may hold: 2^26 ≈ 67 million (256 MiB as int32)
MAX_POSITIONS = 2**26
#: the most requests a bank file may hold
MAX_REQUESTS = 2**20
#: the longest request id, in characters
MAX_ID_CHARS = 256


#: what a file that is not a regular file is, in words
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _blocks(path: Path, limit: int):
    """The bytes of regular file ``path`` in blocks, at most ``limit`` in all: opened without
    blocking (a FIFO would wait for a writer) and checked on the opened file, before any read; a
    ValueError naming the path otherwise (also for a file that grows past ``limit`` meanwhile)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ValueError(f"{path}: cannot read the file ({e.strerror or e})") from None
    try:
        st, total = os.fstat(fd), 0
        if not stat.S_ISREG(st.st_mode):
            kind = next((what for test, what in _KINDS if test(st.st_mode)), "not a regular file")
            raise ValueError(f"{path}: cannot read the file ({kind}; allowed: a regular file)")
        if st.st_size > limit:
            raise ValueError(f"{path}: {st.st_size} bytes is too large; allowed: at most {limit} bytes "
                             f"({limit / 2**20:.0f} MiB)")
        while block := os.read(fd, 1 << 20):
            total += len(block)
            if total > limit:
                raise ValueError(f"{path}: more than {limit} bytes; allowed: at most {limit} bytes")
            yield block
    except OSError as e:
        raise ValueError(f"{path}: cannot read the file ({e.strerror or e})") from None
    finally:
        os.close(fd)


def read_regular(path, limit: int | None = None) -> bytes:
    """The bytes of regular file ``path`` of at most ``limit`` bytes (default
    :data:`MAX_FILE_BYTES`); ``ValueError`` in one line naming the path for a missing, unreadable,
    special or larger file."""
    return b"".join(_blocks(Path(path), MAX_FILE_BYTES if limit is None else limit))


def file_record(path, limit: int | None = None) -> dict:
    """``{"path", "sha256", "bytes"}`` of regular file ``path`` (read in blocks, never whole): what
    a result file records of each trace file it read. ``ValueError`` as :func:`read_regular`."""
    h, size = hashlib.sha256(), 0
    for block in _blocks(Path(path), MAX_FILE_BYTES if limit is None else limit):
        h.update(block)
        size += len(block)
    return {"path": str(path), "sha256": h.hexdigest(), "bytes": size}


def _check_drafter(path, drafter) -> str:
    """``drafter`` if it is one of DRAFTERS, else a ValueError listing them."""
    if drafter not in DRAFTERS:
        raise ValueError(f"{path}: drafter={drafter!r} is unknown; allowed: {' | '.join(DRAFTERS)}")
    return drafter


def _check_cap(cap) -> int | None:
    """An explicit cap as int (None stays None), else a ValueError."""
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or not 1 <= cap <= MAX_CAP):
        raise ValueError(f"cap={cap!r} is invalid; allowed: an integer in [1, {MAX_CAP}], or None (the largest value "
                         "read)")
    return None if cap is None else int(cap)


def _check_values(path, where: str, field: str, values: list, cap: int | None) -> np.ndarray:
    """``values`` as int32 after checking each is an integer in 1 … cap (one-line error otherwise)."""
    if not isinstance(values, list):
        raise ValueError(f"{path}: {where}: field {field} is {type(values).__name__}; "
                         "allowed: a list of integers ≥ 1")
    if not values:
        raise ValueError(f"{path}: {where}: field {field} is empty (a request of length zero); allowed: ≥ 1 value")
    hi = MAX_CAP if cap is None else cap
    for i, v in enumerate(values):
        if type(v) is not int or not 1 <= v <= hi:
            allowed = f"an integer in [1, {MAX_CAP}]" if cap is None else f"an integer in [1, cap={cap}]"
            raise ValueError(f"{path}: {where}: field {field}[{i}] = {v!r} is invalid; allowed: {allowed}")
    return np.asarray(values, dtype=np.int32)


def _field(path, where: str, obj: dict, key: str):
    """``obj[key]``, or a ValueError naming the file, the request and the field."""
    if key not in obj:
        raise ValueError(f"{path}: {where}: field {key} is missing")
    return obj[key]


def _json_line(path, n: int, line: bytes):
    """The JSON value of line ``n``, or a ValueError naming the file and the line."""
    try:
        return json.loads(line)
    except RecursionError:
        raise ValueError(f"{path}: line {n}: malformed JSON (nested deeper than the parser goes; allowed: a "
                         "request's object)") from None
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError, a number of too many digits, bad UTF-8
        raise ValueError(f"{path}: line {n}: malformed JSON ({getattr(e, 'msg', None) or e})") from None


def _request_id(path, n: int, obj: dict) -> str:
    """The request id of line ``n``'s object, as a string (one-line error for a bad one)."""
    rid = _field(path, f"line {n}", obj, "id")
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        raise ValueError(f"{path}: line {n}: field id = {str(rid)[:80]!r} is invalid; allowed: a string or an integer")
    rid = str(rid)
    if not rid or len(rid) > MAX_ID_CHARS:
        raise ValueError(f"{path}: line {n}: field id has {len(rid)} characters; allowed: 1 … {MAX_ID_CHARS}")
    return rid


def read_jsonl(path, drafter: str, cap: int | None = None, drop_limit: int | None = None) -> TraceBank:
    """A bank from SpecDecode-Bench's published JSONL (one JSON object a line: ``id``,
    ``prompt_token_ids``, ``generated_token_ids`` and per drafter ``acc_<drafter>: {"acc_len": [...]}``).

    ``drafter``: "eagle" or "ngram" (which ``acc_*`` object to read). ``cap``: the bank's cap; None
    takes the largest acc_len in the file, an explicit cap makes a larger value an error.
    ``drop_limit``: None keeps every request (the default); an integer N leaves out each request
    whose prompt + generated length reaches N (the published profiling stopped generation at
    8,192 tokens; requests that ran into it, likely repetition loops, are left out by
    ``drop_limit=8192``). Blank lines are skipped. The bank's ``sha256`` is the file's. Limits:
    module docstring."""
    path = Path(path)
    drafter = _check_drafter(path, drafter)
    cap = _check_cap(cap)
    if drop_limit is not None and (isinstance(drop_limit, bool) or not isinstance(drop_limit, (int, np.integer))
                                   or drop_limit < 1):
        raise ValueError(f"drop_limit={drop_limit!r} is invalid; "
                         "allowed: an integer ≥ 1, or None (keep every request)")
    raw = read_regular(path)
    key = f"acc_{drafter}"
    arrays, ids, lines, dropped, positions = [], [], {}, 0, 0
    stream, n = BytesIO(raw), 0
    while line := stream.readline(MAX_LINE_BYTES + 1):
        n += 1
        if len(line) > MAX_LINE_BYTES:
            raise ValueError(f"{path}: line {n}: longer than {MAX_LINE_BYTES} bytes; allowed: at most that "
                             f"({MAX_LINE_BYTES // 2**20} MiB, one request)")
        if not line.strip():
            continue
        obj = _json_line(path, n, line)
        if not isinstance(obj, dict):
            raise ValueError(f"{path}: line {n}: a JSON {type(obj).__name__}, not an object")
        rid = _request_id(path, n, obj)
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
        positions += values.size
        if positions > MAX_POSITIONS or len(arrays) >= MAX_REQUESTS:
            raise ValueError(f"{path}: {where}: the bank reaches {positions} positions in {len(arrays) + 1} requests; "
                             f"allowed: at most {MAX_POSITIONS} positions and {MAX_REQUESTS} requests")
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
    """Write banks in SpecDecode-Bench's published JSONL layout, one line per request (atomically:
    :func:`msenv.atomic.atomic_write`).

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
    return write_text(path, "\n".join(lines) + "\n")


def write_npz(path, bank: TraceBank) -> Path:
    """Write ``bank`` in msenv's format: a compressed ``.npz`` holding :data:`NPZ_FIELDS` —
    ``format`` ("msenv-trace-bank"), ``version`` (1), ``acc_len`` (int32, flat), ``offsets``
    (int64, R + 1), ``ids`` (unicode, R), ``cap`` (int64) and ``drafter`` (unicode). Writes to
    ``path`` exactly (numpy would otherwise append ``.npz``), atomically
    (:func:`msenv.atomic.atomic_write`)."""
    if not isinstance(bank, TraceBank):
        raise ValueError(f"bank={bank!r} is invalid; allowed: a TraceBank")
    return atomic_write(path, lambda f: np.savez_compressed(
        f, format=np.str_(NPZ_FORMAT), version=np.int64(NPZ_VERSION), acc_len=bank.acc_len, offsets=bank.offsets,
        ids=np.array(bank.ids, dtype=np.str_), cap=np.int64(bank.cap), drafter=np.str_(bank.drafter)))


#: each member of a bank file: (dtype kinds allowed, number of dimensions, what it holds)
_NPZ_SPEC = {"format": ("U", 0, f"the string {NPZ_FORMAT!r}"), "version": ("iu", 0, f"the integer {NPZ_VERSION}"),
             "acc_len": ("iu", 1, "a 1-D integer array"), "offsets": ("iu", 1, "a 1-D integer array"),
             "ids": ("U", 1, "a 1-D array of strings"), "cap": ("iu", 0, f"an integer in [1, {MAX_CAP}]"),
             "drafter": ("U", 0, f"the string {' | '.join(map(repr, DRAFTERS))}")}
#: the most elements each member's header may declare
_NPZ_COUNTS = {"format": 1, "version": 1, "cap": 1, "drafter": 1, "acc_len": MAX_POSITIONS,
               "offsets": MAX_REQUESTS + 1, "ids": MAX_REQUESTS}
#: the most bytes of data the members' headers may declare together (the arrays a bank file loads)
MAX_NPZ_DATA = 8 * MAX_POSITIONS
#: the errors reading a damaged member can raise (a corrupt deflate stream, a bad CRC, …)
_MEMBER_ERRORS = (ValueError, OSError, EOFError, zlib.error, zipfile.BadZipFile, NotImplementedError, RuntimeError,
                  SyntaxError, TypeError)


def _npz_header(path, name: str, fh) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of member ``name`` from its ``.npy`` header, checked against :data:`_NPZ_SPEC`
    and :data:`_NPZ_COUNTS` before any of its data is read."""
    kinds, ndim, what = _NPZ_SPEC[name]
    try:
        version = np.lib.format.read_magic(fh)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f".npy format version {version}")
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read(fh, max_header_size=10_000)
    except _MEMBER_ERRORS as e:
        raise ValueError(f"{path}: field {name} is not a .npy array ({type(e).__name__}: {str(e)[:100]}); "
                         f"allowed: {what}") from None
    if ndim == 0:  # a scalar's value is checked once read (:func:`_scalar`, which names it)
        kinds = "biufcUS"
    if dtype.hasobject or dtype.kind not in kinds or len(shape) != ndim or dtype.itemsize == 0:
        raise ValueError(f"{path}: field {name} is an array of {dtype}, shape {shape}; allowed: {what}")
    count = int(np.prod(shape, dtype=np.float64))
    if count > _NPZ_COUNTS[name] or (dtype.kind == "U" and dtype.itemsize > 4 * MAX_ID_CHARS):
        raise ValueError(f"{path}: field {name} declares {count} {dtype} values; allowed: at most {_NPZ_COUNTS[name]}"
                         + (f" of at most {MAX_ID_CHARS} characters" if dtype.kind == "U" else ""))
    return shape, dtype


def _npz_arrays(path: Path, raw: bytes) -> dict[str, np.ndarray]:
    """The members of a bank file as arrays: every member's header checked (and the sizes they
    declare together bounded by :data:`MAX_NPZ_DATA`) before any data is read, and each member's
    data read no further than its header declares."""
    try:
        archive = zipfile.ZipFile(BytesIO(raw))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as e:
        raise ValueError(f"{path}: not an msenv bank file (.npz): {e}") from None
    names = [m.filename for m in members]
    for name in names:
        if not name.endswith(".npy") or name[:-4] not in NPZ_FIELDS or names.count(name) > 1:
            raise ValueError(f"{path}: member {name[:80]!r} is unknown or repeated; allowed: one each of "
                             f"{', '.join(f + '.npy' for f in NPZ_FIELDS)}")
    for key in NPZ_FIELDS:
        if f"{key}.npy" not in names:
            raise ValueError(f"{path}: field {key} is missing")

    def member(m):
        try:
            return archive.open(m)
        except _MEMBER_ERRORS as e:
            raise ValueError(f"{path}: field {m.filename[:-4]} cannot be read ({type(e).__name__}: "
                             f"{str(e)[:100]})") from None

    headers = {}
    for m in members:
        with member(m) as fh:
            headers[m.filename] = _npz_header(path, m.filename[:-4], fh)
    sizes = {k: int(np.prod(shape, dtype=np.int64)) * dtype.itemsize for k, (shape, dtype) in headers.items()}
    if sum(sizes.values()) > MAX_NPZ_DATA:
        raise ValueError(f"{path}: its arrays declare {sum(sizes.values())} bytes; allowed: at most {MAX_NPZ_DATA} "
                         f"({MAX_NPZ_DATA // 2**20} MiB)")
    out = {}
    for m in members:
        name, (shape, dtype), size = m.filename[:-4], headers[m.filename], sizes[m.filename]
        with member(m) as fh:
            _npz_header(path, name, fh)
            try:
                data = fh.read(size)
                rest = fh.read(1)  # to the member's end: the archive checks its CRC there
            except _MEMBER_ERRORS as e:
                raise ValueError(f"{path}: field {name}: its data cannot be read ({type(e).__name__}: "
                                 f"{str(e)[:100]})") from None
        if len(data) != size or rest:
            raise ValueError(f"{path}: field {name} holds {'more than ' if rest else ''}{len(data)} bytes of data, its "
                             f"header declares {size}; allowed: a .npy array as numpy writes it")
        out[name] = np.frombuffer(data, dtype=dtype).reshape(shape)
    return out


def _scalar(path, data: dict, name: str):
    """Member ``name`` as a Python scalar, checked against its spec (one-line error)."""
    a, (kinds, _, what) = data[name], _NPZ_SPEC[name]
    if a.ndim != 0 or a.dtype.kind not in kinds:
        value = repr(a.item())[:80] if a.ndim == 0 else f"an array of {a.dtype}, shape {a.shape}"
        raise ValueError(f"{path}: field {name} = {value} is invalid; allowed: {what}")
    return a.item()


def read_npz(path, drafter: str | None = None, cap: int | None = None) -> TraceBank:
    """A bank from msenv's ``.npz`` (see :func:`write_npz`); ``sha256`` is the file's. ``drafter`` /
    ``cap``, when given, must be the file's (a check, not a conversion). Limits: module docstring."""
    path = Path(path)
    cap = _check_cap(cap)
    if drafter is not None:
        _check_drafter(path, drafter)
    raw = read_regular(path)
    data = _npz_arrays(path, raw)
    if _scalar(path, data, "format") != NPZ_FORMAT:
        raise ValueError(f"{path}: field format = {data['format'].item()!r} is invalid; allowed: {NPZ_FORMAT!r}")
    if _scalar(path, data, "version") != NPZ_VERSION:
        raise ValueError(f"{path}: field version = {data['version'].item()!r} is invalid; allowed: {NPZ_VERSION}")
    file_drafter = _scalar(path, data, "drafter")
    if file_drafter not in DRAFTERS:
        raise ValueError(f"{path}: field drafter = {file_drafter!r} is unknown; allowed: {' | '.join(DRAFTERS)}")
    if drafter is not None and drafter != file_drafter:
        raise ValueError(f"{path}: field drafter = {file_drafter!r} is not the requested drafter={drafter!r}")
    file_cap = _scalar(path, data, "cap")
    if not 1 <= file_cap <= MAX_CAP or (cap is not None and cap != file_cap):
        raise ValueError(f"{path}: field cap = {file_cap} is invalid; allowed: an integer in [1, {MAX_CAP}]"
                         + ("" if cap is None else f" equal to the requested cap={cap}"))
    acc, off, ids = data["acc_len"], data["offsets"], data["ids"]
    if off.size < 2 or off[0] != 0 or off[-1] != acc.size or (off > acc.size).any():
        raise ValueError(f"{path}: field offsets is invalid; allowed: R + 1 ≥ 2 integers from 0 to len(acc_len) = "
                         f"{acc.size}")
    if ids.shape != (off.size - 1,):
        raise ValueError(f"{path}: field ids is invalid; allowed: {off.size - 1} strings, one per request")
    lengths = np.diff(off.astype(np.int64))  # every offset is in 0 … len(acc_len) ≤ MAX_POSITIONS: no wrap
    for i in np.flatnonzero(lengths < 1)[:1]:
        raise ValueError(f"{path}: request {str(ids[i])!r}: field acc_len has length {lengths[i]}; "
                         "allowed: ≥ 1 value (offsets increasing)")
    bad = np.flatnonzero((acc < 1) | (acc > file_cap))
    if bad.size:
        i = int(np.searchsorted(off, bad[0], side="right") - 1)
        raise ValueError(f"{path}: request {str(ids[i])!r}: field acc_len[{bad[0] - off[i]}] = {acc[bad[0]]} is "
                         f"invalid; allowed: an integer in [1, cap={file_cap}]")
    if np.unique(ids).size != ids.size:
        raise ValueError(f"{path}: field ids repeats an id; allowed: unique ids")
    return TraceBank(acc.astype(np.int32), off.astype(np.int64), tuple(str(i) for i in ids), int(file_cap),
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
    """Write ``bank`` by the suffix of ``path`` (atomically): ``.npz`` (msenv's) or ``.jsonl`` (the
    published layout)."""
    path = Path(path)
    if path.suffix == ".npz":
        return write_npz(path, bank)
    if path.suffix == ".jsonl":
        return write_jsonl(path, bank)
    raise ValueError(f"{path}: suffix {path.suffix!r} is unknown; allowed: .jsonl | .npz")


__all__ = ["MAX_FILE_BYTES", "MAX_ID_CHARS", "MAX_LINE_BYTES", "MAX_POSITIONS", "MAX_REQUESTS", "NPZ_FIELDS",
           "NPZ_FORMAT", "NPZ_VERSION", "PLACEHOLDER_TOKEN", "file_record", "load_bank", "read_jsonl", "read_npz",
           "read_regular", "save_bank", "write_jsonl", "write_npz"]
