"""Summaries and files of evaluation results: 95% confidence intervals, the comparison table,
CSV and JSON writers."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

if TYPE_CHECKING:
    from .harness import EpisodeStats

METRICS = ("goodput", "throughput", "mean_gamma", "share_accepted", "share_ul", "share_dl", "share_no_draft", "t_com_ms",
           "t_cmp_ms", "decision_ms", "realtime_throughput")
#: the metrics measured with a clock (they depend on the machine and its load, not only on the seeds)
TIMING_METRICS = ("decision_ms", "realtime_throughput")


def ci95(x: np.ndarray) -> float:
    """Half-width of the 95% Student-t confidence interval of the mean (0 for one sample)."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return 0.0
    return float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))


def summarize(results: Sequence[EpisodeStats], metrics: Sequence[str] = METRICS,
              relative: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Per entry: mean and CI of each of ``metrics``, and metrics relative to the first entry's,
    paired per episode: ``relative`` maps a metric to its column (default: throughput →
    ``rel_throughput``), each with its ``_ci95``."""
    relative = {"throughput": "rel_throughput"} if relative is None else relative
    labels = list(dict.fromkeys(r.label for r in results))
    by = {lab: sorted((r for r in results if r.label == lab), key=lambda r: r.episode) for lab in labels}
    refs = {m: np.array([getattr(r, m) for r in by[labels[0]]]) for m in relative}
    rows = []
    for lab in labels:
        rs = by[lab]
        row: dict[str, Any] = {"controller": lab, "episodes": len(rs)}
        for m in metrics:
            v = np.array([getattr(r, m) for r in rs])
            row[m] = float(v.mean())
            row[f"{m}_ci95"] = ci95(v)
        for m, col in relative.items():
            rel = np.array([getattr(r, m) for r in rs]) / refs[m][: len(rs)]
            row[col] = float(rel.mean())
            row[f"{col}_ci95"] = ci95(rel)
        rows.append(row)
    return rows


HEADERS = ("controller", "goodput", "throughput", "rel. thr.", "mean γ", "acc/UL/DL %", "T_com ms", "decide ms")


def _cells(r: dict[str, Any]) -> list[str]:
    return [
        r["controller"],
        f"{r['goodput']:.1f} ± {r['goodput_ci95']:.1f}",
        f"{r['throughput']:.1f} ± {r['throughput_ci95']:.1f}",
        f"{r['rel_throughput']:.4f}",
        f"{r['mean_gamma']:.2f}",
        f"{100 * r['share_accepted']:.0f}/{100 * r['share_ul']:.0f}/{100 * r['share_dl']:.0f}",
        f"{r['t_com_ms']:.2f}",
        f"{r['decision_ms']:.3f}",
    ]


def format_table(rows: Sequence[dict[str, Any]], title: str = "") -> str:
    """Plain-text table of :func:`summarize` rows."""
    body = [_cells(r) for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(HEADERS)]
    lines = [title] if title else []
    lines.append("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths)))
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    return "\n".join(lines)


def print_table(rows: Sequence[dict[str, Any]], title: str = "") -> None:
    """Print the table with rich (plain text when rich is not installed)."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is in the train extra
        print(format_table(rows, title))
        return
    table = Table(title=title or None)
    for h in HEADERS:
        table.add_column(h, justify="left" if h == "controller" else "right")
    for r in rows:
        table.add_row(*_cells(r))
    Console(width=140).print(table)


def write_csv(rows: Sequence[dict[str, Any]], path: str | os.PathLike) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def write_json(obj: Any, path: str | os.PathLike) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=_jsonable))


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)
