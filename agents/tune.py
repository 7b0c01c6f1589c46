"""Ray Tune sweep of PPO settings and seeds, ranked on the held-out paired ratio to GreedySAA.

    python -m agents.tune                      # local Ray instance, built-in search space
    python -m agents.tune --ray ray://head:10001 --samples 64 --timesteps 500000
    python -m agents.tune --quick              # tiny sweep (smoke test)

Each trial trains :func:`agents.ppo.make_ppo` on the batched env in chunks of ``--chunk`` steps;
after every chunk it plays the held-out episodes (seeds ``--eval-seed ..``) with the deterministic
policy and reports ``ratio_to_greedy``: the mean over episodes of PPO's long-run throughput divided
by GreedySAA's on the same episode (GreedySAA is measured once, on the driver, before the sweep).
ASHA stops the weak trials early on that metric. Results: a CSV (one row per trial, best first)
and Tune's own experiment directory under ``--out``. Needs the ``[ray]`` extra.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from msenv import ENV_IDS, env_config
from msenv.config import SystemConfig

METRIC = "ratio_to_greedy"


def search_space(seeds: int, quick: bool = False) -> dict[str, Any]:
    """The built-in space: learning rate, action prior, rollout length, network width; seeds as a grid."""
    from ray import tune

    return {
        "learning_rate": tune.loguniform(1e-4, 1e-3),
        "action_prior": tune.choice([0.1, 0.3, 0.5]),
        "n_steps": tune.choice([32, 64] if quick else [32, 64, 128]),
        "width": tune.choice([64, 128]),
        "seed": tune.grid_search(list(range(seeds))),
    }


def greedy_reference(config: SystemConfig, episodes: int, eval_seed: int) -> list[float]:
    """GreedySAA's long-run throughput on each held-out episode."""
    from evaluation.harness import evaluate, parse_entry

    res = evaluate([parse_entry("greedy-saa")], config, episodes, eval_seed)
    return [r.throughput for r in sorted(res, key=lambda r: r.episode)]


def ratio_to_reference(model, venv, config: SystemConfig, reference: list[float], eval_seed: int) -> float:
    """Mean per-episode paired ratio of the model's throughput to the reference's."""
    from agents.controller import PPOController
    from evaluation.harness import Entry, evaluate

    ctrl = PPOController(model, venv.obs_rms, venv.clip_obs, venv.epsilon, config)
    res = evaluate([Entry("ppo", lambda: ctrl)], config, len(reference), eval_seed)
    thr = np.array([r.throughput for r in sorted(res, key=lambda r: r.episode)])
    return float(np.mean(thr / np.asarray(reference)))


def trainable(params: dict[str, Any]) -> None:
    """One Tune trial (function API): train in chunks, report the paired ratio after each."""
    import torch
    from ray import tune

    from agents.envs import make_vec_env, normalize, seed_next_reset, training_seeds
    from agents.ppo import make_ppo

    torch.set_num_threads(1)
    cfg = SystemConfig.from_dict(params["config"])
    env_seeds = training_seeds(params["seed"], params["n_envs"])
    venv = normalize(make_vec_env(cfg, params["n_envs"], env_seeds), gamma=0.0)
    width = int(params["width"])
    model = make_ppo(venv, seed=params["seed"], learning_rate=params["learning_rate"], n_steps=int(params["n_steps"]),
                     action_prior=params["action_prior"],
                     policy_kwargs=dict(net_arch=dict(pi=[width, width], vf=[width, width])))
    seed_next_reset(venv, env_seeds)  # building the model seeded the envs with seed + i
    while model.num_timesteps < params["timesteps"]:
        model.learn(params["chunk"], reset_num_timesteps=False)
        ratio = ratio_to_reference(model, venv, cfg, params["reference"], params["eval_seed"])
        tune.report({METRIC: ratio, "timesteps": int(model.num_timesteps)})


