"""Vectorised training/evaluation environments for SB3.

``kind="batched"`` (default): :class:`msenv.envs.vector.MultiSpinVectorEnv` behind the SB3 adapter —
all envs in one process, one kernel call per step (measured ≈ 50× SyncVectorEnv at N = 1024);
for a cell generator (:class:`~msenv.config.CellConfig`: each env its own K) the padded
:class:`msenv.envs.cells_vector.MultiSpinCellsVectorEnv` (the same trajectories as the ``DummyVecEnv``;
:func:`msenv.make_vector_env` picks the class).
``kind="subproc"``: SB3 ``SubprocVecEnv`` (start method ``spawn``) of Monitor-wrapped single envs;
``kind="dummy"``: ``DummyVecEnv`` of the same. All kinds carry the same scalar info keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecEnvWrapper, VecNormalize

from msenv.config import EnvSpec
from msenv.envs.env import SUMMARY_KEYS, RoundMetrics
from msenv.envs.sb3 import SB3VecEnv, what_if
from msenv.envs.shell import make_env, make_vector_env

VEC_KINDS = ("batched", "subproc", "dummy")
MONITOR_KEYS = ("episode_throughput",) + SUMMARY_KEYS


class NextResetSeed(gym.Wrapper):
    """Seeds the env's next reset with a seed given ahead (:meth:`seed_next_reset`), whatever seed the
    VecEnv that resets it passes then — how one seed per environment reaches SB3's own VecEnvs
    (``DummyVecEnv``, ``SubprocVecEnv``: their ``env_method`` calls it) through public APIs only."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._pending: int | None = None

    def seed_next_reset(self, seed: int) -> None:
        """Seed the next reset with ``seed``."""
        self._pending = int(seed)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if self._pending is not None:
            seed, self._pending = self._pending, None
        return self.env.reset(seed=seed, options=options)


class _SingleFactory:
    """Picklable env factory for SubprocVecEnv workers."""

    def __init__(self, config: EnvSpec) -> None:
        self.config = config

    def __call__(self):
        return Monitor(RoundMetrics(NextResetSeed(make_env(self.config))), info_keywords=MONITOR_KEYS)


def training_seeds(seed: int, n_envs: int, resumed_at: int = 0) -> list[int]:
    """The seeds of a training run's ``n_envs`` environments for training seed ``seed``
    (:func:`msenv.envs.seeding.derived_seeds`): children of ``SeedSequence(seed)``, so no two training
    seeds share a stream, each above every reserved block. A run resumed after ``resumed_at`` steps
    takes the children of key ``(1, resumed_at)`` — fresh streams of the same tree, independent of
    the ones before the stop (the environments' generator states are not checkpointed)."""
    from msenv.envs.seeding import derived_seeds

    return derived_seeds(seed, n_envs, 1, resumed_at) if resumed_at else derived_seeds(seed, n_envs, 0)


def make_vec_env(config: EnvSpec, n_envs: int, seed: int | Sequence[int],
                 kind: str = "batched") -> VecEnv:
    """An SB3 VecEnv of ``n_envs`` Multi-SPIN envs, seeded ``seed .. seed + n_envs − 1`` (an
    integer, as SB3's ``VecEnv.seed``) or by a list of one seed per env (:func:`training_seeds`)."""
    if not isinstance(seed, (int, np.integer)) and len(seed) != n_envs:
        raise ValueError(f"seed list has {len(seed)} entries; expected n_envs={n_envs}")
    if kind not in VEC_KINDS:
        raise ValueError(f"vec env kind={kind!r} is invalid; allowed: {', '.join(VEC_KINDS)}")
    if kind == "batched":
        venv: VecEnv = SB3VecEnv(make_vector_env(config, n_envs))
    elif kind == "subproc":
        venv = SubprocVecEnv([_SingleFactory(config) for _ in range(n_envs)], start_method="spawn")
    else:
        venv = DummyVecEnv([_SingleFactory(config) for _ in range(n_envs)])
    if isinstance(seed, (int, np.integer)):
        venv.seed(int(seed))
    else:
        seed_next_reset(venv, seed)
    return venv


