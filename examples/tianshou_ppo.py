"""Tianshou 2.0's PPO (the procedural API) on msenv, pasted as a script.

msenv's action is MultiDiscrete: K devices, each a draft length in {0, …, γ_max}.
Tianshou 2.0's high-level API (``tianshou.highlevel``, via ``SpaceInfo``) refuses a
MultiDiscrete action space, and its ``MultiDiscreteToDiscrete`` wrapper would flatten
it into one Discrete of (γ_max+1)^K actions — 21^20 ≈ 2.8·10^26, which overflows
int64 silently. What works is the procedural API with one categorical per device: a
``DiscreteActor`` with K × (γ_max+1) logits (no softmax), reshaped to [K, γ_max+1]
and wrapped in ``Independent(Categorical(...), 1)`` so the log-prob of an action is
the sum over devices.

Install: ``pip install "msenv[tianshou]"`` (after the CPU torch, see README).
Run: ``python examples/tianshou_ppo.py [--steps 2048]``
"""

import argparse

import gymnasium as gym
import torch
from tianshou.algorithm import PPO
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from torch.distributions import Categorical, Independent

import msenv  # noqa: F401  (registers the ids)

ID = "msenv/MultiSpin-v0"
# a small cell, so the run is quick
SMALL = dict(num_devices=4, gamma_max=6, episode_length=16)


def main(steps: int = 2048) -> float:
    train_envs = DummyVectorEnv([lambda: gym.make(ID, **SMALL) for _ in range(4)])
    test_envs = DummyVectorEnv([lambda: gym.make(ID, **SMALL) for _ in range(2)])
    train_envs.seed(0)
    test_envs.seed(100)
    space = gym.make(ID, **SMALL)
    n_devices, n_choices = len(space.action_space.nvec), int(space.action_space.nvec[0])
    obs_dim = space.observation_space.shape[0]

    torch.manual_seed(0)
    actor = DiscreteActor(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[64, 64]),
        action_shape=n_devices * n_choices,
        softmax_output=False,  # logits
    )
    critic = DiscreteCritic(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[64, 64])
    )

    def dist_fn(logits: torch.Tensor) -> Independent:
        """One categorical per device; the action's log-prob is their sum."""
        logits = logits.reshape(*logits.shape[:-1], n_devices, n_choices)
        return Independent(Categorical(logits=logits), 1)

    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=dist_fn,
        action_space=space.action_space,
        deterministic_eval=True,  # evaluation: each device's mode
        action_scaling=False,  # for Box spaces only
        action_bound_method=None,  # for Box spaces only
    )
    algorithm = PPO(policy=policy, critic=critic, optim=AdamOptimizerFactory(lr=3e-4))
    train_collector = Collector[CollectStats](
        algorithm, train_envs, VectorReplayBuffer(2048, len(train_envs))
    )
    test_collector = Collector[CollectStats](algorithm, test_envs)
    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=1,
            epoch_num_steps=steps,
            collection_step_num_env_steps=256,
            update_step_num_repetitions=2,
            batch_size=64,
            test_step_num_episodes=2,
            show_progress=False,
            verbose=False,
        )
    )
    returns = test_collector.collect(n_episode=2, reset_before_collect=True).returns
    print(f"tianshou PPO: {result.train_step} env steps, test returns {returns}")
    train_envs.close()
    test_envs.close()
    return float(returns.mean())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=2048, help="environment steps of training"
    )
    main(parser.parse_args().steps)
