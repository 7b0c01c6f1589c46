"""The paper's experiments (§VI, model §10): one function per figure, CSV + PNG.

A *drop* is one independent draw of geometry, tasks, drafting speeds, fading and verification
outcomes: drop ``d`` is an episode of ``rounds`` rounds with seed ``seed + d``, played by the
paired harness (:func:`evaluation.harness.run_episode`), so every scheme and every x-value
sees the same drops. Each point is the mean over drops with a 95% Student-t interval.

- ``fig7`` / ``fig8`` (Qwen2.5 / DeepSeek pair): greedy SAA vs P_dl (K = 20, P_ul = 10 dBm [R]):
  sum goodput, mean draft length, shares of devices all-accepted / UL / DL.
- ``fig9`` / ``fig10`` (Qwen2.5 / DeepSeek pair): vs K at P_dl/P_ul = 4 and 16 with the total
  power P_tot(K) = P̄_dl + K·P̄_ul (P̄_dl = 30 dBm, P̄_ul = 15 dBm): schemes optimal, all-UL,
  all-DL, random (each with the greedy run under its own reactive policy).
- ``fig11``: greedy SAA vs optimal uniform vs computation-only (+ our local search, + a trained
  PPO agent with ``agent=``) across P_dl/P_ul ratios at K = 20 under the same total-power rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.harness import ControllerFactory, EpisodeStats, run_episode
from evaluation.parallel import parallel_map
from evaluation.report import FIGURE_WIDTH_IN, ci95, figure_legend, figure_style, save_figure, write_csv
from msenv import preset
from msenv.config import SystemConfig

P_DL_REF_DBM, P_UL_REF_DBM = 30.0, 15.0
METRICS = ("throughput", "goodput", "mean_gamma", "share_accepted", "share_ul", "share_dl", "share_no_draft",
           "t_com_ms", "t_cmp_ms")


def watt_to_dbm(w: float) -> float:
    return 10.0 * math.log10(w) + 30.0


def total_power_split(k: int, ratio: float) -> tuple[float, float]:
    """model §10: P_tot(K) = P̄_dl + K·P̄_ul (W); P_ul = P_tot/(ratio + K), P_dl = ratio·P_ul.
    Returns (P_ul, P_dl) in dBm."""
    p_tot = 10 ** ((P_DL_REF_DBM - 30) / 10) + k * 10 ** ((P_UL_REF_DBM - 30) / 10)
    p_ul = p_tot / (ratio + k)
    return watt_to_dbm(p_ul), watt_to_dbm(ratio * p_ul)


@dataclass(frozen=True)
class Job:
    figure: str
    panel: str
    x: float
    scheme: str
    controller: str
    policy: str | None
    config: SystemConfig
    seed: int
    drop: int
    agent: str | None = None
    #: the controller's keyword arguments, as (keyword, value) pairs (a sensitivity reading's)
    settings: tuple[tuple[str, Any], ...] = ()


def run_job(job: Job) -> dict[str, Any]:
    """Play one drop of one (panel, x, scheme); returns its statistics as a flat dict."""
    if job.agent is not None:
        from agents.controller import load_agent

        controller = load_agent(job.agent)
    else:
        controller = ControllerFactory(job.controller, job.settings)()
    cfg = job.config if job.policy is None else job.config.replace(mode_policy=job.policy)
    st: EpisodeStats = run_episode(controller, cfg, job.seed, job.scheme, job.drop)
    out = {k: v for k, v in asdict(st).items() if k in METRICS or k == "decision_ms"}
    return {"figure": job.figure, "panel": job.panel, "x": job.x, "scheme": job.scheme, "drop": job.drop, **out}


def aggregate(results: Sequence[dict[str, Any]], x_name: str) -> list[dict[str, Any]]:
    """Mean and 95% CI over drops per (panel, x, scheme), in order of first appearance.

    ``rel_throughput``: per-drop throughput ratio to the first scheme at the same (panel, x),
    averaged over drops (a paired comparison: every scheme plays the same drops).
    """
    keys = list(dict.fromkeys((r["panel"], r["x"], r["scheme"]) for r in results))
    ref_scheme = {}
    for panel, x, scheme in keys:
        ref_scheme.setdefault((panel, x), scheme)
    by_key = {key: sorted((r for r in results if (r["panel"], r["x"], r["scheme"]) == key), key=lambda r: r["drop"])
              for key in keys}
    rows = []
    for panel, x, scheme in keys:
        rs = by_key[(panel, x, scheme)]
        ref = by_key[(panel, x, ref_scheme[(panel, x)])]
        row: dict[str, Any] = {"figure": rs[0]["figure"], "panel": panel, "x_name": x_name, "x": x, "scheme": scheme,
                               "drops": len(rs), "reference": ref_scheme[(panel, x)]}
        for m in METRICS + ("decision_ms",):
            v = np.array([r[m] for r in rs])
            row[m] = float(v.mean())
            row[f"{m}_ci95"] = ci95(v)
        rel = np.array([a["throughput"] / b["throughput"] for a, b in zip(rs, ref)])
        row["rel_throughput"] = float(rel.mean())
        row["rel_throughput_ci95"] = ci95(rel)
        rows.append(row)
    return rows


def _run(jobs: list[Job], x_name: str, workers: int, progress: bool, ray_address: str | None = None
         ) -> tuple[list[dict], list[dict]]:
    raw = parallel_map(run_job, jobs, workers, progress, desc=jobs[0].figure if jobs else "", ray_address=ray_address)
    return aggregate(raw, x_name), raw


# --------------------------------------------------------------------------- figures
# Each figure is a job builder (``*_jobs``: the drops to play) and its runner. ``overrides`` are
# config fields applied on top of the pair's preset, ``settings`` the controllers' keyword arguments
# (the sensitivity study's readings).
def fig7_jobs(pair: str = "qwen2.5", drops: int = 50, seed: int = 0, rounds: int = 10,
              p_dl_dbm: Sequence[float] = (10, 15, 20, 25, 30, 35, 40), num_devices: int = 20, p_ul_dbm: float = 10.0,
              figure: str = "fig7", overrides: dict[str, Any] | None = None,
              settings: dict[str, Any] | None = None) -> list[Job]:
    base = preset(pair, num_devices=num_devices, p_ul_dbm=p_ul_dbm, episode_length=rounds, **(overrides or {}))
    kw = _settings(settings)
    return [Job(figure, pair, float(p), "greedy-saa", "greedy-saa", None, base.replace(p_dl_dbm=float(p)), seed + d, d,
                settings=kw) for p in p_dl_dbm for d in range(drops)]


def fig9_jobs(pair: str = "qwen2.5", drops: int = 50, seed: int = 0, rounds: int = 10,
              ks: Sequence[int] = (5, 10, 15, 20, 25, 30, 35, 40), ratios: Sequence[float] = (4, 16),
              schemes: Sequence[str] = ("optimal", "all_ul", "all_dl", "random"), figure: str = "fig9",
              overrides: dict[str, Any] | None = None, settings: dict[str, Any] | None = None) -> list[Job]:
    jobs, kw = [], _settings(settings)
    for ratio in ratios:
        for k in ks:
            p_ul, p_dl = total_power_split(k, ratio)
            cfg = preset(pair, num_devices=int(k), p_ul_dbm=p_ul, p_dl_dbm=p_dl, episode_length=rounds,
                         **(overrides or {}))
            for scheme in schemes:
                jobs += [Job(figure, f"ratio={ratio:g}", float(k), scheme, "greedy-saa", scheme, cfg, seed + d, d,
                             settings=kw) for d in range(drops)]
    return jobs


def fig11_jobs(pair: str = "qwen2.5", drops: int = 50, seed: int = 0, rounds: int = 10,
               ratios: Sequence[float] = (1, 4, 16, 64), num_devices: int = 20,
               controllers: Sequence[str] = ("greedy-saa", "optimal-uniform", "computation-only", "local-search"),
               agent: str | None = None, figure: str = "fig11", overrides: dict[str, Any] | None = None,
               settings: dict[str, Any] | None = None) -> list[Job]:
    jobs, kw = [], _settings(settings)
    for ratio in ratios:
        p_ul, p_dl = total_power_split(num_devices, ratio)
        cfg = preset(pair, num_devices=num_devices, p_ul_dbm=p_ul, p_dl_dbm=p_dl, episode_length=rounds,
                     **(overrides or {}))
        for name in controllers:
            jobs += [Job(figure, pair, float(ratio), name, name, None, cfg, seed + d, d, settings=kw)
                     for d in range(drops)]
        if agent is not None:
            jobs += [Job(figure, pair, float(ratio), "ppo", "ppo", None, cfg, seed + d, d, agent=str(agent))
                     for d in range(drops)]
    return jobs


def _settings(settings: dict[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """A job's controller settings: ``settings`` as sorted (keyword, value) pairs."""
    return tuple(sorted((settings or {}).items()))


