"""The device-set policy (agents.setpolicy): equivariant to the devices' order, weights
independent of K, and a saved agent that acts as SB3's own predict does."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import torch  # noqa: E402

import msenv  # noqa: E402
from agents.controller import load_agent, save_agent  # noqa: E402
from agents.envs import make_vec_env, normalize  # noqa: E402
from agents.ppo import make_ppo  # noqa: E402
from msenv import functional as F  # noqa: E402


def _model(k: int, **over):
    cfg = msenv.resolve_config("qwen2.5", num_devices=k, gamma_max=8, episode_length=10, **over)
    venv = normalize(make_vec_env(cfg, 4, 0), 0.0)
    return make_ppo(venv, policy="set", seed=0, n_steps=16, batch_size=32), venv, cfg


def _permuted(obs: torch.Tensor, perm: np.ndarray, k: int, f: int) -> torch.Tensor:
    dev = obs[:, : k * f].reshape(len(obs), k, f)[:, perm].reshape(len(obs), k * f)
    return torch.cat([dev, obs[:, k * f:]], dim=1)


def test_permuting_the_devices_permutes_the_actions_and_keeps_the_value():
    model, _, cfg = _model(6)
    f = F.device_features(cfg)
    torch.manual_seed(0)
    with torch.no_grad():  # a random policy: train nothing, perturb every weight away from its init
        for p in model.policy.parameters():
            p.add_(0.3 * torch.randn_like(p))
    obs = torch.randn(32, F.obs_size(cfg))
    perm = np.random.default_rng(1).permutation(6)
    pol = model.policy
    with torch.no_grad():  # (the policy reuses one distribution object: read each before the next)
        d = pol.get_distribution(obs)
        mode, log_p = d.mode().numpy(), d.log_p.clone()
        d = pol.get_distribution(_permuted(obs, perm, 6, f))
        assert np.array_equal(mode[:, perm], d.mode().numpy())
        assert torch.allclose(log_p[:, perm], d.log_p, atol=1e-5)
        assert torch.allclose(pol.predict_values(obs), pol.predict_values(_permuted(obs, perm, 6, f)), atol=1e-5)


def test_the_weights_do_not_depend_on_the_number_of_devices():
    small, _, _ = _model(4)
    large, _, cfg = _model(9)
    shapes = {k: v.shape for k, v in small.policy.state_dict().items()}
    assert shapes == {k: v.shape for k, v in large.policy.state_dict().items()}
    large.policy.load_state_dict(small.policy.state_dict())  # a K = 4 policy acts in a K = 9 cell
    obs = torch.randn(5, F.obs_size(cfg))
    with torch.no_grad():
        assert large.policy.get_distribution(obs).mode().shape == (5, 9)
        # and the K = 4 agent's own decision (numpy, as PPOController acts) takes the K = 9 cell
        from agents.setpolicy import NumpySetPolicy

        mode = large.policy.get_distribution(obs).mode().numpy()
        assert np.array_equal(mode, NumpySetPolicy(small.policy).act(obs.numpy().astype(np.float64)))


def test_a_saved_set_agent_acts_as_sb3_predict(tmp_path):
    model, venv, cfg = _model(5)
    model.learn(128)
    save_agent(tmp_path / "agent", model, venv, cfg)
    agent = load_agent(tmp_path / "agent")
    env = msenv.MultiSpinEnv(cfg)
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        ours = agent.act(env.unwrapped.context, obs)
        theirs, _ = agent.model.predict(agent.normalize(obs).astype(np.float32), deterministic=True)
        assert np.array_equal(ours, theirs)
        obs, *_ = env.step(ours)


def test_the_set_policy_rejects_an_observation_that_is_not_device_rows():
    from gymnasium import spaces

    from agents.setpolicy import DeviceSetPolicy

    with pytest.raises(ValueError, match="device rows"):
        DeviceSetPolicy(spaces.Box(-1, 1, (13,)), spaces.MultiDiscrete([3] * 4), lambda _: 1e-3)
