"""Benchmark suites and their scores: test seeds nobody trains on, reproducible scores,
aggregates against independent computations, the result-file check."""

from __future__ import annotations

import ast
import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evaluation.suites import CELL_STRIDE, SUITES, TEST_SEEDS, Cell, Suite, get_suite

ROOT = Path(__file__).resolve().parents[1]
#: how far past its default a command's seed range can reach (episodes, drops, sub-envs, offsets)
SPAN = 200_000


def test_every_suite_cell_has_its_own_test_seeds_inside_the_reserved_block():
    seen: set[int] = set()
    for suite in SUITES.values():
        assert re.fullmatch(r"[a-z-]+-v\d+", suite.name)
        for cell in suite.cells:
            seeds = set(cell.seeds)
            assert seeds <= set(TEST_SEEDS)
            assert not seeds & seen, f"{suite.name}/{cell.name} shares seeds with another cell"
            seen |= seeds
            cell.config()  # every cell is a valid config


def _seed_literals(path: Path):
    """Integer literals the code uses as seeds: keywords and names with 'seed' in them, and
    argparse defaults of --*seed* options."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg and "seed" in node.arg:
            yield from _ints(node.value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any("seed" in ast.unparse(t).lower() for t in targets) and node.value is not None:
                yield from _ints(node.value)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            if any(isinstance(a, ast.Constant) and "seed" in str(a.value) for a in node.args):
                for kw in node.keywords:
                    if kw.arg == "default":
                        yield from _ints(kw.value)
        elif isinstance(node, ast.BinOp) and "seed" in ast.unparse(node).lower():
            yield from _ints(node)


def _ints(node):
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and type(n.value) is int:
            yield n.value


def test_no_training_validation_or_results_seed_reaches_the_test_block():
    sources = [p for d in ("msenv", "baselines", "evaluation", "agents", "experiments", "benchmarks")
               for p in (ROOT / d).rglob("*.py")]
    sources += [ROOT / "train.py"]
    found = {}
    for path in sources:
        if path.name == "suites.py":
            continue
        for value in _seed_literals(path):
            found.setdefault(value, path.relative_to(ROOT))
    assert found, "the scan found no seed at all"
    assert max(found) + SPAN < TEST_SEEDS.start, {v: str(p) for v, p in found.items() if v + SPAN >= TEST_SEEDS.start}
    # seeds given on command lines in the docs and README
    texts = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    for path in texts:
        for m in re.finditer(r"--(?:eval-)?seed[ =](\d+)", path.read_text()):
            assert int(m.group(1)) + SPAN < TEST_SEEDS.start, f"{path}: {m.group(0)}"
    # and every command's seed defaults, as its parser has them
    import train
    from evaluation import benchmark, evaluate

    for parser in (train.build_parser(), evaluate.build_parser()):
        for action in parser._actions:
            if "seed" in action.dest and isinstance(action.default, int):
                assert action.default + SPAN < TEST_SEEDS.start
    # a suite's seeds are its own: the one seed option draws which stored episodes --check replays
    assert [a.dest for a in benchmark.build_parser()._actions if "seed" in a.dest] == ["replay_seed"]


def test_cells_and_suites_refuse_bad_values_naming_them():
    with pytest.raises(ValueError, match="seed=5"):
        Cell("a", "msenv/MultiSpin-v0", 2, 3, 5)
    with pytest.raises(ValueError, match="episodes=0"):
        Cell("a", "msenv/MultiSpin-v0", 0, 3, TEST_SEEDS.start)
    with pytest.raises(ValueError, match=f"episodes={CELL_STRIDE + 1}"):
        Cell("a", "msenv/MultiSpin-v0", CELL_STRIDE + 1, 3, TEST_SEEDS.start)
    with pytest.raises(ValueError, match="rounds=1"):
        Cell("a", "msenv/MultiSpin-v0", 2, 1, TEST_SEEDS.start)
    c = Cell("a", "msenv/MultiSpin-v0", 2, 3, TEST_SEEDS.start)
    with pytest.raises(ValueError, match="repeat"):
        Suite("x-v0", "", (c, c))
    with pytest.raises(ValueError, match="suite='nope'"):
        get_suite("nope")
    with pytest.raises(TypeError):
        c.overrides["p_dl_dbm"] = 3.0  # a suite's content never changes under its name
    with pytest.raises(ValueError, match="oracles=.*allowed: controllers of the suite"):
        Suite("x-v0", "", (c,), oracles=("clairvoyant",))


def test_an_oracle_plays_but_is_never_the_best_rival():
    import dataclasses

    from evaluation.benchmark.score import rivals_of

    suite = dataclasses.replace(SMALL, controllers=("greedy-saa", "fixed-2", "clairvoyant"), oracles=("clairvoyant",))
    ones = np.ones((1, 3, 2))
    matrices = {"greedy-saa": ones, "fixed-2": 1.1 * ones, "clairvoyant": 1.3 * ones, "mine": 1.2 * ones}
    kinds = {"greedy-saa": "controller", "fixed-2": "controller", "clairvoyant": "controller", "mine": "agent"}
    assert rivals_of(suite, matrices, kinds) == {"reference": "greedy-saa", "best_rival": "fixed-2"}
    assert rivals_of(SMALL, matrices, kinds)["best_rival"] == "clairvoyant"  # no oracles named: the best controller
    assert suite.to_dict()["oracles"] == ["clairvoyant"] and "oracles" not in SMALL.to_dict()
    assert get_suite("traces-v1").oracles == ("clairvoyant",)


SMALL = Suite("paper-v1", "a small suite for the tests", (
    Cell("a", "msenv/MultiSpin-v0", 3, 3, TEST_SEEDS.start + 900 * CELL_STRIDE, {"num_devices": 4}),
    Cell("b", "msenv/MultiSpin-Cells-v0", 3, 3, TEST_SEEDS.start + 901 * CELL_STRIDE, {"k_range": [3, 6], "k_max": 6}),
))


def _run(names=("computation-only", "optimal-uniform", "fixed-2")):
    from evaluation.benchmark import controller_methods, run_benchmark

    return run_benchmark(SMALL, controller_methods(list(names)))


def test_rerunning_a_suite_gives_identical_scores_for_deterministic_controllers():
    a, b = _run(), _run()
    assert a["scores"]["throughput"] == b["scores"]["throughput"]  # the real-time score is timed
    assert a["aggregates"]["throughput"] == b["aggregates"]["throughput"]
    strip = ("decision_ms", "realtime_throughput")
    assert [{k: v for k, v in r.items() if k not in strip} for r in a["episodes"]] == \
           [{k: v for k, v in r.items() if k not in strip} for r in b["episodes"]]


def test_scores_and_aggregates_match_an_independent_computation():
    from scipy import stats

    res = _run()
    eps = {(r["method"], r["cell"], r["episode"]): r for r in res["episodes"]}
    rivals = res["statistics"]["rivals"]["throughput"]
    assert rivals["reference"] == "greedy-saa"
    best = max(("greedy-saa", "computation-only", "optimal-uniform", "fixed-2"),
               key=lambda m: stats.trim_mean(np.ravel(res["scores"]["throughput"][m]), 0.25))
    assert rivals["best_rival"] == best
    for m in ("computation-only", "fixed-2"):
        s = np.array(res["scores"]["throughput"][m])
        assert s.shape == (1, 3, 2)  # runs, episodes, cells
        for j, cell in enumerate(("a", "b")):
            for e in range(3):
                assert s[0, e, j] == eps[(m, cell, e)]["throughput"] / eps[("greedy-saa", cell, e)]["throughput"]
        agg = res["aggregates"]["throughput"][m]
        assert agg["iqm"][0] == pytest.approx(stats.trim_mean(s.ravel(), 0.25))
        assert agg["mean"][0] == pytest.approx(s.mean())
        assert agg["shortfall"][0] == pytest.approx(np.maximum(1 - s, 0).mean())
        for key, rival in rivals.items():
            y = np.array(res["scores"]["throughput"][rival])
            # P(X > Y): per test episode (cell, episode) over all pairs of runs (ties count half), averaged
            p = np.mean([(x > v) + 0.5 * (x == v) for x, v in zip(s.reshape(-1), y.reshape(-1))])
            assert agg[f"p_improvement_over_{key}"][0] == pytest.approx(p)
        for name, (pt, lo, hi) in agg.items():
            assert lo <= pt + 1e-12 and pt <= hi + 1e-12, name
    ref = res["aggregates"]["throughput"]["greedy-saa"]
    assert ref["iqm"] == [1.0, 1.0, 1.0] and ref["p_improvement_over_reference"][0] == 0.5


def test_the_result_check_accepts_a_result_and_refuses_a_tampered_one(tmp_path, small_suite):
    from evaluation.benchmark import check_result

    res = json.loads(json.dumps(_run(("computation-only",)), default=float))
    check_result(res)
    bad = copy.deepcopy(res)
    bad["scores"]["throughput"]["computation-only"][0][0][0] *= 1.5
    with pytest.raises(ValueError, match="do not follow from the episodes"):
        check_result(bad)
    bad = copy.deepcopy(res)
    bad["suite"]["cells"][0]["seed"] += 1
    with pytest.raises(ValueError, match="differ"):
        check_result(bad)
    bad = copy.deepcopy(res)
    bad["aggregates"]["throughput"]["computation-only"]["iqm"][0] = 2.0
    with pytest.raises(ValueError, match="iqm is"):
        check_result(bad)
    bad = copy.deepcopy(res)  # a forged interval: the point kept, the interval narrowed
    bad["aggregates"]["throughput"]["computation-only"]["mean"][1] += 1e-3
    with pytest.raises(ValueError, match="computation-only.*mean is"):
        check_result(bad)
    with pytest.raises(ValueError, match="format"):
        check_result({"suite": {}})


@pytest.fixture
def small_suite(monkeypatch):
    from evaluation import suites
    from evaluation.benchmark import cli

    table = dict(suites.SUITES)
    table["paper-v1"] = SMALL
    monkeypatch.setattr(suites, "SUITES", table)
    monkeypatch.setattr(cli, "SUITES", table)


def test_the_command_writes_json_csv_png_and_its_file_passes_the_check(tmp_path, small_suite, capsys):
    pytest.importorskip("matplotlib")
    from evaluation.benchmark import main

    agent = ROOT / "agents" / "pretrained" / "cells"
    main(["--suite", "paper-v1", "--controllers", "computation-only", "--agent", f"gen={agent}", "--out", str(tmp_path),
          "--no-progress"])
    for ext in ("json", "csv", "png"):
        assert (tmp_path / f"paper-v1.{ext}").stat().st_size > 0
    res = json.loads((tmp_path / "paper-v1.json").read_text())
    gen = res["methods"]["gen"]
    assert (gen["kind"], gen["sources"], gen["runs"], gen["timed"]) == ("agent", [str(agent)], 1, False)
    from evaluation.provenance import sha256

    assert gen["agents"][0]["files"] == {f: sha256(agent / f) for f in ("agent.json", "policy.npz")}
    assert "IQM" in capsys.readouterr().out
    main(["--check", str(tmp_path / "paper-v1.json")])


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--suite", "nope"], "invalid choice"),
    (["--suite", "paper-v1", "--agent", "/nonexistent"], "/nonexistent"),
    (["--suite", "paper-v1", "--controllers", "nope"], "nope"),
    (["--suite", "paper-v1", "--workers", "0"], "--workers"),
    ([], "--suite"),
    (["--check", "/nonexistent.json"], "/nonexistent.json"),
])
def test_the_command_refuses_bad_arguments_in_one_line(args, words):
    r = subprocess.run([sys.executable, "-m", "evaluation.benchmark", *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr and words in r.stderr, r.stderr


def test_the_leaderboard_page_lists_every_method_of_a_checked_result_file(tmp_path, small_suite):
    from evaluation import benchmark, leaderboard

    res = json.loads(json.dumps(_run(("computation-only", "fixed-2")), default=float))
    res["command"] = "python -m evaluation.benchmark --suite paper-v1 --controllers computation-only fixed-2"
    (tmp_path / "paper-v1.json").write_text(json.dumps(res))
    page = leaderboard.markdown(leaderboard.load_results(tmp_path))
    lines = page.splitlines()

    def table(header: str) -> dict[str, list[str]]:  # the rows under ``header``, by method
        start = lines.index(header) + 2
        body = lines[start:lines.index("", start)]
        return {r.strip("| ").split(" | ")[0]: r.strip("| ").split(" | ") for r in body}

    main = table("| method | seeds | IQM | P(> best rival) | real-time IQM | decide ms |")
    more = table("| method | kind | training | measured | shortfall | P(> reference) |")
    assert set(main) == set(more) == {"greedy-saa", "computation-only", "fixed-2"}
    assert all(row[1] == "controller" for row in more.values()) and all(row[1] == "1" for row in main.values())
    assert {row[3] for row in more.values()} == {res["date"]}  # the day the file was run
    iqm = {name: float(row[2].split()[0]) for name, row in main.items()}
    assert iqm["fixed-2"] == pytest.approx(res["aggregates"]["throughput"]["fixed-2"]["iqm"][0], abs=5e-4)
    tails = table("| method | device 10th-percentile goodput |")  # the worst-served devices, where the file has them
    assert set(tails) == set(main)
    assert float(tails["fixed-2"][1].split()[0]) == pytest.approx(
        res["aggregates"]["device_p10"]["fixed-2"]["iqm"][0], abs=5e-4)
    assert res["command"] in page
    res["scores"]["throughput"]["fixed-2"][0][0][0] = -1.0
    (tmp_path / "paper-v1.json").write_text(json.dumps(res))
    with pytest.raises(ValueError, match="paper-v1.json"):
        leaderboard.load_results(tmp_path)
    assert benchmark.RESULT_FORMAT in (tmp_path / "paper-v1.json").read_text()


def test_the_validation_suite_lies_outside_the_test_block_and_off_the_leaderboard():
    from evaluation.suites import VALIDATION_SEEDS, VALIDATION_SUITES

    test_seeds = {s for suite in SUITES.values() for c in suite.cells for s in c.seeds}
    every = [s for suite in VALIDATION_SUITES.values() for c in suite.cells for s in c.seeds]
    assert len(every) == len(set(every)), "two validation suites share seeds"
    for suite in VALIDATION_SUITES.values():
        assert suite.name not in SUITES and get_suite(suite.name) is suite
        seeds = [s for c in suite.cells for s in c.seeds]
        assert len(seeds) == len(set(seeds)) and set(seeds) <= set(VALIDATION_SEEDS)
        assert not set(seeds) & test_seeds and not set(VALIDATION_SEEDS) & set(TEST_SEEDS)
        for cell in suite.cells:
            cfg = cell.config()
            assert cfg.k_range[0] == cfg.k_range[1] <= cfg.k_max
    with pytest.raises(ValueError, match="validation suite"):
        Cell("a", "msenv/MultiSpin-v0", 2, 3, 5)
