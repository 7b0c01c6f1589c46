"""The RL ecosystem through each library's own standard entry point (issue: ecosystem).

Every test goes through the library's helper (SB3 ``make_vec_env``, TorchRL ``GymEnv``,
Gymnasium's wrappers and ``make_vec``, RLlib's ``PPOConfig``), never a hand-made wrapper, and
checks numbers against an independent computation where there is one.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import msenv
import msenv.envs.vector
from msenv import MultiSpinEnv

#: each RL library through its own entry point, end to end (python -m pytest -m 'not slow' skips them)
pytestmark = pytest.mark.slow

ID = "msenv/MultiSpin-v0"
SMALL = dict(num_devices=4, gamma_max=6, episode_length=8)


# ---------------------------------------------------------------------- Python's conventions
@pytest.mark.parametrize("make", [
    lambda: MultiSpinEnv(frameskip=4),
    lambda: gym.make(ID, frameskip=4),
    lambda: msenv.envs.vector.MultiSpinVectorEnv(2, frameskip=4),
])
def test_unknown_keyword_is_pythons_type_error(make):
    with pytest.raises(TypeError, match=r"__init__\(\) got an unexpected keyword argument 'frameskip'"):
        make()


def test_bad_value_stays_value_error_and_render_modes_follow_gymnasium():
    with pytest.raises(ValueError, match="p_dl_dbm"):
        MultiSpinEnv(p_dl_dbm=float("nan"))
    with pytest.raises(ValueError, match="render_mode='rgb'.*'human', 'rgb_array', 'ansi'"):
        MultiSpinEnv(render_mode="rgb")
    assert MultiSpinEnv.metadata["render_modes"] == ["human", "rgb_array", "ansi"]


@pytest.mark.parametrize("make", [
    lambda: gym.make(ID, render_mode="human"),
    lambda: gym.make("msenv/MultiSpin-Cells-v0", render_mode="human"),
])
def test_human_rendering_without_a_display_is_refused_when_the_env_is_made(make, monkeypatch):
    """Without a window to show (matplotlib's Agg backend, as on a server or in CI) ``"human"`` is
    refused in one line when the env is made — not at the first reset, and not for want of a
    library the env does not use."""
    matplotlib = pytest.importorskip("matplotlib")
    monkeypatch.setattr(matplotlib, "get_backend", lambda: "agg")
    with pytest.raises(RuntimeError, match="render_mode='human'.*backend here is 'agg'.*'rgb_array'"):
        make()


def test_human_rendering_shows_each_rounds_frame_in_one_window(display):
    """With an interactive backend, reset and every step show the round's picture — the
    ``rgb_array`` frame of the same round — in one matplotlib window for 1/render_fps s."""
    shown, pauses = display["show"], display["pause"]
    env = gym.make(ID, render_mode="human", **SMALL)
    twin = gym.make(ID, render_mode="rgb_array", **SMALL)
    window = env.unwrapped._window
    for e in (env, twin):
        e.reset(seed=3)
    assert np.array_equal(window.image.get_array(), twin.render()) and env.render() is None
    for a in (np.array([0, 2, 4, 6]), np.array([6, 6, 6, 6])):
        env.step(a)
        twin.step(a)
        assert np.array_equal(window.image.get_array(), twin.render())
    assert len(shown) == 1 and pauses == [1 / env.metadata["render_fps"]] * 3
    env.close()
    assert window.fig is None


# ---------------------------------------------------------------------- rendering and video
def test_rgb_array_frames_shape_dtype_and_change_with_the_round():
    env = gym.make(ID, render_mode="rgb_array", **SMALL)
    env.reset(seed=0)
    f0 = env.render()
    assert f0.dtype == np.uint8 and f0.ndim == 3 and f0.shape[2] == 3 and f0.shape[:2] == (360, 640)
    env.step(np.array([0, 2, 4, 6]))
    f1 = env.render()
    env.step(np.array([6, 6, 6, 6]))
    f2 = env.render()
    assert f1.shape == f0.shape and not np.array_equal(f0, f1) and not np.array_equal(f1, f2)
    assert np.array_equal(f2, env.render())  # same round → same picture
    # the outcome colours of msenv.envs.render are on the picture: a UL/DL/accepted device is drawn
    from msenv.envs.render import COLORS

    info = env.unwrapped._last
    modes = set(np.asarray(info["modes"]).tolist())
    rgb = {tuple(c) for c in f2.reshape(-1, 3).tolist()}
    for mode, key in ((1, "ul"), (2, "dl")):
        if mode in modes:
            want = tuple(int(round(255 * x)) for x in COLORS[key])
            assert any(max(abs(a - b) for a, b in zip(want, c)) <= 2 for c in rgb), key


def test_gymnasium_record_video_writes_a_file(tmp_path):
    pytest.importorskip("moviepy")
    from gymnasium.wrappers import RecordVideo

    out = tmp_path / "videos"  # a new folder: RecordVideo warns when it reuses an existing one
    env = RecordVideo(gym.make(ID, render_mode="rgb_array", **SMALL), str(out), episode_trigger=lambda e: True,
                      disable_logger=True)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        done = term or trunc
    env.close()
    videos = list(out.glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


def test_sb3_vec_video_recorder_writes_a_file(tmp_path):
    pytest.importorskip("moviepy")
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecVideoRecorder

    venv = make_vec_env(ID, n_envs=1, seed=0, env_kwargs=SMALL)
    venv = VecVideoRecorder(venv, str(tmp_path), record_video_trigger=lambda s: s == 0, video_length=6)
    venv.reset()
    for _ in range(8):
        venv.step(np.array([venv.action_space.sample()]))
    venv.close()
    videos = list(tmp_path.glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


# ---------------------------------------------------------------------- Stable-Baselines3
def test_sb3_make_vec_env_dummy_learns_and_evaluates():
    """Regression: make_vec_env passes render_mode="rgb_array" (it failed with ValueError)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    venv = make_vec_env(ID, n_envs=2, seed=3, env_kwargs=SMALL)
    assert venv.render_mode == "rgb_array"
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(128)
    rewards, lengths = evaluate_policy(model, venv, n_eval_episodes=2, return_episode_rewards=True)
    assert lengths == [SMALL["episode_length"]] * 2
    # an episode's return is the sum of per-round goodputs, each tokens / latency > 0
    assert all(np.isfinite(r) and r > 0 for r in rewards)
    # the same seeds through a plain gym.make give the same first observation
    venv.seed(3)
    obs = venv.reset()
    single = gym.make(ID, **SMALL)
    o0, _ = single.reset(seed=3)
    np.testing.assert_array_equal(obs[0], o0)


def test_sb3_make_vec_env_subproc_spawn():
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    venv = make_vec_env("msenv:" + ID, n_envs=2, seed=5, env_kwargs=SMALL, vec_env_cls=SubprocVecEnv,
                        vec_env_kwargs=dict(start_method="spawn"))
    try:
        obs = venv.reset()
        ref = [gym.make(ID, **SMALL).reset(seed=5 + i)[0] for i in range(2)]
        np.testing.assert_array_equal(obs, np.stack(ref))
        actions = np.array([[1, 2, 3, 4], [0, 0, 0, 0]])
        _, rew, _, infos = venv.step(actions)
        env = gym.make(ID, **SMALL)
        env.reset(seed=5)
        _, r0, *_ = env.step(actions[0])
        assert rew[0] == pytest.approx(r0)
        assert infos[1]["tokens"].tolist() == [1, 1, 1, 1]  # γ = 0: one token each, no correction
    finally:
        venv.close()


# ---------------------------------------------------------------------- Gymnasium wrappers and vector envs
def test_gymnasium_wrappers_stack():
    from gymnasium.wrappers import FlattenObservation, NormalizeObservation, NormalizeReward, RecordEpisodeStatistics

    env = RecordEpisodeStatistics(NormalizeReward(NormalizeObservation(FlattenObservation(gym.make(ID, **SMALL)))))
    raw = gym.make(ID, **SMALL)
    env.reset(seed=11)
    raw.reset(seed=11)
    rng = np.random.default_rng(0)
    total, done = 0.0, False
    while not done:
        a = rng.integers(0, SMALL["gamma_max"] + 1, SMALL["num_devices"])
        _, _, term, trunc, info = env.step(a)
        _, r_raw, *_ = raw.step(a)
        total += r_raw
        done = term or trunc
    # RecordEpisodeStatistics sits outside NormalizeReward: it sums the normalised rewards, so
    # compare the length and the env's own unnormalised episode throughput instead
    assert info["episode"]["l"] == SMALL["episode_length"]
    assert info["episode_tokens"] / info["episode_time"] == pytest.approx(info["episode_throughput"])
    assert np.isfinite(info["episode"]["r"]) and total > 0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasium_make_vec_matches_single_envs(mode):
    kwargs = {"vector_kwargs": {"context": "spawn"}} if mode == "async" else {}
    env_id = ("msenv:" + ID) if mode == "async" else ID
    venv = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode, **SMALL, **kwargs)
    try:
        obs, _ = venv.reset(seed=7)
        actions = np.array([[2, 2, 2, 2], [5, 0, 1, 6]])
        _, rew, _, _, info = venv.step(actions)
        for i in range(2):
            env = gym.make(ID, **SMALL)
            o, _ = env.reset(seed=7 + i)
            np.testing.assert_array_equal(obs[i], o)
            _, r, *_ = env.step(actions[i])
            assert rew[i] == pytest.approx(r)
        assert info["tokens"].shape == (2, SMALL["num_devices"])
    finally:
        venv.close()


