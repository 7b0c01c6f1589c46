"""Train PPO on msenv, then compare it with the baselines on held-out seeds.

    python train.py                      # default scenario (Qwen2.5 pair, K = 20), full budget
    python train.py --quick              # smoke run
    python train.py --set draft_scale_range=[1.0,2.0] p_dl_dbm=10   # any config field
    python train.py --env-id msenv/MultiSpin-DeepSeek-v0 --p-dl-dbm 20
    python train.py --p-dl-range 10 40   # one policy for a range of DL budgets
    python train.py --resume runs/ppo-MultiSpin-v0 [--timesteps 1000000]   # continue a stopped run
    python train.py --env-id msenv/MultiSpin-Dynamic-v0 --bc-init greedy-saa   # PPO from the greedy (agents/bc.py)

Steps: (1) GreedySAA, OptimalUniform, ComputationOnly and Fixed(4) run on the held-out
evaluation seeds (their goodput/throughput become TensorBoard reference lines); (2) PPO trains
with EvalCallback, CheckpointCallback and the msenv metrics callback; (3) the trained agent is
saved (model + VecNormalize + config) and evaluated on the same seeds; (4) the table is printed
and written (CSV + JSON) with a PNG learning curve against the baseline lines: every controller
and PPO side by side, long-run and real-time throughput (each charged its own decision time)
relative to greedy-saa with their paired 95% intervals, and a line saying who leads on each.
Outputs go to ``--log-dir`` (TensorBoard: ``tensorboard --logdir <log-dir>/tb``). Defaults not
given here are the id's (agents/defaults.py, the one table of training defaults).

Run safety: Ctrl-C (SIGINT) or SIGTERM stops training after the current step and saves the agent
(``<log-dir>/agent``) and a resumable checkpoint (``<log-dir>/resume``: model with optimiser
state, VecNormalize statistics, settings, baseline results, metrics), then exits with 130 / 143.
The resumable checkpoint is also written every ``--checkpoint-minutes`` of wall-clock time
(default 2) or ``--checkpoint-steps`` (default 100000), whichever comes first, and at the end,
so a killed run loses at most that interval. An I/O error while writing a checkpoint
or the logs (disk full, read-only) stops training with one line naming the path, saves the
resumable checkpoint if it can, and exits with 74. ``--resume <log-dir>`` continues to
``--timesteps`` (default: the original run's) in the same TensorBoard run; a finished run can be
extended the same way.

The work is the library's (agents.training: TrainingConfig, the phases, the table); this script
is its command line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agents.defaults import BASELINES, DYNAMIC_BASELINES, default_baselines
from agents.training import EXIT_IO_ERROR, TrainingConfig, run
from agents.training.options import add_options, parse_config
from msenv.config import CellConfig, SystemConfig

__all__ = ["BASELINES", "DYNAMIC_BASELINES", "EXIT_IO_ERROR", "build_parser", "default_baselines", "main", "parse"]


def build_parser() -> argparse.ArgumentParser:
    """The command line: every option of :func:`agents.training.options.add_options`."""
    ap = argparse.ArgumentParser(prog="python train.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_options(ap)
    return ap


def parse(argv: list[str] | None = None) -> tuple[TrainingConfig, SystemConfig | CellConfig]:
    """The run's settings and its env config, from the command line (a bad one: exit code 2)."""
    config = parse_config(build_parser(), argv)
    return config, config.env_config


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse → baselines on the held-out seeds → PPO training → the comparison."""
    return run(parse(argv)[0])


if __name__ == "__main__":
    sys.exit(main().get("exit_code", 0))
