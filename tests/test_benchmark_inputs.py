"""Bad inputs of the benchmark, its result files, the suites and the leaderboard get one clear
line; a run that cannot write, or is stopped, loses nothing it had and leaves no process behind."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation import benchmark, leaderboard, report, suites
from evaluation.benchmark import cli
from evaluation.suites import CELL_STRIDE, TEST_SEEDS, VALIDATION_SEEDS, Cell, Suite

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "agents" / "pretrained" / "cells"
TINY = Suite("paper-v1", "a tiny suite for the tests", (
    Cell("a", "msenv/MultiSpin-v0", 2, 3, TEST_SEEDS.start + 950 * CELL_STRIDE, {"num_devices": 4}),
))


@pytest.fixture
def tiny(monkeypatch):
    table = {**suites.SUITES, "paper-v1": TINY}
    monkeypatch.setattr(suites, "SUITES", table)
    monkeypatch.setattr(cli, "SUITES", table)
    monkeypatch.setattr(cli, "get_suite", lambda name: TINY if name == "paper-v1" else suites.get_suite(name))


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "evaluation.benchmark", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--controllers", "fixed-4", "fixed-4"], "--controllers fixed-4 is given twice"),
    (["--agent", f"greedy-saa={AGENT}", "--controllers", "fixed-4"], "label 'greedy-saa' is a controller's name"),
    (["--agent", f"fixed-3={AGENT}"], "label 'fixed-3' is a controller's name"),
    (["--agent", f"g={AGENT}", str(AGENT)], "is given twice; allowed: one directory per training seed"),
    (["--agent", f"<b>x={AGENT}"], "label '<b>x' is invalid"),
    (["--workers", "1000"], "--workers 1000 is invalid; allowed: an integer in 1 … 64"),
    (["--out", "README.md"], "--out README.md: README.md is a file, not a folder"),
])
def test_conflicting_or_bad_options_are_refused_in_one_line(args, words):
    r = _cli("--suite", "paper-v1", *args)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()[-1]) > 0


def test_a_mode_policy_is_played_not_ignored(tiny):
    res = benchmark.run_benchmark(TINY, benchmark.controller_methods(["fixed-4", "fixed-4@all_dl", "fixed-4@all_ul"]))
    thr = {m: res["aggregates"]["throughput"][m]["mean"][0] for m in ("fixed-4", "fixed-4@all_dl", "fixed-4@all_ul")}
    assert len(set(thr.values())) == 3, thr  # three reactive policies, three throughputs
    assert thr["fixed-4"] >= max(thr["fixed-4@all_dl"], thr["fixed-4@all_ul"])  # the optimal policy is the best
    benchmark.check_result(json.loads(json.dumps(res, default=float)))
    doc = json.loads(json.dumps(res, default=float))
    assert benchmark.replay_problems(doc, 4, seed=0, root=ROOT) == []  # the replay plays the policy too


def test_writes_are_atomic_and_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    report.write_json({"a": 1}, path)

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        report.write_json({"a": 2}, path)
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left behind


def test_the_output_folder_is_checked_before_the_run(tmp_path, monkeypatch):
    assert report.output_dir_problem(tmp_path / "new" / "folder") is None and (tmp_path / "new" / "folder").is_dir()
    (tmp_path / "f").write_text("x")
    assert "is a file, not a folder" in report.output_dir_problem(tmp_path / "f")
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9 - 1000, 1000))
    assert "MiB free" in report.output_dir_problem(tmp_path)


@pytest.mark.slow
def test_a_run_that_cannot_write_prints_its_summary_and_keeps_the_earlier_file(tmp_path, tiny, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    benchmark.main(["--suite", "paper-v1", "--controllers", "computation-only", "--out", str(tmp_path),
                    "--no-progress"])
    good = {ext: (tmp_path / f"paper-v1.{ext}").read_bytes() for ext in ("json", "csv", "png")}

    def full(*a, **k):
        raise OSError(28, "No space left on device", str(tmp_path / "paper-v1.json"))

    monkeypatch.setattr(cli, "json_bytes", full)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        benchmark.main(["--suite", "paper-v1", "--controllers", "fixed-2", "--out", str(tmp_path), "--no-progress"])
    out, err = capsys.readouterr()
    assert e.value.code == 74 and "IQM" in out and "fixed-2" in out  # the summary came first
    assert "could not write" in err and "No space left" in err and len(err.strip().splitlines()) == 1
    assert {ext: (tmp_path / f"paper-v1.{ext}").read_bytes() for ext in good} == good  # none of the three replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["paper-v1.csv", "paper-v1.json", "paper-v1.png"]


def _small_result():
    res = benchmark.run_benchmark(TINY, benchmark.controller_methods(["computation-only"]))
    res["command"] = "python -m evaluation.benchmark --suite paper-v1 --controllers computation-only"
    return json.loads(json.dumps(res, default=float))


def _edit(doc, how):
    bad = copy.deepcopy(doc)
    how(bad)
    return bad


@pytest.mark.parametrize("how, words", [
    (lambda d: d.__setitem__("suite", "paper-v1"), "$.suite='paper-v1' is invalid; allowed: an object"),
    (lambda d: d.__setitem__("methods", ["computation-only"]), "$.methods=['computation-only'] is invalid"),
    (lambda d: d["episodes"][0].__setitem__("run", 10**9), "run=1000000000 is invalid"),
    (lambda d: d.__setitem__("wall_s", "fast"), "wall_s='fast' is invalid"),
    (lambda d: d.pop("machine"), "$.machine is missing; required: an object with the platform"),
    (lambda d: d.__setitem__("command", 5), "$.command=5 is invalid; allowed: the string of the run's command"),
    (lambda d: d["methods"].__setitem__("<td>x", d["methods"].pop("computation-only")), "label '<td>x' is invalid"),
    (lambda d: d["episodes"][0].__setitem__("decision_ms", d["episodes"][0]["decision_ms"] * 2),
     "real-time throughput does not follow"),
    (lambda d: d["decision_ms"]["computation-only"].__setitem__("a", 1e-9), "decision_ms of cell a is"),
])
def test_check_refuses_a_malformed_or_edited_result_in_one_line(tiny, how, words):
    doc = _small_result()
    benchmark.check_result(doc)
    problems = benchmark.result_problems(_edit(doc, how))
    assert problems and any(words in p for p in problems), problems
    assert all("\n" not in p for p in problems)


@pytest.mark.slow
def test_check_of_a_deeply_nested_file_is_one_line(tmp_path):
    f = tmp_path / "deep.json"
    f.write_text("[" * 100_000 + "]" * 100_000)
    r = _cli("--check", str(f))
    assert r.returncode == 1 and "not readable as JSON" in r.stderr and "Traceback" not in r.stderr


def test_the_suites_refuse_bad_cells_and_shared_seeds():
    ok = dict(name="a", env_id="msenv/MultiSpin-v0", episodes=2, rounds=3, seed=TEST_SEEDS.start)
    for field, value, words in (("episodes", 2.5, "episodes=2.5 is invalid; allowed: an integer"),
                                ("rounds", True, "rounds=True is invalid"),
                                ("overrides", [1], "overrides=[1] is invalid")):
        with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
            Cell(**{**ok, field: value})
    a = Cell(**ok)
    b = Cell(**{**ok, "name": "b", "seed": TEST_SEEDS.start + 1})
    with pytest.raises(ValueError, match="share test seeds"):
        Suite("x-v0", "", (a, b))
    v = Cell(**{**ok, "name": "v", "seed": VALIDATION_SEEDS.start})
    with pytest.raises(ValueError, match="mix test and validation seeds"):
        Suite("x-v0", "", (a, v))
    with pytest.raises(ValueError, match="is a test suite; allowed: seeds of the test block"):
        suites.check_registry({"x-v0": Suite("x-v0", "", (v,))}, {})
    with pytest.raises(ValueError, match="share seeds"):
        suites.check_registry({"x-v0": Suite("x-v0", "", (a,)), "y-v0": Suite("y-v0", "", (a,))}, {})
    suites.check_registry({**suites.SUITES, **suites.ARCHIVED_SUITES}, suites.VALIDATION_SUITES)  # the registry's own


def test_the_leaderboard_refuses_a_missing_folder_a_validation_result_and_an_api_run(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="no such folder"):
        leaderboard.load_results(tmp_path / "nope")
    val = Suite("tiny-val-v0", "validation",
                (Cell("a", "msenv/MultiSpin-v0", 2, 3, VALIDATION_SEEDS.start + 90 * CELL_STRIDE,
                                                    {"num_devices": 4}),), kind="validation")
    monkeypatch.setattr(suites, "VALIDATION_SUITES", {**suites.VALIDATION_SUITES, val.name: val})
    res = json.loads(json.dumps(benchmark.run_benchmark(val, benchmark.controller_methods(["fixed-2"])), default=float))
    res["command"] = "python -m evaluation.benchmark --suite tiny-val-v0 --controllers fixed-2"
    benchmark.check_result(res)
    (tmp_path / "val.json").write_text(json.dumps(res))
    with pytest.raises(ValueError, match="val.json: suite 'tiny-val-v0' is a validation suite"):
        leaderboard.load_results(tmp_path)
    res["command"] = None  # a run through the API: valid, but no row can say how to reproduce it
    benchmark.check_result(res)
    (tmp_path / "val.json").write_text(json.dumps(res))
    with pytest.raises(ValueError, match="records no command"):
        leaderboard.load_results(tmp_path)


def _children(pid: int) -> list[int]:
    r = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its reaper is not running
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _start_long_run(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "evaluation.benchmark", "--suite", "cells-out-v1", "--controllers",
                          "computation-only", "--workers", "2", "--out", str(tmp_path), "--no-progress"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and len(_children(p.pid)) < 3:  # two workers and the resource tracker
        time.sleep(0.2)
    kids = _children(p.pid)
    assert len(kids) >= 3, "the run's workers did not start"
    time.sleep(1.0)
    return p, kids


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="pgrep and /proc")
@pytest.mark.parametrize("sig, to_group, code", [(signal.SIGTERM, False, 143), (signal.SIGINT, True, 130),
                                                 (signal.SIGTERM, True, 143)])
def test_a_stop_signal_is_one_line_and_ends_every_worker(tmp_path, sig, to_group, code):
    p, kids = _start_long_run(tmp_path)
    if to_group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    assert "stopped by" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    time.sleep(0.5)
    assert not [k for k in kids if _alive(k)]
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="pgrep and /proc")
def test_a_killed_worker_is_one_line_naming_the_episode(tmp_path):
    p, kids = _start_long_run(tmp_path)
    workers = [k for k in kids if "resource_tracker" not in Path(f"/proc/{k}/cmdline").read_text()]
    os.kill(workers[0], signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1, err
    assert "a worker process died while playing" in err and "episode" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1
    time.sleep(0.5)
    assert not [k for k in kids if _alive(k)]


def test_the_leaderboard_escapes_every_string_of_a_file(tmp_path, tiny):
    doc = _small_result()
    doc["note"] = "<script>alert(1)</script> | a `tick`"
    doc["machine"]["platform"] = "Linux <b>|</b>"
    doc["command"] += " --out `rm -rf`"
    (tmp_path / "paper-v1.json").write_text(json.dumps(doc))
    page = leaderboard.markdown(leaderboard.load_results(tmp_path))
    assert "<script>" not in page and "&lt;script&gt;" in page and "<b>" not in page
    line = next(x for x in page.splitlines() if x.startswith("**paper-v1.json**"))
    assert "`rm -rf`" not in line and "'rm -rf'" in line  # no backtick ends the command's code span early
    assert "\\|" in line and " | a " not in line  # a bar cannot split the text


def test_check_refuses_a_training_record_the_page_cannot_print(tiny):
    doc = _small_result()
    doc["methods"]["computation-only"]["kind"] = "agent"
    doc["methods"]["computation-only"]["agents"] = [{"path": "x", "files": {}, "training": {"timesteps": "many"}}]
    problems = benchmark.result_problems(doc)
    assert problems == [("$.methods['computation-only'].agents[0].training.timesteps='many' is invalid; allowed: an "
                        "integer ≥ 0: the training's timesteps")], problems


class _ReadOnly:
    """A folder that can be made read-only for real: a tmpfs remounted read-only as root (where
    permissions do not bind root), its permissions (0o555) otherwise."""

    def __init__(self, path):
        self.path, self.mounted = path, False
        path.mkdir()
        if os.geteuid() == 0:
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(path)], capture_output=True)
            if done.returncode:
                pytest.skip(f"root without mount here ({done.stderr.decode().strip()}): a read-only folder cannot be "
                            "made")
            self.mounted = True

    def freeze(self):
        if self.mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True)
        else:
            self.path.chmod(0o555)
        with pytest.raises(OSError):
            (self.path / "probe").write_text("x")  # it is read-only for this process

    def release(self):
        if self.mounted:
            subprocess.run(["umount", str(self.path)], check=False)
        else:
            self.path.chmod(0o755)


@pytest.mark.slow
def test_a_read_only_output_keeps_the_earlier_file_before_and_during_a_run(tmp_path, tiny, monkeypatch, capsys):
    """A folder read-only before the run is refused before any work, in one line; one that turns
    read-only during the run gets the summary printed, one line, exit 74, and the earlier result
    file unchanged."""
    pytest.importorskip("matplotlib")
    folder = _ReadOnly(tmp_path / "ro")
    try:
        benchmark.main(["--suite", "paper-v1", "--controllers", "computation-only", "--out", str(folder.path),
                        "--no-progress"])
        good = (folder.path / "paper-v1.json").read_bytes()
        folder.freeze()
        capsys.readouterr()
        with pytest.raises(SystemExit) as e:
            benchmark.main(["--suite", "paper-v1", "--controllers", "fixed-2", "--out", str(folder.path),
                            "--no-progress"])
        err = capsys.readouterr().err.strip()
        last = err.splitlines()[-1]
        assert e.value.code == 2 and last.startswith("python -m evaluation.benchmark: error: --out")
        assert "not writable" in last
        assert (folder.path / "paper-v1.json").read_bytes() == good
        # writable at the check, read-only by the time the results are written
        folder.release()
        folder = _ReadOnly(tmp_path / "ro2")
        benchmark.main(["--suite", "paper-v1", "--controllers", "computation-only", "--out", str(folder.path),
                        "--no-progress"])
        good = (folder.path / "paper-v1.json").read_bytes()
        run = cli.run_benchmark

        def run_then_freeze(*a, **k):
            out = run(*a, **k)
            folder.freeze()
            return out

        monkeypatch.setattr(cli, "run_benchmark", run_then_freeze)
        capsys.readouterr()
        with pytest.raises(SystemExit) as e:
            benchmark.main(["--suite", "paper-v1", "--controllers", "fixed-2", "--out", str(folder.path),
                            "--no-progress"])
        out, err = capsys.readouterr()
        assert e.value.code == 74 and "IQM" in out and "fixed-2" in out
        assert "could not write" in err and len(err.strip().splitlines()) == 1
        assert (folder.path / "paper-v1.json").read_bytes() == good
        assert sorted(p.name for p in folder.path.iterdir()) == ["paper-v1.csv", "paper-v1.json", "paper-v1.png"]
    finally:
        folder.release()


def test_a_test_suite_whose_cell_draws_validation_seeds_is_refused_in_one_line():
    v = Cell("v", "msenv/MultiSpin-v0", 2, 3, VALIDATION_SEEDS.start + 7)
    with pytest.raises(ValueError) as e:
        Suite("mine-v0", "a suite of one's own", (v,))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("suite 'mine-v0' is a test suite; allowed: seeds of the test block")
    assert f"cell 'v' has seed={200_007}" in msg and "reserved validation block [200000, 300000)" in msg
    assert Suite("mine-val-v0", "one's own validation", (v,), kind="validation").kind == "validation"
    with pytest.raises(ValueError, match="kind='exam' is invalid; allowed: 'test', 'validation'"):
        Suite("mine-v0", "", (v,), kind="exam")
    t = Cell("t", "msenv/MultiSpin-v0", 2, 3, TEST_SEEDS.start + 7)
    with pytest.raises(ValueError, match="is a validation suite; allowed: seeds of the validation block"):
        Suite("mine-val-v0", "", (t,), kind="validation")


def _check(path, capsys) -> tuple[int, list[str], str]:
    """``--check FILE`` in this process (no replay): exit code, stderr lines, stdout."""
    capsys.readouterr()
    try:
        cli.main(["--check", str(path), "--replay", "0"])
        code = 0
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, err.strip().splitlines(), out


def test_check_and_the_leaderboard_refuse_a_file_without_its_command_in_the_same_line(tmp_path, tiny, capsys):
    doc = _small_result()
    doc["command"] = None  # a run through the API
    benchmark.check_result(doc)  # a consistent document ...
    path = tmp_path / "paper-v1.json"
    path.write_text(json.dumps(doc))
    code, err, _ = _check(path, capsys)  # ... but no leaderboard row, and --check says so
    assert code == 1 and len(err) == 1 and f"{path}: command=None: the file records no command" in err[0], err
    with pytest.raises(ValueError) as board:
        leaderboard.load_results(tmp_path)
    assert str(board.value) == err[0].split(": error: ", 1)[1]  # the same check, the same line


def test_check_says_why_a_validation_result_is_no_leaderboard_row(tmp_path, monkeypatch, capsys):
    val = Suite("tiny-val-v0", "validation",
                (Cell("a", "msenv/MultiSpin-v0", 2, 3, VALIDATION_SEEDS.start + 91 * CELL_STRIDE,
                                                    {"num_devices": 4}),), kind="validation")
    monkeypatch.setattr(suites, "VALIDATION_SUITES", {**suites.VALIDATION_SUITES, val.name: val})
    doc = benchmark.run_benchmark(val, benchmark.controller_methods(["fixed-2"]),
                                  command="python -m evaluation.benchmark --suite tiny-val-v0 --controllers fixed-2")
    path = tmp_path / "val.json"
    path.write_text(json.dumps(doc, default=float))
    code, err, out = _check(path, capsys)
    assert code == 0 and not err
    assert f"{path}: not a leaderboard row: suite 'tiny-val-v0' is a validation suite" in out
    assert out.strip().endswith(f"{path}: a valid result of suite tiny-val-v0")


def test_check_of_an_episode_of_an_unknown_method_names_the_method_and_the_file(tmp_path, tiny, capsys):
    doc = _small_result()
    doc["episodes"][1]["method"] = "ghost"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    code, err, _ = _check(path, capsys)
    assert code == 1 and err == [(f"python -m evaluation.benchmark: error: {path}: episode 1: method='ghost' is not "
                                  f"one of the file's methods; allowed: {', '.join(doc['methods'])}")]
    doc["episodes"][1] = ["not", "an", "episode"]
    assert benchmark.result_problems(doc) == [("$.episodes[1]=['not', 'an', 'episode'] is invalid; allowed: an object: "
                                               "an episode's statistics (its method, run, cell, episode, seed and what "
                                               "it measured)")]


def test_a_result_of_the_former_command_path_stays_valid_and_shows_the_new_one(tmp_path, tiny):
    doc = _small_result()
    doc["command"] = "python -m baselines.benchmark --suite paper-v1 --controllers computation-only"
    benchmark.check_result(doc)
    (tmp_path / "paper-v1.json").write_text(json.dumps(doc))
    page = leaderboard.markdown(leaderboard.load_results(tmp_path))
    assert "reproduce: `python -m evaluation.benchmark --suite paper-v1 --controllers computation-only`" in page
    doc["command"] = "python -m elsewhere --suite paper-v1"
    assert any(p.startswith("$.command='python -m elsewhere --suite paper-v1' is invalid; allowed: the string of the "
                            "run's command") for p in benchmark.result_problems(doc))


@pytest.mark.parametrize("path", sorted((ROOT / "docs" / "leaderboard" / "archive").glob("*.json")),
                         ids=lambda p: p.name)
def test_an_archived_result_of_format_1_is_checked_and_is_no_row(path):
    doc = json.loads(path.read_text())
    assert doc["format_version"] == 1
    benchmark.check_result(doc)  # its points recomputed from its scores
    archived, old_format = benchmark.row_problems(doc)
    assert archived.startswith(f"suite {doc['suite']['name']!r} is archived")
    assert old_format.startswith("format_version 1 ")
    m = next(iter(doc["methods"]))
    doc["aggregates"]["throughput"][m]["iqm"][0] += 0.01
    assert f"method {m!r}: throughput aggregates do not follow from the scores" in benchmark.result_problems(doc)


def test_a_replayed_float_may_move_in_its_last_bits_only():
    """A replay compares floats to 12 significant digits (an episode mean's last bits depend on the
    summation order numpy picks for the CPU), integers and text exactly."""
    import math

    from evaluation.benchmark.check import REPLAY_RTOL, same_statistic

    t = 94.63069078067346
    assert same_statistic(t, math.nextafter(math.nextafter(t, 0.0), 0.0))  # two units in the last place
    assert not same_statistic(t, t * (1 + 100 * REPLAY_RTOL))
    assert same_statistic(3, 3) and not same_statistic(3, 4) and not same_statistic("a", "b")
