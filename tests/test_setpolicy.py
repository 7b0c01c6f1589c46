"""The device-set policy (agents.setpolicy): equivariant to the devices' order, weights
independent of K, and a saved agent that acts as SB3's own predict does."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import torch

import msenv
from agents.controller import load_agent, save_agent
from agents.envs import make_vec_env, normalize
from agents.ppo import make_ppo
from msenv.engine import functional as F


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
        assert np.array_equal(mode, NumpySetPolicy.from_torch(small.policy).act(obs.numpy().astype(np.float64)))


@pytest.mark.slow
def test_a_saved_set_agent_acts_as_sb3_predict(tmp_path):
    model, venv, cfg = _model(5)
    model.learn(128)
    save_agent(tmp_path / "agent", model, venv, cfg)
    agent = load_agent(tmp_path / "agent", sb3=True)
    portable = load_agent(tmp_path / "agent")  # policy.npz + agent.json only
    env = msenv.MultiSpinEnv(cfg)
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        ours = agent.act(env.unwrapped.context, obs)
        theirs, _ = agent.model.predict(agent.normalize(obs).astype(np.float32), deterministic=True)
        assert np.array_equal(ours, theirs)
        assert np.array_equal(portable.act(env.unwrapped.context, obs), theirs)
        obs, *_ = env.step(ours)


def test_the_set_policy_rejects_an_observation_that_is_not_device_rows():
    from gymnasium import spaces

    from agents.setpolicy import DeviceSetPolicy

    with pytest.raises(ValueError, match="device rows"):
        DeviceSetPolicy(spaces.Box(-1, 1, (13,)), spaces.MultiDiscrete([3] * 4), lambda _: 1e-3)


def _cells_model(k_max: int, k_range=(2, 5)):
    from agents.setpolicy import set_layout
    from msenv.envs.cells import resolve_cells

    cells = resolve_cells(None, k_range=k_range, k_max=k_max, gamma_max=8, episode_length=10)
    venv = normalize(make_vec_env(cells, 2, 0), 0.0, norm_obs=False)
    model = make_ppo(venv, policy="set", seed=0, n_steps=16, batch_size=32, policy_kwargs=set_layout(cells))
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.policy.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model, venv, cells


def test_the_masked_policy_ignores_padding_and_stays_equivariant():
    """Cell-generator layout: padded rows change nothing (the same decisions and value with 0 or
    7 padded slots, whatever the padded rows hold beyond their zero mask), padded slots take
    γ = 0 with probability 1 (no log-prob, no entropy), and permuting the devices permutes the
    actions."""
    from agents.setpolicy import NumpySetPolicy
    from msenv.envs.cells import MultiSpinCellsEnv

    model, _, cells = _cells_model(5)
    env = MultiSpinCellsEnv(cells)
    obs, info = env.reset(seed=3)
    k, f = info["num_devices"], (len(obs) - 3) // 5
    rows, glob = obs[: 5 * f].reshape(5, f)[:k], obs[5 * f:]

    def layout(device_rows, pad, junk=0.0):
        padded = np.full((pad, f), junk, dtype=np.float32)
        padded[:, -1] = 0.0
        return torch.as_tensor(np.concatenate([device_rows, padded]).ravel().tolist() + glob.tolist())[None].float()

    pol = model.policy
    pad = 5 - k
    assert pad > 0
    with torch.no_grad():
        d = pol.get_distribution(layout(rows, pad))
        mode0, lp0 = d.mode().numpy()[0], d.log_p[0, :k].clone()
        v0 = pol.predict_values(layout(rows, pad))
        d = pol.get_distribution(layout(rows, pad, junk=0.9))
        mode1 = d.mode().numpy()[0]
        assert np.array_equal(mode1, mode0) and not mode1[k:].any()
        assert torch.allclose(d.log_p[0, :k], lp0, atol=1e-5) and torch.all(d.log_p[0, k:, 0] == 0.0)
        assert float(d.entropy()[0]) == pytest.approx(float(-(lp0.exp() * lp0).sum()), rel=1e-4)
        assert float(d.log_prob(torch.as_tensor(mode1)[None])[0]) == pytest.approx(
            float(lp0.gather(-1, torch.as_tensor(mode0[:k])[:, None]).sum()), rel=1e-5)
        assert torch.allclose(pol.predict_values(layout(rows, pad, junk=0.9)), v0, atol=1e-5)
        perm = np.random.default_rng(0).permutation(k)
        assert np.array_equal(pol.get_distribution(layout(rows[perm], pad)).mode().numpy()[0][:k], mode0[perm])
    fast = NumpySetPolicy.from_torch(pol)  # any number of rows: 0 or 7 padded slots decide the same
    assert np.array_equal(fast.act(layout(rows, pad).numpy()[0]), mode0)
    assert np.array_equal(fast.act(layout(rows, 0).numpy()[0]), mode0[:k])
    assert np.array_equal(fast.act(layout(rows, 7, junk=0.9).numpy()[0])[:k], mode0[:k])


def test_a_cells_agent_acts_in_any_cell_and_in_single_cell_envs(tmp_path):
    """A saved agent of the generator (k_max 5) decides a 40-device cell and a plain K = 6 env
    (the controller re-expresses the single-cell observation as the generator shows it)."""
    from agents.controller import AgentFactory
    from evaluation.harness import Entry, evaluate
    from msenv.envs.cells import MultiSpinCellsEnv, pad_observation

    model, venv, cells = _cells_model(5)
    save_agent(tmp_path / "agent", model, venv, cells)
    agent = load_agent(tmp_path / "agent")
    big = cells.replace(k_range=(40, 40), k_max=40)
    env = MultiSpinCellsEnv(big)
    obs, _ = env.reset(seed=0)
    assert agent.act(env.context, obs).shape == (40,)
    plain = msenv.MultiSpinEnv(cells.base.replace(num_devices=6))
    so, _ = plain.reset(seed=1)
    ctx = plain.context
    padded = pad_observation(so, ctx.config, ctx.t_draft, 6)
    assert np.array_equal(agent.act(ctx, so), agent.act(ctx, padded))
    stats = evaluate([Entry("gen", AgentFactory(tmp_path / "agent"))], big.replace(episode_length=3), 2, 0)
    assert len(stats) == 2 and all(s.throughput > 0 for s in stats)
    dyn = msenv.MultiSpinEnv(msenv.resolve_config(msenv.ENV_IDS["msenv/MultiSpin-Dynamic-v0"], num_devices=4))
    so, _ = dyn.reset(seed=0)
    with pytest.raises(ValueError, match="device rows of 6 entries"):
        agent.act(dyn.context, so)


def test_the_packed_masked_pass_equals_the_padded_one_with_its_gradients():
    """The masked extractor's fast pass (devices only, split layers) against the padded pass it
    replaces (_encode/_actor): the same latents on the device slots, zeros on padded ones, the
    same value, and the same gradients of a loss on the logits and the value."""
    from agents.setpolicy import DeviceHead, DeviceSetExtractor

    torch.manual_seed(0)
    b, k, f, g, h = 9, 7, 5, 3, 16
    rng = np.random.default_rng(0)
    obs = np.zeros((b, k * f + g), np.float32)
    rows = obs[:, : k * f].reshape(b, k, f)
    for r, n in enumerate(rng.integers(1, k + 1, b)):
        rows[r, :n, :-1] = rng.uniform(-1, 1, (n, f - 1))
        rows[r, :n, -1] = 1.0
    obs[:, k * f:] = rng.uniform(-1, 1, (b, g))
    x = torch.as_tensor(obs)
    for pooling in ("mean", "meanmax"):
        ext = DeviceSetExtractor(k, f, g, h, masked=True, pooling=pooling)
        head = DeviceHead(k, h, 4, masked=True)

        def loss(actor, value):  # (called in this iteration only)
            return head(actor).log_softmax(-1).square().sum() + value.square().sum()  # noqa: B023

        enc, pooled, glob, mask = ext._encode(x)
        dense = ext._actor(enc, pooled, mask, glob), ext.rho(torch.cat([pooled, glob], dim=-1))
        l_dense = loss(*dense)
        grads_dense = torch.autograd.grad(l_dense, list(ext.parameters()) + list(head.parameters()))
        packed = ext(x)
        l_packed = loss(*packed)
        grads_packed = torch.autograd.grad(l_packed, list(ext.parameters()) + list(head.parameters()))
        m = torch.as_tensor(rows[..., -1] > 0.5)
        lat_d, lat_p = dense[0].reshape(b, k, h + 1), packed[0].reshape(b, k, h + 1)
        assert torch.allclose(lat_p[m], lat_d[m], atol=1e-6)
        assert torch.all(lat_p[~m] == 0)
        assert torch.allclose(packed[1], dense[1], atol=1e-6)
        assert torch.allclose(head(packed[0]), head(dense[0]), atol=1e-5)
        assert float(l_packed.detach()) == pytest.approx(float(l_dense.detach()), rel=1e-5)
        for u, v in zip(grads_packed, grads_dense):
            assert torch.allclose(u, v, atol=1e-5, rtol=1e-4)
        assert torch.allclose(ext.forward_actor(x), packed[0]) and torch.allclose(ext.forward_critic(x), packed[1])
