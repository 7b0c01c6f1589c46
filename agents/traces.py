"""Learned control on traces (model §12): the training environment of the capped agent, its teacher's
demonstrations and the behaviour-cloning fit.

The agent reads the Traces id's observation with the exact filter's rows (``trace_posterior``: each
device's predictive survival at depths 1, 2, 3, 4, 6, 8, 12, P(high), the level, its correction's
cost; the episode's throughput so far) and decides capped actions (:mod:`agents.capped`). One agent
serves several presets: :class:`PresetsVecEnv` runs ``n`` envs of each preset's *training* requests
side by side (SB3's VecEnv API), maps capped actions to draft lengths with each device's exact
drafting time (:class:`~msenv.envs.actions.CappedAction`, the env-side action type), and rewards a
round with ``scale · (N − λ_p · T)`` — its tokens minus the preset's reference throughput λ_p times
its time (Dinkelbach's form of the long-run throughput N/T: maximising Σ N − λ Σ T at λ = the best
ratio maximises the ratio).

The teacher is the ``trace-filter-ls`` rule (:class:`~baselines.trace_rules.TraceFilterLS`) on the
env's own posterior (the context's ``posterior``: the same filter): :func:`collect` plays it in every
env, :func:`fit` clones it (maximum likelihood of its capped actions — every draft-length vector has
one, :meth:`~msenv.envs.actions.CappedAction.encode` — and the critic fitted to the discounted returns
it earned), keeping the epoch with the best held-out likelihood.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from baselines.trace_rules import TraceFilterLS
from msenv.envs.actions import CappedAction
from msenv.envs.sb3 import SB3VecEnv
from msenv.envs.vector import MultiSpinVectorEnv

from .bc import discounted_returns

#: the reference throughput before it is measured (tokens/s)
LAMBDA0 = 100.0


class PresetsVecEnv(VecEnv):
    """``n_per`` envs of each config of ``configs`` (one per preset) as one SB3 VecEnv of capped
    actions (module docstring). Every reset draws each env's seed from ``seeds`` (a
    ``numpy.random.SeedSequence``: the run's own stream); ``lam_ref`` [len(configs)]: each preset's
    reference throughput (tokens/s) of the reward."""

    def __init__(self, configs: Sequence, n_per: int, seeds: np.random.SeedSequence,
                 lam_ref: Sequence[float] | None = None, reward_scale: float = 0.2) -> None:
        if not configs:
            raise ValueError("configs=[] is invalid; allowed: one config per preset, at least one")
        if isinstance(n_per, bool) or not isinstance(n_per, int) or n_per < 1:
            raise ValueError(f"n_per={n_per!r} is invalid; allowed: an integer ≥ 1")
        self.configs, self.n_per = list(configs), n_per
        self.subs = [SB3VecEnv(MultiSpinVectorEnv(n_per, c)) for c in self.configs]
        cfg = self.configs[0]
        self.k, self.action = cfg.num_devices, CappedAction(cfg.gamma_max)
        super().__init__(n_per * len(self.configs), self.subs[0].observation_space, self.action.space(self.k))
        self.seeds = seeds
        self.reward_scale = float(reward_scale)
        self.set_reference([LAMBDA0] * len(self.configs) if lam_ref is None else lam_ref)
        self._gamma: np.ndarray | None = None

    def set_reference(self, lam_ref: Sequence[float]) -> None:
        """Each preset's reference throughput λ_p (tokens/s) of the reward."""
        lam = np.asarray(lam_ref, dtype=np.float64)
        if lam.shape != (len(self.configs),) or not np.all(np.isfinite(lam)) or (lam < 0).any():
            raise ValueError(f"lam_ref={list(lam_ref)!r} is invalid; allowed: {len(self.configs)} throughputs ≥ 0")
        self.lam_ref = np.repeat(lam, self.n_per)

    # ------------------------------------------------------------------ the rows' state
    def draft_times(self) -> np.ndarray:
        """Each env's devices' drafting times [N, K] (s per token)."""
        return np.concatenate([s.venv.draft_times for s in self.subs])

    def contexts(self) -> list:
        """Each env's coming round as the server sees it (one context per env, arrays [K])."""
        return [c for s in self.subs for c in s.venv.round_context()]

    def _slices(self):
        return [slice(j * self.n_per, (j + 1) * self.n_per) for j in range(len(self.subs))]

    # ------------------------------------------------------------------ the VecEnv API
    def reset(self):
        obs = []
        for sub, child in zip(self.subs, self.seeds.spawn(len(self.subs))):
            sub.seed_next_reset([int(s) for s in child.generate_state(self.n_per)])
            obs.append(sub.reset())
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return np.concatenate(obs)

    def step_async(self, actions) -> None:
        a = np.asarray(actions).reshape(self.num_envs, self.k + 1)
        self.step_lengths(self.action.lengths(a, self.draft_times()))

    def step_lengths(self, gamma: np.ndarray) -> None:
        """Play draft lengths [N, K] directly (the teacher's)."""
        self._gamma = np.asarray(gamma, dtype=np.int64).reshape(self.num_envs, self.k)
        for sub, sl in zip(self.subs, self._slices()):
            sub.step_async(self._gamma[sl])

    def step_wait(self):
        obs, done, infos = [], [], []
        for sub in self.subs:
            o, _, d, info = sub.step_wait()
            obs.append(o)
            done.append(d)
            infos += info
        tokens = np.array([i["round_tokens"] for i in infos])
        time_s = np.array([i["latency"] for i in infos])
        reward = self.reward_scale * (tokens - self.lam_ref * time_s)
        return np.concatenate(obs), reward.astype(np.float32), np.concatenate(done), infos

    def close(self) -> None:
        for s in self.subs:
            s.close()

    def get_attr(self, attr_name, indices=None):
        return [getattr(self, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name, value, indices=None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name, *args, indices=None, **kwargs):
        return [getattr(self, method_name)(*args, **kwargs)]

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(self._get_indices(indices))

    def seed(self, seed=None):
        """The streams are the run's SeedSequence's (SB3's ``seed + i`` would share them across runs)."""
        return [None] * self.num_envs


class Demonstrations(NamedTuple):
    """The teacher's rounds in every env: observations [T, N, obs], capped actions [T, N, K + 1],
    tokens [T, N], round times [T, N] (s), episode ends [T, N]."""

    obs: np.ndarray
    actions: np.ndarray
    tokens: np.ndarray
    time_s: np.ndarray
    done: np.ndarray

    def throughput(self, env: PresetsVecEnv) -> list[float]:
        """Each preset's teacher throughput (tokens/s) over its envs' rounds: its reference λ_p."""
        return [float(self.tokens[:, sl].sum() / self.time_s[:, sl].sum()) for sl in env._slices()]


def collect(env: PresetsVecEnv, rounds: int, rng: np.random.Generator, teacher: type = TraceFilterLS) -> Demonstrations:
    """``rounds`` rounds of the teacher (``trace-filter-ls`` on the env's posterior) in every env of
    ``env`` (reset first); its SAA samples drawn from ``rng``."""
    rules = [teacher() for _ in env.subs]
    for r in rules:
        r.rng = rng
    obs = env.reset()
    out: dict[str, list] = {"obs": [], "actions": [], "tokens": [], "time_s": [], "done": []}
    for _ in range(rounds):
        ctxs = env.contexts()
        gamma = np.stack([rules[i // env.n_per].decide(c, c.posterior) for i, c in enumerate(ctxs)])
        out["obs"].append(obs)
        out["actions"].append(env.action.encode(gamma, env.draft_times()))
        env.step_lengths(gamma)
        obs, _, done, infos = env.step_wait()
        out["tokens"].append([i["round_tokens"] for i in infos])
        out["time_s"].append([i["latency"] for i in infos])
        out["done"].append(done)
    return Demonstrations(*(np.asarray(out[k]) for k in Demonstrations._fields))


def returns(demos: Demonstrations, lam_ref: np.ndarray, reward_scale: float, gamma: float) -> np.ndarray:
    """The discounted returns [T, N] of the teacher's rewards (each env's episodes apart)."""
    reward = reward_scale * (demos.tokens - lam_ref[None] * demos.time_s)
    episode = np.cumsum(np.concatenate([np.zeros((1, reward.shape[1])), demos.done[:-1]]), axis=0)
    out = np.empty_like(reward)
    for n in range(reward.shape[1]):
        out[:, n] = discounted_returns(reward[:, n], episode[:, n], gamma)
    return out


def fit(model, demos: Demonstrations, values: np.ndarray, epochs: int = 60, batch_size: int = 1024,
        learning_rate: float = 1e-3, val_fraction: float = 0.1, rng: np.random.Generator | None = None
        ) -> dict[str, Any]:
    """Fit ``model``'s policy to the demonstrations: loss = NLL of the capped actions / (K + 1) +
    ``vf_coef`` · MSE(value, ``values``), Adam; keeps the epoch with the lowest NLL on a held-out
    ``val_fraction`` of the samples (the teacher's SAA noise makes later epochs overfit)."""
    import torch as th

    rng = np.random.default_rng() if rng is None else rng
    policy = model.policy
    x = th.as_tensor(demos.obs.reshape(-1, demos.obs.shape[-1]), dtype=th.float32)
    y = th.as_tensor(demos.actions.reshape(-1, demos.actions.shape[-1]))
    v = th.as_tensor(values.reshape(-1), dtype=th.float32)
    n, width = len(x), y.shape[1]
    order = rng.permutation(n)
    held, train = order[: max(1, int(val_fraction * n))], order[max(1, int(val_fraction * n)):]
    opt = th.optim.Adam(policy.parameters(), lr=learning_rate)

    def score(idx) -> dict[str, float]:
        with th.no_grad():
            b = th.as_tensor(idx)
            dist = policy.get_distribution(x[b])
            mode = dist.mode()
            return {"nll_per_choice": float(-dist.log_prob(y[b]).mean()) / width,
                    "level_accuracy": float((mode[:, 0] == y[b, 0]).float().mean()),
                    "device_accuracy": float((mode[:, 1:] == y[b, 1:]).float().mean()),
                    "value_mse": float(((policy.predict_values(x[b]).flatten() - v[b]) ** 2).mean())}

    best, state = None, None
    for epoch in range(epochs):
        policy.set_training_mode(True)
        for start in range(0, len(train), batch_size):
            b = th.as_tensor(train[start:start + batch_size])
            dist = policy.get_distribution(x[b])
            loss = (-dist.log_prob(y[b]).mean() / width
                    + model.vf_coef * ((policy.predict_values(x[b]).flatten() - v[b]) ** 2).mean())
            opt.zero_grad()
            loss.backward()
            opt.step()
        train = rng.permutation(train)
        policy.set_training_mode(False)
        now = {"epoch": epoch + 1, **score(held)}
        if best is None or now["nll_per_choice"] < best["nll_per_choice"]:
            best, state = now, {k: t.clone() for k, t in policy.state_dict().items()}
    policy.load_state_dict(state)
    policy.set_training_mode(False)
    return {**best, "samples": n}


__all__ = ["LAMBDA0", "Demonstrations", "PresetsVecEnv", "collect", "fit", "returns"]
