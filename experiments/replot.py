"""Redraw an experiment's figures from the data it wrote, without playing an episode.

``python -m experiments replot --out DIR`` redraws every figure of DIR whose rows are there:
``fig7.csv`` … ``fig11.csv`` → ``fig7.png`` … ``fig11.png``; ``sensitivity.csv`` and
``sensitivity_extended.csv`` → their PNGs; ``dynamics.csv`` (with ``dynamics_gaps.csv``) →
``dynamics.png``; ``cells.csv`` → ``cells.png`` and ``cells_decision_time.png``. Each goes
through the plot function a fresh run calls, with the rows read back in the types the run passed
(:func:`evaluation.report.read_csv`), so a redraw is the figure the run would draw today — after a
change of the figures' style, say::

    python -m experiments replot --out docs/figures
    python -m experiments replot --out docs/figures/cells
"""

from __future__ import annotations

from pathlib import Path

from evaluation.report import read_csv


def replot(folder: str | Path) -> list[Path]:
    """Redraw every figure whose rows are in ``folder`` (module docstring); the PNGs written.
    ``FileNotFoundError`` when the folder holds none."""
    from . import cells, dynamics, sensitivity
    from .figures import FIGURES

    folder = Path(folder)
    written: list[Path] = []
    for name, (_, _, plot, title) in FIGURES.items():
        if (folder / f"{name}.csv").is_file():
            plot(read_csv(folder / f"{name}.csv"), folder / f"{name}.png", title)
            written.append(folder / f"{name}.png")
    for stem in ("sensitivity", "sensitivity_extended"):
        if (folder / f"{stem}.csv").is_file():
            sensitivity.plot(read_csv(folder / f"{stem}.csv"), folder / f"{stem}.png")
            written.append(folder / f"{stem}.png")
    if (folder / "dynamics.csv").is_file():
        gaps = folder / "dynamics_gaps.csv"
        dynamics.plot(read_csv(folder / "dynamics.csv"), read_csv(gaps) if gaps.is_file() else [],
                      folder / "dynamics.png")
        written.append(folder / "dynamics.png")
    if (folder / "cells.csv").is_file():
        cells.plot_cells(read_csv(folder / "cells.csv"), folder)
        written += [folder / "cells.png", folder / "cells_decision_time.png"]
    if not written:
        raise FileNotFoundError(f"{folder} holds no figure's rows (figN.csv, sensitivity*.csv, dynamics.csv, "
                                "cells.csv)")
    return written


__all__ = ["replot"]
