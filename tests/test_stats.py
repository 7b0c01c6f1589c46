"""The benchmark's statistics against independent computations: rliable's own functions on the
same resampled arrays, and the exact bootstrap distribution enumerated by brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("rliable")
from rliable import metrics

from evaluation import stats


def _scores(rng, runs, episodes, cells):
    return rng.lognormal(0.0, 0.1, size=(runs, episodes, cells))


def test_vectorised_replicates_equal_rliables_functions_on_each_resampled_array():
    rng = np.random.default_rng(1)
    x, y = _scores(rng, 4, 5, 3), _scores(rng, 1, 5, 3)
    eps = stats.episode_draws(5, 3, reps=50)
    rx, ry = stats.resample(x, stats.run_draws("x", 4, 50), eps), stats.resample(y, stats.run_draws("y", 1, 50), eps)
    agg, imp = stats.aggregate_replicates(rx), stats.improvement_replicates(rx, ry)
    for b in range(50):
        flat = rx[b].reshape(-1, 3)
        assert agg["iqm"][b] == pytest.approx(metrics.aggregate_iqm(flat), abs=1e-12)
        assert agg["mean"][b] == pytest.approx(metrics.aggregate_mean(flat), abs=1e-12)
        assert agg["shortfall"][b] == pytest.approx(metrics.aggregate_optimality_gap(flat, 1.0), abs=1e-12)
        assert imp[b] == pytest.approx(metrics.probability_of_improvement(rx[b].reshape(4, -1), ry[b].reshape(1, -1)))
    # a replicate takes whole runs, and per cell the same episodes for every run
    b = 7
    runs = stats.run_draws("x", 4, 50)[b]
    for c in range(3):
        assert np.array_equal(rx[b, :, :, c], x[runs][:, eps[b, :, c], c])


def _exact(x: np.ndarray, statistic) -> np.ndarray:
    """Every equally likely replicate of the two-way bootstrap of a (runs, episodes, cells) array:
    all run tuples × all episode tuples of every cell."""
    runs, episodes, cells = x.shape
    values = []
    for r in itertools.product(range(runs), repeat=runs):
        for per_cell in itertools.product(itertools.product(range(episodes), repeat=episodes), repeat=cells):
            rep = np.stack([x[list(r)][:, list(e), c] for c, e in enumerate(per_cell)], axis=-1)
            values.append(statistic(rep.reshape(-1, cells)))
    return np.array(values)


@pytest.mark.parametrize("shape", [(3, 3, 1), (2, 2, 2)])
def test_the_bootstrap_distribution_matches_the_brute_force_enumeration(shape):
    rng = np.random.default_rng(2)
    x = _scores(rng, *shape)
    exact = _exact(x, metrics.aggregate_iqm)
    reps = 40_000
    mc = stats.aggregate_replicates(stats.resample(x, stats.run_draws("m", shape[0], reps), stats.episode_draws(
        shape[1], shape[2], reps)))["iqm"]
    grid = np.quantile(exact, np.linspace(0.02, 0.98, 25))
    ks = max(abs((mc <= t).mean() - (exact <= t).mean()) for t in grid)
    assert ks < 0.015, ks  # Kolmogorov–Smirnov distance; 1.36/sqrt(40000) = 0.007 at the 5% level
    assert mc.mean() == pytest.approx(exact.mean(), abs=3 * exact.std() / np.sqrt(reps) + 1e-12)
    lo, hi = stats.interval(mc)
    # the interval's ends are the exact distribution's 2.5% and 97.5% quantiles (up to its atoms)
    assert (exact < lo).mean() <= 0.025 + 0.015 and (exact <= lo).mean() >= 0.025 - 0.015
    assert (exact > hi).mean() <= 0.025 + 0.015 and (exact >= hi).mean() >= 0.025 - 0.015


def test_copies_of_one_seed_do_not_narrow_its_interval():
    """Pseudo-replication: five seeds that are one seed's scores five times carry no more
    information than that seed; resampling the flattened runs × episodes would narrow the interval."""
    rng = np.random.default_rng(3)
    one = _scores(rng, 1, 6, 3)
    five = np.repeat(one, 5, axis=0)
    a = stats.summarize({"one": one, "five": five, "ref": np.ones_like(one)}, {"reference": "ref"})
    # (the IQM trims a share of the entries, which copies change: the mean is the exact check)
    assert a["one"]["mean"] == pytest.approx(a["five"]["mean"], abs=1e-12)
    # the stratified bootstrap of the flattened (30 × 3) matrix, for contrast, is narrower
    flat_rng = np.random.default_rng(0)
    flat = five.reshape(-1, 3)
    boot = [flat[flat_rng.integers(0, 30, 30)[:, None], np.arange(3)].mean() for _ in range(2000)]
    narrow = np.percentile(boot, 97.5) - np.percentile(boot, 2.5)
    assert narrow < 0.7 * (a["five"]["mean"][2] - a["five"]["mean"][1])


def test_intervals_are_seeded_and_do_not_depend_on_the_other_methods():
    rng = np.random.default_rng(4)
    x, y, z = (_scores(rng, n, 4, 2) for n in (3, 1, 5))
    a = stats.summarize({"x": x, "y": y}, {"reference": "y"})
    b = stats.summarize({"z": z, "x": x, "y": y}, {"reference": "y"})
    assert a["x"] == b["x"] and a == stats.summarize({"x": x, "y": y}, {"reference": "y"})
    assert a["y"]["p_improvement_over_reference"] == [0.5, 0.5, 0.5]


def test_bad_scores_are_refused_naming_the_method():
    with pytest.raises(ValueError, match="m: every score must be finite"):
        stats.summarize({"m": np.full((1, 2, 1), np.nan)}, {})
    with pytest.raises(ValueError, match="same episodes"):
        stats.summarize({"a": np.ones((1, 2, 1)), "b": np.ones((1, 3, 1))}, {})
