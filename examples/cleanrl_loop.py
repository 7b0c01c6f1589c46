"""A CleanRL-style PPO loop on msenv, pasted as a script.

The loop CleanRL's ``ppo.py`` runs, with one categorical per device over
``single_action_space.nvec`` (msenv's action is MultiDiscrete).

Run: ``python examples/cleanrl_loop.py [--steps 2048]``
"""

import argparse

import gymnasium as gym
import torch
from torch.distributions import Categorical

import msenv  # noqa: F401  (registers the ids)

ID = "msenv/MultiSpin-v0"
SMALL = dict(num_devices=4, gamma_max=6, episode_length=16)


def main(steps: int = 2048, n_envs: int = 4, n_steps: int = 64) -> dict:
    """Train; returns the finished episodes' returns and lengths and the last loss."""
    envs = gym.vector.SyncVectorEnv(
        [lambda: RecordEpisodeStatistics(gym.make(ID, **SMALL)) for _ in range(n_envs)]
    )
    nvec = envs.single_action_space.nvec
    obs_dim = envs.single_observation_space.shape[0]
    torch.manual_seed(0)
    actor = torch.nn.Sequential(
        torch.nn.Linear(obs_dim, 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, int(nvec.sum())),
    )
    critic = torch.nn.Sequential(
        torch.nn.Linear(obs_dim, 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, 1),
    )
    opt = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=3e-4)

    def dist(x):  # [batch, K, γ_max + 1] logits: one categorical per device
        return Categorical(logits=actor(x).reshape(len(x), len(nvec), int(nvec[0])))

    obs, _ = envs.reset(seed=1)
    returns, lengths = [], []
    for _ in range(max(1, steps // (n_envs * n_steps))):
        buf_o, buf_a, buf_lp, buf_r = [], [], [], []
        for _ in range(n_steps):
            x = torch.as_tensor(obs)
            with torch.no_grad():
                d = dist(x)
                a = d.sample()
            obs, r, terminated, truncated, info = envs.step(a.numpy())
            buf_o.append(x), buf_a.append(a)
            buf_lp.append(d.log_prob(a).sum(-1)), buf_r.append(torch.as_tensor(r))
            if "episode" in info:
                returns += info["episode"]["r"][info["_episode"]].tolist()
                lengths += info["episode"]["l"][info["_episode"]].tolist()
        o, a, lp = torch.cat(buf_o), torch.cat(buf_a), torch.cat(buf_lp)
        r = torch.cat(buf_r).float()
        r = r / (r.std() + 1e-8)
        # one-step advantages: the loop's shape, not CleanRL's GAE
        adv = (r - critic(o).squeeze(-1)).detach()
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        for _ in range(4):  # clipped surrogate + value loss
            ratio = torch.exp(dist(o).log_prob(a).sum(-1) - lp)
            loss = (
                -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
                + ((critic(o).squeeze(-1) - r) ** 2).mean()
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
    print(f"CleanRL-style PPO: {len(returns)} episodes, last return {returns[-1]:.1f}")
    envs.close()
    return {"returns": returns, "lengths": lengths, "loss": loss.item()}


RecordEpisodeStatistics = gym.wrappers.RecordEpisodeStatistics

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=2048, help="environment steps of training"
    )
    main(parser.parse_args().steps)
