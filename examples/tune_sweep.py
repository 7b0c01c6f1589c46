"""A Ray Tune sweep of PPO settings on msenv, pasted as a script.

Each trial trains PPO (``agents.ppo.make_ppo``) in chunks and, after each chunk,
reports its paired throughput ratio to the paper's greedy on held-out episodes; ASHA
stops the weak trials early. ``space`` holds Tune's search space (here the built-in
one of ``python -m agents.tune``, learning rate, action prior, rollout length, width
and seeds as a grid); pass your own dict to sweep other settings. Needs ``pip install
"msenv[ray]"``.

Run: ``python examples/tune_sweep.py [--steps 2048] [--out runs/tune]``
"""

import argparse
from pathlib import Path

from agents.tune import METRIC, run_sweep, search_space
from evaluation.report import write_csv
from msenv import SystemConfig

# a small cell, so the run is quick
SMALL = SystemConfig(num_devices=4, gamma_max=8, episode_length=20)


def main(steps: int = 2048, out: str = "runs/tune") -> list[dict]:
    """Two trials of ``steps`` env steps each; returns their rows, best first."""
    rows = run_sweep(
        SMALL,
        samples=2,  # trials per seed
        seeds=1,
        timesteps=steps,  # per trial, at most
        chunk=steps // 2,  # env steps between two reports
        n_envs=8,
        eval_episodes=2,
        eval_seed=10_000,  # held-out episodes: seeds 10000, 10001
        out=out,
        space=search_space(seeds=1, quick=True),
    )
    write_csv(rows, Path(out) / "sweep.csv")  # one row per trial
    for r in rows:
        print(f"{METRIC} {r[METRIC]:.4f}  lr {r['learning_rate']:.1e}  "
              f"prior {r['action_prior']}  n_steps {r['n_steps']}  width {r['width']}")
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=2048, help="environment steps per trial"
    )
    parser.add_argument("--out", default="runs/tune", help="output directory")
    args = parser.parse_args()
    main(args.steps, args.out)
