"""Aggregate scores of a benchmark with intervals that respect how it was played.

A benchmark's design (:mod:`evaluation.benchmark`): a method has ``n`` **runs** (training seeds;
one for a controller), the suite has **cells**, and every run plays the same ``E`` **test
episodes** of each cell. A method's scores are an array ``(runs, episodes, cells)``. Runs are
independent of each other; the episodes are one sample of each cell's draws, shared by every run
and every method. Resampling the ``runs × episodes`` entries of a cell as if each were an
independent run (rliable's stratified bootstrap on the flattened matrix) counts the episode noise
once per seed and gives intervals that shrink with the number of seeds however few episodes
there are.

The interval here is a **two-way bootstrap**: each replicate draws the runs of every method with
replacement (its own stream per method: training seeds of two methods are independent) and, per
cell, the test episodes with replacement (one draw per replicate, shared by every run and every
method, because they all played those episodes). A method of one run gets an interval over the
episodes only. Intervals are 95% percentile intervals over :data:`REPS` replicates from a
``numpy.random.SeedSequence`` — the same scores give the same intervals, whatever else is in the
file.

The aggregates are rliable's (Agarwal et al., NeurIPS 2021; their point estimates are computed
with rliable's own functions, the replicates with a vectorised copy tested against them):

- ``iqm``: interquartile mean of every entry; ``mean``;
- ``shortfall``: mean of max(0, 1 − score), the shortfall below the reference (rliable calls it
  the optimality gap at γ = 1; here 1 is the reference controller, not an optimum);
- ``p_improvement``: rliable's probability of improvement P(X > Y) of a method X over a method Y,
  where the tasks are the suite's test episodes (every (cell, episode) pair, played by both) and
  the runs are training seeds: per episode the share of (run of X, run of Y) pairs in which X
  scores higher (ties count half), averaged over the episodes.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

import numpy as np

#: bootstrap replicates per interval
REPS = 2000
#: the root of the bootstrap's SeedSequence
SEED = 0
#: the coverage of every interval
CONFIDENCE = 0.95
#: aggregate name → what it is (a result file's ``aggregates`` keys)
AGGREGATES = {"iqm": "interquartile mean", "mean": "mean",
              "shortfall": "mean shortfall below the reference, mean of max(0, 1 − score)"}
#: how the intervals are made, as a result file records it
METHOD = ("two-way bootstrap: runs (training seeds) resampled per method, test episodes resampled per cell and "
          "shared by every run and method; 95% percentile intervals")


def check_scores(scores: np.ndarray, name: str = "scores") -> np.ndarray:
    """``scores`` as a float array (runs, episodes, cells), finite; ``ValueError`` otherwise."""
    a = np.asarray(scores, dtype=float)
    if a.ndim != 3 or 0 in a.shape:
        raise ValueError(f"{name}: shape {a.shape} is invalid; allowed: (runs, episodes, cells), none of them 0")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: every score must be finite")
    return a


def point(scores: np.ndarray) -> dict[str, float]:
    """The aggregates of one method's scores (runs, episodes, cells), by rliable's functions."""
    from rliable import metrics

    flat = check_scores(scores).reshape(-1, scores.shape[-1])  # rliable's (runs, tasks); both aggregate every entry
    return {"iqm": float(metrics.aggregate_iqm(flat)), "mean": float(metrics.aggregate_mean(flat)),
            "shortfall": float(metrics.aggregate_optimality_gap(flat, 1.0))}


def improvement(x: np.ndarray, y: np.ndarray) -> float:
    """rliable's probability of improvement of X over Y (both (runs, episodes, cells) on the same
    episodes): the tasks are the (cell, episode) pairs."""
    from rliable import metrics

    x, y = check_scores(x, "x"), check_scores(y, "y")
    if x.shape[1:] != y.shape[1:]:
        raise ValueError(f"x has episodes × cells {x.shape[1:]}, y {y.shape[1:]}: they must play the same episodes")
    return float(metrics.probability_of_improvement(x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)))


def episode_draws(episodes: int, cells: int, reps: int = REPS, seed: int = SEED) -> np.ndarray:
    """Each replicate's resampled episode indices per cell, (reps, episodes, cells): one draw per
    replicate, shared by every method."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    return rng.integers(0, episodes, size=(reps, cells, episodes)).transpose(0, 2, 1)


