"""Summaries and files of evaluation results: 95% confidence intervals, the comparison table,
CSV and JSON writers and reader, and the one writer of every figure the docs show."""

from __future__ import annotations

import csv
import json
import os
import re
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from msenv.atomic import atomic_write, write_bytes

if TYPE_CHECKING:
    from .harness import EpisodeStats

METRICS = ("goodput", "throughput", "mean_gamma", "share_accepted", "share_ul", "share_dl", "share_no_draft",
           "t_com_ms", "t_cmp_ms", "decision_ms", "realtime_throughput")
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


def print_rich(headers: Sequence[str], body: Sequence[Sequence[str]], title: str = "") -> bool:
    """Print ``body`` (rows of cells under ``headers``; the controller column left, the others
    right) as a rich table; False, printing nothing, when rich is not installed."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is in the train extra
        return False
    table = Table(title=title or None)
    for h in headers:
        table.add_column(h, justify="left" if h == "controller" else "right")
    for cells in body:
        table.add_row(*cells)
    Console(width=140).print(table)
    return True


def print_table(rows: Sequence[dict[str, Any]], title: str = "") -> None:
    """Print the table with rich (plain text when rich is not installed)."""
    if not print_rich(HEADERS, [_cells(r) for r in rows], title):
        print(format_table(rows, title))


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


def csv_bytes(rows: Sequence[dict[str, Any]]) -> bytes:
    """``rows`` as the bytes of a CSV file (columns: the first row's keys)."""
    import io

    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue().encode()


def write_csv(rows: Sequence[dict[str, Any]], path: str | os.PathLike) -> None:
    """``rows`` as a CSV file (columns: the first row's keys), written atomically
    (:func:`msenv.atomic.atomic_write`)."""
    write_bytes(path, csv_bytes(rows))


def read_csv(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of a CSV that :func:`write_csv` wrote, each value back in the type it was written
    from: ``True``/``False`` a bool, an integer an int, any other number (``nan``, ``inf``
    included) a float, the rest a string; an empty cell — a key its row did not have — is left
    out of the row (write_csv writes a missing key as an empty cell)."""
    with open(path, newline="") as fh:
        return [{k: _parsed(v) for k, v in row.items() if v != ""} for row in csv.DictReader(fh)]


_INT = re.compile(r"[+-]?\d+")


def _parsed(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    if _INT.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def json_bytes(obj: Any) -> bytes:
    """``obj`` as the bytes of indented JSON (numpy values as numbers and lists)."""
    return json.dumps(obj, indent=2, default=_jsonable).encode()


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """``obj`` as indented JSON (numpy values as numbers and lists), written atomically
    (:func:`msenv.atomic.atomic_write`)."""
    write_bytes(path, json_bytes(obj))


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


# ---------------------------------------------------------------------------- figures
# Every figure the docs show is drawn under figure_style() and written by save_figure(). The
# site's article column is 736 CSS px wide, its body text 16 px: a figure W inches wide is shown
# at 736 px, so a font of s pt shows at s/72 · 736/W px, and s ≥ 16 · 72 / 736 · W ≈ 1.565 · W.
# At FIGURE_WIDTH_IN = 7.2 in that is 11.3 pt: every text is FIGURE_FONT_PT = 12 pt (17 px shown).

#: the width of every docs figure (inches); many panels go one or two to a row
FIGURE_WIDTH_IN = 7.2
#: the one font size of every text of a docs figure (points)
FIGURE_FONT_PT = 12
#: the resolution a docs figure is saved at (1080 px wide at FIGURE_WIDTH_IN)
FIGURE_DPI = 150
#: the PNG text key that records a saved figure's smallest text, in pixels at its own resolution
LABEL_PX_KEY = "msenv:label-px"
#: the width (CSS px) of the site's article column, and the body text size (px) every label must reach there
COLUMN_PX, BODY_TEXT_PX = 736, 16

FIGURE_RC: dict[str, Any] = {
    "figure.figsize": (FIGURE_WIDTH_IN, 4.5),
    "figure.dpi": FIGURE_DPI,
    "savefig.dpi": FIGURE_DPI,
    "figure.constrained_layout.use": True,
    **{key: FIGURE_FONT_PT for key in ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize",
                                       "ytick.labelsize", "legend.fontsize", "legend.title_fontsize",
                                       "figure.titlesize", "figure.labelsize")},
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.framealpha": 0.85,
}


@contextmanager
def figure_style() -> Iterator[Any]:
    """matplotlib's pyplot (the Agg backend: files, no window) with the docs figures' settings
    (:data:`FIGURE_RC`: 7.2 in wide, every text 12 pt, constrained layout) while the block runs.
    Draw and :func:`save_figure` inside the block: tick labels take their size when drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context(FIGURE_RC):
        yield plt


def visible_texts(fig: Any) -> list[Any]:
    """Every :class:`matplotlib.text.Text` of ``fig`` a drawing shows: visible, with its parents
    visible, and not empty — titles, axis and tick labels, legend entries, annotations. Lays the
    figure out first (without rendering), so that the tick labels hold their text."""
    from matplotlib.text import Text

    fig.draw_without_rendering()
    out, todo = [], [fig]
    while todo:
        artist = todo.pop()
        for child in artist.get_children():
            if not child.get_visible():
                continue
            if isinstance(child, Text) and child.get_text().strip():
                out.append(child)
            todo.append(child)
    return out


def label_px(fig: Any, dpi: float = FIGURE_DPI) -> float:
    """The smallest font size of :func:`visible_texts`, in pixels at ``dpi``."""
    sizes = [t.get_fontsize() for t in visible_texts(fig)]
    if not sizes:
        raise ValueError("the figure has no text: nothing says what it shows")
    return min(sizes) * dpi / 72


def figure_writer(fig: Any) -> Callable[[Any], None]:
    """The writer of ``fig`` as a PNG at :data:`FIGURE_DPI` into a binary file object, its text
    chunk :data:`LABEL_PX_KEY` the measured :func:`label_px` (for :func:`msenv.atomic.atomic_files`,
    where a figure is one file of an output of several)."""
    px = label_px(fig, FIGURE_DPI)
    return lambda fh: fig.savefig(fh, format="png", dpi=FIGURE_DPI, metadata={LABEL_PX_KEY: f"{px:.2f}"})


def save_figure(fig: Any, path: str | os.PathLike) -> float:
    """Write ``fig`` as a PNG at :data:`FIGURE_DPI`, atomically (:func:`msenv.atomic.atomic_write`),
    its text chunk :data:`LABEL_PX_KEY` the measured :func:`label_px` (the check of every committed
    figure, ``tests/test_figure_style.py``, reads it); returns that size. The one writer of the
    figures the docs show."""
    px = label_px(fig, FIGURE_DPI)
    atomic_write(path, figure_writer(fig))
    return px


def png_chunks(path: str | os.PathLike) -> list[tuple[bytes, bytes]]:
    """(type, data) of every chunk of a PNG file up to ``IEND``; ``ValueError`` if the file is not a
    PNG or a chunk fails its CRC."""
    b = Path(path).read_bytes()
    if b[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    out, i = [], 8
    while i + 8 <= len(b):
        n, kind = struct.unpack(">I4s", b[i:i + 8])
        data, crc = b[i + 8:i + 8 + n], b[i + 8 + n:i + 12 + n]
        if len(crc) < 4 or zlib.crc32(kind + data) != struct.unpack(">I", crc)[0]:
            raise ValueError(f"{path}: chunk {kind!r} fails its CRC")
        out.append((kind, data))
        i += 12 + n
        if kind == b"IEND":
            break
    return out


def png_text(path: str | os.PathLike) -> dict[str, str]:
    """A PNG's ``tEXt`` chunks as {key: value} — e.g. the :data:`LABEL_PX_KEY` that
    :func:`save_figure` records."""
    return {key.decode("latin-1"): value.decode("latin-1")
            for kind, data in png_chunks(path) if kind == b"tEXt"
            for key, _, value in [data.partition(b"\0")]}


def series_style(n: int) -> dict[str, Any]:
    """The colour and line style of a figure's ``n``-th series: the ten colours of matplotlib's
    cycle, then again dashed, then dotted, so that no two of 30 series look alike."""
    return {"color": f"C{n % 10}", "linestyle": ("-", "--", ":")[n // 10 % 3]}


def figure_legend(fig: Any, handles: Sequence[Any], labels: Sequence[str], max_cols: int = 4) -> Any:
    """One legend for the whole figure, below its panels (the title, if any, stays on top), in as
    many columns (at most ``max_cols``) as fit the figure's width."""
    legend = None
    for ncol in range(min(max_cols, len(labels)), 0, -1):
        if legend is not None:
            legend.remove()
        legend = fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False)
        fig.draw_without_rendering()
        if legend.get_window_extent().width <= 0.98 * fig.bbox.width:
            break
    return legend
