"""SB3 VecEnv adapter (msenv.envs.sb3)."""

from __future__ import annotations

import numpy as np
import pytest

import msenv  # noqa: F401
from msenv.envs.env import MultiSpinEnv
from msenv.envs.vector import MultiSpinVectorEnv


@pytest.mark.slow
def test_sb3_adapter_matches_vector_env_and_trains():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_checker import check_env  # noqa: F401
    from stable_baselines3.common.vec_env import VecNormalize

    from msenv.envs.sb3 import SB3VecEnv

    venv = SB3VecEnv(MultiSpinVectorEnv(4, episode_length=5, num_devices=4))
    venv.seed(3)
    obs = venv.reset()
    ref = MultiSpinEnv(episode_length=5, num_devices=4)
    assert np.array_equal(obs[2], ref.reset(seed=5)[0])
    for _ in range(5):
        obs, rew, done, infos = venv.step(np.full((4, 4), 2))
        _, r, _, trunc, _ = ref.step(np.full(4, 2))
        assert rew[2] == pytest.approx(r, rel=1e-6)
    assert done.all() and infos[2]["TimeLimit.truncated"]
    assert "terminal_observation" in infos[2]
    assert infos[2]["episode"]["l"] == 5
    model = PPO(
        "MlpPolicy", VecNormalize(venv),
        n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu",
    )
    model.learn(128)
    act, _ = model.predict(obs, deterministic=True)
    assert act.shape == (4, 4)
