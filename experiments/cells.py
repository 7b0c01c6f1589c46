"""One learned policy for every cell: the generalist against every rival, K from 5 to 400.

For every cell type (:data:`CELL_TYPES`) and K (:data:`KS`), every controller plays the same
episodes (the cell generator at a fixed K: ``k_range = (K, K)``, ``k_max = K``; seeds
``SEED ..``): the paper's greedy, the time-budgeted greedy, computation-only, optimal uniform,
the local search (K ≤ :data:`LOCAL_SEARCH_MAX_K`; above, its decisions take seconds: it is timed on
:data:`TIMED_DECISIONS` decisions only, row ``local-search (timed only)``), the agents (the
generalist, trained on cells of K ≤ 200, plays every type but the dynamic cells, whose observation
has more entries per device; an agent trained on dynamic cells plays those), and a per-K MLP agent
at K = 20 on the paper cell (``--mlp-agent``, played on the single-cell env with the same seeds:
the same episodes). Per entry: long-run
throughput and real-time throughput Σ tokens / Σ (round time + decision time), each relative to
the greedy paired per episode (95% CIs), and the decision time. Decision times are wall-clock
on the machine that runs it, with as many processes as ``--workers``.

``python -m experiments cells --out docs/figures/cells`` (``--quick``: K ∈ {5, 20}, two types,
2 episodes × 3 rounds; :func:`run_cells` takes any Ks, types and several agents) writes ``cells.csv``,
``cells.json``, ``cells.png`` (throughput and real-time throughput relative to the greedy vs K) and
``cells_decision_time.png``.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.entries import check_agent_dir
from evaluation.harness import Entry, evaluate, parse_entry
from evaluation.report import summarize, write_csv, write_json
from msenv import ENV_IDS, resolve_config
from msenv.envs.cells import CellConfig

KS = (5, 10, 20, 50, 100, 200, 400)
#: the cell types: base configs of the generator (K is set per point)
CELL_TYPES: dict[str, dict[str, Any]] = {
    "paper": dict(preset="qwen2.5"),
    "hetero": dict(preset="qwen2.5", draft_scale_range=(1.0, 2.0)),
    "weak-hetero": dict(preset="qwen2.5", draft_scale_range=(1.0, 2.0), p_dl_dbm=10.0),
    #: strong links: the largest budgets of the generator's training ranges, both at once
    "strong": dict(preset="qwen2.5", draft_scale_range=(1.0, 2.0), p_ul_dbm=20.0, p_dl_dbm=30.0),
    #: devices 400–800 m from the server (the paper's cell: up to 500 m)
    "far": dict(preset="qwen2.5", draft_scale_range=(1.0, 2.0), distance_range_m=(400.0, 800.0)),
    #: the DeepSeek pair (R1-Distill-Qwen-1.5B → 32B) in a weak heterogeneous cell
    "deepseek-weak": dict(preset="deepseek-r1", draft_scale_range=(1.0, 2.0), p_dl_dbm=12.0),
    "dynamic": dict(ENV_IDS["msenv/MultiSpin-Dynamic-v0"]),
}
#: the episodes, rounds and first seed of every point (held out from training and the other tables)
EPISODES, ROUNDS, SEED = 6, 10, 40_000
LOCAL_SEARCH_MAX_K = 50
TIMED_DECISIONS = 2  #: decisions timed for a rival too slow to play the episodes
#: the committed generalist (``python train.py --env-id msenv/MultiSpin-Cells-v0``, copied here)
DEFAULT_AGENT = "agents/pretrained/cells"
RIVALS = ("greedy-saa", "budgeted-greedy", "computation-only", "optimal-uniform")


def cell_config(kind: str, k: int, rounds: int) -> CellConfig:
    """The generator of ``kind`` cells with exactly ``k`` devices (no padding)."""
    return CellConfig(base=resolve_config(CELL_TYPES[kind], episode_length=rounds), k_range=(k, k), k_max=k,
                      draft_scale_max_range=None)


def agent_table(agent: str | dict[str, str] | None) -> dict[str, str]:
    """Label → agent directory: one directory is the ``generalist``; a dict is taken as it is."""
    if not agent:
        return {}
    return {"generalist": agent} if isinstance(agent, (str, Path)) else dict(agent)


def entries(cfg: CellConfig, agent: str | dict[str, str] | None) -> list[Entry]:
    """The rows of one point, cells of ``cfg``: the rivals (the greedy first: the reference), the
    local search where affordable, the agents (:func:`agent_table`) that can act in its cells (an
    agent trained on cells without the model §11 dynamics reads shorter device rows than a dynamic
    cell's, and the other way round: it is left out there)."""
    from evaluation.entries import agent_loader, check_entries

    out = [parse_entry(n) for n in RIVALS]
    if cfg.k_max <= LOCAL_SEARCH_MAX_K:
        out.append(parse_entry("local-search"))
    for label, path in agent_table(agent).items():
        entry = Entry(label, agent_loader()(path, label))
        try:
            check_entries([entry], cfg)
        except ValueError:
            continue
        out.append(entry)
    return out


def run_point(kind: str, k: int, episodes: int, rounds: int, seed: int, workers: int, agent: str | None,
              mlp_agent: str | None, progress: bool, ray_address: str | None) -> tuple[list[dict], list[dict]]:
    """Every entry on one (cell type, K): (summary rows, every episode's statistics)."""
    cfg = cell_config(kind, k, rounds)
    t0 = time.perf_counter()
    results = evaluate(entries(cfg, agent), cfg, episodes, seed, workers, progress, ray_address)
    if mlp_agent and kind == "paper" and k == 20:  # the same episodes on the single-cell env
        from evaluation.entries import agent_loader

        results += evaluate([Entry("mlp-ppo-k20", agent_loader()(mlp_agent, "mlp-ppo-k20"))], cfg.base.replace(
            num_devices=k), episodes, seed, workers, progress, ray_address)
    rows = [{"cell": kind, "k": k, **row} for row in summarize(
        results, ("throughput", "realtime_throughput", "decision_ms"),
        relative={"throughput": "rel_throughput", "realtime_throughput": "rel_realtime"})]
    if k > LOCAL_SEARCH_MAX_K:  # too slow for the episodes: its time on a few decisions only
        few = evaluate([parse_entry("local-search")], cfg.replace(episode_length=TIMED_DECISIONS), 1, seed)
        rows.append({"cell": kind, "k": k, "controller": "local-search (timed only)", "episodes": 0,
                     "decision_ms": few[0].decision_ms, "decision_ms_ci95": 0.0})
    print(f"{kind:<12} K={k:<4} " + "  ".join(
        f"{r['controller']} {r['rel_throughput']:.3f}/{r['rel_realtime']:.3f}" if "rel_throughput" in r else
        f"{r['controller']} {r['decision_ms']:.0f} ms" for r in rows)
          + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
    return rows, [asdict(r) | {"cell": kind, "k": k} for r in results]


def run_cells(out: str | Path, episodes: int = EPISODES, rounds: int = ROUNDS, seed: int = SEED, workers: int = 2,
              agent: str | dict[str, str] | None = DEFAULT_AGENT, mlp_agent: str | None = None, quick: bool = False,
              progress: bool = False, ray_address: str | None = None, ks: tuple[int, ...] | None = None,
              kinds: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The whole sweep (module docstring), or the points ``ks`` × ``kinds``; ``quick``: K ∈ {5, 20},
    two types, at most 2 episodes × 3 rounds. Writes the CSV, JSON and the two figures into ``out``."""
    out = Path(out)
    if quick:
        ks, kinds = ks or (5, 20), kinds or ("paper", "weak-hetero")
        episodes, rounds = min(episodes, 2), min(rounds, 3)
    ks, kinds = tuple(ks or KS), tuple(kinds or CELL_TYPES)
    for kind in kinds:
        if kind not in CELL_TYPES:
            raise ValueError(f"cell type {kind!r} is not known; allowed: {', '.join(CELL_TYPES)}")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"K={k!r} is invalid; allowed: integers ≥ 1")
    for label, path in agent_table(agent).items():
        check_agent_dir(path, f"--agent ({label})")
    if mlp_agent:
        check_agent_dir(mlp_agent, "--mlp-agent")
    out.mkdir(parents=True, exist_ok=True)
    rows, episodes_out = [], []
    t0 = time.perf_counter()
    for kind in kinds:
        for k in ks:
            r, e = run_point(kind, k, episodes, rounds, seed, workers, agent, mlp_agent, progress, ray_address)
            rows += r
            episodes_out += e
    write_csv(rows, out / "cells.csv")
    write_json({"episodes": episodes, "rounds": rounds, "seed": seed, "workers": workers, "agent": agent_table(agent),
                "mlp_agent": mlp_agent, "seconds": time.perf_counter() - t0, "summary": rows,
                "episode_results": episodes_out}, out / "cells.json")
    if "generalist" in agent_table(agent):
        write_csv(paired_rows(episodes_out), out / "cells_paired.csv")
    plot_cells(rows, out)
    print(f"wrote {out / 'cells.csv'}, {out / 'cells.json'}, {out / 'cells.png'}, {out / 'cells_decision_time.png'} "
          f"({time.perf_counter() - t0:.0f} s)")
    return rows


def plot_cells(rows: list[dict[str, Any]], out: Path) -> None:
    """cells.png: throughput and real-time throughput relative to the greedy vs K, a row per cell
    type; cells_decision_time.png: decision time vs K."""
    from matplotlib.ticker import NullLocator

    from evaluation.report import FIGURE_WIDTH_IN, figure_legend, figure_style, save_figure, series_style

    kinds = list(dict.fromkeys(r["cell"] for r in rows))
    labels = list(dict.fromkeys(r["controller"] for r in rows))
    ks = sorted({r["k"] for r in rows})

    def k_axis(ax):  # a log scale with the sweep's K as ticks
        ax.set_xscale("log")
        ax.set_xlim(ks[0] / 1.4, ks[-1] * 1.4)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("K (devices)")

    with figure_style() as plt:
        fig, axes = plt.subplots(len(kinds), 2, figsize=(FIGURE_WIDTH_IN, 1.9 + 2.3 * len(kinds)), squeeze=False,
                                 sharex=True)
        handles: dict[str, Any] = {}
        for j, (metric, name) in enumerate((("rel_throughput", "throughput"), ("rel_realtime", "real-time"))):
            for i, kind in enumerate(kinds):
                ax = axes[i, j]
                for n, lab in enumerate(labels):
                    pts = sorted((r["k"], r[metric], r[f"{metric}_ci95"]) for r in rows
                                 if r["cell"] == kind and r["controller"] == lab and metric in r)
                    if pts:
                        k, m, c = map(np.array, zip(*pts))
                        handles.setdefault(lab, ax.errorbar(k, m, yerr=c, marker="o", ms=4, capsize=2, label=lab,
                                                            **series_style(n)))
                ax.set_title(f"{kind}: {name}")
                if j == 0:
                    ax.set_ylabel(f"rel. to {labels[0]}")
            k_axis(axes[-1, j])
        figure_legend(fig, list(handles.values()), list(handles), max_cols=3)
        save_figure(fig, out / "cells.png")
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 5.6))
        for n, lab in enumerate(labels):
            pts = {}
            for r in rows:
                if r["controller"] == lab:
                    pts.setdefault(r["k"], []).append(r["decision_ms"])
            k = sorted(pts)
            ax.plot(k, [np.mean(pts[x]) for x in k], marker="o", label=lab, **series_style(n))
        ax.set_yscale("log")
        k_axis(ax)
        ax.set_ylabel("decision time (ms)")
        ax.set_title("mean over the cell types")
        ax.grid(True, which="both", alpha=0.3)
        figure_legend(fig, *ax.get_legend_handles_labels(), max_cols=3)
        save_figure(fig, out / "cells_decision_time.png")
        plt.close(fig)


def is_rival(label: str) -> bool:
    """Whether an entry of the sweep's episodes is a model-based rival (not an agent)."""
    return label in RIVALS + ("local-search",)


def paired_rows(episodes: list[dict[str, Any]], agent: str | None = None) -> list[dict[str, Any]]:
    """Each agent (``agent``, or every entry that is not a rival) against each rival on the same
    episodes, per (cell type, K): the mean of the per-episode ratios agent / rival of throughput
    and of real-time throughput, each with its 95% CI (Student's t over the episodes) — a paired
    comparison, tighter than two CIs side by side. ``episodes``: the ``episode_results`` of
    ``cells.json``."""
    by: dict[tuple, dict[str, dict[int, dict]]] = {}
    for e in episodes:
        by.setdefault((e["cell"], e["k"]), {}).setdefault(e["label"], {})[e["episode"]] = e
    rows = []
    for (cell, k), labels in by.items():
        for label, mine in labels.items():
            if (agent is None and not is_rival(label)) or label == agent:
                rows += _paired_point(cell, k, label, mine, labels)
    return rows


def _paired_point(cell: str, k: int, agent: str, mine: dict[int, dict],
                  labels: dict[str, dict[int, dict]]) -> list[dict[str, Any]]:
    """``agent``'s episodes ``mine`` against each rival's among ``labels`` at one point: the mean of
    the per-episode ratios and the half-width of its paired 95% Student-t interval over the episodes
    (one agent, so nothing of the training seed's variation)."""
    from evaluation.report import ci95

    rows = []
    for rival, theirs in labels.items():
        if rival == agent or not is_rival(rival):
            continue
        eps = sorted(set(mine) & set(theirs))
        row = {"cell": cell, "k": k, "agent": agent, "rival": rival, "episodes": len(eps)}
        for metric in ("throughput", "realtime_throughput"):
            x = np.array([mine[e][metric] / theirs[e][metric] for e in eps])
            row[f"{metric}_ratio"], row[f"{metric}_ratio_ci95"] = float(x.mean()), ci95(x)
        rows.append(row)
    return rows


def write_paired(out: str | Path, agent: str | None = None) -> list[dict[str, Any]]:
    """``cells_paired.csv`` from ``out/cells.json`` (:func:`paired_rows`); prints, per agent and
    point, the rival the agent does worst against, on each metric, whether the 95% CI excludes
    parity, and every rival it is behind (the CI below 1)."""
    import json

    out = Path(out)
    rows = paired_rows(json.loads((out / "cells.json").read_text())["episode_results"], agent)
    write_csv(rows, out / "cells_paired.csv")
    for me, cell, k in dict.fromkeys((r["agent"], r["cell"], r["k"]) for r in rows):
        pts = [r for r in rows if r["cell"] == cell and r["k"] == k and r["agent"] == me]
        parts = []
        for metric, name in (("throughput", "long-run"), ("realtime_throughput", "real-time")):
            w = min(pts, key=lambda r: r[f"{metric}_ratio"])
            m, h = w[f"{metric}_ratio"], w[f"{metric}_ratio_ci95"]
            verdict = "behind" if m + h < 1 else "ahead" if m - h > 1 else "level"
            parts.append(f"{name} {m:.3f} ± {h:.3f} against {w['rival']} ({verdict})")
            behind = [r["rival"] for r in pts if r[f"{metric}_ratio"] + r[f"{metric}_ratio_ci95"] < 1]
            if behind:
                parts[-1] += f", behind {', '.join(behind)}"
        print(f"{me:<12} {cell:<14} K={k:<4} " + "; ".join(parts))
    print(f"wrote {out / 'cells_paired.csv'}")
    return rows
