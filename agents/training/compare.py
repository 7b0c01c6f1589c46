"""The last phase of a training run: the trained agent (and the cloned one) on the baselines'
held-out episodes, then the comparison — printed, written (``comparison.csv/json``) and drawn
(``learning_curve.png``).

The table puts every controller and the agent side by side on the two throughputs the benchmark
scores: the **long-run** throughput Σ tokens / Σ time, and the **real-time** throughput, in which
each controller is charged its own decision time (``EpisodeStats.realtime_throughput``). Each is
shown relative to greedy-saa's, paired per held-out episode, with its 95% interval
(:func:`evaluation.report.summarize`); a line under the table says which controller leads on each."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.harness import Entry, evaluate
from evaluation.report import (
    FIGURE_WIDTH_IN,
    csv_bytes,
    figure_legend,
    figure_style,
    figure_writer,
    json_bytes,
    print_rich,
    save_figure,
    summarize,
)
from msenv.atomic import atomic_files
from msenv.traces.sources import trace_files

from ..controller import AgentFactory
from .config import TrainingConfig
from .phases import Baselines, Run, Trained

#: the controller every ratio is relative to
REFERENCE = "greedy-saa"
#: the two throughputs of the table: (name, EpisodeStats metric, summarize's relative column)
THROUGHPUTS = (("long-run", "throughput", "rel_throughput"), ("real-time", "realtime_throughput", "rel_realtime"))
#: the table's columns
HEADERS = ("controller", "long-run tok/s", f"× {REFERENCE} [95% CI]", "real-time tok/s", f"× {REFERENCE} [95% CI]",
           "decide ms", "mean γ")


def comparison_rows(results: Sequence) -> list[dict[str, Any]]:
    """:func:`evaluation.report.summarize` of the episodes, :data:`REFERENCE` first (every ratio
    relative to it, paired per episode): each metric's mean and CI, ``rel_throughput`` and
    ``rel_realtime`` with their ``_ci95`` half-widths."""
    ordered = [r for r in results if r.label == REFERENCE] + [r for r in results if r.label != REFERENCE]
    return summarize(ordered, relative={metric: column for _, metric, column in THROUGHPUTS})


def interval(row: dict[str, Any], column: str) -> tuple[float, float, float]:
    """(mean, low, high) of a relative column: the mean ± its 95% half-width."""
    m, h = row[column], row[f"{column}_ci95"]
    return m, m - h, m + h


def _cells(row: dict[str, Any]) -> list[str]:
    """A row's cells under :data:`HEADERS`."""
    out = [row["controller"]]
    for _, metric, column in THROUGHPUTS:
        m, lo, hi = interval(row, column)
        out += [f"{row[metric]:.1f} ± {row[f'{metric}_ci95']:.1f}", f"{m:.3f} [{lo:.3f}, {hi:.3f}]"]
    return out + [f"{row['decision_ms']:.3f}", f"{row['mean_gamma']:.2f}"]


def print_table(rows: Sequence[dict[str, Any]], title: str = "") -> None:
    """Print the comparison with rich."""
    print_rich(HEADERS, [_cells(r) for r in rows], title)


