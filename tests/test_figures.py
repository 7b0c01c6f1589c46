"""One source for every figure (docs/figures.toml, or a committed result file it names): README and
every page of the site print each figure with the value of its source, and a doctored copy fails."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import msenv_figures as figures  # noqa: E402

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PAGES = [p for p in PAGES if "generated" not in p.parts and "_build" not in p.parts]


@pytest.fixture(scope="module")
def source():
    entries = figures.load_source()
    return entries, figures.values(entries)


def test_every_page_prints_each_figure_as_its_source_says(source):
    entries, vals = source
    bad = {str(p.relative_to(ROOT)): figures.mismatches(p.read_text(), entries, vals) for p in PAGES}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_every_figure_role_names_a_readable_source(source):
    entries, _ = source
    bad = {str(p.relative_to(ROOT)): figures.unknown_roles(p.read_text(), entries) for p in PAGES}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_readme_prints_the_figures_it_shares_with_the_site(source):
    entries, vals = source
    readme = figures.checked_text((ROOT / "README.md").read_text())
    found = {name for name, e in entries.items() for pat in e["pattern"] if re.search(pat, readme)}
    # the figures README states: the main job's wall and result, the generalist's test-suite scores
    # (its rival's beside it) and the sweep's headline
    assert {"main-job-wall", "main-job-ratio", "cells-weak-hetero-200", "cells-in-budget-ppo", "cells-out-budget-ppo",
            "cells-in-local-search", "cells-in-p-over-local-search"} <= found


def test_a_doctored_figure_is_caught(source):
    entries, vals = source
    readme = (ROOT / "README.md").read_text()
    wall = vals["main-job-wall"]
    assert f"{wall} wall" in readme
    assert figures.mismatches(readme, entries, vals) == []
    doctored = readme.replace(f"{wall} wall", "99 s wall" if wall != "99 s" else "98 s wall", 1)
    assert [m[0] for m in figures.mismatches(doctored, entries, vals)] == ["main-job-wall"]
    # a History section may keep a superseded figure, labelled with its release
    history = readme + "\n## History: measured for 0.1.0\n\n`python train.py` took 4 min 31 s wall.\n"
    assert figures.mismatches(history, entries, vals) == []


def test_a_figure_read_from_a_result_file_is_that_file_s_value(source):
    entries, vals = source
    e = entries["cells-in-budget-ppo"]
    doc = json.loads((ROOT / e["from"]).read_text())
    point, lo, hi = doc["aggregates"]["throughput"]["budget-ppo"]["iqm"]
    assert vals["cells-in-budget-ppo"] == f"{point:.3f} [{lo:.3f}, {hi:.3f}]"
    # and that value is the IQM of the file's own scores (the bootstrap's interval is checked by --check)
    scores = doc["scores"]["throughput"]["budget-ppo"]
    flat = [x for run in scores for ep in run for x in ep]
    assert point == pytest.approx(stats.trim_mean(flat, 0.25))


def test_no_page_labels_a_current_figure_with_an_old_release():
    stale = re.compile(r"measured for 0\.[12]\.0|\(0\.[12]\.0\)", re.I)
    bad = []
    for p in PAGES:
        text = figures.checked_text(p.read_text())
        if p.name == "changelog.md":  # a changelog is history by nature
            continue
        bad += [f"{p.relative_to(ROOT)}: {m.group(0)}" for m in stale.finditer(text)]
    assert not bad, bad
