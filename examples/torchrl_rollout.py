"""TorchRL's ``GymEnv`` on msenv, pasted as a script.

Two things TorchRL changes (see docs/integrations.md): it turns each device's discrete
action into a **one-hot** tensor (the action of a rollout is [steps, K, γ_max+1], not
[steps, K]), and only the reward, the termination flags and the observation reach the
TensorDict — msenv's ``info`` keys (``goodput``, ``tokens``, ``modes``, …) are
dropped unless you ask for them with ``set_info_dict_reader``, as below (array-valued
keys such as ``tokens``; the reader refuses a plain Python float such as ``goodput``
with AttributeError).

Run: ``python examples/torchrl_rollout.py``
"""

from torchrl.envs import GymEnv
from torchrl.envs.gym_like import default_info_dict_reader
from torchrl.envs.utils import check_env_specs

import msenv  # noqa: F401  (registers the ids)

ID = "msenv/MultiSpin-v0"
SMALL = dict(num_devices=4, gamma_max=6, episode_length=8)


def main() -> None:
    env = GymEnv(ID, **SMALL)
    check_env_specs(env)
    env.set_seed(0)
    td = env.rollout(5)
    print(
        "action", tuple(td["action"].shape),
        "(one-hot per device); keys:", sorted(td["next"].keys()),
    )

    # keep some of msenv's info keys in the TensorDict
    env = GymEnv(ID, **SMALL).set_info_dict_reader(default_info_dict_reader(["tokens"]))
    env.set_seed(0)
    td = env.rollout(5)
    print("tokens per device and round", td["next", "tokens"].tolist())


if __name__ == "__main__":
    main()
