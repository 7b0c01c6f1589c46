"""Run safety for training: resumable checkpoints, graceful stop on SIGINT/SIGTERM, and
checkpoints by wall-clock interval and by steps (so a killed run loses at most that interval).

A *resumable checkpoint* is a directory holding ``model.zip`` (SB3 PPO, with its step count and
optimiser state), ``vecnormalize.pkl`` (running observation/return statistics) and
``state.json`` (whatever the training script needs to continue: its arguments, the step count,
logged metrics). It is written to a temporary sibling and put in place as a whole
(:func:`msenv.atomic.replace_dir`), so a kill or a full disk during the save leaves the previous
checkpoint intact, never a mix of the two.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from msenv.atomic import replace_dir

MODEL_FILE, NORM_FILE, STATE_FILE = "model.zip", "vecnormalize.pkl", "state.json"


def save_resumable(path: str | Path, model, vecnormalize, state: dict[str, Any]) -> Path:
    """Write a resumable checkpoint as a whole (:func:`msenv.atomic.replace_dir`: a temporary
    folder beside it, fsynced, put in its place; signals held meanwhile) and return its path."""
    path = Path(path)
    with replace_dir(path) as tmp:
        model.save(tmp / MODEL_FILE)
        if vecnormalize is not None:
            vecnormalize.save(str(tmp / NORM_FILE))
        (tmp / STATE_FILE).write_text(json.dumps({**state, "num_timesteps": int(model.num_timesteps)}, indent=2))
    return path


def read_state(path: str | Path) -> dict[str, Any]:
    """The ``state.json`` of a resumable checkpoint (clear error when there is none)."""
    path = Path(path)
    f = path / STATE_FILE
    if not f.exists() or not (path / MODEL_FILE).exists():
        raise FileNotFoundError(f"no resumable checkpoint at {path} (expected {MODEL_FILE} and {STATE_FILE})")
    return json.loads(f.read_text())


def load_resumable(path: str | Path, venv, frame_stack: int = 1, **model_kwargs: Any):
    """(model, VecNormalize) from a checkpoint, attached to the fresh ``venv`` (training mode);
    with ``frame_stack`` > 1 the model's env is SB3's VecFrameStack over the VecNormalize."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    from .envs import stack_frames

    path = Path(path)
    read_state(path)
    if (path / NORM_FILE).exists():
        venv = VecNormalize.load(str(path / NORM_FILE), venv)
        venv.training = True
    model = PPO.load(path / MODEL_FILE, env=stack_frames(venv, frame_stack), device="cpu", **model_kwargs)
    return model, venv


class GracefulStop:
    """Context manager: the first SIGINT/SIGTERM sets :attr:`signal_name` instead of killing the
    process (a second SIGINT interrupts as usual); the previous handlers come back on exit."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._old: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    def _handle(self, signum, frame) -> None:
        if self.signal_name is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name
        print(f"\n{self.signal_name} received: stopping after this step and saving (SIGINT again to abort)", flush=True)

    def __enter__(self) -> GracefulStop:
        for s in self.SIGNALS:
            self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)


class Stopped(BaseException):
    """Raised by :class:`StopNow` in the main thread when SIGINT/SIGTERM arrives (a
    BaseException, like KeyboardInterrupt, so ``except Exception`` blocks let it through)."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name

    @property
    def exit_code(self) -> int:
        return 130 if self.signal_name == "SIGINT" else 143


class StopNow(GracefulStop):
    """Like :class:`GracefulStop`, for work with nothing to save midway (e.g. the baseline
    phase): SIGINT/SIGTERM raise :class:`Stopped` at once, so the code unwinds and ends its
    worker processes (:func:`evaluation.parallel.parallel_map` does)."""

    def _handle(self, signum, frame) -> None:
        self.signal_name = signal.Signals(signum).name
        raise Stopped(self.signal_name)


class ThreadIOErrors:
    """Context manager: an ``OSError`` that ends a background thread — TensorBoard's event-file
    writer when the log directory turns read-only or the disk fills — is recorded in
    :attr:`errors` instead of printed as a traceback. The writer raises the same error in the main
    thread at its next write, where the training script stops with one line; :attr:`errors` holds
    it for when no write comes after. Other exceptions go to the previous ``threading.excepthook``."""

    def __init__(self) -> None:
        self.errors: list[OSError] = []
        self._old = None

    def _hook(self, args) -> None:
        if args.exc_type is not None and issubclass(args.exc_type, OSError):
            self.errors.append(args.exc_value)
            return
        self._old(args)

    def __enter__(self) -> ThreadIOErrors:
        self._old = threading.excepthook
        threading.excepthook = self._hook
        return self

    def __exit__(self, *exc) -> None:
        threading.excepthook = self._old


class RunSafetyCallback(BaseCallback):
    """Stops ``learn()`` when a :class:`GracefulStop` was signalled, and writes the resumable
    checkpoint every ``interval_s`` seconds of wall-clock time and every ``interval_steps``
    environment steps, whichever comes first (``save`` is called without arguments; it writes
    the checkpoint; None disables a bound)."""

    def __init__(self, stop: GracefulStop, save, interval_s: float | None, verbose: int = 0,
                 interval_steps: int | None = None) -> None:
        super().__init__(verbose)
        for name, val in (("interval_s", interval_s), ("interval_steps", interval_steps)):
            if val is not None and (isinstance(val, bool) or not isinstance(val, (int, float)) or not val > 0):
                raise ValueError(f"{name}={val!r} is invalid; allowed: a number > 0 or None")
        self.stop, self.save, self.interval_s, self.interval_steps = stop, save, interval_s, interval_steps
        self._last = time.monotonic()
        self._last_steps = 0
        self.n_saves = 0

    def _on_training_start(self) -> None:
        self._last = time.monotonic()
        self._last_steps = self.num_timesteps  # a resumed run counts from the steps already done

    def _on_step(self) -> bool:
        if self.stop.requested:
            return False
        by_time = self.interval_s is not None and time.monotonic() - self._last >= self.interval_s
        by_steps = self.interval_steps is not None and self.num_timesteps - self._last_steps >= self.interval_steps
        if by_time or by_steps:
            self.save()
            self.n_saves += 1
            self._last, self._last_steps = time.monotonic(), self.num_timesteps
        return True


__all__ = ["GracefulStop", "RunSafetyCallback", "StopNow", "Stopped", "ThreadIOErrors", "load_resumable", "read_state",
           "save_resumable"]
