"""Learned draft-length agents: PPO factory, environments, callbacks, and the adapter to the
common controller interface (``load_agent`` gives a Controller the harness can run)."""

from .controller import AgentFactory, NumpyPolicy, PPOController, load_agent, save_agent


def __getattr__(name: str):
    """``make_ppo`` imports stable-baselines3 and torch: only when asked for (PEP 562);
    ``DEFAULT_PPO`` (msenv 0.6) is ``agents.defaults.ppo_kwargs()``, with a DeprecationWarning."""
    if name == "make_ppo":
        from .ppo import make_ppo

        return make_ppo
    if name == "DEFAULT_PPO":
        from .defaults import deprecated, ppo_kwargs

        deprecated("agents.DEFAULT_PPO", "agents.defaults.ppo_kwargs() (the main job's PPO keyword arguments)")
        return ppo_kwargs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["AgentFactory", "NumpyPolicy", "PPOController", "load_agent", "make_ppo", "save_agent"]
