"""Where the main job's time goes: ``python train.py`` timed part by part (prints its figures).

``python train.py`` runs in this process with timers around its phases and around the parts of
PPO's training.

    python -m benchmarks.main_job [--log-dir DIR]

Each second is counted once, in the innermost timed part that was running (exclusive time):

- start-up: the imports and everything before ``train.py``'s run begins;
- baselines: the four rules on the held-out episodes (the table's rows, the learning curve's lines);
- rollouts: the env step (the batched env and ``VecNormalize``), the policy's forward pass, the
  periodic evaluation (``EvalCallback``: its episodes counted whole), and the rest of SB3's
  rollout loop (the buffer, the callbacks, tensor conversions);
- update: PPO's gradient epochs (``PPO.train``);
- the rest of the training phase: building the model, checkpoints, saving the agent;
- comparison: the agent on the held-out episodes, the table, the files and the figure.

The timers add a few microseconds per call; the env step is timed per batched step (16 envs).
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import functools  # noqa: E402
import tempfile  # noqa: E402
from collections import defaultdict  # noqa: E402


class Timers:
    """Exclusive time per label: entering a label pauses the one it runs inside; a label listed
    in ``whole`` counts everything inside it (no inner label starts while it runs)."""

    def __init__(self, whole: tuple[str, ...] = ()) -> None:
        self.total: dict[str, float] = defaultdict(float)
        self.stack: list[list] = []  # [label, started]
        self.whole = whole

    def wrap(self, owner, name: str, label: str) -> None:
        """Time ``owner.name`` (a method or function) under ``label``."""
        fn = getattr(owner, name)

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if self.stack and self.stack[-1][0] in self.whole:
                return fn(*args, **kwargs)
            now = time.perf_counter()
            if self.stack:
                parent = self.stack[-1]
                self.total[parent[0]] += now - parent[1]
            self.stack.append([label, now])
            try:
                return fn(*args, **kwargs)
            finally:
                end = time.perf_counter()
                lab, started = self.stack.pop()
                self.total[lab] += end - started
                if self.stack:
                    self.stack[-1][1] = end

        setattr(owner, name, timed)


def profile(log_dir: str) -> tuple[dict[str, float], float, float]:
    """Run the main job with timers → (seconds per label, start-up seconds, total seconds)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import EvalCallback
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.vec_env import VecNormalize

    from agents.training import runner
    from agents.training.options import add_options, parse_config

    timers = Timers(whole=("evaluation (EvalCallback)",))
    timers.wrap(runner, "run_baselines", "baselines")
    timers.wrap(runner, "train", "training: model, checkpoints, saving")
    timers.wrap(runner, "compare", "comparison")
    timers.wrap(PPO, "collect_rollouts", "rollouts: the rest of SB3's loop")
    timers.wrap(PPO, "train", "update (PPO.train)")
    timers.wrap(VecNormalize, "step_wait", "rollouts: env step")
    timers.wrap(ActorCriticPolicy, "forward", "rollouts: policy forward")
    timers.wrap(EvalCallback, "_on_step", "evaluation (EvalCallback)")
    cli = argparse.ArgumentParser(prog="python train.py")  # train.py's parser: the library's options
    add_options(cli)
    started = time.perf_counter()
    runner.run(parse_config(cli, ["--no-progress", "--log-dir", log_dir]))
    end = time.perf_counter()
    return dict(timers.total), started - T0, end - T0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.main_job", description=__doc__.split("\n")[0])
    ap.add_argument("--log-dir", help="train.py's --log-dir (default: a temporary folder)")
    return ap


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        parts, startup, total = profile(args.log_dir or tmp)
    order = ["baselines", "rollouts: env step", "rollouts: policy forward", "evaluation (EvalCallback)",
             "rollouts: the rest of SB3's loop", "update (PPO.train)", "training: model, checkpoints, saving",
             "comparison"]
    print(f"\nthe main job, {total:.1f} s in this process (exclusive time per part)")
    print(f"{'start-up (imports)':<42}{startup:>8.1f} s {100 * startup / total:>5.1f} %")
    for label in order:
        s = parts.get(label, 0.0)
        print(f"{label:<42}{s:>8.1f} s {100 * s / total:>5.1f} %")
    rest = total - startup - sum(parts.values())
    print(f"{'not in a timed part':<42}{rest:>8.1f} s {100 * rest / total:>5.1f} %")


if __name__ == "__main__":
    main()
