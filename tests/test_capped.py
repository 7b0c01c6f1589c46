"""The capped action type (msenv/envs/actions.py) and its policy (agents/capped.py): every
draft-length vector round-trips through the smallest level that admits it, padded slots draft 0,
bad actions are refused naming the entry, and the portable numpy decision is torch's mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from agents.capped import CappedSetPolicy, NumpyCappedPolicy
from agents.portable import read_portable, write_portable
from msenv.envs.actions import CappedAction


def _times(rng, b, k, padded=0):
    t = rng.uniform(0.008, 0.03, (b, k))
    if padded:
        t[:, k - padded:] = 0.0
    return t


@pytest.mark.parametrize("padded", [0, 3])
def test_every_draft_length_vector_round_trips_through_its_smallest_level(padded):
    rng = np.random.default_rng(0)
    act = CappedAction(12)
    for _ in range(50):
        t = _times(rng, 8, 10, padded)
        gamma = np.where(t > 0, rng.integers(0, 13, t.shape), 0)
        a = act.encode(gamma, t)
        np.testing.assert_array_equal(act.lengths(a, t), gamma)
        slowest = t.max(axis=1, keepdims=True)
        level = np.ceil(gamma * t / slowest - 1e-9).max(axis=1)  # ℓ = max_k ⌈γ_k T_k / T_max⌉
        np.testing.assert_array_equal(a[:, 0], level)
        if level.min() > 0:  # one level less leaves some device short
            lower = a.copy()
            lower[:, 0] -= 1
            assert (act.lengths(lower, t) != gamma).any(axis=1).all()


def test_the_cap_is_the_budget_of_the_slowest_device_and_padded_slots_draft_nothing():
    act = CappedAction(12)
    t = np.array([[0.01, 0.02, 0.0]])
    # level 2: τ = 2 × 0.02 s; the fast device may draft 4, the slow one 2, the padded slot 0
    np.testing.assert_array_equal(act.lengths([[2, 12, 12, 12]], t), [[4, 2, 0]])
    np.testing.assert_array_equal(act.lengths([[12, 3, 0, 7]], t), [[3, 0, 0]])
    np.testing.assert_array_equal(act.lengths([[0, 5, 5, 5]], t), [[0, 0, 0]])
    assert act.space(3) == spaces.MultiDiscrete([13] * 4)


@pytest.mark.parametrize("action, match", [
    ([[13, 0, 0]], r"capped action\[0, 0\]=13 is invalid; allowed: integers in 0..12"),
    ([[1, -1, 0]], r"capped action\[0, 1\]=-1 is invalid; allowed: integers in 0..12"),
    ([[1, 0.5, 0]], r"capped action\[0, 1\]=0.5 is invalid; allowed: integers in 0..12"),
    ([[1, 0]], r"capped action shape \(1, 2\) is invalid; allowed: \(B, K \+ 1\) = \(1, 3\)"),
])
def test_a_bad_capped_action_is_refused_naming_the_entry_its_value_and_what_is_allowed(action, match):
    with pytest.raises(ValueError, match=match):
        CappedAction(12).lengths(action, [[0.01, 0.02]])


def test_encode_refuses_a_draft_length_outside_the_range():
    with pytest.raises(ValueError, match=r"draft length\[0, 1\]=13 is invalid; allowed: integers in 0..12"):
        CappedAction(12).encode([[1, 13]], [[0.01, 0.02]])


def _policy(k=5, f=7, g=3, n=13):
    obs = spaces.Box(-1.0, 1.0, (k * f + g,), np.float32)
    pol = CappedSetPolicy(obs, spaces.MultiDiscrete([n] * (k + 1)), lambda _: 1e-3, n_devices=k, n_globals=g,
                          hidden=16)
    th.manual_seed(0)
    with th.no_grad():
        for p in pol.parameters():  # away from the near-zero heads of the initialisation: modes that differ
            p.add_(th.randn_like(p) * 0.5)
    return pol


def test_the_numpy_decision_is_torch_s_mode_and_survives_the_portable_files(tmp_path):
    pol = _policy()
    x = np.random.default_rng(1).uniform(-1, 1, (64, pol.observation_space.shape[0])).astype(np.float32)
    with th.no_grad():
        want = pol.get_distribution(th.as_tensor(x)).mode().numpy()
    mine = pol.numpy_policy()
    np.testing.assert_array_equal(mine.decide(x), want)
    assert len(set(want[:, 0])) > 1 and len(set(want[:, 1:].ravel())) > 1  # the check has teeth
    write_portable(tmp_path, mine, None, {"config": {}})
    back, norm, _ = read_portable(tmp_path)
    assert isinstance(back, NumpyCappedPolicy) and norm is None
    np.testing.assert_array_equal(back.decide(x), want)
    # with a context the action is played with its exact drafting times
    t = np.random.default_rng(2).uniform(0.01, 0.03, 5)

    class Ctx:
        t_draft = t

    np.testing.assert_array_equal(back.act(x[0], Ctx()), CappedAction(12).lengths(want[:1], t[None])[0])


def test_the_policy_refuses_an_action_space_that_is_not_capped():
    obs = spaces.Box(-1.0, 1.0, (5 * 7 + 3,), np.float32)
    with pytest.raises(ValueError, match=r"action_space=.* is not allowed; allowed: MultiDiscrete"):
        CappedSetPolicy(obs, spaces.MultiDiscrete([13] + [2] * 5), lambda _: 1e-3, n_globals=3)


def test_the_presets_env_plays_capped_actions_with_exact_drafting_times_and_the_dinkelbach_reward():
    from agents.traces import PresetsVecEnv
    from experiments.traces import agent_config

    cfgs = [agent_config(p, rounds=3) for p in ("cnn-ngram", "gsm8k-eagle")]
    env = PresetsVecEnv(cfgs, 2, np.random.SeedSequence(4), lam_ref=[100.0, 150.0], reward_scale=0.2)
    again = PresetsVecEnv(cfgs, 2, np.random.SeedSequence(4))
    obs = env.reset()
    np.testing.assert_array_equal(obs, again.reset())  # the run's SeedSequence: the same envs
    assert env.action_space == spaces.MultiDiscrete([13] * 21) and obs.shape == (4, env.observation_space.shape[0])
    rng = np.random.default_rng(0)
    for _ in range(4):  # past an episode's end (3 rounds): the autoreset keeps the drafting times in step
        a = rng.integers(0, 13, (4, 21))
        want = CappedAction(12).lengths(a, env.draft_times())
        env.step_async(a)
        _, reward, done, infos = env.step_wait()
        np.testing.assert_array_equal(env._gamma, want)
        tokens = np.array([i["round_tokens"] for i in infos])
        time_s = np.array([i["latency"] for i in infos])
        np.testing.assert_allclose(reward, 0.2 * (tokens - np.repeat([100.0, 150.0], 2) * time_s), rtol=1e-6)
    with pytest.raises(ValueError, match=r"lam_ref=\[1.0\] is invalid; allowed: 2 throughputs ≥ 0"):
        env.set_reference([1.0])