def fig7(workers: int = 2, progress: bool = True, ray_address: str | None = None, **kwargs: Any):
    return _run(fig7_jobs(**kwargs), "p_dl_dbm", workers, progress, ray_address)


def fig9(workers: int = 2, progress: bool = True, ray_address: str | None = None, **kwargs: Any):
    return _run(fig9_jobs(**kwargs), "num_devices", workers, progress, ray_address)


def fig11(workers: int = 2, progress: bool = True, ray_address: str | None = None, **kwargs: Any):
    return _run(fig11_jobs(**kwargs), "p_dl_over_p_ul", workers, progress, ray_address)


# --------------------------------------------------------------------------- plots
# Each plot takes the rows the run writes to ``<name>.csv`` (or reads back from it:
# ``python -m experiments replot``) and draws through evaluation.report's figure style and writer.
def _heading(rows: list[dict], title: str) -> str:
    return f"{title}\nmean of {rows[0]['drops']} drops per point ± 95% CI"


def plot_fig7(rows: list[dict], path: Path, title: str) -> None:
    """Figs 7/8: goodput, mean draft length and the devices' outcomes vs P_dl, one panel a row."""
    with figure_style() as plt:
        x = np.array([r["x"] for r in rows])
        fig, ax = plt.subplots(3, 1, figsize=(FIGURE_WIDTH_IN, 8.6), sharex=True)
        ax[0].errorbar(x, [r["throughput"] for r in rows], yerr=[r["throughput_ci95"] for r in rows], marker="o",
                       capsize=3)
        ax[0].set_ylabel("sum goodput (tok/s)")
        ax[1].errorbar(x, [r["mean_gamma"] for r in rows], yerr=[r["mean_gamma_ci95"] for r in rows], marker="s",
                       color="tab:orange", capsize=3)
        ax[1].set_ylabel("mean draft length")
        acc = np.array([r["share_accepted"] for r in rows])
        ul = np.array([r["share_ul"] for r in rows])
        dl = np.array([r["share_dl"] for r in rows])
        w = 0.8 * (x[1] - x[0]) if len(x) > 1 else 1.0
        bars = [ax[2].bar(x, acc, w, color="tab:green"), ax[2].bar(x, ul, w, bottom=acc, color="tab:blue"),
                ax[2].bar(x, dl, w, bottom=acc + ul, color="tab:red")]
        ax[2].set_ylabel("share of devices")
        ax[2].set_xlabel(r"DL power budget $P_\mathrm{dl}$ (dBm)")
        fig.suptitle(_heading(rows, title))
        figure_legend(fig, bars, ["all accepted", "corrected via UL", "corrected via DL"])
        save_figure(fig, path)
        plt.close(fig)


