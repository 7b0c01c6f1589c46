"""The trace bank: every request's ``acc_len`` array, flat, with the bank's cap, drafter and origin."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: drafters a bank can hold: EAGLE (a learned draft head) and n-gram (prompt lookup)
DRAFTERS = ("eagle", "ngram")
#: the tag that opens the canonical encoding hashed into a generated bank's ``sha256``
CANONICAL_TAG = b"msenv-trace-bank-v1\0"
#: the largest cap a bank may have: acc_len is int32, so every value (≤ cap) fits without a wrap
MAX_CAP = 2**31 - 1


def canonical_sha256(acc_len: np.ndarray, offsets: np.ndarray, ids: Sequence[str], cap: int, drafter: str) -> str:
    """SHA-256 (hex) of a bank's content in one fixed encoding: the tag, the cap (int64 little
    endian), the drafter, the offsets (int64 LE), the acc_len values (int32 LE) and the ids joined
    by NUL. The same content always gives the same digest, whatever made the arrays."""
    h = hashlib.sha256(CANONICAL_TAG)
    h.update(np.int64(cap).astype("<i8").tobytes())
    h.update(drafter.encode() + b"\0")
    h.update(np.ascontiguousarray(offsets, dtype="<i8").tobytes())
    h.update(np.ascontiguousarray(acc_len, dtype="<i4").tobytes())
    h.update("\0".join(ids).encode())
    return h.hexdigest()


def _bad(name: str, value, allowed: str) -> ValueError:
    """The ValueError of a bad bank field."""
    return ValueError(f"TraceBank {name}={value!r} is invalid; allowed: {allowed}")


@dataclass(frozen=True, eq=False)
class TraceBank:
    """Measured (or generated) acceptance of one drafter on many requests.

    Request ``i`` owns ``acc_len[offsets[i]:offsets[i + 1]]``: one value per output position, each
    in ``1 … cap`` (``cap`` means "at least cap"). Arrays are read-only. Build one with
    :meth:`from_arrays` (computes the canonical ``sha256``) or a reader of :mod:`.files`."""

    #: every request's acc_len, concatenated (int32, each value in 1 … cap)
    acc_len: np.ndarray
    #: request i is ``acc_len[offsets[i]:offsets[i + 1]]`` (int64, R + 1 values, strictly increasing from 0)
    offsets: np.ndarray
    #: the requests' ids (unique strings), in bank order
    ids: tuple[str, ...]
    #: the largest value acc_len can hold; a value equal to it means "at least cap"
    cap: int
    #: the drafter whose acceptance this is (one of :data:`DRAFTERS`)
    drafter: str
    #: where the bank came from: a file path or a preset name (with requests and seed)
    source: str
    #: SHA-256 of the source file's bytes, or of the canonical encoding of a generated bank
    sha256: str

    def __post_init__(self):
        """Check every field (ValueError naming it); make the arrays read-only."""
        acc = np.asarray(self.acc_len)
        off = np.asarray(self.offsets)
        if acc.ndim != 1 or acc.dtype != np.int32:
            raise _bad("acc_len", f"{acc.dtype} array of shape {acc.shape}", "a 1-D int32 array")
        if off.ndim != 1 or off.dtype != np.int64 or off.size < 2:
            raise _bad("offsets", f"{off.dtype} array of shape {off.shape}", "a 1-D int64 array of R + 1 ≥ 2 values")
        if off[0] != 0 or off[-1] != acc.size or np.any(np.diff(off) < 1):
            raise _bad("offsets", off,
                       f"0 = offsets[0] < offsets[1] < … < offsets[-1] = {acc.size} (no empty request)")
        if isinstance(self.cap, bool) or not isinstance(self.cap, (int, np.integer)) or not 1 <= self.cap <= MAX_CAP:
            raise _bad("cap", self.cap, f"an integer in [1, {MAX_CAP}]")
        if acc.min() < 1 or acc.max() > self.cap:
            raise _bad("acc_len", f"values in [{acc.min()}, {acc.max()}]", f"integers in [1, cap={self.cap}]")
        if self.drafter not in DRAFTERS:
            raise _bad("drafter", self.drafter, " | ".join(DRAFTERS))
        ids_ok = isinstance(self.ids, tuple) and len(self.ids) == off.size - 1
        if not ids_ok or not all(isinstance(i, str) for i in self.ids):
            raise _bad("ids", type(self.ids).__name__, f"a tuple of {off.size - 1} strings, one per request")
        if len(set(self.ids)) != len(self.ids):
            raise _bad("ids", "a repeated id", "unique ids")
        for arr in (acc, off):
            arr.setflags(write=False)
        object.__setattr__(self, "acc_len", acc)
        object.__setattr__(self, "offsets", off)
        object.__setattr__(self, "cap", int(self.cap))

    @classmethod
    def from_arrays(cls, acc_len, lengths, ids: Sequence[str], cap: int, drafter: str, source: str) -> TraceBank:
        """A bank from the flat ``acc_len`` and each request's length; ``sha256`` is the canonical one."""
        acc = np.ascontiguousarray(acc_len, dtype=np.int32)
        off = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(np.asarray(lengths, dtype=np.int64), out=off[1:])
        ids = tuple(str(i) for i in ids)
        return cls(acc, off, ids, int(cap), drafter, source, canonical_sha256(acc, off, ids, int(cap), drafter))

    @classmethod
    def from_requests(cls, requests: Sequence, ids: Sequence[str], cap: int, drafter: str, source: str) -> TraceBank:
        """A bank from one acc_len sequence per request (canonical ``sha256``)."""
        arrays = [np.asarray(r, dtype=np.int64).ravel() for r in requests]
        if not arrays:
            raise _bad("requests", [], "at least one request")
        flat = np.concatenate(arrays)
        if flat.size and (flat.min() < 1 or flat.max() > np.iinfo(np.int32).max):
            raise _bad("acc_len", f"values in [{flat.min()}, {flat.max()}]", f"integers in [1, cap={cap}]")
        return cls.from_arrays(flat, [a.size for a in arrays], ids, cap, drafter, source)

    def __len__(self) -> int:
        """The number of requests."""
        return self.offsets.size - 1

    @property
    def n_requests(self) -> int:
        """The number of requests R."""
        return len(self)

    @property
    def lengths(self) -> np.ndarray:
        """Each request's length (its output tokens), int64 [R]."""
        return np.diff(self.offsets)

    def request(self, i: int) -> np.ndarray:
        """Request ``i``'s acc_len (a read-only view)."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -len(self) <= i < len(self):
            raise _bad("request index", i, f"an integer in [{-len(self)}, {len(self) - 1}]")
        i = int(i) % len(self)
        return self.acc_len[self.offsets[i]:self.offsets[i + 1]]

    def subset(self, indices) -> TraceBank:
        """The bank of the requests at ``indices`` (in that order, no repeats); its source names the
        parent and its ``sha256`` is the canonical one of the subset's content."""
        idx = np.asarray(indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise _bad("indices", indices, "a 1-D array of request indices")
        if idx.size == 0 or idx.min() < -len(self) or idx.max() >= len(self):
            raise _bad("indices", indices, f"a non-empty array of integers in [{-len(self)}, {len(self) - 1}]")
        idx = idx.astype(np.int64) % len(self)
        if np.unique(idx).size != idx.size:
            raise _bad("indices", indices, "request indices without repeats")
        lengths = self.lengths[idx]
        parts = [self.acc_len[self.offsets[i]:self.offsets[i + 1]] for i in idx]
        return TraceBank.from_arrays(np.concatenate(parts), lengths, [self.ids[i] for i in idx], self.cap,
                                     self.drafter, f"{self.source} (subset of {idx.size} requests)")

    def __repr__(self) -> str:
        """One line: size, drafter, cap, source and the digest's start."""
        return (f"TraceBank({len(self)} requests, {self.acc_len.size} positions, drafter={self.drafter!r}, "
                f"cap={self.cap}, source={self.source!r}, sha256={self.sha256[:12]}…)")


__all__ = ["CANONICAL_TAG", "DRAFTERS", "MAX_CAP", "TraceBank", "canonical_sha256"]
