"""One controller interface for every draft-length policy (baselines and learned agents).

A controller sees the round context (model §7: α, T^dft, g^ul, g^dl, budgets, config) and the
environment's observation, and returns the integer draft-length vector. The evaluation
harness drives every controller the same way, so comparisons are paired on identical seeds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from msenv.engine.functional import RoundContext, validate_action


class Controller(ABC):
    """Base class of draft-length controllers.

    Subclasses implement :meth:`act`; controllers with randomness draw it from
    ``self.rng``, re-seeded by :meth:`reset` (the harness calls ``reset(seed)`` per episode).
    """

    name: str = "controller"
    #: explicitly named oracle controllers: True → the harness hands them the oracle context
    #: (model §11 truth: true α, correction-time gains) instead of the observable one; "alpha" /
    #: "csi" → the observable context plus only the true α / only the correction-time channel
    oracle: bool | str = False
    #: True → its decisions depend on the clock (a time budget), so its episodes do not replay bit for bit
    timed: bool = False

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        """Start an episode; re-seed the controller's own generator."""
        self.rng = np.random.default_rng(seed)

    @abstractmethod
    def act(self, context: RoundContext, obs: np.ndarray | None = None) -> np.ndarray:
        """Draft lengths [K] (integers in [0, γ_max]) for the round described by ``context``."""

    def observe(self, gamma: np.ndarray, info: dict) -> None:  # noqa: B027 (a hook: no-op unless overridden)
        """The outcome of the round just played with draft lengths ``gamma`` [K]: the env's ``info``
        (``tokens``, ``accepted``, ``rejected``, ``latency``, …; with requests, ``request_done``).
        What a server learns from a round — a bandit's reward, an estimator's data. The harness calls
        it after every round; the default learns nothing."""

    def __call__(self, context: RoundContext, obs: np.ndarray | None = None) -> np.ndarray:
        return self.act(context, obs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def check_output(controller: Controller, gamma, context: RoundContext) -> np.ndarray:
    """Validate a controller's output; errors name the controller, the device and the range."""
    try:
        return validate_action(gamma, context.config)
    except ValueError as e:
        raise ValueError(f"controller {controller.name!r} returned a bad draft-length vector: {e}") from None


def controller_context(controller: Controller, env) -> RoundContext:
    """The context a controller may see: what the server observes, or — for oracle
    controllers — the part of the truth their ``oracle`` attribute names."""
    return env.unwrapped.round_context(getattr(controller, "oracle", False))


class ContextPredictor:
    """Adapter: run a :class:`Controller` wherever an SB3-style ``predict(obs)`` is expected.

    The controller needs the round context, which it reads from ``env.unwrapped.context``
    (single env) at each call.
    """

    def __init__(self, controller: Controller, env) -> None:
        self.controller = controller
        self.env = env

    def predict(self, observation, state=None, episode_start=None, deterministic: bool = True):
        ctx = controller_context(self.controller, self.env.unwrapped)
        gamma = check_output(self.controller, self.controller.act(ctx, observation), ctx)
        return gamma, state
