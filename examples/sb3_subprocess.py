"""SB3 vector env over subprocesses, pasted as a script.

Subprocesses are started with "spawn" (numba's compiled kernels are not fork-safe), and
a spawned child re-imports this file: without the ``if __name__ == "__main__":`` guard
it would start children of its own and Python stops with "An attempt has been made to
start a new process before the current process has finished its bootstrapping phase".

Run: python examples/sb3_subprocess.py
"""

from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv


def main():
    # "msenv:<id>" makes each child import msenv (registering the ids) before gym.make
    venv = make_vec_env(
        "msenv:msenv/MultiSpin-v0",
        n_envs=2,
        seed=0,
        vec_env_cls=SubprocVecEnv,
        vec_env_kwargs=dict(start_method="spawn"),
    )
    obs = venv.reset()
    for _ in range(3):
        obs, rewards, dones, infos = venv.step(
            [venv.action_space.sample() for _ in range(venv.num_envs)]
        )
    print("observations", obs.shape, "rewards", rewards)
    venv.close()


if __name__ == "__main__":
    main()
