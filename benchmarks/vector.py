"""Batched VectorEnv throughput (issue: vector env). Run ``python -m benchmarks.vector``.

Steps × envs per second of :class:`msenv.envs.vector.MultiSpinVectorEnv` vs Gymnasium's
``SyncVectorEnv`` of the single env, at N = 64 and 1024, measured side by side.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

from msenv.envs.env import MultiSpinEnv
from msenv.envs.vector import MultiSpinVectorEnv

from ._timing import row


def rate(venv, n: int, steps: int) -> float:
    venv.reset(seed=0)
    a = np.full((n, 20), 4)
    venv.step(a)
    t0 = time.perf_counter()
    for _ in range(steps):
        venv.step(a)
    return steps * n / (time.perf_counter() - t0)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.vector``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.vector", description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 1024])
    return ap


def main(argv=None) -> dict:
    ap = build_parser()
    args = ap.parse_args(argv)
    print("== vector env: env-steps per second (K = 20) ==")
    out = {}
    for n in args.sizes:
        steps = max(20, 20_000 // n)
        fast = rate(MultiSpinVectorEnv(n), n, steps * 5)
        slow = rate(gym.vector.SyncVectorEnv([MultiSpinEnv for _ in range(n)]), n, steps)
        out[n] = (fast, slow)
        row(f"N = {n}: MultiSpinVectorEnv", f"{fast:,.0f} /s")
        row(f"N = {n}: SyncVectorEnv(MultiSpinEnv)", f"{slow:,.0f} /s")
        row(f"N = {n}: speed-up", f"{fast / slow:.1f} x", "(target >= 10x at N = 1024)")
    return out


if __name__ == "__main__":
    main()
