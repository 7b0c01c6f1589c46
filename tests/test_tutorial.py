"""docs/tutorial.md, followed as a new user would: its commands, in order, in a fresh copy of the
repository (the files git tracks, as a clone has them), each succeeding — training, the agent put
where it is committed, evaluation, a benchmark result, its check, its leaderboard page and the
site's leaderboard with the new file — and then the point of it all: in ANOTHER clean copy that
holds only what the tutorial says to commit, the leaderboard accepts the tutorial's result file
(and refuses it without the agent's folder). The training is smoke-sized (``--quick``);
everything else is the page's command as written."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: the whole module is a long end-to-end run (python -m pytest -m 'not slow' skips it)
pytestmark = pytest.mark.slow

pytest.importorskip("stable_baselines3")
pytest.importorskip("rliable")

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tutorial.md"


def tutorial_commands() -> list[str]:
    """The page's shell commands, in order (the bash blocks' lines, ``&&`` chains split)."""
    out = []
    for block in re.findall(r"^```bash\n(.*?)^```", PAGE.read_text(), flags=re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            out += [part.strip() for part in line.split("&&") if part.strip() and not part.strip().startswith("#")]
    return out


def fresh_copy(dest: Path) -> Path:
    """The repository's tracked files in ``dest`` (what a clone holds), and the compiled kernels'
    cache (``__pycache__`` beside msenv's sources), so that the copy does not compile them again."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in filter(None, files.stdout.split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    for cache in (ROOT / "msenv").rglob("__pycache__"):
        shutil.copytree(cache, dest / cache.relative_to(ROOT), dirs_exist_ok=True)
    return dest


def run(words: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(words, cwd=cwd, capture_output=True, text=True, timeout=900)


def test_the_tutorial_ends_in_a_row_a_fresh_clone_accepts(tmp_path):
    commands = tutorial_commands()
    setup = [c for c in commands if c.startswith(("python3 -m venv", ". .venv", "pip install"))]
    steps = [c for c in commands if c not in setup]
    assert len(setup) == 4
    assert [s.split()[:3] for s in steps if s.startswith("python ")] == [
        ["python", "train.py", "--log-dir"], ["python", "-m", "evaluation.evaluate"],
        ["python", "-m", "evaluation.benchmark"], ["python", "-m", "evaluation.benchmark"],
        ["python", "-m", "evaluation.leaderboard"], ["python", "-m", "evaluation.leaderboard"],
        ["python", "-m", "evaluation.benchmark"]]
    work = fresh_copy(tmp_path / "mine")
    committed: list[str] = []
    for cmd in steps:
        words = shlex.split(cmd)
        if words[0] == "git":  # what the reader commits: replayed below in another clean copy
            if words[1] == "add":
                committed += words[2:]
            continue
        if words[0] in ("mkdir", "cp"):
            done = run(words, work)
        else:
            assert words[0] == "python", cmd
            if words[1] == "train.py":  # smoke-sized training
                words = [*words, "--quick", "--no-progress"]
            elif words[2] in ("evaluation.evaluate", "evaluation.benchmark") and "--check" not in words:
                words.append("--no-progress")
            done = run([sys.executable, *words[1:]], work)
        assert done.returncode == 0, f"{cmd}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    # the agent lives where it is committed, not under runs/ (which git ignores)
    result = json.loads((work / "runs" / "tutorial" / "results" / "paper-v1.json").read_text())
    method = result["methods"]["tutorial"]
    assert method["kind"] == "agent" and [a["path"] for a in method["agents"]] == ["agents/submissions/tutorial"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", result["date"])  # a result file is dated
    assert re.search(r"^\| tutorial \| agent \|", (work / "runs" / "tutorial" / "leaderboard.md").read_text(), re.M)
    assert (work / "runs" / "tutorial" / "evaluation.csv").exists()
    ignored = subprocess.run(["git", "check-ignore", "-q", "agents/submissions/tutorial/policy.npz"], cwd=ROOT)
    assert ignored.returncode == 1, "the tutorial's agent folder must not be ignored by git"
    # another clone, with only what the tutorial says to commit: the site's leaderboard takes the row
    assert sorted(committed) == ["agents/submissions/tutorial", "docs/leaderboard/paper-v1-tutorial.json",
                                 "docs/leaderboard/paper-v1-tutorial.png"]
    clone = fresh_copy(tmp_path / "clone")
    for name in committed:
        src = work / name
        if src.is_dir():
            shutil.copytree(src, clone / name)
        else:
            shutil.copy2(src, clone / name)
    board = [sys.executable, "-m", "evaluation.leaderboard", "docs/leaderboard", "--out", str(tmp_path / "board.md")]
    done = run(board, clone)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "board.md").read_text()
    assert re.search(r"^\| tutorial \| 1 ", page, re.M) and "paper-v1-tutorial.json" in page
    # ... and refuses it where the agent's folder is missing (the file alone names it)
    shutil.rmtree(clone / "agents" / "submissions" / "tutorial")
    done = run(board, clone)
    assert done.returncode != 0 and "agents/submissions/tutorial: the directory is missing" in done.stderr
