"""SB3's PPO on msenv's own batched vector env, pasted as a script: every
env of the vector in one array call (``msenv.envs.vector.MultiSpinVectorEnv``),
adapted to SB3's ``VecEnv`` by ``msenv.envs.sb3.SB3VecEnv``, normalised by
SB3's ``VecNormalize``.

Run: ``python examples/sb3_batched.py [--steps 2048]``
"""

import argparse

import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecNormalize

from msenv.envs.sb3 import SB3VecEnv
from msenv.envs.vector import MultiSpinVectorEnv

# a small cell, so the run is quick: 8 copies of 4 devices, 16 rounds an episode
SMALL = dict(num_devices=4, gamma_max=6, episode_length=16)


def main(steps: int = 2048) -> None:
    venv = VecNormalize(SB3VecEnv(MultiSpinVectorEnv(8, **SMALL)))
    venv.seed(0)
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=2, seed=0,
                device="cpu")
    model.learn(steps)
    obs = venv.reset()
    # a draft length per device of every copy
    action, _ = model.predict(obs, deterministic=True)
    print(f"SB3 PPO on the batched env, {steps} steps: "
          f"draft lengths {action[0]} (copy 0), mean {np.mean(action):.2f}")
    venv.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2048,
                        help="environment steps of training")
    main(parser.parse_args().steps)
