"""PPO settings study: the measurements behind ``agents.ppo`` defaults.

Each variant trains PPO (16 batched envs, seed 0) for its budget, then its deterministic policy
and GreedySAA play the same held-out episodes; the table reports PPO's long-run throughput as a
fraction of the greedy's (paired per episode) and its mean draft length.

    python -m experiments.ppo_settings --out docs/figures          # all variants, 2 at a time
    python -m experiments.ppo_settings --variants default --steps 50000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from evaluation.harness import Entry, evaluate
from evaluation.parallel import parallel_map
from evaluation.report import summarize, write_csv

#: name → (steps, PPO overrides)
VARIANTS: dict[str, tuple[int, dict[str, Any]]] = {
    "uniform-start": (200_000, dict(action_prior=0.0)),
    "uniform-start-lr1e-3": (200_000, dict(action_prior=0.0, learning_rate=1e-3)),
    "prior0.5-200k": (200_000, dict(action_prior=0.5)),
    "prior0.3-200k": (200_000, dict(action_prior=0.3)),
    "prior0.5": (500_000, dict(action_prior=0.5)),
    "prior0.5-ent0.01": (500_000, dict(action_prior=0.5, ent_coef=0.01)),
    "default": (500_000, dict()),
}


def run_variant(job: tuple[str, int, dict[str, Any], int, int]) -> dict[str, Any]:
    name, steps, overrides, episodes, eval_seed = job
    import torch

    from agents.controller import PPOController
    from agents.envs import make_vec_env, normalize, seed_next_reset, training_seeds
    from agents.ppo import DEFAULT_ACTION_PRIOR, DEFAULT_PPO, make_ppo
    from msenv import SystemConfig

    torch.set_num_threads(1)
    cfg = SystemConfig()
    gamma = overrides.get("gamma", DEFAULT_PPO["gamma"])
    env_seeds = training_seeds(0, 16)
    venv = normalize(make_vec_env(cfg, 16, env_seeds), gamma)
    model = make_ppo(venv, seed=0, **overrides)
    seed_next_reset(venv, env_seeds)  # building the model seeded the envs with seed + i
    t0 = time.perf_counter()
    model.learn(steps)
    train_s = time.perf_counter() - t0
    ctl = PPOController(model, venv.obs_rms, venv.clip_obs, venv.epsilon, cfg)
    from baselines import GreedySAA

    rows = summarize(evaluate([Entry("greedy-saa", GreedySAA), Entry("ppo", lambda: ctl)], cfg, episodes, eval_seed))
    ppo = rows[1]
    return {"variant": name, "steps": steps, "action_prior": overrides.get("action_prior", DEFAULT_ACTION_PRIOR),
            "overrides": str(overrides), "ppo_over_greedy": ppo["rel_throughput"], "ci95": ppo["rel_throughput_ci95"],
            "mean_gamma": ppo["mean_gamma"], "train_s": train_s}


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m experiments.ppo_settings``."""
    ap = argparse.ArgumentParser(prog="python -m experiments.ppo_settings", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--steps", type=int, default=None, help="override every variant's budget")
    ap.add_argument("--episodes", type=int, default=4, help="held-out episodes (default 4)")
    ap.add_argument("--eval-seed", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="results")
    return ap


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        ap.error(f"--steps {args.steps} is invalid; allowed: an integer ≥ 1")
    jobs = [(v, args.steps or VARIANTS[v][0], VARIANTS[v][1], args.episodes, args.eval_seed) for v in args.variants]
    rows = parallel_map(run_variant, jobs, args.workers)
    print(f"{'variant':<22} {'steps':>8} {'PPO / greedy':>16} {'mean γ':>7} {'train s':>8}")
    for r in rows:
        print(f"{r['variant']:<22} {r['steps']:>8} {r['ppo_over_greedy']:>9.4f} ± {r['ci95']:.4f} "
              f"{r['mean_gamma']:>7.2f} {r['train_s']:>8.0f}")
    write_csv(rows, Path(args.out) / "ppo_settings.csv")
    return rows


if __name__ == "__main__":
    main()