_SCHEME_STYLE = {"optimal": ("tab:red", "o", "optimal modes"), "all_ul": ("tab:blue", "v", "all UL"),
                 "all_dl": ("tab:green", "^", "all DL"), "random": ("tab:gray", "s", "random")}


def plot_fig9(rows: list[dict], path: Path, title: str) -> None:
    """Figs 9/10: goodput vs K per scheme, one panel per P_dl/P_ul ratio, one panel a row."""
    with figure_style() as plt:
        panels = list(dict.fromkeys(r["panel"] for r in rows))
        fig, axes = plt.subplots(len(panels), 1, figsize=(FIGURE_WIDTH_IN, 1.2 + 3.0 * len(panels)), sharex=True,
                                 squeeze=False)
        for ax, panel in zip(axes[:, 0], panels):
            for scheme in dict.fromkeys(r["scheme"] for r in rows):
                rs = [r for r in rows if r["panel"] == panel and r["scheme"] == scheme]
                c, m, lab = _SCHEME_STYLE.get(scheme, ("k", "o", scheme))
                ax.errorbar([r["x"] for r in rs], [r["throughput"] for r in rs],
                            yerr=[r["throughput_ci95"] for r in rs], color=c, marker=m, label=lab, capsize=3)
            ax.set_title(rf"$P_\mathrm{{dl}}/P_\mathrm{{ul}}$ = {panel.split('=')[1]}")
            ax.set_ylabel("sum goodput (tok/s)")
        axes[-1, 0].set_xlabel("number of devices K")
        fig.suptitle(_heading(rows, title))
        figure_legend(fig, *axes[0, 0].get_legend_handles_labels())
        save_figure(fig, path)
        plt.close(fig)


