"""RLlib's PPO on msenv's PettingZoo env (multi-agent), pasted as a script.

Every device is an agent (``device_0`` … ``device_{K-1}``) of
``msenv.envs.marl.MultiSpinParallelEnv``; RLlib's ``ParallelPettingZooEnv`` wraps it,
and one policy, ``"shared"``, acts for all of them. Needs ``pip install
"msenv[ray]"``; without a running cluster RLlib starts a local Ray instance.

Run: ``python examples/rllib_pettingzoo.py [--steps 2048]``
"""

import argparse

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.tune.registry import register_env

from msenv.envs.marl import MultiSpinParallelEnv

# a small cell, so the run is quick
SMALL = dict(num_devices=4, gamma_max=6, episode_length=8)


def make_env(env_config: dict) -> ParallelPettingZooEnv:
    """The env RLlib builds from its ``env_config`` (any config field as a keyword)."""
    return ParallelPettingZooEnv(MultiSpinParallelEnv(**env_config))


def main(steps: int = 2048) -> dict:
    """Train until ``steps`` env steps are sampled; returns the last result."""
    register_env("msenv-marl", make_env)
    config = (
        PPOConfig()
        .environment("msenv-marl", env_config=SMALL)
        # every agent (device) maps to the one shared policy
        .multi_agent(
            policies={"shared"},
            policy_mapping_fn=lambda agent_id, episode, **kw: "shared",
        )
        # sample in the driver (no remote env runner)
        .env_runners(num_env_runners=0, rollout_fragment_length=16)
        .training(
            train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1
        )
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        sampled = 0
        while sampled < steps:
            result = algo.train()
            sampled = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
    finally:
        algo.stop()
    per_agent = result["env_runners"]["num_agent_steps_sampled_lifetime"]
    print(f"RLlib multi-agent PPO: {sampled} env steps; steps per agent {per_agent}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=2048, help="environment steps of training"
    )
    main(parser.parse_args().steps)
