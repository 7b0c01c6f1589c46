"""Behaviour cloning (agents/bc.py) and ``train.py --bc-init``."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from agents.bc import Demonstrations, clone, collect, discounted_returns, running_returns
from agents.envs import make_vec_env, normalize
from agents.ppo import make_ppo
from baselines import make_controller
from evaluation.harness import run_episode
from msenv import SystemConfig

ROOT = Path(__file__).resolve().parents[1]
SMALL = SystemConfig(num_devices=4, gamma_max=8, episode_length=10)


def test_returns_are_the_direct_sums():
    rng = np.random.default_rng(3)
    episode = np.repeat([0, 1, 2, 5], [7, 1, 4, 6])
    r = rng.normal(size=len(episode))
    for gamma in (0.0, 0.5, 0.99):
        fwd, run = discounted_returns(r, episode, gamma), running_returns(r, episode, gamma)
        for t in range(len(r)):
            same = np.flatnonzero(episode == episode[t])
            after, before = same[same >= t], same[same <= t]
            assert fwd[t] == pytest.approx(sum(gamma ** (j - t) * r[j] for j in after), abs=1e-12)
            assert run[t] == pytest.approx(sum(gamma ** (t - j) * r[j] for j in before), abs=1e-12)


DYN_SMALL = SystemConfig(num_devices=4, gamma_max=8, episode_length=10, channel_dynamics="gauss_markov",
                         csi="decision", alpha_dynamics="markov", alpha_observed=False)


@pytest.mark.parametrize("name,cfg", [("optimal-uniform", SMALL), ("oracle-greedy", DYN_SMALL)])
def test_collect_plays_the_controller_on_its_seeds(name, cfg):
    """The demonstrations are the evaluation harness's episodes (an oracle controller acts on the
    oracle context, the recorded observations are the server's)."""
    from msenv.envs.env import MultiSpinEnv

    demos = collect(name, cfg, 3, seed=70)
    assert demos.obs.shape == (30,) + MultiSpinEnv(cfg).observation_space.shape and demos.actions.shape == (30, 4)
    assert np.array_equal(demos.episode, np.repeat([0, 1, 2], 10))
    for i in range(3):
        rows = demos.episode == i
        ref = run_episode(make_controller(name), cfg, 70 + i)  # the evaluation harness's episode
        assert demos.rewards[rows].mean() / cfg.reward_scale == pytest.approx(ref.goodput, rel=1e-12)
        assert demos.actions[rows].mean() == pytest.approx(ref.mean_gamma, rel=1e-12)
        env = MultiSpinEnv(cfg)
        first, _ = env.reset(seed=70 + i)
        assert np.array_equal(demos.obs[rows][0], first)
    if name == "optimal-uniform":
        assert np.all(demos.actions == demos.actions[:, :1])  # uniform: one γ per round
    with pytest.raises(ValueError, match="controller 'nope' is not known"):
        collect("nope", cfg, 1)
    with pytest.raises(ValueError, match="episodes=0 is invalid"):
        collect("fixed-2", cfg, 0)


