"""The budget action (agents/budget.py), the counterfactual evaluation of the batched cells env
(what_if) and the counterfactual reward built on it (agents/envs.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.budget import (
    BudgetActions,
    BudgetDistribution,
    BudgetSetPolicy,
    NumpyBudgetPolicy,
    budget_layout,
    budget_lengths,
)
from agents.controller import load_agent, save_agent
from agents.envs import CounterfactualReward, make_vec_env, normalize
from msenv.envs.cells import CellConfig, MultiSpinCellsEnv
from msenv.envs.cells_vector import MultiSpinCellsVectorEnv, cells_vector_env


def _cells(k_lo=3, k_hi=12, **kw):
    return CellConfig().replace(k_range=(k_lo, k_hi), k_max=k_hi, episode_length=5, **kw)


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_what_if_scores_an_action_on_the_coming_steps_draws_and_changes_nothing(mode):
    """what_if(a) is exactly the (tokens, latency) the next step gives when it plays a; asking
    for any actions before a step leaves every trajectory as it is without asking."""
    cells = _cells(1, 10, p_dl_dbm_range=(0.0, 30.0))
    asked, plain = MultiSpinCellsVectorEnv(4, cells, autoreset_mode=mode), MultiSpinCellsVectorEnv(4, cells,
                                                                                                   autoreset_mode=mode)
    o1, _ = asked.reset(seed=5)
    o2, _ = plain.reset(seed=5)
    rng = np.random.default_rng(1)
    resets = 0
    for _ in range(17):
        act = rng.integers(0, 21, (4, 10))
        for _ in range(2):  # unrelated questions first, then the action itself
            asked.what_if(rng.integers(0, 21, (4, 10)))
        tokens, latency = asked.what_if(act)
        a, b = asked.step(act), plain.step(act)
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        played = b[4].get("_latency", np.zeros(4, bool))  # no key: every sub-env reset in this step
        if played.any():
            np.testing.assert_array_equal(latency[played], b[4]["latency"][played])
            np.testing.assert_array_equal(tokens[played], b[4]["tokens"][played].sum(axis=1))
        assert np.all(latency[~played] == 0) and np.all(tokens[~played] == 0)  # next-step resets play no round
        resets += int((~played).sum())
    assert (resets > 0) == (mode == "next_step")


def test_what_if_equals_the_single_cell_env_playing_the_other_action():
    """An independent check: the counterfactual of action b while a is played equals what a
    single cell env with the same seed gives when it plays b."""
    cells = _cells(2, 8)
    vec = MultiSpinCellsVectorEnv(3, cells)
    vec.reset(seed=40)
    singles = [MultiSpinCellsEnv(cells) for _ in range(3)]
    for i, env in enumerate(singles):
        env.reset(seed=40 + i)
    rng = np.random.default_rng(3)
    for _ in range(4):
        a, b = rng.integers(0, 21, (3, 8)), rng.integers(0, 21, (3, 8))
        tokens, latency = vec.what_if(b)
        vec.step(a)
        for i, env in enumerate(singles):
            _, reward, _, _, info = env.step(b[i])
            assert latency[i] == info["latency"] and tokens[i] == info["tokens"].sum()
            assert tokens[i] / latency[i] == pytest.approx(reward, rel=1e-12)
        # the round's draws do not depend on the action (a contextual bandit): the envs stay in step


def test_budget_lengths_are_the_floor_of_the_budget_over_each_drafting_time():
    """The map from (level, bits) to draft lengths, against the cell's true drafting times (the
    state's, in float64) by brute force: every level, random bits."""
    cells = _cells(1, 12, draft_scale_max_range=(1.0, 3.0))
    layout = budget_layout(cells)
    env = MultiSpinCellsEnv(cells)
    rng = np.random.default_rng(0)
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        t = env.context.t_draft
        k = len(t)
        for level in range(layout.n_levels):
            on = rng.integers(0, 2, 12)
            got = budget_lengths(np.array([level]), on[None], obs[None], layout)[0]
            tau = level / layout.per_token * t.min()
            want = np.array([min(int(np.floor(tau / tk + 1e-9)), cells.gamma_max) for tk in t]) * on[:k]
            assert np.array_equal(got[:k], want), (seed, level)
            assert np.all(got[k:] == 0)  # padded slots draft nothing
            if level and on[int(np.argmin(t))]:
                assert got[int(np.argmin(t))] == level // layout.per_token  # the fastest device's whole tokens


