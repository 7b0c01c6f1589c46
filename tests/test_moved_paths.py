"""The evaluation's 0.6 paths (``baselines.MOVED``) keep working until msenv 0.7: each is the
module at its new path, imported with a DeprecationWarning that names the new path and the
release that drops the old one, said once, of the importing line; the old command lines run."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import baselines
from evaluation import entries, report

ROOT = Path(__file__).resolve().parents[1]
#: the evaluation modules as they were in baselines/ (msenv ≤ 0.6) and where they are now
OLD_PATHS = {f"baselines.{m}": f"evaluation.{m}" for m in (
    "benchmark", "evaluate", "harness", "leaderboard", "parallel", "provenance", "report", "stats", "suites")}


@pytest.fixture
def fresh(monkeypatch):
    """This process forgets every old path it imported (restored after the test), so importing one
    warns again."""
    for old in OLD_PATHS:
        monkeypatch.delitem(sys.modules, old, raising=False)
        if old.rpartition(".")[2] in vars(baselines):  # (hasattr would import it)
            monkeypatch.delattr(baselines, old.rpartition(".")[2])


def test_every_moved_module_has_its_shim():
    assert baselines.MOVED == OLD_PATHS and baselines.REMOVED_IN == "0.7"


@pytest.mark.parametrize("old, new", sorted(OLD_PATHS.items()))
def test_an_old_path_is_the_module_at_its_new_path_with_a_warning(fresh, old, new):
    with pytest.warns(DeprecationWarning, match=rf"^{re.escape(old)} is {re.escape(new)} .*removed in msenv 0\.7\)$"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == module.__spec__.name == new


def test_the_warning_is_said_once_of_the_importing_line(fresh):
    with pytest.warns(DeprecationWarning) as record:
        from baselines.report import save_figure
    assert save_figure is report.save_figure
    assert [(str(w.message).split(" is ")[0], w.filename) for w in record] == [("baselines.report", __file__)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from baselines.report import ci95  # the second import of the path: no warning
    assert ci95 is report.ci95
    with pytest.warns(DeprecationWarning) as record:
        from baselines import suites
    assert [(str(w.message).split(" is ")[0], w.filename) for w in record] == [("baselines.suites", __file__)]
    assert suites is importlib.import_module("evaluation.suites")


def test_the_evaluate_command_lines_library_names_are_found_with_a_warning(fresh):
    with pytest.warns(DeprecationWarning) as record:
        from baselines.evaluate import agent_loader
    assert agent_loader is entries.agent_loader
    said = [str(w.message) for w in record]
    assert len(said) == 2 and said[0].startswith("baselines.evaluate is evaluation.evaluate since msenv 0.6")
    assert said[1].startswith("evaluation.evaluate.agent_loader is evaluation.entries.agent_loader: import it from "
                              "there")
    with pytest.raises(ImportError):
        from baselines.evaluate import no_such_name  # noqa: F401


@pytest.mark.slow
def test_the_old_command_lines_still_run(tmp_path):
    """``python -m`` with a module (evaluate) and with a package (benchmark, run through its
    ``__main__``): each runs the new code and says the new command on stderr."""
    out = tmp_path / "e.csv"
    r = subprocess.run([sys.executable, "-m", "baselines.evaluate", "--controllers", "fixed-4", "--episodes", "1",
                        "--rounds", "2", "--no-progress", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and out.exists(), r.stderr
    assert ("DeprecationWarning: python -m baselines.evaluate is python -m evaluation.evaluate since msenv 0.6 (the "
            "old "
            "command is removed in msenv 0.7)") in r.stderr
    r = subprocess.run([sys.executable, "-m", "baselines.benchmark", "--help"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("usage: python -m evaluation.benchmark"), r.stderr
    assert "python -m baselines.benchmark is python -m evaluation.benchmark" in r.stderr
