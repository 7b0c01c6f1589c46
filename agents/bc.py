"""Behaviour cloning: start PPO from a controller's decisions (kickstarting).

On the model §11 ids PPO from scratch plateaus ≈ 1% below the plug-in greedy SAA (README,
"Dynamics"). ``train.py --bc-init greedy-saa`` starts it from the greedy instead: the controller
plays ``--bc-episodes`` episodes (through the one controller interface, on seeds disjoint from
training and evaluation), the policy is fitted to its draft lengths by maximum likelihood (one
categorical per device, the policy's own distribution) and the critic to the discounted returns
it earned, and PPO then fine-tunes from there. The VecNormalize statistics start from the
demonstrations, so the cloned network sees the inputs it was fitted on.

Fitting keeps the epoch with the lowest negative log-likelihood on a held-out tenth of the
episodes (the greedy's decisions carry its SAA sampling noise, so later epochs overfit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from msenv.config import SystemConfig

#: first seed of the demonstration episodes (training envs use seed.., evaluation 10000.. / 60000..)
DEMO_SEED = 500_000


@dataclass(frozen=True)
class Demonstrations:
    """A controller's episodes, concatenated: raw observations [N, obs], draft lengths [N, K],
    rewards [N], the index of each row's episode [N] and, in a cell generator's episodes, each
    row's number of devices [N] (its slots from there on are padding, drafting 0; None: every slot
    is a device)."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    episode: np.ndarray
    num_devices: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.rewards)


def _demo_episode(job) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from evaluation.harness import play
    from msenv.envs.cells import make_env

    factory, config, seed = job
    obs, actions, rewards, _, _ = zip(*play(factory(), config, seed))
    actions = np.asarray(actions, dtype=np.int64)
    # a cell generator's episode has K ≤ k_max devices: its padded slots draft γ = 0, the value
    # the masked policy pins them to (so they add nothing to the likelihood)
    width = make_env(config).action_space.shape[0]
    k = actions.shape[1]
    actions = np.pad(actions, ((0, 0), (0, width - k)))
    return np.asarray(obs), actions, np.asarray(rewards, dtype=float), np.full(len(actions), k)


def collect(controller: str, config: SystemConfig, episodes: int, seed: int = DEMO_SEED, workers: int = 1,
            progress: bool = False) -> Demonstrations:
    """Let the controller named ``controller`` (``baselines.REGISTRY``) play ``episodes`` episodes
    with seeds ``seed ..``; return its observations, actions and rewards."""
    from evaluation.harness import ControllerFactory
    from evaluation.parallel import parallel_map

    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes={episodes!r} is invalid; allowed: an integer ≥ 1")
    ControllerFactory(controller)()  # unknown names fail here, not in a worker
    jobs = [(ControllerFactory(controller), config, seed + i) for i in range(episodes)]
    out = parallel_map(_demo_episode, jobs, workers, progress, desc=f"demonstrations ({controller})")
    return Demonstrations(
        obs=np.concatenate([o for o, _, _, _ in out]), actions=np.concatenate([a for _, a, _, _ in out]),
        rewards=np.concatenate([r for _, _, r, _ in out]),
        episode=np.concatenate([np.full(len(r), i) for i, (_, _, r, _) in enumerate(out)]),
        num_devices=np.concatenate([k for _, _, _, k in out]),
    )


def running_returns(rewards: np.ndarray, episode: np.ndarray, gamma: float) -> np.ndarray:
    """The returns VecNormalize tracks to scale rewards: R_t = γ R_{t−1} + r_t, reset at each
    episode's start."""
    out = np.empty(len(rewards))
    acc = 0.0
    for t in range(len(rewards)):
        if t == 0 or episode[t] != episode[t - 1]:
            acc = 0.0
        acc = gamma * acc + rewards[t]
        out[t] = acc
    return out


def discounted_returns(rewards: np.ndarray, episode: np.ndarray, gamma: float) -> np.ndarray:
    """Σ_j γ^j r_{t+j} within each episode (truncated at its end): the running returns of the
    time-reversed episodes, reversed."""
    return running_returns(rewards[::-1], episode[::-1], gamma)[::-1]


