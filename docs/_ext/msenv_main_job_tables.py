"""The tables of the training page's main-job section, rendered from the CSVs that
``experiments/main_job.py`` wrote (``docs/figures/main_job_*.csv``, one source) into
``docs/generated/main-job-*.inc`` when the build starts; ``docs/training.md`` includes them."""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

from msenv_docs import md_table

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"
OUT = ROOT / "docs" / "generated"


def _summary(rows: list[dict]) -> dict:
    """experiments.main_job.summary: the candidates' median, minimum, and whether they meet the criterion."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from experiments.main_job import summary

    return summary(rows)


def _read(name: str) -> list[dict]:
    with (FIGURES / name).open() as fh:
        return list(csv.DictReader(fh))


def candidates() -> str:
    """One row per candidate: its options, seeds, the median and range of its validation scores,
    whether it meets the criterion, its median training wall."""
    by: dict[str, list[dict]] = {}
    for r in _read("main_job_candidates.csv"):
        by.setdefault(r["candidate"], []).append(r)
    rows = []
    for name, runs in by.items():
        v = sorted(float(r["validation_ratio"]) for r in runs)
        s = _summary(runs)
        meets = ("yes" if s["meets"] else "no") if len(v) >= 5 else "— (screened)"
        rows.append([f"`{name}`", f"`{runs[0]['options']}`", str(len(v)), f"{s['median']:.4f} ({v[0]:.4f}–{v[-1]:.4f})",
                     meets, f"{statistics.median(float(r['train_wall_s']) for r in runs):.0f}"])
    return md_table(["candidate", "options", "seeds", "validation score: median (range)", "meets", "training s"],
                  rows)


def seeds() -> str:
    """The main job's defaults, one row per training seed."""
    rows = [[r["seed"], f"{float(r['ratio']):.4f} ± {float(r['ci95']):.4f}",
             f"{float(r['validation_ratio']):.4f} ± {float(r['validation_ci95']):.4f}",
             f"{float(r['train_wall_s']):.0f}", f"{float(r['command_wall_s']):.0f}"]
            for r in _read("main_job_seeds.csv")]
    return md_table(["seed", "held-out score", "validation score", "training s", "command s"], rows)


def write_all() -> list[Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    for name, render, how in (
            ("main-job-candidates", candidates,
             "written by `python -m experiments.main_job candidates --out results/main-job` and copied here"),
            ("main-job-seeds", seeds, "written by `python -m experiments main-job-seeds --out docs/figures`")):
        path = OUT / f"{name}.inc"
        path.write_text(render() + f"\nFrom `docs/figures/{name.replace('-', '_')}.csv`, {how}.\n")
        written.append(path)
    return written


def setup(app):
    app.connect("builder-inited", lambda app: write_all())
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
