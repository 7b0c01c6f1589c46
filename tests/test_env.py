"""MultiSpinEnv (model §8): API conformance, determinism, info consistency, bad input."""

from __future__ import annotations

import multiprocessing as mp
import os
import warnings

import gymnasium as gym
import numpy as np
import pytest
from configs import DYNAMIC
from gymnasium.utils.env_checker import check_env as gym_check_env

import msenv
from msenv import ENV_IDS, MultiSpinEnv, SystemConfig
from msenv.engine.functional import info_keys
from msenv.model.reactive import MODE_NONE


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_gymnasium_check_env_no_warnings(env_id, display):
    env = gym.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(env.unwrapped, skip_render_check=False)


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_sb3_check_env_no_warnings(env_id):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sb3_check_env(gym.make(env_id).unwrapped, warn=True)


def test_registration_is_idempotent_and_presets_differ():
    msenv.register_envs()
    msenv.register_envs()
    gym.register_envs(msenv)
    q = gym.make("msenv/MultiSpin-v0").unwrapped.config
    d = gym.make("msenv/MultiSpin-DeepSeek-v0").unwrapped.config
    assert q.preset == "qwen2.5" and d.preset == "deepseek-r1"
    assert d.t_verify_base_s == 0.0693


def test_make_with_config_and_overrides():
    cfg = SystemConfig(num_devices=4, gamma_max=6)
    env = gym.make("msenv/MultiSpin-v0", config=cfg)
    assert env.action_space.nvec.tolist() == [7] * 4
    assert env.observation_space.shape == (22,)
    env2 = gym.make("msenv/MultiSpin-DeepSeek-v0", num_devices=3, p_dl_dbm=20.0)
    assert env2.unwrapped.config.num_devices == 3 and env2.unwrapped.config.p_dl_dbm == 20.0
    assert env2.unwrapped.config.preset == "deepseek-r1"
    with pytest.raises(ValueError, match="num_devices"):
        gym.make("msenv/MultiSpin-v0", num_devices=0)


def _rollout(env, seed, n=30):
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = [obs]
    for _ in range(n):
        obs, r, term, trunc, info = env.step(rng.integers(0, env.unwrapped.config.gamma_max + 1,
                                                          env.unwrapped.config.num_devices))
        out += [obs, np.array([r]), info["tokens"], info["modes"], info["dl_power"]]
        if trunc:
            obs, _ = env.reset()
    return out


def test_same_seed_same_trajectory_different_seed_differs():
    a = _rollout(gym.make("msenv/MultiSpin-v0", episode_length=7), 3)
    b = _rollout(gym.make("msenv/MultiSpin-v0", episode_length=7), 3)
    c = _rollout(gym.make("msenv/MultiSpin-v0", episode_length=7), 4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def _spawn_worker(q):
    import gymnasium as gym_

    env = gym_.make("msenv:msenv/MultiSpin-v0")
    obs, _ = env.reset(seed=11)
    q.put(obs)


@pytest.mark.slow
def test_make_by_module_id_in_spawned_subprocess():
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_spawn_worker, args=(q,))
    p.start()
    obs = q.get(timeout=120)
    p.join(timeout=60)
    assert p.exitcode == 0
    ref, _ = gym.make("msenv/MultiSpin-v0").reset(seed=11)
    np.testing.assert_array_equal(obs, ref)


@pytest.mark.slow
def test_async_vector_env_spawn():
    envs = gym.make_vec("msenv:msenv/MultiSpin-v0", num_envs=2, vectorization_mode="async",
                        vector_kwargs={"context": "spawn"})
    obs, _ = envs.reset(seed=0)
    obs2, r, term, trunc, info = envs.step(np.full((2, 20), 3))
    assert obs2.shape == (2, 102) and np.all(r > 0) and info["tokens"].shape == (2, 20)
    envs.close()


