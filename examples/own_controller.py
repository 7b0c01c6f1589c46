"""Bring your own controller: subclass Controller, compare it with the paper's greedy.

Run: python examples/own_controller.py
"""

import numpy as np

import msenv
from baselines import Controller, GreedySAA
from evaluation.harness import Entry, evaluate


class HalfAlpha(Controller):
    """Draft length 2 for devices with α ≥ 0.75, 1 otherwise (a toy rule)."""

    name = "half-alpha"

    def act(self, context, obs=None):
        return np.where(np.asarray(context.alpha) >= 0.75, 2, 1).astype(np.int64)


def main():
    config = msenv.SystemConfig(num_devices=5)
    rows = evaluate(
        [Entry("half-alpha", HalfAlpha), Entry("greedy-saa", GreedySAA)],
        config,
        episodes=2,
    )
    for r in rows:
        print(f"{r.label:<12} episode {r.episode}: {r.throughput:8.1f} tokens/s")


if __name__ == "__main__":
    main()
