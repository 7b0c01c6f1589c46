"""PettingZoo variant (msenv.envs.marl)."""

from __future__ import annotations

import numpy as np
import pytest
from configs import DYNAMIC

import msenv
from msenv.engine import functional as F
from msenv.envs.env import MultiSpinEnv


def test_pettingzoo_local_obs_grows_with_the_extras():
    from pettingzoo.test import parallel_api_test

    from msenv.envs.marl import MultiSpinParallelEnv

    env = MultiSpinParallelEnv(num_devices=3, episode_length=5, **DYNAMIC[2])
    assert env.observation_space("device_0").shape == (F.device_features(env.config) + 2 + 3,)
    parallel_api_test(env, num_cycles=10)


def test_pettingzoo_api_and_seed_tests():
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test
    from pettingzoo.test.seed_test import parallel_seed_test

    from msenv.envs.marl import MultiSpinParallelEnv

    parallel_api_test(MultiSpinParallelEnv(episode_length=15, num_devices=5), num_cycles=60)
    parallel_seed_test(lambda: MultiSpinParallelEnv(episode_length=15, num_devices=5), num_cycles=40)
    hetero = {k: v for k, v in msenv.ENV_IDS["msenv/MultiSpin-Hetero-DR-v0"].items() if k != "preset"}
    parallel_api_test(MultiSpinParallelEnv(episode_length=15, num_devices=5, **hetero), num_cycles=30)


def test_pettingzoo_rewards_and_observations_match_single_env():
    pytest.importorskip("pettingzoo")
    from msenv.envs.marl import MultiSpinParallelEnv

    for mode in ("shared", "per_device"):
        pz = MultiSpinParallelEnv(num_devices=4, reward=mode, episode_length=4)
        single = MultiSpinEnv(num_devices=4, episode_length=4)
        obs, _ = pz.reset(seed=9)
        so, _ = single.reset(seed=9)
        assert np.array_equal(obs["device_2"][:5], so[10:15]) and np.array_equal(obs["device_2"][5:7], so[-2:])
        assert obs["device_0"][7] == pytest.approx(so[0:20:5].mean(), rel=1e-6)
        acts = {f"device_{k}": k + 1 for k in range(4)}
        _, rew, _, _, _ = pz.step(acts)
        _, r, _, _, info = single.step(np.arange(1, 5))
        if mode == "shared":
            assert all(v == r for v in rew.values())
        else:
            assert sum(rew.values()) == pytest.approx(r)
            assert rew["device_3"] == pytest.approx(info["tokens"][3] / info["latency"])
    with pytest.raises(ValueError, match="reward"):
        MultiSpinParallelEnv(reward="selfish")
    with pytest.raises(ValueError, match="missing"):
        pz.reset(seed=0)
        pz.step({"device_0": 1})