@pytest.mark.slow
def test_clone_fits_a_known_rule_and_sets_the_normalisation():
    """Synthetic demonstrations: device k drafts 6 when observation entry k is positive, else 1;
    the reward is linear in entry 0. Cloning must recover both on held-out episodes."""
    venv = normalize(make_vec_env(SMALL, 2, 0), gamma=0.0)
    model = make_ppo(venv, seed=0)
    rng = np.random.default_rng(0)
    n, d = 4000, venv.observation_space.shape[0]
    obs = rng.normal(2.0, 3.0, size=(n, d))
    actions = np.where(obs[:, :4] > 2.0, 6, 1)
    rewards = 50.0 + 10.0 * obs[:, 0]
    demos = Demonstrations(obs, actions, rewards, np.arange(n) // 10)
    fit = clone(model, venv, demos, epochs=25, seed=1)
    assert fit["val_accuracy"] > 0.95 and fit["samples"] == n
    np.testing.assert_allclose(venv.obs_rms.mean, obs.mean(0), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(venv.obs_rms.var, obs.var(0), rtol=1e-2)
    assert venv.ret_rms.var == pytest.approx(rewards.var(), rel=1e-2)  # γ = 0: the returns are the rewards
    test = rng.normal(2.0, 3.0, size=(500, d))
    x = venv.normalize_obs(test).astype(np.float32)
    pred, _ = model.predict(x, deterministic=True)
    assert np.mean(pred == np.where(test[:, :4] > 2.0, 6, 1)) > 0.95
    import torch as th

    with th.no_grad():
        v = model.policy.predict_values(th.as_tensor(x)).numpy().ravel()
    target = (50.0 + 10.0 * test[:, 0]) / np.sqrt(venv.ret_rms.var + venv.epsilon)
    assert np.corrcoef(v, target)[0, 1] > 0.95
    with pytest.raises(ValueError, match="val_fraction=1.0 is invalid"):
        clone(model, venv, demos, val_fraction=1.0)
    with pytest.raises(ValueError, match="behaviour cloning needs --frame-stack 1"):
        clone(model, venv, Demonstrations(obs[:, :5], actions, rewards, demos.episode))


@pytest.mark.slow
def test_train_starts_from_a_cloned_controller(tmp_path):
    """``--bc-init fixed-3``: a constant controller is cloned exactly (held-out accuracy 1)."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "train.py", "--quick", "--no-progress", "--bc-init", "fixed-3",
                        "--bc-episodes", "4", "--bc-epochs", "30", "--log-dir", str(tmp_path / "bc")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    line = next(s for s in r.stdout.splitlines() if s.startswith("behaviour cloning of fixed-3"))
    assert "200 decisions" in line and "held-out accuracy per device 1.000" in line
    import json

    table = json.loads((tmp_path / "bc" / "comparison.json").read_text())["table"]
    cloned = next(row for row in table if row["controller"] == "cloned:fixed-3")
    assert cloned["mean_gamma"] == 3.0  # the cloned policy, before PPO's updates, drafts 3 everywhere


@pytest.mark.slow
def test_cloning_a_cell_generator_pads_and_pools_the_devices():
    """``--bc-init`` on the Cells id with the set policy: the demonstrations are padded to k_max
    (padded slots draft 0, the value the masked policy pins them to), the shared head starts from
    the marginal over the devices only, and a constant rule is cloned exactly on every cell."""
    from agents.setpolicy import set_layout
    from msenv.envs.cells import CellConfig, make_env

    cells = CellConfig().replace(k_range=(2, 6), k_max=6, episode_length=5)
    demos = collect("fixed-3", cells, 6, seed=80)
    assert demos.actions.shape == (30, 6) and set(np.unique(demos.num_devices)) <= set(range(2, 7))
    slot = np.arange(6)[None, :]
    assert np.all(demos.actions[slot < demos.num_devices[:, None]] == 3)
    assert np.all(demos.actions[slot >= demos.num_devices[:, None]] == 0)
    venv = normalize(make_vec_env(cells, 2, 0), gamma=0.0, norm_obs=False)  # as train.py for the set policy
    model = make_ppo(venv, seed=0, policy="set", policy_kwargs=set_layout(cells))
    fit = clone(model, venv, demos, epochs=5, seed=1)
    assert fit["val_accuracy"] == 1.0  # padded slots included: their pinned γ = 0 is the demonstrated one
    for seed in range(5):
        env = make_env(cells)
        obs, info = env.reset(seed=90 + seed)
        pred, _ = model.predict(venv.normalize_obs(obs[None]).astype(np.float32), deterministic=True)
        k = info["num_devices"]
        assert np.all(pred[0][:k] == 3) and np.all(pred[0][k:] == 0)
