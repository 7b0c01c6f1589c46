"""The project passes its linter: ``ruff check`` with the rules of pyproject.toml's
``[tool.ruff.lint]`` (pyflakes, pycodestyle with lines of at most 120 columns, import order,
bugbear, pyupgrade for Python 3.10, numpy's random-state rule, …) over every Python file."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed (pip install ruff)")
def test_the_project_passes_ruff_check():
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ruff check found violations (fix them, or `ruff check --fix .`):\n{r.stdout}{r.stderr}"


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed (pip install ruff)")
def test_the_linter_catches_a_violation(tmp_path):
    """The configuration is the project's and it bites: an unused import and a long line are found."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\nX = '" + "x" * 130 + "'\n")
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                        "--config", str(ROOT / "pyproject.toml"), str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "F401" in r.stdout and "E501" in r.stdout, r.stdout + r.stderr