def run_sweep(config: SystemConfig, samples: int, seeds: int, timesteps: int, chunk: int, n_envs: int,
              eval_episodes: int, eval_seed: int, out: str | Path, ray_address: str = "local",
              quick: bool = False, space: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run the sweep; returns one row per trial (settings, last and best ratio), best first."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    from evaluation.parallel import ray_init

    ray_init(ray_address)
    reference = greedy_reference(config, eval_episodes, eval_seed)
    fixed = dict(config=config.to_dict(), reference=reference, eval_seed=eval_seed, timesteps=timesteps,
                 chunk=chunk, n_envs=n_envs)
    out = Path(out).resolve()
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        param_space={**(space or search_space(seeds, quick)), **fixed},
        tune_config=tune.TuneConfig(
            metric=METRIC, mode="max", num_samples=samples,
            scheduler=ASHAScheduler(time_attr="training_iteration", max_t=max(1, -(-timesteps // chunk)),
                                    grace_period=1, reduction_factor=2),
        ),
        run_config=tune.RunConfig(storage_path=str(out), name="ppo-sweep", verbose=0),
    )
    grid = tuner.fit()
    rows = []
    for res in grid:
        if res.metrics is None or METRIC not in res.metrics:
            continue
        hist = res.metrics_dataframe
        rows.append({
            **{k: res.config[k] for k in ("learning_rate", "action_prior", "n_steps", "width", "seed")},
            "timesteps": int(res.metrics["timesteps"]),
            "iterations": int(res.metrics["training_iteration"]),
            METRIC: float(res.metrics[METRIC]),
            f"best_{METRIC}": float(hist[METRIC].max()),
        })
    rows.sort(key=lambda r: -r[METRIC])
    return rows


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m agents.tune``."""
    ap = argparse.ArgumentParser(prog="python -m agents.tune", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env-id", default="msenv/MultiSpin-v0", choices=list(ENV_IDS))
    ap.add_argument("--samples", type=int, default=8, help="trials per seed (default 8)")
    ap.add_argument("--seeds", type=int, default=2, help="training seeds, as a grid (default 2)")
    ap.add_argument("--timesteps", type=int, default=200_000, help="steps per trial at most (default 200000)")
    ap.add_argument("--chunk", type=int, default=50_000, help="steps between reports (default 50000)")
    ap.add_argument("--n-envs", type=int, default=16)
    ap.add_argument("--eval-episodes", type=int, default=4)
    ap.add_argument("--eval-seed", type=int, default=10_000)
    ap.add_argument("--ray", default="local", metavar="ADDRESS", help="'local' (default) or a cluster address")
    ap.add_argument("--out", default="runs/tune", help="output directory (default runs/tune)")
    ap.add_argument("--quick", action="store_true", help="tiny sweep: K = 4, 2 samples, 1 seed, 2 × 1024 steps")
    return ap


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = build_parser()
    args = ap.parse_args(argv)
    for name in ("samples", "seeds", "timesteps", "chunk", "n_envs", "eval_episodes"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} {getattr(args, name)} is invalid; allowed: an integer ≥ 1")
    from evaluation.suites import seed_refusal

    refusal = seed_refusal("--eval-seed", args.eval_seed, range(args.eval_seed, args.eval_seed + args.eval_episodes))
    if refusal:
        ap.error(refusal)
    overrides: dict[str, Any] = {}
    if args.quick:
        overrides = dict(num_devices=4, gamma_max=8, episode_length=20)
        args.samples, args.seeds, args.timesteps, args.chunk, args.n_envs, args.eval_episodes = 2, 1, 2048, 1024, 8, 2
    cfg = env_config(args.env_id, **overrides)
    from evaluation.parallel import connect_or_exit

    connect_or_exit(ap, args.ray)
    rows = run_sweep(cfg, args.samples, args.seeds, args.timesteps, args.chunk, args.n_envs, args.eval_episodes,
                     args.eval_seed, args.out, args.ray, quick=args.quick)
    from evaluation.report import write_csv

    if rows:
        write_csv(rows, Path(args.out) / "sweep.csv")
    print(f"{'rank':>4}  {METRIC:>16}  {'best':>8}  {'steps':>8}  lr        prior  n_steps  width  seed")
    for i, r in enumerate(rows):
        print(f"{i + 1:>4}  {r[METRIC]:>16.4f}  {r[f'best_{METRIC}']:>8.4f}  {r['timesteps']:>8}  "
              f"{r['learning_rate']:.2e}  {r['action_prior']:<5}  {r['n_steps']:<7}  {r['width']:<5}  {r['seed']}")
    print(f"wrote {Path(args.out) / 'sweep.csv'} (Tune experiment in {Path(args.out) / 'ppo-sweep'})")
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
