"""A training run from its settings: the baselines on the held-out seeds → PPO → the saved agent
on the same seeds → the comparison (:func:`run`). ``train.py`` is this function behind a command
line; from Python::

    from agents.training import TrainingConfig, run
    result = run(TrainingConfig(env_id="msenv/MultiSpin-v0", timesteps=100_000, log_dir="runs/mine"))

Run safety: SIGINT or SIGTERM during training stops it after the current step and saves the agent
and the resumable checkpoint (exit code 130 / 143); during the baselines or the behaviour cloning
it stops at once, with nothing to resume. An I/O error while writing a checkpoint or the logs stops
training with one line naming the path and saves the resumable checkpoint if it can (exit code
:data:`EXIT_IO_ERROR`). Continue a stopped run with :func:`agents.training.resume.resumed`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import Stopped, read_state
from .compare import compare
from .config import TrainingConfig
from .phases import Run, run_baselines, train
from .resume import check_log_dir, clear_run, resume_dir

#: exit code when training stops on an I/O error (sysexits' EX_IOERR)
EXIT_IO_ERROR = 74


def run(config: TrainingConfig, command: str | None = None) -> dict[str, Any]:
    """Run every phase of ``config``; returns ``{"exit_code": …}`` and, as the phases got that far,
    ``log_dir``, ``num_timesteps``, ``resumable`` (after an I/O error), ``rows`` and ``summary``
    (the comparison). ``command``: the command line recorded in the agent's ``training.json``
    (default: this process's, when it is ``train.py``)."""
    check_log_dir(config)
    torch.set_num_threads(config.torch_threads)
    out = Path(config.log_dir)
    if config.overwrite and not config.resume and (removed := clear_run(out)):
        print(f"overwrite: the earlier run in {out} removed ({', '.join(removed)})", flush=True)
    if command is None:
        command = "python " + " ".join(sys.argv) if sys.argv and sys.argv[0].endswith("train.py") else "python train.py"
    state = read_state(resume_dir(out)) if config.resume else {}
    run_ = Run(out, resume_dir(out), state, config.progress, time.perf_counter(), command)
    try:
        base = run_baselines(config, run_)
    except Stopped as e:
        print(f"train.py: stopped by {e.signal_name} during the baseline phase; nothing to resume yet",
              file=sys.stderr, flush=True)
        return {"exit_code": e.exit_code}
    try:
        trained = train(config, run_, base)
    except Stopped as e:  # before PPO's first step (behaviour cloning)
        print(f"train.py: stopped by {e.signal_name} during {getattr(e, 'phase', 'the set-up')}; nothing to resume "
              "yet", file=sys.stderr, flush=True)
        return {"exit_code": e.exit_code}
    if trained.io_error is not None:
        return {"exit_code": EXIT_IO_ERROR, "log_dir": str(out), "num_timesteps": trained.num_timesteps,
                "resumable": trained.resumable}
    if trained.stop_signal is not None:
        print(f"stopped by {trained.stop_signal} at step {trained.num_timesteps} of {config.timesteps}: agent saved "
              f"in {trained.agent_dir}, resumable checkpoint in {run_.resume_dir}\n"
              f"continue with: python train.py --resume {out}", flush=True)
        return {"exit_code": 130 if trained.stop_signal == "SIGINT" else 143, "log_dir": str(out),
                "num_timesteps": trained.num_timesteps}
    return compare(config, run_, base, trained)


__all__ = ["EXIT_IO_ERROR", "run"]
