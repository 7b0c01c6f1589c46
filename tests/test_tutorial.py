"""docs/tutorial.md, followed as a new user would: its commands, copied in order into a fresh
folder, each succeeding, down to a checked result file and its leaderboard page. The training is
smoke-sized (``--quick``); everything else is the page's command as written."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("rliable")

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tutorial.md"


def tutorial_commands() -> list[str]:
    """The page's shell commands, in order (the bash blocks' lines, ``&&`` chains split)."""
    out = []
    for block in re.findall(r"^```bash\n(.*?)^```", PAGE.read_text(), flags=re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            out += [part.strip() for part in line.split("&&") if part.strip()]
    return out


def test_the_tutorial_runs_from_training_to_a_leaderboard_page(tmp_path):
    commands = tutorial_commands()
    # the install steps: this test runs inside the installed test environment
    setup = [c for c in commands if c.startswith(("python3 -m venv", ". .venv", "pip install"))]
    steps = [c for c in commands if c not in setup]
    assert len(setup) == 4 and [s.split()[1:3] for s in steps] == [
        ["train.py", "--log-dir"], ["-m", "evaluation.evaluate"], ["-m", "evaluation.benchmark"],
        ["-m", "evaluation.benchmark"], ["-m", "evaluation.leaderboard"]]
    for cmd in steps:
        words = shlex.split(cmd)
        assert words[0] == "python"
        if words[1] == "train.py":  # smoke-sized training, from the checkout
            words = [str(ROOT / "train.py"), *words[2:], "--quick", "--no-progress"]
        else:
            words = words[1:]
            if words[1] in ("evaluation.evaluate", "evaluation.benchmark") and "--check" not in words:
                words.append("--no-progress")
        done = subprocess.run([sys.executable, *words], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{cmd}\n{done.stderr[-3000:]}"
    result = tmp_path / "runs" / "tutorial" / "results" / "paper-v1.json"
    doc = json.loads(result.read_text())
    assert "mine" in doc["methods"] and doc["methods"]["mine"]["kind"] == "agent"
    page = (tmp_path / "runs" / "tutorial" / "leaderboard.md").read_text()
    assert re.search(r"^\| mine \| agent \|", page, flags=re.M)
    assert (tmp_path / "runs" / "tutorial" / "evaluation").exists()
