"""PettingZoo's parallel API on msenv: one agent per device, pasted as a script.

Agents are named ``device_0`` … ``device_{K-1}``; each observes its own features and
the cell's and picks its own draft length (``Discrete(γ_max + 1)``).
``reward="shared"`` gives every agent the round's goodput, ``reward="per_device"`` each
device its own share (they sum to it).

Run: ``python examples/pettingzoo_parallel.py``
"""

from pettingzoo.test import parallel_api_test

from msenv.envs.marl import MultiSpinParallelEnv


def main() -> None:
    env = MultiSpinParallelEnv(
        num_devices=4, gamma_max=6, episode_length=8, reward="per_device"
    )
    parallel_api_test(
        MultiSpinParallelEnv(num_devices=4, gamma_max=6, episode_length=8),
        num_cycles=20,
    )
    observations, infos = env.reset(seed=0)
    print("agents", env.agents)
    print(
        "device_0 observes", env.observation_space("device_0"),
        "and acts in", env.action_space("device_0"),
    )
    total = 0.0
    while env.agents:
        actions = {agent: env.action_space(agent).sample() for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        total += sum(rewards.values())
    print(f"episode return (summed over devices) {total:.1f}")
    env.close()


if __name__ == "__main__":
    main()
