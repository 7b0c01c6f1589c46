"""RLlib's PPO on msenv (single-agent), pasted as a script.

RLlib builds the env in its own worker processes from the id alone, so give it the
``"msenv:<id>"`` form: Gymnasium imports msenv in each worker (registering the ids)
before it makes the env. ``env_config`` holds any config field, as keywords of
``gym.make``. Needs ``pip install "msenv[ray]"``; without a running cluster RLlib
starts a local Ray instance.

Run: ``python examples/rllib_ppo.py [--steps 2048]``
"""

import argparse

from ray.rllib.algorithms.ppo import PPOConfig

ID = "msenv/MultiSpin-v0"
# a small cell, so the run is quick
SMALL = dict(num_devices=4, gamma_max=6, episode_length=8)


def main(steps: int = 2048) -> dict:
    """Train until ``steps`` env steps are sampled; returns the last result."""
    config = (
        PPOConfig()
        .environment("msenv:" + ID, env_config=SMALL)
        # one remote env runner, which collects 32-step fragments
        .env_runners(num_env_runners=1, rollout_fragment_length=32)
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
    ret = result["env_runners"].get("episode_return_mean", float("nan"))
    print(f"RLlib PPO: {sampled} env steps, mean episode return {ret:.1f}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=2048, help="environment steps of training"
    )
    main(parser.parse_args().steps)
