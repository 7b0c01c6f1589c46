"""A bank's requests split into training, validation and test parts, fixed by the bank's content.

Stratified: requests are grouped by the tercile of their α_0 (share of positions with
acc_len ≥ 2) crossed with the half of their length (below / at or above the median), ranks broken
by id. Within a group the requests are put in id order, then shuffled by a Generator seeded with
the bank's ``sha256`` (nothing else); the groups are laid end to end and each request in turn goes
to the part furthest below its share (largest deficit), so every group and the whole bank are
split in the given proportions to within one request. The same file always gives the same split.
"""

from __future__ import annotations

import math

import numpy as np

from .bank import TraceBank
from .stats import position_rows, request_alpha0

#: the parts, in order, and their default shares
PARTS = ("train", "validation", "test")
DEFAULT_FRACTIONS = (0.6, 0.2, 0.2)
#: groups: α_0 terciles × length halves
ALPHA_BINS, LENGTH_BINS = 3, 2


def _ranked_bins(values: np.ndarray, ids: np.ndarray, bins: int) -> np.ndarray:
    """Bin 0 … bins − 1 of each value by rank (ties broken by id), equal-count bins."""
    order = np.lexsort((ids, values))
    ranks = np.empty(values.size, dtype=np.int64)
    ranks[order] = np.arange(values.size)
    return ranks * bins // max(values.size, 1)


def split_seed(bank: TraceBank) -> int:
    """The split's seed: the first 128 bits of the bank's sha256 (hex) as an integer."""
    return int(bank.sha256[:32], 16)


def split_indices(bank: TraceBank, fractions=DEFAULT_FRACTIONS) -> dict[str, np.ndarray]:
    """{"train", "validation", "test"} → sorted request indices (int64); every request in exactly
    one part; ``fractions``: three shares ≥ 0 summing to 1 (default 60 / 20 / 20)."""
    if not isinstance(bank, TraceBank):
        raise ValueError(f"bank={bank!r} is invalid; allowed: a TraceBank")
    fr = tuple(fractions)
    if (len(fr) != len(PARTS) or any(isinstance(f, bool) or not isinstance(f, (int, float)) or not f >= 0 for f in fr)
            or not math.isclose(sum(fr), 1.0, abs_tol=1e-9)):
        raise ValueError(f"fractions={fractions!r} is invalid; allowed: three numbers ≥ 0 summing to 1 "
                         f"(train, validation, test)")
    if not bank.sha256:
        raise ValueError("bank.sha256='' is invalid; allowed: the bank's digest (the split is seeded by it)")
    ids = np.array(bank.ids)
    alpha0 = request_alpha0(position_rows(bank))
    group = (_ranked_bins(alpha0, ids, ALPHA_BINS) * LENGTH_BINS
             + _ranked_bins(bank.lengths.astype(float), ids, LENGTH_BINS))
    rng = np.random.default_rng(split_seed(bank))
    order = []
    for g in range(ALPHA_BINS * LENGTH_BINS):
        members = np.flatnonzero(group == g)
        members = members[np.argsort(ids[members], kind="stable")]
        order.extend(members[rng.permutation(members.size)])
    share = np.array(fr, dtype=float)
    given = np.zeros(len(PARTS))
    part = np.empty(len(bank), dtype=np.int64)
    for n, i in enumerate(order):
        j = int(np.argmax(share * (n + 1) - given))  # the part furthest below its share
        part[i] = j
        given[j] += 1
    return {name: np.flatnonzero(part == j) for j, name in enumerate(PARTS)}


__all__ = ["ALPHA_BINS", "DEFAULT_FRACTIONS", "LENGTH_BINS", "PARTS", "split_indices", "split_seed"]
