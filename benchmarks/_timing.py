"""Small timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np


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


def env_stepper(env_id: str, n: int, action_fn):
    """A function that plays ``n`` steps of ``env_id`` (through ``gymnasium.make``) and returns
    the wall time per step (s)."""
    env = gym.make(env_id)
    env.reset(seed=0)
    actions = [action_fn(env, i) for i in range(n)]

    def run() -> float:
        t0 = time.perf_counter()
        for a in actions:
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
        return (time.perf_counter() - t0) / n

    run()  # warm-up (compiled kernels, caches)
    return run


def interleaved(a, b, rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-step times of two steppers measured alternately ``rounds`` times (so both see the same
    machine state; this machine's speed drifts by ±50% within a minute)."""
    ta, tb = np.empty(rounds), np.empty(rounds)
    for i in range(rounds):
        ta[i], tb[i] = a(), b()
    return ta, tb
