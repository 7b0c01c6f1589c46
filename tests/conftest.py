import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> tuple[Path, dict]:
    """The docs site built once per test run (``sphinx -W --keep-going``) → (html folder, the build's
    {"returncode", "stderr"}). Shared by tests/test_docs.py and tests/test_browser.py, and by the
    xdist workers of one run: the first to get the lock builds, the others reuse its build."""
    pytest.importorskip("sphinx")
    from filelock import FileLock

    root = Path(__file__).resolve().parents[1]
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, common to its workers
    html, done = shared / "site" / "html", shared / "site" / "build.json"
    with FileLock(str(shared / "site.lock")):
        if not done.exists():
            r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                                str(root / "docs"), str(html)], capture_output=True, text=True, timeout=900, cwd=root)
            done.write_text(json.dumps({"returncode": r.returncode, "stderr": r.stderr}))
    return html, json.loads(done.read_text())


@pytest.fixture
def example():
    """Imports a script of ``examples/`` by its name: ``example("rllib_ppo").main(...)`` runs the
    code the docs show, and the test asserts on what it returns."""
    root = Path(__file__).resolve().parents[1]

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"example_{name}", root / "examples" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def display(monkeypatch):
    """A stand-in for a desktop session (as SDL's dummy driver is for pygame): matplotlib reports an
    interactive backend, and showing a window or pausing does nothing, so that ``render_mode="human"``
    — which Gymnasium's ``check_env`` makes an env with — runs headless. Returns the calls of
    ``plt.show`` and ``plt.pause``."""
    matplotlib = pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    calls = {"show": [], "pause": []}
    monkeypatch.setattr(matplotlib, "get_backend", lambda: "tkagg")
    monkeypatch.setattr(plt, "show", lambda *a, **k: calls["show"].append(1))
    monkeypatch.setattr(plt, "pause", lambda s: calls["pause"].append(s))
    return calls
