"""The sensitivity study (issue: reconstruction honesty)."""

import csv

import numpy as np
import pytest

from experiments.figures import run_figure
from experiments.sensitivity import claims, readings, run_sensitivity


def _read(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_default_reading_reproduces_the_figures_numbers(tmp_path):
    kw = dict(drops=3, seed=5, rounds=3, workers=1, quick=True, progress=False)
    run_sensitivity(tmp_path / "s", only=["default"], **kw)
    drops = _read(tmp_path / "s" / "sensitivity_drops.csv")
    for fig, panel_filter in (("fig7", None), ("fig9", "ratio=4"), ("fig11", None)):
        rows = run_figure(fig, tmp_path / fig, **kw)
        for row in rows:
            if panel_filter and row["panel"] != panel_filter:
                continue
            if fig == "fig11" and row["x"] != 4.0 or row["scheme"] == "local-search":
                continue
            mine = [float(d["throughput"]) for d in drops if d["figure"] == fig
                    and d["panel"] == f"default|{row['panel']}" and float(d["x"]) == row["x"]
                    and d["scheme"] == row["scheme"]]
            assert len(mine) == 3, (fig, row["panel"], row["x"], row["scheme"])
            assert np.mean(mine) == pytest.approx(row["throughput"], rel=1e-12)


def _rec(fig, panel, x, scheme, drop, **m):
    base = dict(throughput=100.0, mean_gamma=4.0, share_ul=0.3, share_no_draft=0.0)
    return {"figure": fig, "panel": f"r|{panel}", "x": x, "scheme": scheme, "drop": drop, **base, **m}


def test_claims_against_hand_built_drops():
    raw = []
    for d in range(4):
        e = 0.1 * d  # per-drop noise, common to the paired quantities
        raw += [_rec("fig7", "qwen2.5", 10.0, "greedy-saa", d, throughput=100 + e, mean_gamma=2.5, share_ul=0.5),
                _rec("fig7", "qwen2.5", 25.0, "greedy-saa", d, throughput=150 + e, mean_gamma=5.0, share_ul=0.3),
                _rec("fig7", "qwen2.5", 40.0, "greedy-saa", d, throughput=160 + e, mean_gamma=6.0, share_ul=0.1)]
        for k, dl in ((5.0, 0.95), (40.0, 0.70)):
            raw += [_rec("fig9", "ratio=4", k, "optimal", d, throughput=200 + e),
                    _rec("fig9", "ratio=4", k, "all_dl", d, throughput=(200 + e) * dl),
                    _rec("fig9", "ratio=4", k, "all_ul", d, throughput=(200 + e) * 0.9)]
        raw += [_rec("fig11", "qwen2.5", 4.0, "greedy-saa", d, throughput=110 + e),
                _rec("fig11", "qwen2.5", 4.0, "optimal-uniform", d, throughput=100 + e),
                _rec("fig11", "qwen2.5", 4.0, "computation-only", d, throughput=110 + e)]
    got = {c["claim"]: c for c in claims(raw)}
    assert got["C1"]["holds"] and got["C1"]["value"] == pytest.approx(60.0)
    assert got["C2"]["holds"] and got["C2"]["value"] == pytest.approx(50.0 - 10.0)
    assert got["C3"]["holds"] and got["C3"]["value"] == pytest.approx(3.5)
    assert got["C4"]["holds"] and got["C4"]["value"] == pytest.approx(2.5)
    assert got["C5"]["holds"] and got["C5"]["value"] == pytest.approx(0.4)
    assert got["C6"]["holds"] and got["C6"]["value"] == pytest.approx(0.95)
    assert got["C7"]["holds"] and got["C7"]["value"] == pytest.approx(0.25)
    assert got["C8"]["holds"]
    assert got["C8"]["value"] == pytest.approx(np.mean([(110 + 0.1 * d) / (100 + 0.1 * d) for d in range(4)]))
    assert not got["C9"]["holds"] and got["C9"]["value"] == pytest.approx(1.0)


def test_readings_are_valid_configs_and_unknown_ones_rejected(tmp_path):
    from baselines import make_controller
    from msenv import preset

    for over in readings().values():
        over = dict(over)
        settings = over.pop("settings", {})
        preset("qwen2.5", **over)  # every reading is a valid config …
        for controller in ("greedy-saa", "optimal-uniform", "computation-only"):
            make_controller(controller, **settings)  # … and valid settings of the controllers it plays
    with pytest.raises(ValueError, match="reading 'nope' is not known"):
        run_sensitivity(tmp_path, only=["nope"], progress=False)
