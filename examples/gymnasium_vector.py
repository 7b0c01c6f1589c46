"""Gymnasium's wrappers and vector envs on msenv, pasted as a script.

Three ways to run many envs: ``"sync"`` (one process, a loop), ``"async"`` (one
subprocess each; spawned children need the ``"msenv:"`` id form, which imports msenv
in them, and this script's ``__main__`` guard) and ``"vector_entry_point"`` (msenv's
batched vector env: every env in one array call). All three give the same observations
and rewards for the same seeds.

Run: ``python examples/gymnasium_vector.py``
"""

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import (
    FlattenObservation,
    NormalizeObservation,
    RecordEpisodeStatistics,
)

import msenv  # noqa: F401  (registers the ids)

ID = "msenv/MultiSpin-v0"
SMALL = dict(num_devices=4, gamma_max=6, episode_length=8)


def main() -> None:
    # the usual wrapper stack; RecordEpisodeStatistics adds info["episode"]
    # at the episode's end
    env = RecordEpisodeStatistics(
        NormalizeObservation(FlattenObservation(gym.make(ID, **SMALL)))
    )
    env.reset(seed=0)
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        done = terminated or truncated
    print(
        "one episode:", info["episode"]["l"],
        "rounds, return", round(float(info["episode"]["r"]), 1),
    )

    actions = np.array([[2, 2, 2, 2], [5, 0, 1, 6]])
    rewards = {}
    for mode in ("sync", "async", "vector_entry_point"):
        kwargs = {"vector_kwargs": {"context": "spawn"}} if mode == "async" else {}
        venv = gym.make_vec(
            "msenv:" + ID, num_envs=2, vectorization_mode=mode, **SMALL, **kwargs
        )
        venv.reset(seed=7)
        _, rewards[mode], *_ = venv.step(actions)
        venv.close()
    print(
        "first rewards:", {mode: np.round(r, 3).tolist() for mode, r in rewards.items()}
    )
    assert np.allclose(rewards["sync"], rewards["async"])
    assert np.allclose(rewards["sync"], rewards["vector_entry_point"])


if __name__ == "__main__":
    main()
