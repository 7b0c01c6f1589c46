"""SB3 callbacks: Multi-SPIN metrics to TensorBoard, reference lines, the action prior.

:class:`MetricsCallback` logs, per rollout, under ``msenv/``: ``goodput`` (mean per-round
reward before scaling), ``throughput`` (Σ tokens / Σ time), ``t_com_ms``, ``mean_gamma``,
``share_accepted``, ``share_ul``, ``share_dl``, and constant reference lines
``ref_<name>_goodput`` / ``ref_<name>_throughput`` (e.g. greedy-SAA and optimal-uniform measured
on held-out seeds) to beat. It reads the scalar ``info`` keys that both the batched adapter
(:class:`msenv.envs.sb3.SB3VecEnv`) and Monitor-wrapped single envs (with
:class:`msenv.envs.env.RoundMetrics`) provide.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from msenv.envs.env import SUMMARY_KEYS

from .defaults import MAIN_JOB
from .ppo import set_action_prior

METRIC_NAMES = ("goodput", "throughput", "t_com_ms") + SUMMARY_KEYS


class MetricsCallback(BaseCallback):
    """Aggregate round metrics over each rollout and record them (see module docstring).

    Args:
        references: ``{name: {"goodput": x, "throughput": y}}`` constant lines to log.
    """

    def __init__(self, references: dict[str, dict[str, float]] | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.references = references or {}
        self._acc: dict[str, list[float]] = defaultdict(list)
        self.history: list[dict[str, float]] = []

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            if "goodput" not in info:
                continue
            self._acc["goodput"].append(float(info["goodput"]))
            self._acc["latency"].append(float(info["latency"]))
            self._acc["round_tokens"].append(float(info["round_tokens"]))
            self._acc["t_com"].append(float(info["t_com"]))
            for key in SUMMARY_KEYS:
                if key in info:
                    self._acc[key].append(float(info[key]))
        return True

    def _on_rollout_end(self) -> None:
        if not self._acc["goodput"]:
            return
        g, lat = np.array(self._acc["goodput"]), np.array(self._acc["latency"])
        row = {
            "goodput": float(g.mean()),
            "throughput": float(np.sum(self._acc["round_tokens"]) / lat.sum()),  # Σ tokens / Σ time
            "t_com_ms": 1e3 * float(np.mean(self._acc["t_com"])),
        }
        for key in SUMMARY_KEYS:
            if self._acc[key]:
                row[key] = float(np.mean(self._acc[key]))
        for key, val in row.items():
            self.logger.record(f"msenv/{key}", val)
        for name, vals in self.references.items():
            for key, val in vals.items():
                self.logger.record(f"msenv/ref_{name}_{key}", float(val))
        row["timesteps"] = float(self.num_timesteps)
        self.history.append(row)
        self._acc.clear()


class ActionPriorCallback(BaseCallback):
    """Set the action prior (logits −decay·γ) when training starts — for rl-zoo3 configs,
    where the model is built by the zoo (``callback:`` key of the hyperparameter YAML)."""

    def __init__(self, decay: float = MAIN_JOB["action_prior"], verbose: int = 0) -> None:
        super().__init__(verbose)
        self.decay = decay

    def _on_training_start(self) -> None:
        if self.model.num_timesteps == 0:
            set_action_prior(self.model, self.decay)

    def _on_step(self) -> bool:
        return True