def seed_next_reset(venv: VecEnv, seeds: Sequence[int]) -> None:
    """Make the next reset of ``venv`` (or of the VecEnv a wrapper such as VecNormalize wraps) seed
    environment i with ``seeds[i]`` — the independent streams of :func:`training_seeds`. Call it
    again once the algorithm is built or loaded: SB3 seeds its env with ``seed + i`` then
    (``set_random_seed``), which would replace those streams by ones that two training seeds share."""
    base = venv.unwrapped
    if len(seeds) != base.num_envs:
        raise ValueError(f"seed list has {len(seeds)} entries; expected n_envs={base.num_envs}")
    if isinstance(base, SB3VecEnv):  # msenv's batched VecEnv seeds its next reset itself
        base.seed_next_reset([int(s) for s in seeds])
        return
    for i, s in enumerate(seeds):  # SB3's VecEnvs: each env's NextResetSeed wrapper
        base.env_method("seed_next_reset", int(s), indices=[i])


def stack_frames(venv: VecEnv, n: int) -> VecEnv:
    """SB3's ``VecFrameStack`` of the last ``n`` observations (a history for partially observed
    ids; zeros before an episode's first round); ``n = 1`` returns ``venv`` itself."""
    from stable_baselines3.common.vec_env import VecFrameStack

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"frame_stack={n!r} is invalid; allowed: an integer ≥ 1")
    return venv if n == 1 else VecFrameStack(venv, n)


def normalize(venv: VecEnv, gamma: float, training: bool = True, norm_obs: bool = True, **kwargs: Any) -> VecNormalize:
    """VecNormalize with reward scaling matched to the PPO discount. Observations are already in
    [−1, 1] by construction; they are normalised too (per entry, as SB3 users expect) unless
    ``norm_obs=False`` — which the device-set policy uses, since per-entry statistics would differ
    from device slot to device slot and tie the agent to one K."""
    return VecNormalize(venv, training=training, norm_obs=norm_obs, norm_reward=training, gamma=gamma, **kwargs)


#: the rewards PPO can train on: the env's per-round goodput, the throughput-aligned N − λT, the
#: goodput per device (G / K: the same best action in every state, each cell weighted alike), or the
#: gain over the policy's own action on the same draws (:class:`CounterfactualReward`)
REWARDS = ("goodput", "throughput", "per-device", "counterfactual")


class PerDeviceReward(VecEnvWrapper):
    """Divides each round's reward by its cell's number of devices K (``info["num_devices"]``,
    else the config's ``num_devices``).

    With the zero discount each round is its own decision and K is fixed within an episode, so
    the best draft lengths in every state are unchanged; what changes is each state's weight in
    the policy gradient. Goodput grows about linearly with K, so on a cell generator's K ~ U{5 …
    50} the largest cells would otherwise carry most of every update (and of the critic's
    error), and the small cells' lengths would barely be learnt."""

    def __init__(self, venv: VecEnv, num_devices: int) -> None:
        super().__init__(venv)
        self.num_devices = int(num_devices)

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        obs, rew, done, infos = self.venv.step_wait()
        k = np.array([info.get("num_devices", self.num_devices) for info in infos], dtype=np.float64)
        return obs, (rew / k).astype(np.float32), done, infos


class ThroughputReward(VecEnvWrapper):
    """Replaces each round's reward G = N/T by N − λ·T (tokens minus λ times the round's time).

    The score is the long-run throughput Σ N / Σ T, not the mean of N/T: a long round (a deep
    fade, a slow drafter) weighs by its length. With λ the best achievable throughput, a policy
    maximising E[N − λT] round by round maximises Σ N / Σ T (Dinkelbach's parametric form of a
    ratio objective); ``train.py`` takes λ from the greedy's throughput on the held-out
    episodes. Needs ``info["latency"]`` and a reward of N/T (``reward_scale`` = 1)."""

    def __init__(self, venv: VecEnv, lam: float) -> None:
        if not lam > 0:
            raise ValueError(f"lam={lam!r} is invalid; allowed: a throughput > 0 (tokens/s)")
        super().__init__(venv)
        self.lam = float(lam)

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        obs, rew, done, infos = self.venv.step_wait()
        latency = np.array([info["latency"] for info in infos], dtype=np.float64)
        return obs, (latency * (rew - self.lam)).astype(np.float32), done, infos


