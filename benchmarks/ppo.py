"""PPO learning speed (prints its figures; ratios measured side by side in one run).

    python -m benchmarks.ppo [--steps 16384] [--repeats 2]

1. ``learn()`` steps/s with the main job's settings (``train.py``: 16 batched envs behind
   VecNormalize, ``agents.ppo.DEFAULT_PPO``, one torch thread), SB3's stock ``MlpPolicy`` vs
   ``agents.distributions.MultiSpinPolicy`` (what ``agents.ppo.make_ppo`` builds), alternated.
2. SB3 PPO (stock ``MlpPolicy``, SB3 defaults) on 8 ``make_vec_env`` envs: msenv vs CartPole-v1.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _learn_rate(model, steps: int) -> float:
    model.learn(model.n_steps * model.n_envs)  # warm-up rollout + update
    t0 = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - t0)


def main_job_rates(steps: int, repeats: int) -> dict[str, list[float]]:
    from stable_baselines3 import PPO

    from agents.distributions import MultiSpinPolicy
    from agents.envs import make_vec_env, normalize
    from agents.ppo import DEFAULT_PPO, make_ppo
    from msenv import SystemConfig

    cfg = SystemConfig()
    out: dict[str, list[float]] = {"stock": [], "ours": []}
    for _ in range(repeats):
        for name in ("stock", "ours"):
            venv = normalize(make_vec_env(cfg, 16, 0), gamma=0.0)
            if name == "ours":
                model = make_ppo(venv, seed=0)
                assert isinstance(model.policy, MultiSpinPolicy)
            else:
                model = PPO("MlpPolicy", venv, seed=0, device="cpu", **DEFAULT_PPO)
            out[name].append(_learn_rate(model, steps))
    return out


def make_vec_env_rates(steps: int, repeats: int) -> dict[str, list[float]]:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    import msenv  # noqa: F401  (registers the ids)

    out: dict[str, list[float]] = {"msenv/MultiSpin-v0": [], "CartPole-v1": []}
    for _ in range(repeats):
        for env_id in out:
            venv = make_vec_env(env_id, n_envs=8, seed=0)
            model = PPO("MlpPolicy", venv, seed=0, device="cpu", n_steps=256)
            out[env_id].append(_learn_rate(model, steps))
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.ppo``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ppo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=16384)
    ap.add_argument("--repeats", type=int, default=2)
    return ap


def main(argv=None) -> None:
    import torch

    args = build_parser().parse_args(argv)
    torch.set_num_threads(1)
    r = main_job_rates(args.steps, args.repeats)
    s, o = np.array(r["stock"]), np.array(r["ours"])
    print(f"learn() with the main job's settings, {args.steps} steps, {args.repeats} alternated runs, 1 torch thread:")
    print(f"  SB3 stock MlpPolicy   : {', '.join(f'{x:,.0f}' for x in s)} steps/s")
    print(f"  MultiSpinPolicy (ours): {', '.join(f'{x:,.0f}' for x in o)} steps/s")
    print(f"  ratio ours/stock per pair: {', '.join(f'{x:.2f}' for x in o / s)}×  (mean {np.mean(o / s):.2f}×)")
    m = make_vec_env_rates(args.steps // 2, args.repeats)
    a, c = np.array(m["msenv/MultiSpin-v0"]), np.array(m["CartPole-v1"])
    print(f"SB3 PPO (stock MlpPolicy, n_steps 256) on 8 make_vec_env envs, {args.steps // 2} steps:")
    print(f"  msenv/MultiSpin-v0: {', '.join(f'{x:,.0f}' for x in a)} steps/s")
    print(f"  CartPole-v1       : {', '.join(f'{x:,.0f}' for x in c)} steps/s")
    print(f"  msenv / CartPole  : {', '.join(f'{x:.2f}' for x in a / c)}")


if __name__ == "__main__":
    main()
