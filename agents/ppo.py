"""PPO factory for the MultiDiscrete draft-length action (one categorical per device).

Its defaults are the main job's (:data:`agents.defaults.MAIN_JOB`, the one table of training
defaults: chosen by measurement, the docs' "Learning" results page): the default scenario is a
contextual bandit — rounds are independent given the observed context and actions do not
change the next context — so the discount is 0 (no bootstrapping noise; the advantage is
reward − V(obs)). Other values follow SB3 defaults unless measured better.
"""

from __future__ import annotations

from typing import Any

from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecEnv

from .defaults import MAIN_JOB, deprecated, ppo_kwargs
from .distributions import MultiSpinPolicy

#: the names this module had until msenv 0.6 → (their value now, the new name)
OLD_NAMES = {
    "DEFAULT_PPO": (ppo_kwargs, "agents.defaults.ppo_kwargs() (the main job's PPO keyword arguments)"),
    "DEFAULT_ACTION_PRIOR": (lambda: MAIN_JOB["action_prior"], "agents.defaults.MAIN_JOB['action_prior']"),
}


def __getattr__(name: str):
    """``DEFAULT_PPO`` and ``DEFAULT_ACTION_PRIOR`` of msenv 0.6, read from the one table
    (:mod:`agents.defaults`) with a DeprecationWarning naming their new path."""
    if name in OLD_NAMES:
        value, new = OLD_NAMES[name]
        deprecated(f"agents.ppo.{name}", new)
        return value()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the policies ``make_ppo`` builds: an MLP over the flat observation, the devices as a
#: set, or the device-set policy deciding budget actions (a cell generator's envs
#: wrapped in :class:`~agents.budget.BudgetActions`)
POLICIES = ("mlp", "set", "budget")


def make_ppo(
    venv: VecEnv, seed: int = 0, tensorboard_log: str | None = None, verbose: int = 0,
    action_prior: float | None = None, policy: str = "mlp", **overrides: Any,
) -> PPO:
    """PPO on ``venv`` with the main job's settings (:func:`agents.defaults.ppo_kwargs`) updated by
    ``overrides``; ``policy="mlp"``:
    :class:`~agents.distributions.MultiSpinPolicy` (SB3's MlpPolicy with a batched MultiDiscrete
    distribution), ``"set"``: :class:`~agents.setpolicy.DeviceSetPolicy` (one network shared by
    every device, a pooled cell summary; ``policy_kwargs`` may set its ``hidden`` width),
    ``"budget"``: :class:`~agents.budget.BudgetSetPolicy` (the same network deciding a drafting-time
    budget per cell and a bit per device; ``venv`` plays budget actions, ``action_prior`` unused).

    ``action_prior`` λ sets the initial per-device logits to −λ·γ (the action net's bias), so
    the untrained policy prefers short drafts: P(γ) ∝ e^(−λγ). With a uniform start, some device
    almost always drafts ≈ γ_max and, since a round waits for the slowest drafter
    (max_k γ_k T_k), shortening any single device changes nothing — PPO then drifts to long
    drafts. λ = 0 keeps SB3's uniform start; None: the main job's (``MAIN_JOB["action_prior"]``).
    """
    if policy not in POLICIES:
        raise ValueError(f"policy={policy!r} is invalid; allowed: {', '.join(POLICIES)}")
    params = {**ppo_kwargs(), **overrides}
    action_prior = MAIN_JOB["action_prior"] if action_prior is None else action_prior
    cls = MultiSpinPolicy
    if policy in ("set", "budget"):
        from .budget import BudgetSetPolicy
        from .setpolicy import DeviceSetPolicy

        cls = DeviceSetPolicy if policy == "set" else BudgetSetPolicy
        kw = dict(params.get("policy_kwargs") or {})
        kw.pop("net_arch", None)
        params["policy_kwargs"] = kw
    model = PPO(cls, venv, seed=seed, tensorboard_log=tensorboard_log, verbose=verbose, device="cpu", **params)
    if policy != "budget":
        set_action_prior(model, action_prior)
    return model


def set_action_prior(model: PPO, decay: float) -> None:
    """Bias each device's categorical logits to −decay·γ (γ = 0..γ_max)."""
    import torch

    nvec = model.action_space.nvec
    bias = torch.cat([-decay * torch.arange(int(n), dtype=torch.float32) for n in nvec])
    if model.policy.action_net.bias.shape[0] == int(nvec[0]):  # one head shared by every device
        bias = bias[: int(nvec[0])]
    with torch.no_grad():
        model.policy.action_net.bias.copy_(bias)


def check_policy_kwargs(config, policy: str, policy_kwargs: dict) -> None:
    """Build (and drop) the policy ``make_ppo(policy=...)`` would build for an env of ``config``
    with ``policy_kwargs``: a bad or unknown keyword raises its ``ValueError`` / ``TypeError``
    before any training starts."""
    from msenv import layout_of
    from msenv.envs.cells import make_env

    from .budget import budget_layout

    env = make_env(config)
    obs_space, act_space, kw = env.observation_space, env.action_space, dict(policy_kwargs)
    cls = MultiSpinPolicy
    if policy in ("set", "budget"):
        from .budget import BudgetSetPolicy
        from .setpolicy import DeviceSetPolicy, set_layout

        kw.pop("net_arch", None)
        kw = {**set_layout(config), **kw}
        cls = DeviceSetPolicy if policy == "set" else BudgetSetPolicy
        if policy == "budget":
            from gymnasium import spaces

            act_space = spaces.MultiDiscrete([budget_layout(config).n_levels] + [2] * layout_of(config).slots)
    cls(obs_space, act_space, lambda _: 3e-4, **kw)