def clone(model, venv, demos: Demonstrations, epochs: int = 40, batch_size: int = 512, learning_rate: float = 1e-3,
          val_fraction: float = 0.1, seed: int = 0) -> dict[str, Any]:
    """Fit ``model``'s policy to ``demos`` (max likelihood of the actions; the critic to the
    normalised discounted returns, with PPO's discount) and set ``venv``'s VecNormalize statistics
    from them. Keeps the epoch with the best held-out likelihood; returns its metrics."""
    import torch as th

    for name, val, ok, allowed in (("epochs", epochs, isinstance(epochs, int) and epochs >= 1, "an integer ≥ 1"),
                                   ("batch_size", batch_size, isinstance(batch_size, int) and batch_size >= 1,
                                    "an integer ≥ 1"),
                                   ("learning_rate", learning_rate, learning_rate > 0, "a number > 0"),
                                   ("val_fraction", val_fraction, 0.0 < val_fraction < 1.0, "a number in (0, 1)")):
        if isinstance(val, bool) or not ok:
            raise ValueError(f"{name}={val!r} is invalid; allowed: {allowed}")
    if model.observation_space.shape != demos.obs.shape[1:]:
        raise ValueError(f"demonstrations have observations of shape {demos.obs.shape[1:]}, the policy expects "
                         f"{model.observation_space.shape} (behaviour cloning needs --frame-stack 1)")
    gamma = float(model.gamma)
    if venv.norm_obs:  # the set policy reads raw observations (its mask entry stays 0 / 1)
        venv.obs_rms.update(demos.obs)
    venv.ret_rms.update(running_returns(demos.rewards, demos.episode, gamma))
    x = th.as_tensor(venv.normalize_obs(demos.obs).astype(np.float32))
    y = th.as_tensor(demos.actions)
    scale = np.sqrt(venv.ret_rms.var + venv.epsilon)
    v = th.as_tensor((discounted_returns(demos.rewards, demos.episode, gamma) / scale).astype(np.float32))
    rng = np.random.default_rng(seed)
    episodes = rng.permutation(np.unique(demos.episode))
    n_val = max(1, int(round(val_fraction * len(episodes))))
    held = np.isin(demos.episode, episodes[:n_val])
    train_idx, val_idx = np.flatnonzero(~held), np.flatnonzero(held)
    if len(train_idx) == 0:
        raise ValueError(f"{len(episodes)} demonstration episode(s) leave none to fit after holding out "
                         f"val_fraction={val_fraction}; allowed: at least 2 episodes")
    policy = model.policy
    devices = None if demos.num_devices is None else demos.num_devices[train_idx]
    _init_heads(policy, demos.actions[train_idx], v[train_idx].mean().item(), model.action_space.nvec, devices)
    opt = th.optim.Adam(policy.parameters(), lr=learning_rate)

    def evaluate(idx) -> tuple[float, float]:
        with th.no_grad():
            dist = policy.get_distribution(x[idx])
            return float(-dist.log_prob(y[idx]).mean()), float((dist.mode() == y[idx]).float().mean())

    def snapshot(epoch: int) -> dict[str, Any]:
        nll, acc = evaluate(val_idx)
        return {"epoch": epoch, "val_nll": nll, "val_accuracy": acc,
                "state": {k: t.clone() for k, t in policy.state_dict().items()}}

    best = snapshot(0)  # the marginals alone, kept if no epoch generalises better
    policy.set_training_mode(True)
    for epoch in range(epochs):
        order = rng.permutation(train_idx)
        for start in range(0, len(order), batch_size):
            b = th.as_tensor(order[start:start + batch_size])
            dist = policy.get_distribution(x[b])
            values = policy.predict_values(x[b]).flatten()
            loss = -dist.log_prob(y[b]).mean() + model.vf_coef * ((values - v[b]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        now = snapshot(epoch + 1)
        if now["val_nll"] < best["val_nll"]:
            best = now
    policy.load_state_dict(best.pop("state"))
    policy.set_training_mode(False)
    best["train_accuracy"] = evaluate(train_idx)[1]
    best["samples"] = len(demos)
    return best


def _init_heads(policy, actions: np.ndarray, value: float, nvec, devices: np.ndarray | None = None) -> None:
    """Start the fit from the demonstrations' marginals: each device's action logits' bias =
    log of its smoothed action frequencies, the critic's bias = the mean target. Without this,
    Adam's first steps (≈ sign-gradient steps) fit even a constant controller through the
    per-episode features (α, β) of the training episodes and generalise badly (measured:
    cloning ``fixed-3`` from 100 episodes reached 21% held-out accuracy at 100% on training)."""
    import torch as th

    nvec = np.asarray(nvec, dtype=int)
    if policy.action_net.bias.shape[0] == nvec[0] < nvec.sum():
        # one head shared by every device (the set policy): the marginal over the devices' slots
        real = (np.ones(actions.shape, bool) if devices is None
                else np.arange(actions.shape[1])[None, :] < np.asarray(devices)[:, None])
        freq = np.bincount(actions[real], minlength=nvec[0])[:nvec[0]] + 0.5
        bias = np.log(freq / freq.sum())
    else:
        bias = np.concatenate([np.log(f / f.sum()) for f in
                               (np.bincount(actions[:, k], minlength=n)[:n] + 0.5 for k, n in enumerate(nvec))])
    with th.no_grad():
        policy.action_net.bias.copy_(th.as_tensor(bias, dtype=th.float32))
        policy.value_net.bias.fill_(value)


__all__ = ["DEMO_SEED", "Demonstrations", "clone", "collect", "discounted_returns", "running_returns"]
