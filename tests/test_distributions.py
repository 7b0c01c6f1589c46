"""The batched MultiDiscrete distribution against SB3's stock one (issue: learning speed)."""

from __future__ import annotations

import numpy as np
import pytest

th = pytest.importorskip("torch")
from scipy import stats  # noqa: E402
from stable_baselines3.common.distributions import MultiCategoricalDistribution  # noqa: E402

from agents.distributions import BatchedMultiCategorical, MultiSpinPolicy  # noqa: E402

K, N = 20, 21


def _pair(logits):
    ours = BatchedMultiCategorical([N] * K).proba_distribution(logits)
    stock = MultiCategoricalDistribution([N] * K).proba_distribution(logits)
    return ours, stock


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_log_prob_entropy_mode_equal_sb3(scale):
    g = th.Generator().manual_seed(int(scale * 10))
    logits = scale * th.randn(64, K * N, generator=g)
    logits[0, :N] = 0.0  # a tie: mode must break it as SB3 does (first index)
    logits[1, N:2 * N] = -1e4  # extreme logits stay finite
    logits[1, N + 3] = 0.0
    actions = th.randint(0, N, (64, K), generator=g)
    ours, stock = _pair(logits)
    np.testing.assert_allclose(ours.log_prob(actions).numpy(), stock.log_prob(actions).numpy(), rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(ours.entropy().numpy(), stock.entropy().numpy(), rtol=1e-6, atol=1e-5)
    assert th.equal(ours.mode(), stock.mode())
    assert th.isfinite(ours.entropy()).all() and th.isfinite(ours.log_prob(actions)).all()


def test_float64_agreement_to_1e12():
    logits = th.randn(32, K * N, dtype=th.float64)
    actions = th.randint(0, N, (32, K))
    ours, stock = _pair(logits)
    assert th.allclose(ours.log_prob(actions), stock.log_prob(actions), rtol=1e-12, atol=1e-12)
    assert th.allclose(ours.entropy(), stock.entropy(), rtol=1e-12, atol=1e-12)


def test_gradients_equal_sb3():
    logits = th.randn(16, K * N, requires_grad=True)
    actions = th.randint(0, N, (16, K))
    ours, _ = _pair(logits)
    (ours.log_prob(actions).sum() + 0.1 * ours.entropy().sum()).backward()
    g1 = logits.grad.clone()
    logits.grad = None
    _, stock = _pair(logits)
    (stock.log_prob(actions).sum() + 0.1 * stock.entropy().sum()).backward()
    np.testing.assert_allclose(g1.numpy(), logits.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_samples_pass_a_chi_square_test():
    th.manual_seed(0)
    logits = th.tensor([[0.0, 1.0, -1.0, 2.0, 0.5] * 3])  # K = 3 devices, n = 5
    dist = BatchedMultiCategorical([5] * 3).proba_distribution(logits.repeat(20_000, 1))
    s = dist.sample()
    assert s.shape == (20_000, 3) and s.dtype == th.int64
    p = th.softmax(logits[0, :5].double(), 0).numpy()
    p = p / p.sum()
    for k in range(3):
        counts = np.bincount(s[:, k].numpy(), minlength=5)
        assert stats.chisquare(counts, 20_000 * p).pvalue > 1e-3


@pytest.mark.slow
def test_unequal_sizes_are_refused_and_policy_falls_back():
    import gymnasium as gym

    with pytest.raises(ValueError, match="equal sizes"):
        BatchedMultiCategorical([3, 4])
    box = gym.spaces.Box(-1, 1, (4,))
    pol = MultiSpinPolicy(box, gym.spaces.MultiDiscrete([3, 4]), lambda _: 1e-3)
    assert type(pol.action_dist) is MultiCategoricalDistribution
    pol = MultiSpinPolicy(box, gym.spaces.MultiDiscrete([5, 5]), lambda _: 1e-3)
    assert type(pol.action_dist) is BatchedMultiCategorical


def test_policy_forward_matches_stock_policy_with_same_weights():
    import gymnasium as gym
    from stable_baselines3.common.policies import ActorCriticPolicy

    box = gym.spaces.Box(-1, 1, (10,))
    act = gym.spaces.MultiDiscrete([N] * K)
    th.manual_seed(1)
    ours = MultiSpinPolicy(box, act, lambda _: 1e-3)
    stock = ActorCriticPolicy(box, act, lambda _: 1e-3)
    stock.load_state_dict(ours.state_dict())
    obs = th.rand(8, 10) * 2 - 1
    actions = th.randint(0, N, (8, K))
    v1, lp1, e1 = ours.evaluate_actions(obs, actions)
    v2, lp2, e2 = stock.evaluate_actions(obs, actions)
    assert th.equal(v1, v2)
    assert th.allclose(lp1, lp2, atol=1e-5) and th.allclose(e1, e2, atol=1e-5)
    assert th.equal(ours._predict(obs, deterministic=True), stock._predict(obs, deterministic=True))


def test_saved_agents_load_both_policies(tmp_path):
    from stable_baselines3 import PPO

    from agents.controller import load_agent, save_agent
    from agents.envs import make_vec_env, normalize
    from msenv import SystemConfig

    cfg = SystemConfig(num_devices=3, gamma_max=4, episode_length=4)
    for name, policy in (("new", MultiSpinPolicy), ("old", "MlpPolicy")):
        venv = normalize(make_vec_env(cfg, 2, 0), gamma=0.0)
        model = PPO(policy, venv, n_steps=8, batch_size=16, n_epochs=1, device="cpu", seed=0)
        model.learn(16)
        save_agent(tmp_path / name, model, venv, cfg)
        agent = load_agent(tmp_path / name, sb3=True)
        assert type(agent.model.policy.action_dist) is (
            BatchedMultiCategorical if name == "new" else MultiCategoricalDistribution)
        obs = np.zeros(venv.observation_space.shape, dtype=np.float32)
        a_numpy = agent.act(None, obs)
        a_torch, _ = agent.model.predict(agent.normalize(obs).astype(np.float32), deterministic=True)
        assert np.array_equal(a_numpy, a_torch)
        assert np.array_equal(load_agent(tmp_path / name).act(None, obs), a_torch)  # the portable files alone


def test_policy_uses_sb3_adam_settings_with_the_fused_kernel():
    import gymnasium as gym

    pol = MultiSpinPolicy(gym.spaces.Box(-1, 1, (4,)), gym.spaces.MultiDiscrete([3, 3]), lambda _: 1e-3)
    group = pol.optimizer.param_groups[0]
    assert isinstance(pol.optimizer, th.optim.Adam) and group["eps"] == 1e-5 and group["fused"] is True
    custom = MultiSpinPolicy(gym.spaces.Box(-1, 1, (4,)), gym.spaces.MultiDiscrete([3, 3]), lambda _: 1e-3,
                             optimizer_kwargs={"eps": 1e-3})
    assert custom.optimizer.param_groups[0]["eps"] == 1e-3 and not custom.optimizer.param_groups[0]["fused"]
