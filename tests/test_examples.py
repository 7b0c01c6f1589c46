"""Every script of examples/ runs as pasted, and a controller registered through the
``msenv.controllers`` entry point reaches ``make_controller`` and ``--controllers``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


#: the library a script needs beyond msenv[train]; without it the script's test skips
NEEDS = {"tianshou_ppo.py": "tianshou", "skrl_ppo.py": "skrl", "torchrl_rollout.py": "torchrl",
         "pettingzoo_parallel.py": "pettingzoo", "rllib_ppo.py": "ray.rllib", "rllib_pettingzoo.py": "ray.rllib",
         "ray_evaluate.py": "ray", "tune_sweep.py": "ray.tune", "rl_zoo3_train.py": "rl_zoo3"}


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_runs_as_a_script(script, tmp_path):
    """As pasted, with a short training run (``--steps 256``) where the script trains."""
    if script.name in NEEDS:
        pytest.importorskip(NEEDS[script.name])
    text = script.read_text()
    assert 'if __name__ == "__main__":' in text, script.name
    args = ["--steps", "256"] if '"--steps"' in text else []
    r = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=600,
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"})
    assert r.returncode == 0, r.stderr[-3000:]
    if script.name == "tune_sweep.py":  # its two trials, one row each, under its default --out
        assert (tmp_path / "runs" / "tune" / "sweep.csv").read_text().count("\n") == 3


def test_every_example_is_shown_on_a_page():
    """The pages show the scripts the tests run (MyST literalinclude), not copies of them."""
    pages = "".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    for script in EXAMPLES:
        assert f"```{{literalinclude}} ../examples/{script.name}" in pages, script.name


@pytest.mark.slow
def test_an_entry_point_controller_reaches_the_command_line(tmp_path):
    """The guide's controller, installed as a (minimal) distribution declaring the entry point."""
    dist = tmp_path / "own_controller-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: own-controller\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[msenv.controllers]\nhalf-alpha = own_controller:HalfAlpha\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "examples"), str(ROOT)])}
    r = subprocess.run([sys.executable, "-m", "evaluation.evaluate", "--help"], capture_output=True, text=True,
                       timeout=300, env=env, cwd=tmp_path)
    assert r.returncode == 0 and "half-alpha" in r.stdout, r.stderr[-2000:]
    r = subprocess.run([sys.executable, "-m", "evaluation.evaluate", "--controllers", "half-alpha", "greedy-saa",
                        "--set", "num_devices=4", "--episodes", "1", "--rounds", "5"],
                       capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert r.returncode == 0 and "half-alpha" in r.stdout, r.stderr[-2000:]
