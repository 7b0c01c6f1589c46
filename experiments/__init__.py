"""Reproductions of the paper's experiments (Figs 7–11) and the greedy optimality-gap study.

``python -m experiments fig9 --drops 50 --seed 0 --out results/``
"""

from .figures import FIGURES, run_figure, total_power_split

__all__ = ["FIGURES", "run_figure", "total_power_split"]
