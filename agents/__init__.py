"""Learned draft-length agents: PPO factory, environments, callbacks, and the adapter to the
common controller interface (``load_agent`` gives a Controller the harness can run)."""

from .controller import AgentFactory, NumpyPolicy, PPOController, load_agent, save_agent


def __getattr__(name: str):
    # make_ppo / DEFAULT_PPO import stable-baselines3 and torch: only when asked for (PEP 562)
    if name in ("make_ppo", "DEFAULT_PPO"):
        from . import ppo

        return getattr(ppo, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["AgentFactory", "DEFAULT_PPO", "NumpyPolicy", "PPOController", "load_agent", "make_ppo", "save_agent"]
