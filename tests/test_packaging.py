"""Packaging a user can trust: one version string; ``python -m build`` makes a wheel and an sdist;
the wheel, installed into a fresh virtual environment, makes every id, steps it and runs a
baseline — so a missing module or package-data file shows up here, not on a user's machine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

import msenv

ROOT = Path(__file__).resolve().parents[1]

SMOKE = """
import json, sys
from importlib.metadata import version
import gymnasium as gym
import numpy as np
import msenv
from baselines import make_controller
from evaluation.harness import evaluate, parse_entry

assert sys.prefix in msenv.__file__, msenv.__file__  # the wheel's copy, not the checkout
assert version("msenv") == msenv.__version__
out = {}
for env_id in msenv.ENV_IDS:
    env = gym.make(env_id, episode_length=3)
    obs, _ = env.reset(seed=0)
    greedy = make_controller("greedy-saa", n_samples=50)
    greedy.reset(seed=0)
    action = greedy.act(env.unwrapped.context)  # a cell generator's cell fills the first of its slots
    action = np.pad(action, (0, env.action_space.shape[0] - len(action)))
    obs, reward, term, trunc, info = env.step(action)
    assert np.isfinite(reward) and reward > 0 and env.observation_space.contains(obs)
    out[env_id] = reward
rows = evaluate([parse_entry("fixed-4")], msenv.resolve_config("qwen2.5", episode_length=3), episodes=1)
import agents, experiments
from importlib.resources import files
assert files("agents").joinpath("hyperparams/ppo.yml").is_file()
print(json.dumps({"version": msenv.__version__, "rewards": out, "throughput": rows[0].throughput}))
"""


def test_one_version_string():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and 'version = { attr = "msenv.__version__" }' in text
    assert not re.search(r'^version\s*=\s*"', text, flags=re.M)
    assert version("msenv") == msenv.__version__
    assert f"## {msenv.__version__} " in (ROOT / "docs" / "changelog.md").read_text()


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    pytest.importorskip("build")
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(out),
                        str(ROOT)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out


@pytest.mark.slow
def test_build_makes_a_wheel_and_an_sdist_with_every_module(dist):
    wheel = next(dist.glob(f"msenv-{msenv.__version__}-py3-none-any.whl"))
    sdist = next(dist.glob(f"msenv-{msenv.__version__}.tar.gz"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("msenv", "baselines", "evaluation", "agents", "experiments"):
        for src in (ROOT / package).rglob("*.py"):
            name = src.relative_to(ROOT).as_posix()
            assert name in names, f"{name} missing from the wheel"
    assert "agents/hyperparams/ppo.yml" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "agents.controller:AgentFactory" in zipfile.ZipFile(wheel).read(entry_points).decode()
    members = tarfile.open(sdist).getnames()
    assert any(m.endswith("/README.md") for m in members) and any(m.endswith("/msenv/model/slots.py") for m in members)


@pytest.mark.slow
def test_the_wheel_works_in_a_fresh_virtual_environment(dist, tmp_path):
    """A fresh venv (seeing this interpreter's numpy, scipy, gymnasium and numba, so nothing is
    downloaded) with only the wheel installed: every id steps, a baseline acts, the harness runs.
    Its kernels compile anew there — a real first use.

    This interpreter's site directories are handed over through a ``.pth`` file rather than
    ``system_site_packages``: run from inside a virtualenv, the latter would see the *base*
    interpreter (without gymnasium), not this one."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    # without the caller's PYTHONPATH: a checkout on it would pass for the installed msenv, to pip
    # (which would skip the wheel) and to the import
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    py = env_dir / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    sites = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (Path(purelib) / "_parent_interpreter.pth").write_text("\n".join(sites) + "\n")
    wheel = next(dist.glob("*.whl"))
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)],
                       capture_output=True, text=True, timeout=600, env=clean)
    assert r.returncode == 0, r.stderr[-2000:]
    r = subprocess.run([str(py), "-c", SMOKE], capture_output=True, text=True, timeout=900, cwd=tmp_path, env=clean)
    assert r.returncode == 0, r.stderr[-3000:]
    import json

    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["version"] == msenv.__version__ and set(out["rewards"]) == set(msenv.ENV_IDS)
    assert out["throughput"] > 0


MAIN_JOB_WITHOUT = """
import importlib.machinery, json, runpy, sys
blocked = set(json.loads(sys.argv[1]))


class Absent(importlib.machinery.PathFinder):
    \"\"\"The path finder, blind to the packages outside the core and [train]: they look not installed.\"\"\"

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            return None
        return super().find_spec(name, path, target)


sys.meta_path[:] = [Absent if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
sys.argv = ["train.py", "--quick", "--no-progress", "--log-dir", sys.argv[2]]
runpy.run_path("train.py", run_name="__main__")
"""


def _requirement_closure(roots: list[str]) -> set[str]:
    """The distributions ``roots`` pull in (their requirements, transitively, as installed here)."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = requires(req.name) or []
        except PackageNotFoundError:
            continue
        for r in map(Requirement, reqs):
            wanted = [x for x in req.extras] or [""]
            if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in wanted):
                todo.append(r)
    return seen


@pytest.mark.slow
def test_the_train_extra_covers_everything_the_main_job_imports(tmp_path):
    """README's main-job command installs only the core and ``.[train]``: the main job (its
    smoke-sized run) succeeds with every other installed package made unimportable."""
    from importlib.metadata import packages_distributions

    from packaging.utils import canonicalize_name

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    assert 'pip install -e ".[train]" && python train.py' in (ROOT / "README.md").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    allowed = _requirement_closure(project["dependencies"] + project["optional-dependencies"]["train"])
    allowed |= {"msenv", "pip", "setuptools", "wheel"}
    local = {p.name for p in ROOT.iterdir()} | {p.stem for p in ROOT.glob("*.py")}
    blocked = sorted(m for m, ds in packages_distributions().items()
                     if m not in local and not m.startswith("_") and not {canonicalize_name(d) for d in ds} & allowed)
    assert "ray" in blocked or "tianshou" in blocked or "skrl" in blocked or not blocked  # the check bites
    r = subprocess.run([sys.executable, "-c", MAIN_JOB_WITHOUT, json.dumps(blocked), str(tmp_path / "run")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "run" / "agent").is_dir()
