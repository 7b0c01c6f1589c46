"""Acceptance from traces: the env step, the rules' decisions, the banks. Prints figures; run
``python -m benchmarks.traces [--requests 500] [--rounds 10]``.

1. The env step at K = 20 of ``msenv/MultiSpin-Traces-v0`` beside the paper id's
   (``msenv/MultiSpin-v0``), both through ``gymnasium.make``, runs of each alternating ``--rounds``
   times (median and range of the per-run ratio; this machine's speed drifts within minutes).
2. Each adaptive rule's decision at K = 20 (``act`` then ``observe``, on the trace id's contexts):
   the median over 2,000 rounds.
3. Per preset: the best wall time (of 5) to draw a bank of ``--requests`` requests with
   ``preset_bank`` (per-request streams, the compiled generator, the canonical digest), its
   positions, and the time of ``measure`` (acceptance by depth and the replay at γ = 2, 4, 8).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import time

import gymnasium as gym
import numpy as np

from baselines import make_controller
from msenv.traces import PRESETS, measure, preset_bank

from ._timing import best_of, env_stepper, interleaved, row

TRACES_ID, PAPER_ID = "msenv/MultiSpin-Traces-v0", "msenv/MultiSpin-v0"
#: the rules whose decisions are timed (the SAA controllers are priced on the controllers page)
RULES = ("hf-heuristic", "hf-budget", "ucb-lengths", "ucb-budget", "last-outcome", "clairvoyant", "fixed-3")


def step_ratio(rounds: int, steps: int = 2000) -> np.ndarray:
    """Per-run step times (s) of the trace id and the paper id, alternating."""
    rng = np.random.default_rng(0)
    fixed = [rng.integers(0, 13, 20) for _ in range(steps)]
    a = env_stepper(TRACES_ID, steps, lambda env, i: fixed[i])
    b = env_stepper(PAPER_ID, steps, lambda env, i: fixed[i])
    return interleaved(a, b, rounds)


def decision_times(rounds: int = 2000) -> dict[str, float]:
    """Median wall time (s) of one decision (act + observe) of each rule at K = 20."""
    out = {}
    for name in RULES:
        env = gym.make(TRACES_ID).unwrapped
        env.reset(seed=0)
        ctl = make_controller(name)
        ctl.reset(0)
        times = np.empty(rounds)
        for i in range(rounds):
            ctx = env.oracle_context if ctl.oracle else env.context
            t0 = time.perf_counter()
            gamma = ctl.act(ctx)
            times[i] = time.perf_counter() - t0
            _, _, _, trunc, info = env.step(gamma)
            t0 = time.perf_counter()
            ctl.observe(gamma, info)
            times[i] += time.perf_counter() - t0
            if trunc:
                env.reset()
        out[name] = float(np.median(times))
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.traces``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.traces", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=500, help="requests per bank (default 500)")
    ap.add_argument("--rounds", type=int, default=10, help="alternating runs of the step timing (default 10)")
    return ap


def main(argv=None) -> dict:
    """Time every preset; returns {name: (draw seconds, measure seconds, positions)}."""
    args = build_parser().parse_args(argv)
    trace, paper = step_ratio(args.rounds)
    ratio = trace / paper
    row("env step, K = 20: Traces-v0 vs MultiSpin-v0",
        f"{np.median(trace) * 1e6:.1f} vs {np.median(paper) * 1e6:.1f} µs",
        f"ratio {np.median(ratio):.2f} (range {ratio.min():.2f}–{ratio.max():.2f}, {args.rounds} alternating runs)")
    for name, t in decision_times().items():
        row(f"decision at K = 20: {name}", f"{t * 1e3:.3f} ms", "act + observe, median of 2,000 rounds")
    measure(preset_bank("gsm8k-eagle", requests=5))  # compile / load the kernels
    out = {}
    for name in PRESETS:
        bank = preset_bank(name, requests=args.requests)
        draw = best_of(lambda: preset_bank(name, requests=args.requests))  # noqa: B023 (timed here, now)
        stats = best_of(lambda: measure(bank))  # noqa: B023 (timed here, now)
        out[name] = (draw, stats, bank.acc_len.size)
        row(f"{name}: draw {args.requests} requests ({bank.acc_len.size} positions)", f"{draw * 1e3:.1f} ms",
            f"measure {stats * 1e3:.1f} ms")
    return out


if __name__ == "__main__":
    main()
