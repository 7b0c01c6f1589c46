"""Independent seeds for many environments from one seed.

``train.py --seed s`` once gave its ``n`` environments the integer seeds ``s … s + n − 1``, so two
training seeds shared most of their streams and a run could walk into any block of seeds. Here a
seed is the root of a :class:`numpy.random.SeedSequence` tree: each environment's seed is drawn
from its own spawned child, so different roots (and different ``key``\\ s under one root) give
streams that share nothing, and every derived seed lies in ``[2**32, 2**63)`` — above every
reserved block of seeds (the benchmark's test and validation blocks are below ``2**32``).
"""

from __future__ import annotations

import numpy as np

#: every derived seed lies in [DERIVED_LOW, DERIVED_HIGH)
DERIVED_LOW, DERIVED_HIGH = 2**32, 2**63


def derived_seeds(seed: int, n: int, *key: int) -> list[int]:
    """``n`` integer seeds, one per environment, from children of ``SeedSequence(seed,
    spawn_key=key)``: the same ``(seed, key)`` always gives the same list; another seed or key gives
    seeds whose streams are independent of these. Each lies in ``[2**32, 2**63)``."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed={seed!r} is invalid; allowed: an integer ≥ 0")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n={n!r} is invalid; allowed: an integer ≥ 1")
    if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0 for k in key):
        raise ValueError(f"key={key!r} is invalid; allowed: integers ≥ 0")
    children = np.random.SeedSequence(int(seed), spawn_key=tuple(int(k) for k in key)).spawn(int(n))
    span = DERIVED_HIGH - DERIVED_LOW
    return [DERIVED_LOW + int(c.generate_state(1, np.uint64)[0]) % span for c in children]


__all__ = ["DERIVED_HIGH", "DERIVED_LOW", "derived_seeds"]
