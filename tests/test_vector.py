"""Batched VectorEnv, SB3 adapter and PettingZoo variant (issue: vector + multi-agent)."""

import gymnasium as gym
import numpy as np
import pytest

import msenv  # noqa: F401
from msenv.env import INFO_KEYS, MultiSpinEnv
from msenv.vector import MultiSpinVectorEnv


def _sync(n, **kw):
    return gym.vector.SyncVectorEnv([lambda: MultiSpinEnv(**kw) for _ in range(n)])


@pytest.mark.parametrize("kw", [dict(episode_length=4), dict(episode_length=3, mode_policy="random", num_devices=6),
                                dict(episode_length=5, fading="reciprocal", p_dl_dbm_range=(10.0, 40.0))])
def test_batched_equals_single_envs_bit_identical(kw):
    n = 5
    vec = MultiSpinVectorEnv(n, **kw)
    ref = _sync(n, **kw)
    o1, _ = vec.reset(seed=42)
    o2, _ = ref.reset(seed=42)
    assert np.array_equal(o1, o2)
    k = vec.config.num_devices
    rng = np.random.default_rng(0)
    for _ in range(13):  # crosses several autoresets
        a = rng.integers(0, 21, (n, k))
        s1, s2 = vec.step(a), ref.step(a)
        for x, y in zip(s1[:4], s2[:4]):
            assert np.array_equal(x, y)
        i1, i2 = s1[4], s2[4]
        live = i1["_tokens"]
        assert np.array_equal(live, i2.get("_tokens", np.zeros(n, bool)))
        for key in INFO_KEYS:
            if live.any():
                assert np.array_equal(i1[key][live], i2[key][live]), key


def test_make_vec_entry_point_and_seed_list():
    v = gym.make_vec("msenv/MultiSpin-DeepSeek-v0", num_envs=3, vectorization_mode="vector_entry_point", num_devices=4)
    assert isinstance(v, MultiSpinVectorEnv) and v.config.preset == "deepseek-r1" and v.config.num_devices == 4
    o1, _ = v.reset(seed=[5, 6, 7])
    single = MultiSpinEnv("deepseek-r1", num_devices=4)
    for i, s in enumerate([5, 6, 7]):
        assert np.array_equal(o1[i], single.reset(seed=s)[0])
    assert v.observation_space.shape == (3, 22) and v.action_space.shape == (3, 4)
    with pytest.raises(ValueError, match="device 2 of env 1"):
        a = np.zeros((3, 4), int)
        a[1, 2] = 99
        v.step(a)
    with pytest.raises(ValueError, match="num_envs"):
        MultiSpinVectorEnv(0)
    with pytest.raises(ValueError, match="autoreset_mode"):
        MultiSpinVectorEnv(2, autoreset_mode="sometimes")


def test_same_step_autoreset_final_obs():
    kw = dict(episode_length=3, num_devices=3)
    v = MultiSpinVectorEnv(2, autoreset_mode="same_step", **kw)
    single = MultiSpinEnv(**kw)
    v.reset(seed=1)
    so, _ = single.reset(seed=1)
    a = np.ones((2, 3), int)
    for t in range(3):
        obs, r, term, trunc, info = v.step(a)
        so, sr, _, st, _ = single.step(a[0])
        assert r[0] == sr
    assert trunc.all() and np.array_equal(info["final_obs"][0], so)
    so, _ = single.reset()
    assert np.array_equal(obs[0], so)  # same-step reset continues the env's own stream


def test_sb3_adapter_matches_vector_env_and_trains():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_checker import check_env  # noqa: F401
    from stable_baselines3.common.vec_env import VecNormalize

    from msenv.sb3 import SB3VecEnv

    venv = SB3VecEnv(MultiSpinVectorEnv(4, episode_length=5, num_devices=4))
    venv.seed(3)
    obs = venv.reset()
    ref = MultiSpinEnv(episode_length=5, num_devices=4)
    assert np.array_equal(obs[2], ref.reset(seed=5)[0])
    for t in range(5):
        obs, rew, done, infos = venv.step(np.full((4, 4), 2))
        _, r, _, trunc, _ = ref.step(np.full(4, 2))
        assert rew[2] == pytest.approx(r, rel=1e-6)
    assert done.all() and infos[2]["TimeLimit.truncated"] and "terminal_observation" in infos[2]
    assert infos[2]["episode"]["l"] == 5
    model = PPO("MlpPolicy", VecNormalize(venv), n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(128)
    act, _ = model.predict(obs, deterministic=True)
    assert act.shape == (4, 4)


def test_pettingzoo_api_and_seed_tests():
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test
    from pettingzoo.test.seed_test import parallel_seed_test

    from msenv.marl import MultiSpinParallelEnv

    parallel_api_test(MultiSpinParallelEnv(episode_length=15, num_devices=5), num_cycles=60)
    parallel_seed_test(lambda: MultiSpinParallelEnv(episode_length=15, num_devices=5), num_cycles=40)


def test_pettingzoo_rewards_and_observations_match_single_env():
    pytest.importorskip("pettingzoo")
    from msenv.marl import MultiSpinParallelEnv

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


def test_vector_reset_config_option_uses_the_env_rule():
    v = MultiSpinVectorEnv(2, num_devices=3)
    v.reset(seed=0, options={"config": {"p_dl_dbm": 12.0}})
    assert v.config.p_dl_dbm == 12.0
    with pytest.raises(ValueError, match="num_devices"):
        v.reset(seed=0, options={"config": {"num_devices": 4}})
