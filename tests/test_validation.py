"""Boundary validation of public constructors: a bad value is a ValueError/TypeError naming the argument."""

import gymnasium as gym
import numpy as np
import pytest

from agents.setpolicy import DeviceSetPolicy
from baselines import BudgetedGreedy, make_controller


def _spaces(k=4, f=3, g=2, n=5):
    obs = gym.spaces.Box(-np.inf, np.inf, shape=(k * f + g,), dtype=np.float32)
    return obs, gym.spaces.MultiDiscrete([n] * k)


def _policy(action_space=None, **kw):
    obs, act = _spaces()
    return DeviceSetPolicy(obs, act if action_space is None else action_space, lambda _: 3e-4, **kw)


@pytest.mark.parametrize("n_devices", [0, -1, 2, 5, True, 2.5])
def test_setpolicy_n_devices_must_match_action_space(n_devices):
    with pytest.raises(ValueError, match="n_devices"):
        _policy(n_devices=n_devices)


@pytest.mark.parametrize("hidden", [0, -3, True, 1.5])
def test_setpolicy_hidden(hidden):
    with pytest.raises(ValueError, match="hidden"):
        _policy(hidden=hidden)


def test_setpolicy_discrete_action_space():
    with pytest.raises(ValueError, match="action_space"):
        _policy(action_space=gym.spaces.Discrete(5))


def test_setpolicy_unequal_multidiscrete():
    with pytest.raises(ValueError, match="action_space"):
        _policy(action_space=gym.spaces.MultiDiscrete([5, 5, 4, 5]))


def test_setpolicy_valid_batch_shape():
    policy = _policy(n_devices=4)
    actions, _ = policy.predict(np.zeros((4, 14), dtype=np.float32), deterministic=True)
    assert actions.shape == (4, 4)


@pytest.mark.parametrize("budget", [True, 0, -1.0, "1"])
def test_budgeted_greedy_budget(budget):
    with pytest.raises(ValueError, match="budget_ms"):
        BudgetedGreedy(budget_ms=budget)


def test_make_controller_fixed_rejects_kwargs():
    with pytest.raises(TypeError, match="foo"):
        make_controller("fixed-4", foo=1)


def test_make_controller_none():
    with pytest.raises(TypeError, match="name"):
        make_controller(None)


def test_make_controller_unknown():
    with pytest.raises(ValueError, match="nope"):
        make_controller("nope")


@pytest.mark.parametrize("flag,value", [("--episodes", "0"), ("--workers", "0"), ("--rounds", "1")])
def test_evaluate_cli_refuses_bad_counts(flag, value, tmp_path):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "baselines.evaluate", flag, value, "--out", str(tmp_path / "e.csv")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert flag in proc.stderr


CELLS_ID = "msenv/MultiSpin-Cells-v0"


@pytest.mark.parametrize("n", [0, -1])
def test_cells_make_vec_num_envs(n):
    import msenv  # noqa: F401
    with pytest.raises(ValueError, match="num_envs"):
        gym.make_vec(CELLS_ID, num_envs=n)


def test_cells_vector_wrong_action_batch():
    import msenv  # noqa: F401
    envs = gym.make_vec(CELLS_ID, num_envs=2)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="actions"):
        envs.step(np.zeros((3, envs.single_action_space.shape[0]), dtype=np.int64))
    envs.close()


def test_cells_reset_config_option_not_a_dict():
    import msenv  # noqa: F401
    env = gym.make(CELLS_ID)
    with pytest.raises(ValueError, match="config"):
        env.reset(options={"config": 5})


def test_experiments_cells_mlp_agent_checked_up_front(tmp_path):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "experiments", "cells", "--mlp-agent", str(tmp_path / "none"),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "--mlp-agent" in proc.stderr
