"""Stable-Baselines3 on msenv, pasted as a script: make_vec_env, PPO, evaluate_policy.

``make_vec_env`` passes ``render_mode="rgb_array"``, which msenv accepts; a DummyVecEnv
runs the envs in this process (for subprocesses see ``examples/sb3_subprocess.py``; for
msenv's own batched vector env, ``msenv.envs.sb3``).

Run: ``python examples/sb3_ppo.py [--steps 2048]``
"""

import argparse

from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

import msenv  # noqa: F401  (registers the ids)

ID = "msenv/MultiSpin-v0"
# a small cell, so the run is quick
SMALL = dict(num_devices=4, gamma_max=6, episode_length=16)


def main(steps: int = 2048) -> None:
    venv = make_vec_env(ID, n_envs=4, seed=0, env_kwargs=SMALL)
    model = PPO(
        "MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu"
    )
    model.learn(steps)
    mean, std = evaluate_policy(model, venv, n_eval_episodes=4, deterministic=True)
    print(f"SB3 PPO: {steps} env steps, episode return {mean:.1f} ± {std:.1f}")
    venv.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=2048, help="environment steps of training"
    )
    main(parser.parse_args().steps)
