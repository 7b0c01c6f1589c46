"""The shares table of the traces page (experiments.traces.share_intervals, shares_table)."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.traces import share_intervals, shares_table


def test_the_share_is_zero_at_the_reference_one_at_the_clairvoyant_and_its_interval_holds_it():
    rng = np.random.default_rng(0)
    ref = rng.uniform(100, 110, 20)
    top = ref * 1.1
    assert share_intervals(ref, ref, top, rng)[:1] == (0.0,)
    assert share_intervals(top, ref, top, rng)[0] == pytest.approx(1.0)
    thr = ref + 0.4 * (top - ref) + rng.normal(0, 0.3, 20)
    point, low, high = share_intervals(thr, ref, top, rng)
    assert low <= point <= high and point == pytest.approx((thr.mean() - ref.mean()) / (top.mean() - ref.mean()))
    # a learned method: seeds × episodes, the seeds resampled too (a wider interval when they disagree)
    seeds = np.stack([thr, thr + 2.0, thr - 2.0])
    p2, lo2, hi2 = share_intervals(seeds, ref, top, rng)
    assert p2 == pytest.approx(point) and hi2 - lo2 > high - low


def test_the_table_has_one_line_per_preset_and_a_column_per_controller():
    rows = [{"preset": p, "controller": c, "share": s, "share_low": s - 0.05, "share_high": s + 0.05}
            for p in ("cnn-ngram", "gsm8k-eagle") for c, s in (("filter + LS", 0.4), ("agent", 0.39))]
    rows += [{"preset": p, "controller": "clairvoyant / best-fixed", "share": 1.117, "share_low": np.nan,
              "share_high": np.nan} for p in ("cnn-ngram", "gsm8k-eagle")]
    text = shares_table(rows).splitlines()
    assert text[0] == "| preset | filter + LS | agent | clairvoyant / best-fixed |"
    assert text[2] == "| cnn-ngram | 40 % [35, 45] | 39 % [34, 44] | 1.117 |" and len(text) == 4