def leaders(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The controller with the highest mean ratio on each throughput: {"long-run": …, "real-time": …}."""
    return {name: max(rows, key=lambda r: r[column])["controller"] for name, _, column in THROUGHPUTS}


def leaders_line(rows: Sequence[dict[str, Any]], agent: str = "ppo") -> str:
    """One line: who leads on each throughput, and ``agent``'s ratio to greedy-saa with its interval,
    e.g. ``long-run: greedy-saa leads (ppo 0.999 [0.997, 1.001]); real-time: ppo leads (ppo 1.2 …)``."""
    mine = next(r for r in rows if r["controller"] == agent)
    parts = []
    for (name, _, column), leader in zip(THROUGHPUTS, leaders(rows).values()):
        m, lo, hi = interval(mine, column)
        parts.append(f"{name}: {leader} leads ({agent} {m:.3f} [{lo:.3f}, {hi:.3f}] × {REFERENCE})")
    return "; ".join(parts)


def compare(config: TrainingConfig, run: Run, base: Baselines, trained: Trained) -> dict[str, Any]:
    """Phases 3–4: the trained agent (and the cloned one) on the same held-out seeds, then the
    table, the line of leaders, ``comparison.csv/json`` and the learning curve (written as one output:
    :func:`msenv.atomic.atomic_files`; ``comparison.json`` records the trace files the run read,
    ``trace_files``)."""
    cfg, out = config.env_config, run.out
    agents = [Entry("ppo", AgentFactory(trained.agent_dir))]
    if config.bc_init and (out / "cloned").exists():
        agents.append(Entry(f"cloned:{config.bc_init}", AgentFactory(out / "cloned")))
    ppo_results = evaluate(agents, cfg, config.eval_episodes, config.eval_seed, progress=run.progress)
    rows = comparison_rows(ppo_results + base.results)  # greedy-saa, the agents, the other baselines
    print_table(rows,
                f"{cfg.label}, {config.eval_episodes} held-out episodes × {cfg.episode_length} rounds (seeds "
                      f"{config.eval_seed}..), PPO {config.timesteps} steps")
    print(leaders_line(rows), flush=True)
    greedy = next(r for r in rows if r["controller"] == REFERENCE)
    ppo = next(r for r in rows if r["controller"] == "ppo")
    summary = {
        "ppo_vs_greedy_throughput": ppo["throughput"] / greedy["throughput"],
        "ppo_vs_greedy_paired": ppo["rel_throughput"],
        "ppo_vs_greedy_paired_ci95": ppo["rel_throughput_ci95"],
        "ppo_vs_greedy_realtime_paired": ppo["rel_realtime"],
        "ppo_vs_greedy_realtime_paired_ci95": ppo["rel_realtime_ci95"],
        "leaders": leaders(rows),
        "decision_speedup_vs_greedy": greedy["decision_ms"] / max(ppo["decision_ms"], 1e-12),
        "train_seconds": trained.seconds,
        "baseline_eval_seconds": base.seconds,
        "total_seconds": time.perf_counter() - run.t_start,
    }
    print(f"PPO / GreedySAA long-run throughput: {summary['ppo_vs_greedy_throughput']:.4f} "
          f"(paired per episode {ppo['rel_throughput']:.4f} ± {ppo['rel_throughput_ci95']:.4f}), real-time "
          f"{ppo['rel_realtime']:.4f} ± {ppo['rel_realtime_ci95']:.4f}; "
          f"decision time {ppo['decision_ms']:.3f} ms vs {greedy['decision_ms']:.2f} ms "
          f"({summary['decision_speedup_vs_greedy']:.0f}× faster); training {trained.seconds:.0f} s")
    doc = {"args": config.to_dict(), "config": cfg.to_dict(), "trace_files": trace_files(cfg), "summary": summary,
           "table": rows, "training_metrics": trained.metrics}
    with figure_style() as plt:  # the three files as one output: all replaced, or none
        fig = draw_learning_curve(plt, out / "eval" / "evaluations.npz", trained.metrics, rows, cfg)
        atomic_files({out / "comparison.csv": lambda fh: fh.write(csv_bytes(rows)),
                      out / "comparison.json": lambda fh: fh.write(json_bytes(doc)),
                      out / "learning_curve.png": figure_writer(fig)})
        plt.close(fig)
    print(f"wrote {out / 'comparison.csv'}, {out / 'comparison.json'}, {out / 'learning_curve.png'}; "
          f"agent in {trained.agent_dir}")
    return {"exit_code": 0, "rows": rows, "summary": summary, "log_dir": str(out)}


#: the baselines' reference lines on the learning curve: controller → (colour, line style)
CURVE_STYLES = {"greedy-saa": ("tab:red", "-"), "optimal-uniform": ("tab:green", "--"),
                "computation-only": ("tab:purple", ":"), "fixed-4": ("tab:gray", "-.")}


def draw_learning_curve(plt, eval_npz: Path, history: list[dict], rows: list[dict], cfg):
    """The learning curve's figure (drawn with ``plt`` under :func:`evaluation.report.figure_style`):
    PPO's per-round goodput over training (rollouts, and the EvalCallback's deterministic
    evaluations ± 1 sd) against the baselines' held-out goodput."""
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 5.6))
    if history:
        ax.plot([h["timesteps"] for h in history], [h["goodput"] for h in history], color="tab:blue", alpha=0.35,
                label="PPO, training rollouts")
    if eval_npz.exists():
        data = np.load(eval_npz)
        per_round = data["results"] / (cfg.episode_length * cfg.reward_scale)
        m, s = per_round.mean(axis=1), per_round.std(axis=1)
        ax.plot(data["timesteps"], m, "o-", color="tab:blue", label="PPO, evaluation (± 1 sd)")
        ax.fill_between(data["timesteps"], m - s, m + s, color="tab:blue", alpha=0.15)
    for r in rows:
        if r["controller"] in CURVE_STYLES:
            c, ls = CURVE_STYLES[r["controller"]]
            ax.axhline(r["goodput"], color=c, ls=ls, label=f"{r['controller']} ({r['goodput']:.0f})")
    ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0), useMathText=True)
    ax.set_xlabel("environment steps (rounds)")
    ax.set_ylabel("per-round goodput (tok/s)")
    ax.set_title(f"PPO vs baselines: {cfg.label}")
    figure_legend(fig, *ax.get_legend_handles_labels(), max_cols=2)
    return fig


def plot_learning_curve(path: Path, eval_npz: Path, history: list[dict], rows: list[dict], cfg) -> None:
    """:func:`draw_learning_curve`, written by evaluation.report's figure writer, in the docs
    figures' style."""
    with figure_style() as plt:
        fig = draw_learning_curve(plt, eval_npz, history, rows, cfg)
        save_figure(fig, path)
        plt.close(fig)


__all__ = ["HEADERS", "REFERENCE", "THROUGHPUTS", "compare", "comparison_rows", "interval", "leaders",
           "draw_learning_curve", "leaders_line", "plot_learning_curve", "print_table"]