@pytest.mark.parametrize("policy", ["optimal", "all_ul", "all_dl", "random"])
def test_info_is_consistent(policy):
    env = MultiSpinEnv(mode_policy=policy, episode_length=50, reward_scale=0.01)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    tot_tok = tot_t = 0.0
    for _ in range(50):
        obs, r, term, trunc, info = env.step(rng.integers(0, 21, 20))
        assert set(info) == set(msenv.INFO_KEYS)
        assert info["latency"] == pytest.approx(info["t_draft"] + info["t_verify"] + info["t_com"], rel=1e-12)
        assert info["goodput"] == pytest.approx(info["tokens"].sum() / info["latency"], rel=1e-12)
        assert r == pytest.approx(0.01 * info["goodput"])
        assert np.array_equal(info["modes"] != MODE_NONE, info["rejected"])
        assert np.all(info["dl_power"][info["modes"] != 2] == 0)
        if (info["modes"] == 2).any():
            assert info["dl_power"].sum() == pytest.approx(env.config.p_dl_w, rel=1e-9)
        assert np.all(info["tokens"] == info["accepted"] + 1)
        assert np.all(info["ul_delay"][~info["rejected"]] == 0)
        assert env.observation_space.contains(obs)
        tot_tok += info["tokens"].sum()
        tot_t += info["latency"]
        assert info["episode_throughput"] == pytest.approx(tot_tok / tot_t)
        assert not term
    assert trunc


def test_context_matches_state_and_next_round():
    env = MultiSpinEnv()
    env.reset(seed=1)
    ctx = env.context
    assert ctx.alpha.shape == (20,) and set(np.unique(ctx.alpha)) <= set(env.config.acceptance_rates)
    assert np.all((ctx.t_draft >= 0.0152) & (ctx.t_draft <= 0.0152 * 1.15))
    g_before = ctx.g_ul.copy()
    _, _, _, _, info = env.step(np.full(20, 20))
    # the round used the context's gains: recompute UL delays of rejected devices
    m = info["rejected"].sum()
    b = 10e6 / m
    tau = 34816 / (b * np.log2(1 + ctx.p_ul_w * g_before / (env.config.n0_server_w_hz * b)))
    np.testing.assert_allclose(info["ul_delay"][info["rejected"]], tau[info["rejected"]], rtol=1e-12)
    assert not np.array_equal(env.context.g_ul, g_before)  # fading redrawn each round


BAD_ACTIONS = [
    (np.full(19, 3), "shape"),
    (np.full((2, 20), 3), "shape"),
    (np.r_[np.full(19, 3), 21], "device 19"),
    (np.r_[-1, np.full(19, 3)], "device 0"),
    (np.r_[3.0, np.nan, np.full(18, 3.0)], "device 1"),
    (np.r_[3.5, np.full(19, 3.0)], "device 0"),
    (np.array(["3"] * 20), "dtype"),
    (np.full(20, 3 + 0j), "dtype"),
]


@pytest.mark.parametrize("action,match", BAD_ACTIONS)
def test_bad_actions_raise_clear_errors(action, match):
    env = MultiSpinEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match) as e:
        env.step(action)
    assert "allowed" in str(e.value) or "expected" in str(e.value)


def test_float_integral_actions_and_lists_accepted():
    env = MultiSpinEnv(num_devices=3)
    env.reset(seed=0)
    env.step([1, 2, 3])
    env.step(np.array([1.0, 0.0, 20.0]))


def test_step_before_reset_and_bad_reset_options():
    env = MultiSpinEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(20, int))
    with pytest.raises(ValueError, match="num_devices"):
        env.reset(seed=0, options={"config": {"num_devices": 5}})
    env.reset(seed=0, options={"config": {"p_dl_dbm": 10.0}})
    assert env.config.p_dl_dbm == 10.0


