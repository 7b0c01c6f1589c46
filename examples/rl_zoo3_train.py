"""rl-zoo3 trains PPO on msenv with msenv's hyperparameters, pasted as a script.

msenv ships rl-zoo3's hyperparameter file, ``agents/hyperparams/ppo.yml`` (one entry
per id, generated from ``agents/defaults.py``): ``--gym-packages msenv`` makes the zoo
import msenv (registering the ids), ``--conf-file`` points it to that file. The zoo
saves the agent and its ``VecNormalize`` statistics, which SB3 loads back to play it.
Needs ``pip install "msenv[zoo]"``.

Run: ``python examples/rl_zoo3_train.py [--steps 2048] [--env-id ID] [--out logs/zoo]``
"""

import argparse
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

import msenv  # noqa: F401  (registers the ids)
from agents.hyperparams import PATH  # the installed ppo.yml

ID = "msenv/MultiSpin-v0"


def main(steps: int = 2048, env_id: str = ID, out: str = "logs/zoo") -> Path:
    """Train with rl-zoo3's command line, play the agent; returns its run folder."""
    subprocess.run([
        sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", env_id,
        "--gym-packages", "msenv", "--conf-file", str(PATH),
        "-n", str(steps),  # env steps (at least one rollout: n_envs × n_steps)
        "--eval-freq", "-1", "--log-interval", "-1", "--seed", "0", "-f", out,
    ], check=True)
    # the zoo's run folder <out>/ppo/<name>_<n>: <name>.zip and <name>/vecnormalize.pkl
    name = env_id.replace("/", "-")
    runs = Path(out, "ppo").glob(f"{name}_*")
    run = max(runs, key=lambda p: int(p.name.rsplit("_", 1)[1]))  # the latest
    model = PPO.load(run / f"{name}.zip", device="cpu")
    venv = DummyVecEnv([lambda: gym.make(env_id)])
    venv = VecNormalize.load(str(run / name / "vecnormalize.pkl"), venv)
    venv.training, venv.norm_reward = False, False  # play: freeze it, raw rewards
    mean, _ = evaluate_policy(model, venv, n_eval_episodes=1, warn=False)
    print(f"rl-zoo3 PPO on {env_id}: {run}, one episode's return {mean:.1f}")
    return run


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=2048, help="environment steps of training"
    )
    parser.add_argument("--env-id", default=ID, help="a registered id of ppo.yml")
    parser.add_argument("--out", default="logs/zoo", help="rl-zoo3's log folder")
    args = parser.parse_args()
    main(args.steps, args.env_id, args.out)