def test_cleanrl_style_ppo_loop(example):
    """The loop CleanRL's ppo.py runs (examples/cleanrl_loop.py, the script the docs show):
    SyncVectorEnv of RecordEpisodeStatistics(gym.make(id)), one categorical per device, clipped
    surrogate updates; the episodes' truncation reaches the loop."""
    pytest.importorskip("torch")
    import math

    mod = example("cleanrl_loop")
    out = mod.main(steps=256, n_envs=2, n_steps=32)
    assert math.isfinite(out["loss"])
    assert out["lengths"] and all(n == mod.SMALL["episode_length"] for n in out["lengths"])
    assert len(out["returns"]) == len(out["lengths"]) and all(r > 0 for r in out["returns"])


# ---------------------------------------------------------------------- TorchRL
def test_torchrl_gymenv_check_env_specs_and_rollout():
    """Regression: GymEnv probes frameskip= and needs Python's TypeError to fall back."""
    pytest.importorskip("torchrl")
    from torchrl.envs import GymEnv
    from torchrl.envs.utils import check_env_specs

    env = GymEnv(ID, **SMALL)
    check_env_specs(env)
    env.set_seed(0)
    td = env.rollout(5)
    assert td.batch_size[0] == 5
    reward = td["next", "reward"].squeeze(-1).numpy()
    assert np.all(np.isfinite(reward)) and np.all(reward > 0)


# ---------------------------------------------------------------------- RLlib (Ray)
@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.rllib")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


def test_rllib_ppo_trains_on_the_module_prefixed_id(ray_local, example):
    """examples/rllib_ppo.py: RLlib's workers make the env from the "msenv:<id>" form."""
    result = example("rllib_ppo").main(steps=64)
    sampled = result["env_runners"]["num_env_steps_sampled_lifetime"]
    assert sampled >= 64


def test_rllib_pettingzoo_multi_agent(ray_local, example):
    """examples/rllib_pettingzoo.py: every device is an agent of the one shared policy."""
    mod = example("rllib_pettingzoo")
    result = mod.main(steps=64)
    agents = [f"device_{k}" for k in range(mod.SMALL["num_devices"])]
    assert result["env_runners"]["num_agent_steps_sampled_lifetime"]
    assert set(result["env_runners"]["num_agent_steps_sampled_lifetime"]) == set(agents)