def run_draws(label: str, runs: int, reps: int = REPS, seed: int = SEED) -> np.ndarray:
    """Each replicate's resampled runs of the method ``label``, (reps, runs): its own stream, so a
    method's interval does not depend on the other methods of the file. One run: all zeros."""
    if runs == 1:
        return np.zeros((reps, 1), dtype=np.int64)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, zlib.crc32(label.encode()))))
    return rng.integers(0, runs, size=(reps, runs))


def resample(scores: np.ndarray, runs: np.ndarray, episodes: np.ndarray) -> np.ndarray:
    """The replicates' score arrays, (reps, runs, episodes, cells): replicate b takes runs
    ``runs[b]`` and, in cell c, episodes ``episodes[b, :, c]``."""
    cells = np.arange(scores.shape[2])
    return scores[runs[:, :, None, None], episodes[:, None, :, :], cells[None, None, None, :]]


def aggregate_replicates(rep: np.ndarray) -> dict[str, np.ndarray]:
    """The aggregates of each replicate (reps, runs, episodes, cells) → name → (reps,): the same
    arithmetic as :func:`point`, vectorised over the replicates."""
    from scipy import stats

    flat = rep.reshape(rep.shape[0], -1)
    return {"iqm": stats.trim_mean(flat, 0.25, axis=1), "mean": flat.mean(axis=1),
            "shortfall": 1.0 - np.minimum(flat, 1.0).mean(axis=1)}


def improvement_replicates(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) of each replicate pair (reps, runs, episodes, cells): the arithmetic of
    :func:`improvement`, vectorised."""
    xs = x.reshape(x.shape[0], x.shape[1], 1, -1)
    ys = y.reshape(y.shape[0], 1, y.shape[1], -1)
    wins = (xs > ys).mean(axis=(1, 2)) + 0.5 * (xs == ys).mean(axis=(1, 2))  # (reps, tasks)
    # rliable counts a task on which X's and Y's runs are the same arrays as 0.5: the formula gives it
    return wins.mean(axis=1)


def interval(values: np.ndarray) -> tuple[float, float]:
    """The percentile interval of replicate values at :data:`CONFIDENCE`."""
    lo, hi = np.percentile(values, [50 * (1 - CONFIDENCE), 50 * (1 + CONFIDENCE)])
    return float(lo), float(hi)


def summarize(scores: Mapping[str, np.ndarray], rivals: Mapping[str, str], reps: int = REPS,
              seed: int = SEED) -> dict[str, dict[str, list[float]]]:
    """method → aggregate → [point, low, high]. ``scores``: method → (runs, episodes, cells), all
    on the same episodes. ``rivals``: key → method: each method also gets
    ``p_improvement_over_<key>`` = P(method > that method) with its interval (the rival against
    itself is 0.5)."""
    arrays = {m: check_scores(a, m) for m, a in scores.items()}
    shapes = {a.shape[1:] for a in arrays.values()}
    if len(shapes) != 1:
        raise ValueError(f"every method must play the same episodes × cells; got {sorted(shapes)}")
    episodes, cells = shapes.pop()
    draws = episode_draws(episodes, cells, reps, seed)
    reps_of = {m: resample(a, run_draws(m, a.shape[0], reps, seed), draws) for m, a in arrays.items()}
    out: dict[str, dict[str, list[float]]] = {}
    for m, a in arrays.items():
        pts, reps_m = point(a), aggregate_replicates(reps_of[m])
        out[m] = {k: [pts[k], *interval(reps_m[k])] for k in AGGREGATES}
        for key, rival in rivals.items():
            p = improvement(a, arrays[rival])
            out[m][f"p_improvement_over_{key}"] = [p, *interval(improvement_replicates(reps_of[m], reps_of[rival]))]
    return out


def best_rival(points: Mapping[str, float], controllers: Sequence[str]) -> str:
    """The controller of ``controllers`` with the highest IQM in ``points`` (ties: the first)."""
    return max(controllers, key=lambda c: points[c])


__all__ = ["AGGREGATES", "CONFIDENCE", "METHOD", "REPS", "SEED", "aggregate_replicates", "best_rival", "check_scores",
           "episode_draws", "improvement", "improvement_replicates", "interval", "point", "resample", "run_draws",
           "summarize"]
