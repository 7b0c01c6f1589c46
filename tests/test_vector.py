"""Batched VectorEnv, SB3 adapter and PettingZoo variant (issue: vector + multi-agent)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from configs import DYNAMIC

import msenv
from msenv import SystemConfig
from msenv.engine.base import INFO_KEYS
from msenv.engine.functional import info_keys
from msenv.envs.env import MultiSpinEnv
from msenv.envs.vector import MultiSpinVectorEnv


def _sync(n, **kw):
    return gym.vector.SyncVectorEnv([lambda: MultiSpinEnv(**kw) for _ in range(n)])


@pytest.mark.parametrize("kw", [dict(episode_length=4), dict(episode_length=3, mode_policy="random", num_devices=6),
                                dict(episode_length=5, fading="reciprocal", p_dl_dbm_range=(10.0, 40.0)),
                                dict(msenv.ENV_IDS["msenv/MultiSpin-Hetero-DR-v0"], episode_length=4)])
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
    for _ in range(3):
        obs, r, term, trunc, info = v.step(a)
        so, sr, _, st, _ = single.step(a[0])
        assert r[0] == sr
    assert trunc.all() and np.array_equal(info["final_obs"][0], so)
    so, _ = single.reset()
    assert np.array_equal(obs[0], so)  # same-step reset continues the env's own stream


def test_vector_reset_config_option_uses_the_env_rule():
    v = MultiSpinVectorEnv(2, num_devices=3)
    v.reset(seed=0, options={"config": {"p_dl_dbm": 12.0}})
    assert v.config.p_dl_dbm == 12.0
    with pytest.raises(ValueError, match="num_devices"):
        v.reset(seed=0, options={"config": {"num_devices": 4}})


@pytest.mark.parametrize("over", DYNAMIC)
def test_dynamic_vector_env_equals_sync_vector_env(over):
    cfg = SystemConfig(num_devices=4, episode_length=6, **over)
    n = 3
    batched = MultiSpinVectorEnv(n, cfg)
    sync = gym.vector.SyncVectorEnv([lambda: MultiSpinEnv(cfg) for _ in range(n)])
    o1, _ = batched.reset(seed=11)
    o2, _ = sync.reset(seed=11)
    np.testing.assert_array_equal(o1, o2)
    rng = np.random.default_rng(1)
    for _ in range(15):
        a = rng.integers(0, 21, (n, 4))
        r1 = batched.step(a)
        r2 = sync.step(a)
        for x, y in zip(r1[:4], r2[:4]):
            np.testing.assert_array_equal(x, y)
        live = r1[4]["_tokens"]  # the step after an episode's end is a reset step (no info)
        assert np.array_equal(live, r2[4].get("_tokens", np.zeros(n, bool)))
        for key in info_keys(cfg):
            if live.any():
                np.testing.assert_array_equal(r1[4][key][live], r2[4][key][live], err_msg=key)


@pytest.mark.slow
def test_dynamic_id_in_spawned_subprocesses_matches_in_process():
    """A fresh (spawned) process binds SciPy's J0 and betaincinv for the cached kernels: SB3's
    SubprocVecEnv on a dynamic id gives the in-process env's observations and rewards."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    env_id = "msenv/MultiSpin-Dynamic-Small-v0"
    venv = make_vec_env("msenv:" + env_id, n_envs=2, seed=7, vec_env_cls=SubprocVecEnv,
                        vec_env_kwargs=dict(start_method="spawn"))
    try:
        obs = venv.reset()
        refs = [gym.make(env_id) for _ in range(2)]
        np.testing.assert_array_equal(obs, np.stack([e.reset(seed=7 + i)[0] for i, e in enumerate(refs)]))
        for t in range(12):
            actions = np.array([[1 + (t + i) % 6] * 6 for i in range(2)])
            obs, rew, _, _ = venv.step(actions)
            for i, e in enumerate(refs):
                o, r, *_ = e.step(actions[i])
                np.testing.assert_array_equal(obs[i], o)
                assert rew[i] == pytest.approx(r, rel=1e-6)  # SB3 stores rewards as float32
    finally:
        venv.close()
