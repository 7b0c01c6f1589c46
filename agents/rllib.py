"""RLlib (new API stack) PPO on msenv, with TensorBoard output and the same paired comparison
table as ``train.py``.

    python -m agents.rllib                          # local Ray instance, K = 20, 200k steps
    python -m agents.rllib --ray ray://head:10001 --env-runners 32 --timesteps 2000000
    python -m agents.rllib --quick                  # smoke run

The environment is the registered id in its ``"msenv:<id>"`` form, so every EnvRunner (local or on
a cluster) imports msenv before ``gymnasium.make``. Scalars go to TensorBoard under
``<log-dir>/tb`` (``rllib/episode_return_mean``, ``rllib/episode_throughput`` …). After training,
the RLModule's deterministic policy (argmax of each device's categorical) plays the held-out
episodes beside GreedySAA, OptimalUniform and Fixed(4) (paired, same seeds) and the table is
printed and written as CSV + JSON. Needs the ``[ray]`` extra.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from baselines.base import Controller
from msenv import ENV_IDS, env_config
from msenv.config import SystemConfig
from msenv.engine.functional import RoundContext

BASELINES = ("greedy-saa", "optimal-uniform", "fixed-4")


class RLModuleController(Controller):
    """An RLlib RLModule's deterministic policy behind the common controller interface."""

    def __init__(self, module, config: SystemConfig, name: str = "rllib-ppo") -> None:
        super().__init__()
        self.module, self.config, self.name = module, config, name

    def act(self, context: RoundContext, obs: np.ndarray | None = None) -> np.ndarray:
        import torch

        if obs is None:
            raise ValueError(f"controller {self.name!r} needs the observation: call act(context, obs)")
        with torch.no_grad():
            out = self.module.forward_inference({"obs": torch.as_tensor(np.asarray(obs, np.float32)[None])})
        logits = out["action_dist_inputs"][0].numpy()
        return logits.reshape(self.config.num_devices, self.config.gamma_max + 1).argmax(axis=-1)


def build_config(config: SystemConfig, env_id: str, env_runners: int, seed: int, quick: bool = False):
    """The PPOConfig: the ``msenv:`` id form, the config's fields as ``env_config``."""
    from ray.rllib.algorithms.ppo import PPOConfig

    fields = {k: v for k, v in config.to_dict().items() if k != "preset"}
    batch = 256 if quick else 4000
    return (
        PPOConfig()
        .environment("msenv:" + env_id, env_config=fields)
        .env_runners(num_env_runners=env_runners, rollout_fragment_length="auto")
        .training(train_batch_size_per_learner=batch, minibatch_size=min(128, batch), num_epochs=4 if quick else 10,
                  gamma=0.0, lambda_=0.0, lr=3e-4)
        .rl_module(model_config={"fcnet_hiddens": [128, 128], "fcnet_activation": "tanh"})
        .debugging(seed=seed)
    )


SCALARS = ("episode_return_mean", "episode_len_mean", "num_env_steps_sampled_lifetime")


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m agents.rllib``."""
    ap = argparse.ArgumentParser(prog="python -m agents.rllib", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env-id", default="msenv/MultiSpin-v0", choices=list(ENV_IDS))
    ap.add_argument("--timesteps", type=int, default=200_000, help="environment steps (default 200000)")
    ap.add_argument("--env-runners", type=int, default=1, help="RLlib EnvRunner actors (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-episodes", type=int, default=10)
    ap.add_argument("--eval-seed", type=int, default=10_000)
    ap.add_argument("--ray", default="local", metavar="ADDRESS", help="'local' (default) or a cluster address")
    ap.add_argument("--log-dir", default="runs/rllib", help="output directory (default runs/rllib)")
    ap.add_argument("--quick", action="store_true", help="smoke run: K = 4, 1024 steps, 2 held-out episodes")
    return ap


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = build_parser()
    args = ap.parse_args(argv)
    for name in ("timesteps", "eval_episodes"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} {getattr(args, name)} is invalid; allowed: an integer ≥ 1")
    if args.env_runners < 0:
        ap.error(f"--env-runners {args.env_runners} is invalid; allowed: an integer ≥ 0")
    from evaluation.suites import seed_refusal

    for flag, value, seeds in (("--seed", args.seed, range(args.seed, args.seed + max(args.env_runners, 1) + 1)),
                               ("--eval-seed", args.eval_seed,
                                range(args.eval_seed, args.eval_seed + args.eval_episodes))):
        refusal = seed_refusal(flag, value, seeds)
        if refusal:
            ap.error(refusal)
    overrides: dict[str, Any] = {}
    if args.quick:
        overrides = dict(num_devices=4, gamma_max=8, episode_length=20)
        args.timesteps, args.eval_episodes = min(args.timesteps, 1024), 2
    cfg = env_config(args.env_id, **overrides)
    from evaluation.parallel import connect_or_exit

    connect_or_exit(ap, args.ray)
    out = Path(args.log_dir)
    out.mkdir(parents=True, exist_ok=True)

    from torch.utils.tensorboard import SummaryWriter

    from evaluation.harness import Entry, evaluate, parse_entry
    from evaluation.parallel import ray_init
    from evaluation.report import print_table, summarize, write_csv, write_json

    ray_init(args.ray)
    algo = build_config(cfg, args.env_id, args.env_runners, args.seed, args.quick).build_algo()
    writer = SummaryWriter(str(out / "tb"))
    t0 = time.perf_counter()
    steps, history = 0, []
    try:
        while steps < args.timesteps:
            res = algo.train()
            er = res["env_runners"]
            steps = int(er.get("num_env_steps_sampled_lifetime", res.get("num_env_steps_sampled_lifetime", 0)))
            row = {k: float(er[k]) for k in SCALARS if k in er}
            if "episode_return_mean" in row:
                # mean per-round goodput of the finished episodes (reward = goodput × reward_scale)
                row["goodput"] = row["episode_return_mean"] / (cfg.episode.episode_length * cfg.episode.reward_scale)
            for key, val in row.items():
                writer.add_scalar(f"rllib/{key}", val, steps)
            history.append({"steps": steps, **row})
        t_train = time.perf_counter() - t0
        module = algo.get_module()
        ctrl = RLModuleController(module, cfg)
        results = evaluate([parse_entry(n) for n in BASELINES[:1]] + [Entry("rllib-ppo", lambda: ctrl)]
                           + [parse_entry(n) for n in BASELINES[1:]], cfg, args.eval_episodes, args.eval_seed)
    finally:
        writer.close()
        algo.stop()
    rows = summarize(results)
    print_table(rows, f"RLlib PPO vs baselines: {cfg.preset}, K={cfg.num_devices}, {args.eval_episodes} held-out "
                      f"episodes × {cfg.episode.episode_length} rounds (seeds {args.eval_seed}..), {steps} steps")
    ppo = next(r for r in rows if r["controller"] == "rllib-ppo")
    print(f"RLlib PPO / GreedySAA (paired per episode): {ppo['rel_throughput']:.4f} ± "
          f"{ppo['rel_throughput_ci95']:.4f}; "
          f"training {t_train:.0f} s")
    write_csv(rows, out / "comparison.csv")
    write_json({"args": vars(args), "config": cfg.to_dict(), "table": rows, "training": history,
                "train_seconds": t_train}, out / "comparison.json")
    print(f"wrote {out / 'comparison.csv'}, {out / 'comparison.json'}; TensorBoard: tensorboard --logdir {out / 'tb'}")
    return {"rows": rows, "history": history, "log_dir": str(out)}


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
