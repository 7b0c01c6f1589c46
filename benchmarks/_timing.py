"""Small timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import time
from typing import Callable


def best_of(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """Best wall time per call (s) over ``repeat`` runs of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def row(name: str, value: str, note: str = "") -> None:
    print(f"{name:<58} {value:>16}  {note}")