@pytest.mark.parametrize(
    "overrides",
    [
        dict(num_devices=1),
        dict(num_devices=200),
        dict(p_ul_dbm=-30.0, p_dl_dbm=-30.0),
        dict(distance_range_m=(5000.0, 20000.0), p_ul_dbm=-30.0),
        dict(p_ul_dbm_range=(-30.0, 40.0), p_dl_dbm_range=(-30.0, 50.0), mode_policy="random"),
        dict(fading="reciprocal", fading_redraw="episode", verify_batch="drafting", t_verify_per_token_s=0.001),
        dict(acceptance_rates=(1.0, 0.01, 0.5, 0.99)),
    ],
)
def test_extreme_configs_give_finite_values(overrides):
    env = MultiSpinEnv(episode_length=40, **overrides)
    rng = np.random.default_rng(0)
    k = env.config.num_devices
    for ep in range(5):
        obs, _ = env.reset(seed=ep)
        assert np.all(np.isfinite(obs)) and env.observation_space.contains(obs)
        done = False
        while not done:
            obs, r, term, trunc, info = env.step(rng.integers(0, 21, k))
            done = term or trunc
            assert np.isfinite(r) and r > 0 and env.observation_space.contains(obs)
            for key in ("latency", "t_com", "goodput"):
                assert np.isfinite(info[key])
            assert np.all(np.isfinite(info["dl_power"])) and np.all(np.isfinite(info["ul_delay"]))


def test_render_ansi():
    env = MultiSpinEnv(render_mode="ansi")
    env.reset(seed=0)
    env.step(np.full(20, 4))
    text = env.render()
    assert "goodput" in text and len(text.split("[")[1].strip().rstrip("]")) == 20
    with pytest.raises(ValueError, match="render_mode"):
        MultiSpinEnv(render_mode="rgb")


@pytest.mark.parametrize("over", DYNAMIC)
def test_dynamic_configs_pass_the_env_checkers_and_bound_the_obs(over, display):
    import warnings

    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = gym.make("msenv/MultiSpin-v0", num_devices=5, episode_length=30, **over).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=False)
        sb3_check(MultiSpinEnv(num_devices=5, episode_length=30, **over), warn=True)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs, r, _, _, info = env.step(rng.integers(0, 21, 5))
        assert env.observation_space.contains(obs) and np.isfinite(r) and r >= 0
        assert set(info) == set(info_keys(env.config))


def test_dynamic_ids_are_registered_and_pass_check_env(display):
    import warnings

    from gymnasium.utils.env_checker import check_env

    for env_id in msenv.DYNAMIC_IDS:
        env = gym.make(env_id)
        assert not env.unwrapped.config.is_paper_scenario
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped, skip_render_check=False)
    small = gym.make("msenv/MultiSpin-Dynamic-Small-v0").unwrapped.config
    assert (small.num_devices, small.p_dl_dbm, small.alpha_concentration) == (6, 15.0, 5.0)


@pytest.mark.slow
def test_a_slow_first_use_prints_one_notice_and_a_warm_one_none(capfd, monkeypatch):
    """Compiling the kernels on a machine's first use takes seconds: one line on stderr says so;
    a slow block that compiles nothing (a busy machine loading cached kernels) and any later
    process print nothing."""
    import subprocess
    import sys
    import time

    from numba import njit

    from msenv.model.numeric import compile_notice

    monkeypatch.setenv("MSENV_COMPILE_NOTICE_S", "0.05")
    with compile_notice("the test's kernels"):
        njit(lambda x: x * 3 + 1)(2.0)  # a new function: numba compiles it
        time.sleep(0.2)
    err = capfd.readouterr().err.strip().splitlines()
    assert err == ["msenv: compiling the test's kernels (first use on this machine; cached for later runs) ..."]
    with compile_notice("nothing compiled"):
        time.sleep(0.3)  # slow, but no compile
    time.sleep(0.1)
    assert capfd.readouterr().err == ""
    monkeypatch.delenv("MSENV_COMPILE_NOTICE_S")
    with compile_notice("nothing slow"):
        pass
    time.sleep(0.1)
    assert capfd.readouterr().err == ""
    code = "import gymnasium as gym, msenv; gym.make('msenv/MultiSpin-v0'); gym.make('msenv/MultiSpin-Dynamic-v0')"
    # a warm process loads every kernel from the cache: no compile, so no notice at the default 2 s however
    # loaded the machine
    env = {**os.environ, "MSENV_COMPILE_NOTICE_S": "0"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and "compiling" not in r.stderr, r.stderr
