"""A benchmark's scores and their aggregates: each episode's throughput over the reference's on
the same episode, a score array (runs, episodes, cells) per method, and the aggregates with the
two-way bootstrap intervals of :mod:`evaluation.stats` (IQM, mean, shortfall, probabilities of
improvement over the reference and the best rival)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import stats
from ..suites import Suite

#: the scores computed per episode: name → the EpisodeStats field divided by the reference's
SCORES = {"throughput": "throughput", "realtime": "realtime_throughput"}
#: scores of a field that files written since msenv 0.6 hold (computed when every episode has it):
#: the worst-served devices' goodput, each episode's 10th percentile over its devices
OPTIONAL_SCORES = {"device_p10": "device_p10_goodput"}


def scores_of(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The scores the episodes ``rows`` give: :data:`SCORES`, and each of :data:`OPTIONAL_SCORES`
    whose field every episode holds."""
    extra = {s: f for s, f in OPTIONAL_SCORES.items() if rows and all(f in r for r in rows)}
    return {**SCORES, **extra}


def score_matrices(suite: Suite, rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, np.ndarray]]:
    """score name → method → array (runs, episodes, cells): each episode's metric over the
    reference's on the same cell and episode."""
    cells = [c.name for c in suite.cells]
    ref = {(r["cell"], r["episode"]): r for r in rows if r["method"] == suite.reference}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fields = scores_of(rows)
    out: dict[str, dict[str, np.ndarray]] = {s: {} for s in fields}
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        runs = 1 + max(r["run"] for r in mine)
        for s, field in fields.items():
            a = np.full((runs, suite.episodes, len(cells)), np.nan)
            for r in mine:
                a[r["run"], r["episode"], cells.index(r["cell"])] = r[field] / ref[(r["cell"], r["episode"])][field]
            if np.isnan(a).any():
                raise ValueError(f"method {m!r}: episodes are missing from the results")
            out[s][m] = a
    return out


def rivals_of(suite: Suite, matrices: dict[str, np.ndarray], kinds: dict[str, str]) -> dict[str, str]:
    """The methods every row's probability of improvement is computed against: the suite's
    reference, and its best rival — the controller of the file with the highest IQM (the suite's
    oracles left out: upper references, not rivals)."""
    points = {m: stats.point(a)["iqm"] for m, a in matrices.items()
              if kinds[m] == "controller" and m not in suite.oracles}
    return {"reference": suite.reference, "best_rival": stats.best_rival(points, list(points))}


def aggregates(matrices: dict[str, np.ndarray], rivals: dict[str, str]) -> dict[str, dict[str, list[float]]]:
    """method → aggregate → [point, CI low, CI high] (:func:`evaluation.stats.summarize`: the
    two-way bootstrap over runs and test episodes, seeded)."""
    return stats.summarize(matrices, rivals)


def summary_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per method: runs, every aggregate of both scores with its CI, decision time."""
    rows = []
    for m, info in result["methods"].items():
        row: dict[str, Any] = {"method": m, "kind": info["kind"], "runs": info["runs"],
                               "interval": "runs × episodes" if info["runs"] > 1 else "episodes"}
        for s in result["aggregates"]:
            for a, (pt, lo, hi) in result["aggregates"][s][m].items():
                row[f"{s}_{a}"], row[f"{s}_{a}_lo"], row[f"{s}_{a}_hi"] = pt, lo, hi
        row["decision_ms"] = float(np.mean(list(result["decision_ms"][m].values())))
        rows.append(row)
    return rows


def format_summary(result: dict[str, Any]) -> str:
    """The plain-text table a run prints: per method its runs, IQM, P(> best rival), real-time IQM
    (each with its 95% interval) and mean decision time."""
    rivals = result.get("statistics", {}).get("rivals", {}).get("throughput", {})
    lines = [(f"{result['suite']['name']}: scores relative to {result['suite']['reference']}; best rival "
              f"{rivals.get('best_rival', '?')} (95% two-way bootstrap CIs over runs and episodes)"),
             f"{'method':<22}{'runs':>5}  {'IQM':<22}{'P(> best rival)':<22}{'real-time IQM':<22}{'decide ms':>10}"]
    for r in summary_rows(result):
        def ci(k):  # (called in this iteration only)
            return f"{r[k]:.3f} [{r[k + '_lo']:.3f}, {r[k + '_hi']:.3f}]" if k in r else "—"  # noqa: B023
        lines.append(f"{r['method']:<22}{r['runs']:>5}  {ci('throughput_iqm'):<22}"
                     f"{ci('throughput_p_improvement_over_best_rival'):<22}{ci('realtime_iqm'):<22}{r['decision_ms']:>10.3f}")
    return "\n".join(lines)


__all__ = ["OPTIONAL_SCORES", "SCORES", "aggregates", "scores_of", "format_summary", "rivals_of", "score_matrices",
           "summary_rows"]
