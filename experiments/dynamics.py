"""Goodput under model §11 dynamics: where exact information is worth something, and who gets it.

``python -m experiments dynamics [--drops 20] [--rounds 30] [--quick] [--agent DIR] [--ray [ADDR]]``

Base scenario: ``msenv/MultiSpin-Dynamic-v0`` (pedestrian Gauss–Markov fading seen at decision
time, hidden α with requests and the easy/hard chain) with K = 6 and diverse prompts (κ = 5)
unless the sweep varies it. Three sweeps, each at two DL budgets (15 and 30 dBm):

- ``speed``: every device at v ∈ {0, 0.5, 1.5, 5, 30} m/s (f_D from 0 to 350 Hz);
- ``kappa``: the Beta concentration of request α, κ ∈ {2, 5, 20, 100} (diverse → uniform prompts);
- ``K``: devices K ∈ {4, 8, 12, 20}.

Controllers (paired: every controller plays the same drops): ``oracle-greedy`` (true α and the
correction-time gains — no server can run it), ``plug-in-greedy`` (the paper's greedy on the
posterior-mean α and the gains as shown), ``bayes-saa`` (ours), ``optimal-uniform``, ``fixed-4``,
and a trained PPO agent (``--agent``) at the points whose K matches it. The oracle − plug-in
paired gap is the value of exact information; where it is within its CI, no controller can gain.
Writes ``dynamics.csv`` (mean, CI, paired ratio to the oracle), ``dynamics_drops.csv`` and
``dynamics.png``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.parallel import parallel_map
from evaluation.report import ci95, write_csv
from msenv import ENV_IDS, resolve_config

from .figures import Job, aggregate, run_job

BASE_ID = "msenv/MultiSpin-Dynamic-v0"
BASE = dict(num_devices=6, alpha_concentration=5.0)
CONTROLLERS = ("oracle-greedy", "plug-in-greedy", "bayes-saa", "optimal-uniform", "fixed-4")
SWEEPS = {
    "speed": ("speed_mps", (0.0, 0.5, 1.5, 5.0, 30.0)),
    "kappa": ("alpha_concentration", (2.0, 5.0, 20.0, 100.0)),
    "K": ("num_devices", (4, 8, 12, 20)),
}
QUICK = {"speed": (0.0, 30.0), "kappa": (2.0, 100.0), "K": (4, 8)}
BUDGETS = (15.0, 30.0)


def point_config(sweep: str, x: float, p_dl_dbm: float, rounds: int):
    over: dict[str, Any] = {**BASE, "p_dl_dbm": p_dl_dbm, "episode_length": rounds}
    if sweep == "speed":
        over["speed_range_mps"] = (float(x), float(x))
    elif sweep == "kappa":
        over["alpha_concentration"] = float(x)
    else:
        over["num_devices"] = int(x)
    return resolve_config(ENV_IDS[BASE_ID], **over)


def agent_devices(agent: str | Path) -> int | None:
    """The K of the single-cell env the agent saved in ``agent`` was trained on (None for a cell
    generator's agent); read from its portable ``agent.json``."""
    from agents.controller import load_agent

    return getattr(load_agent(agent).config, "num_devices", None)


def build_jobs(drops: int, seed: int, rounds: int, quick: bool = False, agent: str | None = None,
               controllers: Sequence[str] = CONTROLLERS) -> list[Job]:
    agent_k = None if agent is None else agent_devices(agent)
    jobs = []
    for sweep, (_, xs) in SWEEPS.items():
        for x in (QUICK[sweep] if quick else xs):
            for p in BUDGETS[:1] if quick else BUDGETS:
                cfg = point_config(sweep, x, p, rounds)
                panel = f"{sweep}|P_dl={p:g}"
                for name in controllers:
                    jobs += [Job("dynamics", panel, float(x), name, name, None, cfg, seed + d, d) for d in range(drops)]
                if agent is not None and cfg.num_devices == agent_k:
                    jobs += [Job("dynamics", panel, float(x), "ppo", "ppo", None, cfg, seed + d, d, agent=str(agent))
                             for d in range(drops)]
    return jobs


def gaps(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per point: the oracle − plug-in paired gap (value of exact information, as a fraction of
    the plug-in's throughput), and the share of it each other controller recovers."""
    out = []
    keys = list(dict.fromkeys((r["panel"], r["x"]) for r in raw))
    for panel, x in keys:
        by = {}
        for r in raw:
            if r["panel"] == panel and r["x"] == x:
                by.setdefault(r["scheme"], []).append(r)
        if "oracle-greedy" not in by or "plug-in-greedy" not in by:
            continue
        thr = {s: np.array([r["throughput"] for r in sorted(v, key=lambda r: r["drop"])]) for s, v in by.items()}
        plug = thr["plug-in-greedy"]
        gap = thr["oracle-greedy"] / plug - 1.0
        row = {"panel": panel, "x": x, "oracle_gap": float(gap.mean()), "oracle_gap_ci95": ci95(gap)}
        for s, v in thr.items():
            if s in ("oracle-greedy", "plug-in-greedy"):
                continue
            rel = v / plug - 1.0
            row[f"{s}_vs_plugin"] = float(rel.mean())
            row[f"{s}_vs_plugin_ci95"] = ci95(rel)
            row[f"{s}_recovered"] = float(rel.mean() / gap.mean()) if abs(gap.mean()) > 1e-12 else float("nan")
        out.append(row)
    return out


def run_dynamics(out: str | Path, drops: int = 20, seed: int = 0, rounds: int = 30, workers: int = 2,
                 quick: bool = False, progress: bool = True, ray_address: str | None = None,
                 agent: str | None = None) -> list[dict[str, Any]]:
    t0 = time.perf_counter()
    jobs = build_jobs(drops, seed, rounds, quick, agent)
    raw = parallel_map(run_job, jobs, workers, progress, desc="dynamics", ray_address=ray_address)
    rows = aggregate(raw, "x")
    for row in rows:
        row["sweep"], row["p_dl_dbm"] = row["panel"].split("|")[0], float(row["panel"].split("=")[1])
    gap_rows = gaps(raw)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "dynamics.csv")
    write_csv(raw, out / "dynamics_drops.csv")
    if gap_rows:
        write_csv(gap_rows, out / "dynamics_gaps.csv")
    plot(rows, gap_rows, out / "dynamics.png")
    print(f"dynamics: {len(jobs)} episodes, wall time {time.perf_counter() - t0:.0f} s → {out}/dynamics.csv")
    return rows


STYLE = {"oracle-greedy": ("black", "--"), "plug-in-greedy": ("tab:red", "-"), "bayes-saa": ("tab:blue", "-"),
         "optimal-uniform": ("tab:green", ":"), "fixed-4": ("tab:gray", "-."), "ppo": ("tab:purple", "-")}
XLABEL = {"speed": "device speed v (m/s)", "kappa": "Beta concentration κ", "K": "devices K"}
GAP_STYLE = (("oracle_gap", "oracle", "black", "-"), ("bayes-saa_vs_plugin", "bayes-saa", "tab:blue", "--"))


def _x_axis(ax, sweep: str, xs) -> None:
    """The sweep's quantity; speed (0, then 0.5 … 30 m/s) and κ (2 … 100) on log scales with the
    points as ticks."""
    from matplotlib.ticker import NullLocator

    ax.set_xlabel(XLABEL.get(sweep, sweep))
    xs = sorted(set(xs))
    if sweep == "speed":
        ax.set_xscale("symlog", linthresh=0.5)
        ax.set_xlim(-0.15, 1.3 * xs[-1] if xs[-1] > 0 else 1.0)
    elif sweep == "kappa":
        ax.set_xscale("log")
    else:
        return
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.xaxis.set_minor_locator(NullLocator())


def plot(rows, gap_rows, path: Path) -> None:
    """Throughput per controller for every sweep and DL budget, then per sweep the oracle −
    plug-in paired gap and the Bayesian SAA's paired gain over the plug-in; two panels a row."""
    from evaluation.report import FIGURE_WIDTH_IN, figure_legend, figure_style, save_figure

    sweeps = list(dict.fromkeys(r["sweep"] for r in rows))
    budgets = sorted({r["p_dl_dbm"] for r in rows})
    cols = 2
    n_thr, n_gap = len(sweeps) * len(budgets), len(sweeps)
    thr_rows, gap_grid_rows = -(-n_thr // cols), -(-(n_gap + 1) // cols)
    with figure_style() as plt:
        fig, axes = plt.subplots(thr_rows + gap_grid_rows, cols,
                                 figsize=(FIGURE_WIDTH_IN, 1.4 + 2.4 * (thr_rows + gap_grid_rows)), squeeze=False)
        slots = list(axes.flat)
        thr_axes, gap_axes = slots[:n_thr], slots[thr_rows * cols: thr_rows * cols + n_gap]
        key_ax = slots[thr_rows * cols + n_gap]
        for ax in slots:
            if ax not in thr_axes and ax not in gap_axes:
                ax.set_axis_off()
        handles: dict[str, object] = {}
        for ax, (sw, p) in zip(thr_axes, [(sw, p) for sw in sweeps for p in budgets]):
            xs = []
            for scheme in STYLE:
                pts = [r for r in rows if r["sweep"] == sw and r["p_dl_dbm"] == p and r["scheme"] == scheme]
                if not pts:
                    continue
                c, ls = STYLE[scheme]
                xs += [r["x"] for r in pts]
                h = ax.errorbar([r["x"] for r in pts], [r["throughput"] for r in pts],
                                yerr=[r["throughput_ci95"] for r in pts], color=c, ls=ls, marker="o", ms=4,
                                capsize=2, label=scheme)
                handles.setdefault(scheme, h)
            ax.set_title(rf"$P_\mathrm{{dl}}$ = {p:g} dBm")
            ax.set_ylabel("throughput (tok/s)")
            _x_axis(ax, sw, xs)
        gap_handles: dict[str, object] = {}
        for ax, sw in zip(gap_axes, sweeps):
            xs = []
            for p, mk in zip(budgets, ("o", "s")):
                pts = [g for g in gap_rows if g["panel"] == f"{sw}|P_dl={p:g}"]
                xs += [g["x"] for g in pts]
                for key, who, c, ls in GAP_STYLE:
                    if pts and key in pts[0]:
                        label = f"{who} − plug-in, {p:g} dBm"
                        h = ax.errorbar([g["x"] for g in pts], [100 * g[key] for g in pts],
                                        yerr=[100 * g[f"{key}_ci95"] for g in pts], color=c, ls=ls, marker=mk, ms=4,
                                        capsize=2, label=label)
                        gap_handles.setdefault(label, h)
            ax.axhline(0, color="gray", lw=0.8)
            ax.set_title("paired gain over plug-in")
            ax.set_ylabel("gain (%)")
            if xs:
                _x_axis(ax, sw, xs)
        if gap_handles:
            key_ax.legend(list(gap_handles.values()), list(gap_handles), loc="center", frameon=False)
        drops = rows[0]["drops"]
        fig.suptitle(f"Model §11 dynamics: who gains from exact information\nmean of {drops} drops per point ± 95% CI")
        figure_legend(fig, list(handles.values()), list(handles), max_cols=3)
        save_figure(fig, path)
        plt.close(fig)


__all__ = ["build_jobs", "gaps", "run_dynamics"]
