"""PPO learning speed (prints its figures; ratios measured side by side in one run).

    python -m benchmarks.ppo [--steps 16384] [--repeats 2] [--part {all,main,cells}] [--threads 1]

1. ``learn()`` steps/s with the main job's settings (``train.py``: 16 batched envs behind
   VecNormalize, ``agents.ppo.DEFAULT_PPO``, one torch thread), SB3's stock ``MlpPolicy`` vs
   ``agents.distributions.MultiSpinPolicy`` (what ``agents.ppo.make_ppo`` builds), alternated.
2. SB3 PPO (stock ``MlpPolicy``, SB3 defaults) on 8 ``make_vec_env`` envs: msenv vs CartPole-v1.
3. The cell generator (``msenv/MultiSpin-Cells-v0``) as ``train.py --env-id`` builds it with the
   id's defaults, and as 0.5.0 did (the set policy on K ≤ 50), against the paper id (the main
   job's MLP), ``learn()`` steps/s alternated; and the cells env alone, 16 sub-envs, the batched
   :class:`msenv.envs.cells_vector.MultiSpinCellsVectorEnv` against the stepped SyncVectorEnv.
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


def cells_rates(steps: int, repeats: int) -> dict[str, list[float]]:
    """``learn()`` steps/s of the Cells id as ``train.py --env-id msenv/MultiSpin-Cells-v0`` builds it
    with its defaults (:mod:`agents.defaults`: the budget policy, the counterfactual reward, the id's
    training cells), of the 0.5.0 defaults (the set policy on the goodput, K ~ U{5 … 50}) and of the
    paper id (the main job's MLP), alternated."""
    from agents.defaults import id_config, id_defaults
    from agents.envs import attach_reference, normalize, training_env
    from agents.ppo import make_ppo
    from agents.setpolicy import set_layout
    from msenv import SystemConfig, env_config

    cells_id = "msenv/MultiSpin-Cells-v0"
    opts = id_defaults(cells_id)
    runs = {"paper id, MLP": (SystemConfig(), "mlp", None),
            "Cells id, 0.5.0 set policy": (env_config(cells_id), "set", None),
            "Cells id, train.py defaults": (env_config(cells_id, **id_config(cells_id, {})), opts.get("policy", "mlp"),
                                            opts.get("reward"))}
    out: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (cfg, policy, reward) in runs.items():
            raw = training_env(cfg, 16, 0, policy=policy, reward=reward)
            set_like = policy in ("set", "budget")
            kw = {"policy_kwargs": set_layout(cfg)} if set_like else {}
            model = make_ppo(normalize(raw, gamma=0.0, norm_obs=not set_like), seed=0, policy=policy, **kw)
            attach_reference(raw, model)
            out[name].append(_learn_rate(model, steps))
    return out


def cells_env_rates(rounds: int, repeats: int) -> dict[str, list[float]]:
    from msenv import env_config
    from msenv.envs.cells_vector import MultiSpinCellsSyncVectorEnv, MultiSpinCellsVectorEnv

    cells = env_config("msenv/MultiSpin-Cells-v0")
    out: dict[str, list[float]] = {"batched": [], "stepped (SyncVectorEnv)": []}
    act = np.full((16, cells.k_max), 3)
    for _ in range(repeats):
        for name, cls in zip(out, (MultiSpinCellsVectorEnv, MultiSpinCellsSyncVectorEnv)):
            env = cls(16, cells)
            env.reset(seed=0)
            env.step(act)
            t0 = time.perf_counter()
            for _ in range(rounds):
                env.step(act)
            out[name].append(16 * rounds / (time.perf_counter() - t0))
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.ppo``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ppo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=16384)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--part", choices=("all", "main", "cells"), default="all",
                    help="which measurements: the main job's (1, 2), the cell generator's (3), or all")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads for every run (default 1, as train.py trains)")
    return ap


def main(argv=None) -> None:
    import torch

    ap = build_parser()
    args = ap.parse_args(argv)
    if args.threads < 1:
        ap.error(f"--threads {args.threads} is invalid; allowed: an integer >= 1")
    torch.set_num_threads(args.threads)
    if args.part in ("all", "cells"):
        _print_cells(args)
    if args.part == "cells":
        return
    r = main_job_rates(args.steps, args.repeats)
    s, o = np.array(r["stock"]), np.array(r["ours"])
    print(f"learn() with the main job's settings, {args.steps} steps, {args.repeats} alternated runs, "
          f"{_threads(args)}:")
    print(f"  SB3 stock MlpPolicy   : {', '.join(f'{x:,.0f}' for x in s)} steps/s")
    print(f"  MultiSpinPolicy (ours): {', '.join(f'{x:,.0f}' for x in o)} steps/s")
    print(f"  ratio ours/stock per pair: {', '.join(f'{x:.2f}' for x in o / s)}×  (mean {np.mean(o / s):.2f}×)")
    m = make_vec_env_rates(args.steps // 2, args.repeats)
    a, c = np.array(m["msenv/MultiSpin-v0"]), np.array(m["CartPole-v1"])
    print(f"SB3 PPO (stock MlpPolicy, n_steps 256) on 8 make_vec_env envs, {args.steps // 2} steps:")
    print(f"  msenv/MultiSpin-v0: {', '.join(f'{x:,.0f}' for x in a)} steps/s")
    print(f"  CartPole-v1       : {', '.join(f'{x:,.0f}' for x in c)} steps/s")
    print(f"  msenv / CartPole  : {', '.join(f'{x:.2f}' for x in a / c)}")


def _threads(args) -> str:
    """How many torch threads the runs had, as the printed headers say it."""
    return f"{args.threads} torch thread{'s' if args.threads > 1 else ''}"


def _print_cells(args) -> None:
    r = cells_rates(args.steps, args.repeats)
    print(f"learn() on 16 batched envs, {args.steps} steps, {args.repeats} alternated runs, {_threads(args)}:")
    for name, rates in r.items():
        print(f"  {name:<28}: {', '.join(f'{x:,.0f}' for x in rates)} steps/s")
    m = np.array(r["paper id, MLP"])
    for name in ("Cells id, train.py defaults", "Cells id, 0.5.0 set policy"):
        print(f"  {name} / paper id's MLP per run: {', '.join(f'{x:.2f}' for x in np.array(r[name]) / m)}×")
    e = cells_env_rates(max(args.steps // 64, 50), args.repeats)
    b, s = np.array(e["batched"]), np.array(e["stepped (SyncVectorEnv)"])
    print("the Cells env alone, 16 sub-envs, draft length 3 everywhere:")
    print(f"  batched : {', '.join(f'{x:,.0f}' for x in b)} env steps/s")
    print(f"  stepped : {', '.join(f'{x:,.0f}' for x in s)} env steps/s")
    print(f"  batched / stepped: {', '.join(f'{x:.1f}' for x in b / s)}×")


if __name__ == "__main__":
    main()
