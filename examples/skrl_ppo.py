"""skrl 2.1's PPO on msenv's batched vector env, pasted as a script.

Two things to know:

* skrl steps a Gymnasium vector env and records every step as a transition. With
  Gymnasium's default next-step autoreset, the step after an episode's end is only a
  reset (reward 0, the action ignored), so skrl would learn from a reward-0 step at
  every episode end. Make the vector env with ``autoreset_mode=SAME_STEP``: it resets
  inside the step that ends the episode.
* ``MultiCategoricalMixin`` (one categorical per device over ``action_space.nvec``)
  always samples: it has no deterministic action, so its evaluation is stochastic too.
  The end of this script takes each device's most likely draft length from the policy's
  logits by hand.

Install: ``pip install "msenv[skrl]"`` (after the CPU torch, see README).
Run: ``python examples/skrl_ppo.py [--steps 2048]``
"""

import argparse

import gymnasium as gym
import torch
from skrl.agents.torch.ppo import PPO, PPO_CFG
from skrl.envs.wrappers.torch import wrap_env
from skrl.memories.torch import RandomMemory
from skrl.models.torch import DeterministicMixin, Model, MultiCategoricalMixin
from skrl.trainers.torch import SequentialTrainer

import msenv  # noqa: F401  (registers the ids)

ID = "msenv/MultiSpin-v0"
# a small cell, so the run is quick
SMALL = dict(num_devices=4, gamma_max=6, episode_length=16)


class Policy(MultiCategoricalMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(
            self,
            observation_space=observation_space,
            action_space=action_space,
            device=device,
        )
        MultiCategoricalMixin.__init__(
            self, unnormalized_log_prob=True, reduction="sum"
        )
        self.net = torch.nn.Sequential(
            torch.nn.Linear(self.num_observations, 64),
            torch.nn.Tanh(),
            torch.nn.Linear(64, int(sum(action_space.nvec))),
        )

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


class Value(DeterministicMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(
            self,
            observation_space=observation_space,
            action_space=action_space,
            device=device,
        )
        DeterministicMixin.__init__(self)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(self.num_observations, 64),
            torch.nn.Tanh(),
            torch.nn.Linear(64, 1),
        )

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


def main(steps: int = 2048) -> None:
    torch.manual_seed(0)
    # msenv's batched vector env (every env in one array call),
    # resetting in the step that ends an episode
    venv = gym.make_vec(
        ID,
        num_envs=4,
        vectorization_mode="vector_entry_point",
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
        **SMALL,
    )
    env = wrap_env(venv, wrapper="gymnasium")
    models = {
        "policy": Policy(env.observation_space, env.action_space, env.device),
        "value": Value(env.observation_space, env.action_space, env.device),
    }
    rollouts = 64
    memory = RandomMemory(
        memory_size=rollouts, num_envs=env.num_envs, device=env.device
    )
    cfg = PPO_CFG(
        rollouts=rollouts, learning_epochs=2, mini_batches=4, learning_rate=3e-4
    )
    cfg.experiment.write_interval = 0  # no TensorBoard files
    cfg.experiment.checkpoint_interval = 0
    agent = PPO(
        models=models,
        memory=memory,
        observation_space=env.observation_space,
        action_space=env.action_space,
        device=env.device,
        cfg=cfg,
    )
    SequentialTrainer(
        env=env,
        agents=agent,
        cfg={
            "timesteps": steps // env.num_envs,
            "headless": True,
            "disable_progressbar": True,
            "close_environment_at_exit": False,
        },
    ).train()

    # greedy evaluation: each device's most likely draft length,
    # from the policy's logits
    single = gym.make(ID, **SMALL)
    obs, _ = single.reset(seed=123)
    total, done = 0.0, False
    nvec = single.action_space.nvec
    while not done:
        with torch.no_grad():
            logits = models["policy"].net(
                torch.as_tensor(obs, dtype=torch.float32, device=env.device)
            )
        action = [int(chunk.argmax()) for chunk in torch.split(logits, nvec.tolist())]
        obs, reward, terminated, truncated, _ = single.step(action)
        total, done = total + reward, terminated or truncated
    print(f"skrl PPO: {steps} env steps, greedy episode return {total:.1f}")
    env.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=2048, help="environment steps of training"
    )
    main(parser.parse_args().steps)