class CounterfactualReward(VecEnvWrapper):
    """The reward relative to a reference action played on the same draws (common random numbers).

    Before every step, ``reference(obs)`` (e.g. the policy's own deterministic action: a
    self-critical baseline) is scored by the env's ``what_if`` on the very verification outcomes
    and gains the step will use; the reward is then the played action's gain over it in the cell's
    long-run throughput, linearised and made relative to the cell::

        r = (N − N_ref) / N̄_ref − (T − T_ref) / T̄_ref

    (N tokens, T the round's time; N̄_ref, T̄_ref the reference's means over the episode so far).
    Its expectation is the first-order change of the cell's throughput Σ N / Σ T that the played
    action makes against the reference, so every cell weighs alike whatever its size, and the
    round's luck (fading, acceptance draws) — shared by both actions — cancels. The reference does
    not depend on the played action, so the policy gradient stays unbiased. Needs a venv with
    ``what_if`` (the batched envs' one, or each single env's: :func:`msenv.envs.sb3.what_if`).

    ``passthrough=True`` leaves the env's reward as it is (an evaluation env wrapped like the
    training env, as SB3's ``EvalCallback`` needs for its normalisation statistics)."""

    def __init__(self, venv: VecEnv, reference=None, passthrough: bool = False) -> None:
        super().__init__(venv)
        self.reference = reference  #: obs [n, obs] → actions [n, …]; set once the policy exists
        self.passthrough = bool(passthrough)
        self._obs: np.ndarray | None = None
        self._ref: tuple[np.ndarray, np.ndarray] | None = None
        self._sums = np.zeros((3, self.num_envs))  # the reference's Σ N, Σ T and rounds in the episode

    def reset(self):
        self._obs = self.venv.reset()
        self._sums[:] = 0.0
        return self._obs

    def step_async(self, actions: np.ndarray) -> None:
        if self.passthrough:
            self.venv.step_async(actions)
            return
        if self.reference is None:
            raise RuntimeError("CounterfactualReward.reference is not set: give it the reference policy (obs → "
                               "actions)")
        self._ref = what_if(self.venv, self.reference(self._obs))
        self.venv.step_async(actions)

    def step_wait(self):
        obs, rew, done, infos = self.venv.step_wait()
        if self.passthrough:
            return obs, rew, done, infos
        n_ref, t_ref = self._ref
        t = np.array([info["latency"] for info in infos], dtype=np.float64)
        n = np.array([info["round_tokens"] for info in infos], dtype=np.float64)
        self._sums += np.stack([n_ref, t_ref, np.ones_like(t)])
        mean_n, mean_t = self._sums[0] / self._sums[2], self._sums[1] / self._sums[2]
        out = (n - n_ref) / mean_n - (t - t_ref) / mean_t
        for i, info in enumerate(infos):
            info["reference_goodput"] = float(n_ref[i] / t_ref[i])
        self._sums[:, done] = 0.0
        self._obs = obs
        return obs, out.astype(np.float32), done, infos


def training_env(config: EnvSpec, n_envs: int, seed: int | Sequence[int], kind: str = "batched",
                 policy: str = "mlp", reward: str | None = None, lam: float | None = None,
                 evaluation: bool = False) -> VecEnv:
    """The VecEnv PPO trains on (before ``VecNormalize``), as ``train.py`` builds it:
    :func:`make_vec_env`, the budget policy's actions played as draft lengths
    (:class:`~agents.budget.BudgetActions`, ``policy="budget"``), then the reward of :data:`REWARDS`
    (``lam``: the throughput reward's λ). ``evaluation=True`` builds the same stack for evaluation
    episodes, scored on the goodput itself (a counterfactual reward passes it through)."""
    if reward is not None and reward not in REWARDS:
        raise ValueError(f"reward={reward!r} is invalid; allowed: {', '.join(REWARDS)}")
    venv = make_vec_env(config, n_envs, seed, kind)
    if policy == "budget":
        from .budget import BudgetActions, budget_layout

        venv = BudgetActions(venv, budget_layout(config))
    if reward == "per-device":
        return PerDeviceReward(venv, getattr(config, "num_devices", 1))
    if reward == "counterfactual":
        return CounterfactualReward(venv, passthrough=evaluation)
    if reward == "throughput":
        if lam is None:
            raise ValueError("reward='throughput' needs lam, the throughput λ (tokens/s)")
        return ThroughputReward(venv, lam)
    return venv


def attach_reference(venv: VecEnv, model) -> None:
    """Give the :class:`CounterfactualReward` in ``venv``'s wrapper chain (if any) its reference:
    ``model``'s deterministic action for the observation, as the policy is at each step (the
    observation normalised as the model sees it, when a ``VecNormalize`` above does so)."""
    top, norm = model.get_env(), None
    while top is not None and norm is None:
        norm = top if isinstance(top, VecNormalize) and top.norm_obs else None
        top = getattr(top, "venv", None)

    def reference(obs):
        x = norm.normalize_obs(obs) if norm is not None else obs
        return model.policy.predict(x, deterministic=True)[0]

    while venv is not None:
        if isinstance(venv, CounterfactualReward):
            venv.reference = reference
            return
        venv = getattr(venv, "venv", None)