def plot_fig11(rows: list[dict], path: Path, title: str) -> None:
    """Fig 11: goodput per draft-length controller at each P_dl/P_ul ratio."""
    with figure_style() as plt:
        xs = list(dict.fromkeys(r["x"] for r in rows))
        schemes = list(dict.fromkeys(r["scheme"] for r in rows))
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 5.2))
        width = 0.8 / len(schemes)
        for i, s in enumerate(schemes):
            rs = {r["x"]: r for r in rows if r["scheme"] == s}
            pos = np.arange(len(xs)) + (i - (len(schemes) - 1) / 2) * width
            ax.bar(pos, [rs[x]["throughput"] for x in xs], width, yerr=[rs[x]["throughput_ci95"] for x in xs],
                   capsize=2, label=s)
        ax.set_xticks(np.arange(len(xs)), [f"{x:g}" for x in xs])
        ax.set_xlabel(r"$P_\mathrm{dl}/P_\mathrm{ul}$ (total power $P_\mathrm{tot}(K)$ fixed)")
        ax.set_ylabel("sum goodput (tok/s)")
        lo = min(r["throughput"] for r in rows)
        ax.set_ylim(0.9 * lo, None)
        ax.grid(False, axis="x")
        fig.suptitle(_heading(rows, title))
        figure_legend(fig, *ax.get_legend_handles_labels(), max_cols=3)
        save_figure(fig, path)
        plt.close(fig)


# --------------------------------------------------------------------------- one entry point
FIGURES = {
    "fig7": (fig7, dict(pair="qwen2.5", figure="fig7"), plot_fig7,
             r"Fig. 7 — Qwen2.5-0.5B → 14B, $K$ = 20, $P_\mathrm{ul}$ = 10 dBm"),
    "fig8": (fig7, dict(pair="deepseek-r1", figure="fig8"), plot_fig7,
             r"Fig. 8 — R1-Distill-Qwen-1.5B → 32B, $K$ = 20, $P_\mathrm{ul}$ = 10 dBm"),
    "fig9": (fig9, dict(pair="qwen2.5", figure="fig9"), plot_fig9,
             r"Fig. 9 — mode selection vs $K$ (Qwen2.5 pair), $P_\mathrm{tot}(K)$ fixed"),
    "fig10": (fig9, dict(pair="deepseek-r1", figure="fig10"), plot_fig9,
              r"Fig. 10 — mode selection vs $K$ (DeepSeek pair), $P_\mathrm{tot}(K)$ fixed"),
    "fig11": (fig11, dict(pair="qwen2.5", figure="fig11"), plot_fig11,
              r"Fig. 11 — draft-length control, $K$ = 20, $P_\mathrm{tot}$ fixed"),
}

QUICK = {
    "fig7": dict(p_dl_dbm=(10, 25, 40), num_devices=6),
    "fig8": dict(p_dl_dbm=(10, 25, 40), num_devices=6),
    "fig9": dict(ks=(4, 8), ratios=(4, 16)),
    "fig10": dict(ks=(4, 8), ratios=(4, 16)),
    "fig11": dict(ratios=(4, 16), num_devices=6),
}


def run_figure(name: str, out: str | Path, drops: int = 50, seed: int = 0, rounds: int = 10, workers: int = 2,
               quick: bool = False, progress: bool = True, ray_address: str | None = None,
               **kwargs: Any) -> list[dict[str, Any]]:
    """Run figure ``name``; write ``<out>/<name>.csv``, ``<name>_drops.csv`` and ``<name>.png``.
    ``ray_address`` runs the drops as Ray tasks (see :func:`evaluation.parallel.parallel_map`)."""
    if name not in FIGURES:
        raise ValueError(f"figure {name!r} is not known; allowed: {', '.join(FIGURES)}")
    for arg, val in (("drops", drops), ("rounds", rounds), ("workers", workers)):
        if val < 1:
            raise ValueError(f"{arg}={val} is invalid; allowed: an integer ≥ 1")
    fn, fixed, plot, title = FIGURES[name]
    params = {**fixed, **(QUICK[name] if quick else {}), **kwargs}
    rows, raw = fn(drops=drops, seed=seed, rounds=rounds, workers=workers, progress=progress, ray_address=ray_address,
                   **params)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / f"{name}.csv")
    write_csv(raw, out / f"{name}_drops.csv")
    plot(rows, out / f"{name}.png", title)
    return rows


__all__ = ["FIGURES", "run_figure", "total_power_split", "fig7", "fig9", "fig11"]
