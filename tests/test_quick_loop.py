"""The quick loop (docs/development.md): ``slow`` is a registered marker; it marks the long end-to-end
tests (the docs build, the tutorial, the examples, the trainings), which the full run still
collects, and leaves most of the suite, from most of its modules, to ``-m "not slow"``."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: tests the quick loop must leave out: the docs build, the tutorial, an example, a training
LONG = ("tests/test_docs.py::test_the_site_builds_with_warnings_as_errors",
        "tests/test_tutorial.py::test_the_tutorial_ends_in_a_row_a_fresh_clone_accepts",
        "tests/test_examples.py::test_every_example_runs_as_a_script[sb3_ppo.py]",
        "tests/test_agents.py::test_train_quick_end_to_end",
        "tests/test_packaging.py::test_the_wheel_works_in_a_fresh_virtual_environment")


class _Collected:
    """A plugin keeping the items a collection selected (after ``-m``)."""

    def __init__(self):
        self.items: list = []

    def pytest_collection_finish(self, session):
        self.items = list(session.items)


def _collect(*args: str) -> list:
    """The test items ``pytest --collect-only ARGS tests`` selects, collected in this process (inside
    the suite, its modules are imported already)."""
    plugin = _Collected()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(ROOT),
                        "-c", str(ROOT / "pyproject.toml"), *args, str(ROOT / "tests")], plugins=[plugin])
    assert code == 0, f"collection failed (exit {code})"
    return plugin.items


@pytest.fixture(scope="module")
def collected() -> dict[str, object]:
    """node id → item of the whole suite, as the full run collects it."""
    return {item.nodeid: item for item in _collect()}


def _marked(items: dict[str, object]) -> set[str]:
    return {nid for nid, item in items.items() if item.get_closest_marker("slow") is not None}


def test_slow_is_a_registered_marker(pytestconfig):
    assert any(m.split(":")[0].strip() == "slow" for m in pytestconfig.getini("markers"))


def test_the_long_runs_are_marked_and_the_full_run_still_collects_them(collected):
    marked = _marked(collected)
    assert all(nid in marked for nid in LONG), [nid for nid in LONG if nid not in marked]


def test_the_quick_selection_keeps_most_tests_from_most_modules(collected):
    quick = set(collected) - _marked(collected)
    assert len(quick) >= 0.8 * len(collected), (len(quick), len(collected))
    modules = {nid.split("::")[0] for nid in collected}
    kept = {nid.split("::")[0] for nid in quick}
    assert len(kept) >= 0.85 * len(modules), sorted(modules - kept)
    assert "tests/test_quick_loop.py" in kept


def test_the_development_page_gives_both_loops():
    text = (ROOT / "docs" / "development.md").read_text()
    assert 'python -m pytest -q -n 2 -m "not slow"' in text and "python -m pytest -q -n 2 " in text
