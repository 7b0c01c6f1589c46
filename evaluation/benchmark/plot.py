"""The figure of a benchmark result: each method's aggregates with their 95% intervals and the
performance profile of its throughput scores, drawn from the result document alone (a fresh run's,
or a file read back: ``python -m evaluation.benchmark --plot FILE``) and written by
:func:`evaluation.report.save_figure`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

#: the aggregates the leaderboard figure shows, with their titles (format 1, msenv ≤ 0.5: P(improvement)
#: over the reference in place of P(> best rival))
PLOTTED = (("iqm", "IQM"), ("mean", "mean"), ("p_improvement_over_best_rival", "P(> best rival)"))
LEGACY_PLOTTED = {"p_improvement_over_best_rival": ("p_improvement", "P(improvement)")}


def draw(plt, result: dict[str, Any]):
    """The figure of a result document, drawn with ``plt`` under
    :func:`evaluation.report.figure_style`: aggregates with their CIs (a row per method) and the
    performance profile of the throughput scores."""
    from matplotlib.ticker import MaxNLocator

    from ..report import FIGURE_WIDTH_IN, series_style

    methods = list(result["methods"])
    agg = result["aggregates"]["throughput"]
    fig = plt.figure(figsize=(FIGURE_WIDTH_IN, 5.2 + 0.3 * len(methods)))
    top, bottom = fig.subfigures(2, 1, height_ratios=(0.3 * len(methods) + 1.2, 3.6))
    axes = top.subplots(1, 3, sharey=True)
    for ax, (name, title) in zip(axes, PLOTTED):
        if name not in agg[methods[0]]:
            name, title = LEGACY_PLOTTED.get(name, (name, title))
        for i, m in enumerate(methods):
            pt, lo, hi = agg[m][name]
            ax.plot([lo, hi], [i, i], lw=6, alpha=0.6, color=series_style(i)["color"])
            ax.plot([pt], [i], "k|", ms=14)
        ax.set_title(title)
        ax.axvline(0.5 if name.startswith("p_") else 1.0, color="grey", ls=":")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=3))
        ax.grid(True, axis="x")
        ax.grid(False, axis="y")
    axes[0].set_yticks(range(len(methods)), methods)
    for ax in axes[1:]:
        ax.tick_params(labelleft=False)
    profile = bottom.subplots()
    taus = np.linspace(0.6, 1.3, 141)
    for i, m in enumerate(methods):
        s = np.asarray(result["scores"]["throughput"][m]).ravel()
        profile.plot(taus, [(s > t).mean() for t in taus], label=m, **series_style(i))
    profile.set_xlabel("score τ (throughput / reference)")
    profile.set_ylabel("P(score > τ)")
    profile.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, handlelength=1.2)
    fig.suptitle(f"{result['suite']['name']}: scores relative to {result['suite']['reference']}")
    return fig


def plot(result: dict[str, Any], path: str | Path) -> None:
    """:func:`draw` written to ``path`` by :func:`evaluation.report.save_figure`, for a result
    document — a fresh run's, or one read back (``--plot FILE``)."""
    from ..report import figure_style, save_figure

    with figure_style() as plt:
        fig = draw(plt, result)
        save_figure(fig, path)
        plt.close(fig)


__all__ = ["LEGACY_PLOTTED", "PLOTTED", "draw", "plot"]
