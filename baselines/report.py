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


#: the free space an output folder must have before a run that writes results into it
MIN_FREE_BYTES = 50 * 2**20


def output_dir_problem(path: str | os.PathLike) -> str | None:
    """``None`` if results can be written into the folder ``path`` (created if missing); else one
    phrase saying why not (a file where the folder should be, not writable, less than
    :data:`MIN_FREE_BYTES` free). Checked before a long run, so that its end cannot fail on it."""
    import shutil
    import tempfile

    path = Path(path)
    if path.exists() and not path.is_dir():
        return f"{path} is a file, not a folder"
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-"):
            pass
    except OSError as e:
        return f"{path} is not writable ({e.strerror or e})"
    free = shutil.disk_usage(path).free
    if free < MIN_FREE_BYTES:
        return f"{path} has {free / 2**20:.1f} MiB free; a result needs up to {MIN_FREE_BYTES / 2**20:.0f} MiB"
    return None


def atomic_write(path: str | os.PathLike, write: Any) -> None:
    """Write ``path`` through ``write(fh)`` on a temporary file beside it, then rename it into
    place: a failed write (full disk, a signal) never replaces a good file with a truncated one."""
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_csv(rows: Sequence[dict[str, Any]], path: str | os.PathLike) -> None:
    """``rows`` as a CSV file (columns: the first row's keys), written atomically."""
    import io

    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    atomic_write(path, lambda fh: fh.write(buf.getvalue().encode()))


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """``obj`` as indented JSON (numpy values as numbers and lists), written atomically."""
    text = json.dumps(obj, indent=2, default=_jsonable)
    atomic_write(path, lambda fh: fh.write(text.encode()))


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)