def test_the_env_side_budget_action_maps_with_the_exact_drafting_times():
    """msenv.envs.actions.BudgetAction against exact rational arithmetic (fractions of the float64
    drafting times): every level, random bits, cells of 1 … 12 devices padded to 12 slots; the
    training wrapper and a loaded agent's decision read the same exact times."""
    from fractions import Fraction

    from msenv.envs.actions import BudgetAction

    cells = _cells(1, 12, draft_scale_max_range=(1.0, 3.0))
    action = BudgetAction(cells.gamma_max)
    assert action.space(12).nvec.tolist() == [action.n_levels] + [2] * 12
    env = MultiSpinCellsEnv(cells)
    rng = np.random.default_rng(1)
    for seed in range(6):
        env.reset(seed=seed)
        t = env.draft_times
        k = env.num_devices
        assert np.array_equal(t[:k], env.context.t_draft) and np.all(t[k:] == 0)
        for level in range(action.n_levels):
            on = rng.integers(0, 2, 12)
            got = action.lengths(np.array([level]), on[None], t[None])[0]
            tau = Fraction(level, action.per_token) * Fraction(float(t[:k].min()))
            want = [min(int(tau / Fraction(float(tk))), cells.gamma_max) * int(on[i]) for i, tk in enumerate(t[:k])]
            assert got[:k].tolist() == want and np.all(got[k:] == 0), (seed, level)
    # the batched generator shows the same times as its single envs
    vec = cells_vector_env(3, cells)
    vec.reset(seed=4)
    for i in range(3):
        env.reset(seed=4 + i)
        assert np.array_equal(vec.draft_times[i], env.draft_times)


@pytest.mark.slow
def test_budget_distribution_matches_independent_categoricals():
    torch.manual_seed(0)
    n_levels, k, b = 9, 4, 6
    logits = torch.randn(b, n_levels + 2 * k)
    dist = BudgetDistribution(n_levels, k).proba_distribution(logits)
    actions = dist.sample()
    assert actions.shape == (b, 1 + k)
    level = torch.distributions.Categorical(logits=logits[:, :n_levels])
    bits = [torch.distributions.Categorical(logits=logits[:, n_levels + 2 * i: n_levels + 2 * i + 2]) for i in range(k)]
    want = level.log_prob(actions[:, 0]) + sum(c.log_prob(actions[:, 1 + i]) for i, c in enumerate(bits))
    torch.testing.assert_close(dist.log_prob(actions), want)
    torch.testing.assert_close(dist.entropy(), level.entropy() + sum(c.entropy() for c in bits))
    assert torch.equal(dist.mode()[:, 0], logits[:, :n_levels].argmax(1))
    # the sampler draws from the law: the level's frequencies over many draws
    one = BudgetDistribution(n_levels, k).proba_distribution(logits[:1].expand(20000, -1))
    freq = torch.bincount(one.sample()[:, 0], minlength=n_levels).double() / 20000
    torch.testing.assert_close(freq, level.probs[0].double(), atol=0.015, rtol=0)


def _budget_model(cells, n_envs=2):
    from stable_baselines3 import PPO

    layout = budget_layout(cells)
    venv = normalize(BudgetActions(make_vec_env(cells, n_envs, 0), layout), 0.0, norm_obs=False)
    model = PPO(BudgetSetPolicy, venv, n_steps=8, batch_size=16, seed=0, device="cpu",
                policy_kwargs=dict(n_devices=cells.k_max, n_globals=layout.n_globals))
    return model, venv, layout


@pytest.mark.slow
def test_a_saved_budget_agent_decides_as_the_torch_policy_and_pins_padding(tmp_path):
    """The portable numpy decision = the torch policy's mode mapped to draft lengths, in cells
    of every size; a padded slot is always off."""
    cells = _cells(2, 9)
    model, venv, layout = _budget_model(cells)
    model.learn(64)
    save_agent(tmp_path / "agent", model, venv, cells)
    agent = load_agent(tmp_path / "agent")
    assert isinstance(agent.policy, NumpyBudgetPolicy)
    env = MultiSpinCellsEnv(cells)
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        mode, _ = model.policy.predict(obs[None], deterministic=True)
        assert mode[0, 1 + env.num_devices:].sum() == 0  # padded slots pinned off
        want = budget_lengths(mode[:, 0], mode[:, 1:], obs[None], layout)[0]
        assert np.array_equal(agent.act(env.context, obs), want)
    agent.check_config(cells.replace(k_range=(50, 50), k_max=50))  # any K
    with pytest.raises(ValueError, match="gamma_max differs"):
        agent.check_config(cells.replace(gamma_max=10))


