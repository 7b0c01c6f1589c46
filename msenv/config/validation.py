"""Checks of config values: each raises ``ValueError`` naming the field, the value and what is
allowed — never a NaN, never silent clipping."""

from __future__ import annotations

import math
from typing import Any


def fail(name: str, value: Any, allowed: str) -> None:
    """Raise the ValueError of a bad field value."""
    raise ValueError(f"config field {name}={value!r} is invalid; allowed: {allowed}")


def check_int(cfg, name: str, lo: int, hi: int) -> None:
    v = getattr(cfg, name)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        fail(name, v, f"an integer in [{lo}, {hi}]")


def check_float(
    cfg, name: str, lo: float = -math.inf, hi: float = math.inf, lo_open: bool = False
) -> None:
    v = getattr(cfg, name)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    ok = ok and (v > lo if lo_open else v >= lo) and v <= hi
    if not ok:
        left = "(" if lo_open else "["
        fail(name, v, f"a finite number in {left}{lo}, {hi}]")


def check_range(
    cfg, name: str, lo: float, hi: float, lo_open: bool = False
) -> None:
    v = getattr(cfg, name)
    left = "(" if lo_open else "["
    allowed = f"a (low, high) pair with low ≤ high, both finite in {left}{lo}, {hi}]"
    if not isinstance(v, tuple) or len(v) != 2:
        fail(name, v, allowed)
    a, b = v
    for x in (a, b):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            fail(name, v, allowed)
        if (x <= lo if lo_open else x < lo) or x > hi:
            fail(name, v, allowed)
    if a > b:
        fail(name, v, allowed)


def check_choice(cfg, name: str, choices: tuple[str, ...]) -> None:
    v = getattr(cfg, name)
    if v not in choices:
        fail(name, v, " | ".join(repr(c) for c in choices))


def check_numbers(obj, name: str, n: int, names: tuple[str, ...], lo: float, hi: float, lo_open: bool,
             what: str, interval: str) -> None:
    """``obj.name`` must be a tuple of ``n`` finite numbers in ``interval`` (lo … hi, ``lo_open``:
    lo excluded), one per task of ``names``."""
    v = getattr(obj, name)
    if not isinstance(v, tuple) or len(v) != n:
        fail(name, v, f"a tuple of {n} {what}, one per task {names}")
    for i, x in enumerate(v):
        ok = not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)
        if not ok or not ((x > lo if lo_open else x >= lo) and x <= hi):
            fail(f"{name}[{i}]", x, f"a number in {interval}")
