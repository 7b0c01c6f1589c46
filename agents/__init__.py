"""Learned draft-length agents: PPO factory, environments, callbacks, and the adapter to the
common controller interface (``load_agent`` gives a Controller the harness can run)."""

from .controller import AgentFactory, NumpyPolicy, PPOController, load_agent, save_agent

__all__ = ["AgentFactory", "NumpyPolicy", "PPOController", "load_agent", "save_agent"]