def test_the_counterfactual_reward_is_the_linearised_throughput_gain_over_the_reference():
    """Independent computation: two envs with the same seeds, one playing the actions, one the
    reference; the reward from their (tokens, latency) by the formula."""
    cells = _cells(2, 6)
    n = 3
    ref_actions = lambda obs: np.full((n, 6), 2)  # noqa: E731
    wrapped = CounterfactualReward(make_vec_env(cells, n, 9), reference=ref_actions)
    played, reference = make_vec_env(cells, n, 9), make_vec_env(cells, n, 9)
    wrapped.reset(), played.reset(), reference.reset()
    rng = np.random.default_rng(0)
    sums = np.zeros((3, n))
    for _ in range(12):
        act = rng.integers(0, 8, (n, 6))
        _, r, done, infos = wrapped.step(act)
        _, _, _, i_a = played.step(act)
        _, _, _, i_r = reference.step(np.full((n, 6), 2))
        for i in range(n):
            t_a, t_r = i_a[i]["latency"], i_r[i]["latency"]
            n_a, n_r = i_a[i]["goodput"] * t_a, i_r[i]["goodput"] * t_r
            sums[:, i] += (n_r, t_r, 1)
            want = (n_a - n_r) / (sums[0, i] / sums[2, i]) - (t_a - t_r) / (sums[1, i] / sums[2, i])
            assert r[i] == pytest.approx(want, rel=1e-5, abs=1e-6)
            assert infos[i]["reference_goodput"] == pytest.approx(n_r / t_r, rel=1e-12)
        sums[:, done] = 0
    with pytest.raises(RuntimeError, match="reference is not set"):
        fresh = CounterfactualReward(make_vec_env(cells, n, 9))
        fresh.reset()
        fresh.step(np.zeros((n, 6), np.int64))


def test_budget_layout_refuses_a_single_cell_config():
    from msenv import SystemConfig

    with pytest.raises(ValueError, match="cell generator"):
        budget_layout(SystemConfig())


@pytest.mark.parametrize("env_id", ["msenv/MultiSpin-v0", "msenv/MultiSpin-Dynamic-v0"])
def test_single_and_paper_vector_envs_answer_what_if_without_changing_anything(env_id):
    """The single env puts its generator back; the paper ids' batched env too: what_if(a) is the
    step's (tokens, latency) for a, and a twin that never asks sees the same trajectory — in the
    paper scenario and under the model §11 dynamics (whose next state depends on the action)."""
    import gymnasium as gym

    from msenv.envs.vector import MultiSpinVectorEnv

    asked, plain = gym.make(env_id, num_devices=6), gym.make(env_id, num_devices=6)
    asked.reset(seed=3), plain.reset(seed=3)
    cfg = asked.unwrapped.config
    vec_a, vec_p = MultiSpinVectorEnv(3, cfg, autoreset_mode="same_step"), MultiSpinVectorEnv(3, cfg,
                                                                                              autoreset_mode="same_step")
    vec_a.reset(seed=8), vec_p.reset(seed=8)
    rng = np.random.default_rng(4)
    for _ in range(6):
        act = rng.integers(0, 12, 6)
        asked.unwrapped.what_if(rng.integers(0, 12, 6))
        tokens, latency = asked.unwrapped.what_if(act)
        a, b = asked.step(act), plain.step(act)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1] and latency == b[4]["latency"] and tokens == b[4]["tokens"].sum()
        acts = rng.integers(0, 12, (3, 6))
        vec_a.what_if(rng.integers(0, 12, (3, 6)))
        tok, lat = vec_a.what_if(acts)
        va, vp = vec_a.step(acts), vec_p.step(acts)
        np.testing.assert_array_equal(va[0], vp[0])
        np.testing.assert_array_equal(va[1], vp[1])
        np.testing.assert_array_equal(lat, vp[4]["latency"])
        np.testing.assert_array_equal(tok, vp[4]["tokens"].sum(axis=1))


def test_the_counterfactual_reward_is_the_same_through_single_envs():
    """DummyVecEnv of single cell envs (each env's what_if through SB3's env_method) and the
    batched cells env give the same counterfactual rewards on the same seeds."""
    cells = _cells(2, 7)
    ref = lambda obs: np.full((3, 7), 3)  # noqa: E731
    fast = CounterfactualReward(make_vec_env(cells, 3, 21, "batched"), reference=ref)
    slow = CounterfactualReward(make_vec_env(cells, 3, 21, "dummy"), reference=ref)
    np.testing.assert_array_equal(fast.reset(), slow.reset())
    rng = np.random.default_rng(5)
    for _ in range(12):
        act = rng.integers(0, 9, (3, 7))
        (o1, r1, d1, _), (o2, r2, d2, _) = fast.step(act), slow.step(act)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_allclose(r1, r2, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(d1, d2)
