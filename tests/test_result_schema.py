"""The published JSON Schema of benchmark result files: every committed file passes it (with msenv's
validator and with plain ``jsonschema`` as another tool runs it), its constants are the code's,
every case the hand-written check used to refuse is still refused — by the schema or by what
``check.py`` keeps (what a schema cannot say) — each in one line naming the JSON path, the value
and what is allowed, and the schema ships in the wheel and on the site."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

from evaluation.benchmark import check, schema  # noqa: E402
from evaluation.benchmark.run import FORMAT_VERSION, LABEL, RESULT_FORMAT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "evaluation" / "benchmark" / "result.schema.json"
COMMITTED = sorted((ROOT / "docs" / "leaderboard").glob("*.json")) + sorted(
    (ROOT / "docs" / "leaderboard" / "archive").glob("*.json"))
#: a small committed result of format 2 (72 episodes, controllers only): the base of the edits below
SMALL = ROOT / "docs" / "leaderboard" / "dynamic-v1.json"
SHA = "0" * 64


def test_the_schema_is_a_draft_2020_12_schema_and_the_package_reads_the_committed_file():
    doc = json.loads(SCHEMA.read_text())
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(doc)
    assert schema.result_schema() == doc


#: the committed files, the quick loop taking the two small ones (the full run takes every one)
FILES = [pytest.param(p, marks=[] if p.name.startswith("dynamic") else pytest.mark.slow,
                      id=p.relative_to(ROOT / "docs" / "leaderboard").as_posix()) for p in COMMITTED]


@pytest.mark.parametrize("path", FILES)
def test_every_committed_result_file_passes_the_schema_as_any_tool_reads_it(path):
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))  # what another tool runs: plain jsonschema
    assert schema.schema_problems(doc) == []  # msenv's stricter reading (integers, finite numbers, $)


def test_the_schemas_constants_are_the_codes():
    s = schema.result_schema()
    props, method, episode = s["properties"], s["$defs"]["method"]["properties"], s["$defs"]["episode"]["properties"]
    assert props["format"]["const"] == RESULT_FORMAT
    assert props["format_version"]["enum"] == [1, FORMAT_VERSION]
    assert (method["runs"]["minimum"], method["runs"]["maximum"]) == (1, check.MAX_RUNS)
    assert method["sources"]["maxItems"] == check.MAX_RUNS and episode["run"]["maximum"] == check.MAX_RUNS - 1
    # the label pattern says what LABEL says, on labels at and past each of its edges
    labels = ["a", "A9", "9", "x" * 64, "x" * 65, "a.b_c+d@e-f", "-a", ".a", "_a", "a b", "a/b", "<td>x", "", "é",
              "a\n", "ab\u0663", "a" * 63 + "-"]
    pattern = s["properties"]["methods"]["propertyNames"]
    v = schema._validator()
    for label in labels:
        assert v.evolve(schema=pattern).is_valid(label) == bool(LABEL.fullmatch(label)), repr(label)
    # every command the code records or accepts, and none besides
    command = jsonschema.Draft202012Validator(props["command"])
    for c in check.COMMANDS:
        assert command.is_valid(c) and command.is_valid(c + " --suite paper-v1")
    for c in ("python -m elsewhere", "python train.py", "python -m evaluation.benchmarks", 5):
        assert not command.is_valid(c), c
    assert command.is_valid(None)


def _doc() -> dict:
    return json.loads(SMALL.read_text())


def _with_agent(d):
    d["methods"]["plug-in-greedy"]["agents"] = [{"path": "x", "files": {"policy.npz": SHA}, "training": None}]


def _set(*path_value):
    *path, value = path_value

    def edit(d):
        node = d
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
    return edit


M = "plug-in-greedy"
#: the training record of the agent _with_agent gives M
T = f"$.methods[{M!r}].agents[0].training"
#: every refusal of the former hand-written structure check, and the line that refuses it now
CASES = [
    ("no format", lambda d: d.pop("format"), ("$.format is missing; required: "
     "'msenv-benchmark-result' (a file of another format is not a benchmark result)")),
    ("another format", _set("format", "something else"),
     ("$.format='something else' is invalid; allowed: 'msenv-benchmark-result' (a file of another format is not a "
     "benchmark result)")),
    ("unknown format_version", _set("format_version", 3), "$.format_version=3 is invalid; allowed: 1 (msenv ≤ 0.5"),
    ("suite not an object", _set("suite", "paper-v1"), "$.suite='paper-v1' is invalid; allowed: an object: the suite"),
    ("methods not an object", _set("methods", [M]), "$.methods=['plug-in-greedy'] is invalid; allowed: an object"),
    ("scores not an object", _set("scores", []), "$.scores=[] is invalid; allowed: an object"),
    ("aggregates not an object", _set("aggregates", None), "$.aggregates=None is invalid; allowed: an object"),
    ("episodes not an array", _set("episodes", {}), "$.episodes={} is invalid; allowed: an array"),
    ("decision_ms not an object", _set("decision_ms", 3), "$.decision_ms=3 is invalid; allowed: an object"),
    ("bad label", lambda d: d["methods"].__setitem__("<td>x", d["methods"].pop(M)),
     ("$.methods: label '<td>x' is invalid; allowed: up to 64 letters, digits and ._+@-, starting with a letter or "
     "digit")),
    ("label with a newline", lambda d: d["methods"].__setitem__("a\n", d["methods"].pop(M)),
     "$.methods: label 'a\\n' is invalid"),
    ("method not an object", _set("methods", M, 1), "$.methods['plug-in-greedy']=1 is invalid; allowed: an object"),
    ("runs a boolean", _set("methods", M, "runs", True), ("$.methods['plug-in-greedy'].runs=True is invalid; allowed: "
     "an integer in 1 … 100")),
    ("runs 0", _set("methods", M, "runs", 0), "$.methods['plug-in-greedy'].runs=0 is invalid"),
    ("runs 101", _set("methods", M, "runs", 101), "$.methods['plug-in-greedy'].runs=101 is invalid"),
    ("runs 1.0", _set("methods", M, "runs", 1.0), "$.methods['plug-in-greedy'].runs=1.0 is invalid"),
    ("runs missing", lambda d: d["methods"][M].pop("runs"), ("$.methods['plug-in-greedy'].runs is missing; required: "
     "an integer in 1 … 100")),
    ("bad kind", _set("methods", M, "kind", "human"), ("$.methods['plug-in-greedy'].kind='human' is invalid; allowed: "
     "'controller' or 'agent'")),
    ("sources not a list", _set("methods", M, "sources", "plug-in-greedy"),
     "$.methods['plug-in-greedy'].sources='plug-in-greedy' is invalid; allowed: an array of paths or names"),
    ("a source not a string", _set("methods", M, "sources", [3]),
     "$.methods['plug-in-greedy'].sources[0]=3 is invalid; allowed: a string"),
    ("agent record not an object", lambda d: (_with_agent(d), _set("methods", M, "agents", ["x"])(d)),
     "$.methods['plug-in-greedy'].agents[0]='x' is invalid; allowed: an object: an agent's path"),
    ("agent record without its path", lambda d: (_with_agent(d), d["methods"][M]["agents"][0].pop("path")),
     "$.methods['plug-in-greedy'].agents[0].path is missing; required: a string"),
    ("agent files not an object", lambda d: (_with_agent(d), _set("methods", M, "agents", 0, "files", [])(d)),
     "$.methods['plug-in-greedy'].agents[0].files=[] is invalid; allowed: an object: each decision file's SHA-256"),
    ("training timesteps a string", lambda d: (_with_agent(d), _set("methods", M, "agents", 0, "training",
                                                                     {"timesteps": "many"})(d)),
     "$.methods['plug-in-greedy'].agents[0].training.timesteps='many' is invalid; allowed: an integer ≥ 0"),
    ("training timesteps a boolean", lambda d: (_with_agent(d), _set("methods", M, "agents", 0, "training",
                                                                      {"timesteps": True})(d)),
     f"{T}.timesteps=True is invalid"),
    ("training wall_s a string", lambda d: (_with_agent(d), _set("methods", M, "agents", 0, "training",
                                                                  {"timesteps": 5, "wall_s": "long"})(d)),
     f"{T}.wall_s='long' is invalid; allowed: a number ≥ 0 or null"),
    ("training selection a number", lambda d: (_with_agent(d), _set("methods", M, "agents", 0, "training",
                                                                     {"timesteps": 5, "selection": 1})(d)),
     f"{T}.selection=1 is invalid; allowed: a string or null"),
    ("training a list", lambda d: (_with_agent(d), _set("methods", M, "agents", 0, "training", [1])(d)),
     f"{T}=[1] is invalid; allowed: null, or an object holding integer timesteps"),
    ("command a number", _set("command", 5), "$.command=5 is invalid; allowed: the string of the run's command"),
    ("command of another program", _set("command", "python -m elsewhere --suite dynamic-v1"),
     "$.command='python -m elsewhere --suite dynamic-v1' is invalid"),
    ("date not a day", _set("date", "yesterday"), ("$.date='yesterday' is invalid; allowed: the day of the run, "
     "YYYY-MM-DD (UTC)")),
    ("date with a newline", _set("date", "2026-01-02\n"), "$.date='2026-01-02\\n' is invalid"),
    ("wall_s a string", _set("wall_s", "fast"), ("$.wall_s='fast' is invalid; allowed: the run's wall time in seconds, "
     "a number ≥ 0 and < 1e9")),
    ("wall_s a boolean", _set("wall_s", False), "$.wall_s=False is invalid"),
    ("wall_s negative", _set("wall_s", -1), "$.wall_s=-1 is invalid"),
    ("wall_s too large", _set("wall_s", 1e9), "$.wall_s=1000000000.0 is invalid"),
    ("wall_s NaN", _set("wall_s", float("nan")), "$.wall_s=nan is invalid"),
    ("machine missing", lambda d: d.pop("machine"), ("$.machine is missing; required: an object with the platform and "
     "processor strings")),
    ("machine without its platform", lambda d: d["machine"].pop("platform"), "$.machine.platform is missing"),
    ("machine's processor not a string", _set("machine", "processor", 64), "$.machine.processor=64 is invalid"),
    ("episode not an object", _set("episodes", 1, ["not", "an", "episode"]),
     "$.episodes[1]=['not', 'an', 'episode'] is invalid; allowed: an object: an episode's statistics"),
    ("episode's method not a string", _set("episodes", 0, "method", None), ("$.episodes[0].method=None is invalid; "
     "allowed: a string")),
    ("episode's run a boolean", _set("episodes", 0, "run", False), ("$.episodes[0].run=False is invalid; allowed: an "
     "integer in 0 … 99")),
    ("episode's run too large", _set("episodes", 0, "run", 10**9), "$.episodes[0].run=1000000000 is invalid"),
    ("a score not finite", _set("scores", "throughput", M, 0, 0, 0, float("inf")),
     "$.scores.throughput['plug-in-greedy'][0][0][0]=inf is invalid; allowed: a score, a number > 0"),
    ("a score not positive", _set("scores", "realtime", M, 0, 1, 2, 0.0),
     "$.scores.realtime['plug-in-greedy'][0][1][2]=0.0 is invalid; allowed: a score, a number > 0"),
    ("a decision time not a number", _set("decision_ms", M, "mobile", "fast"),
     "$.decision_ms['plug-in-greedy'].mobile='fast' is invalid; allowed: a number ≥ 0"),
    ("format 2 without statistics", lambda d: d.pop("statistics"), ("$.statistics is missing; required: format 2 "
     "holds statistics")),
    # what the schema cannot say, the code kept says
    ("unknown suite", _set("suite", "name", "nope-v9"), "suite='nope-v9' is not known; allowed:"),
    ("suite edited", _set("suite", "cells", 0, "seed", 1), ("suite 'dynamic-v1': the file's cells, seeds or reference "
     "differ from the suite's")),
    ("sources one short", _set("methods", M, "runs", 2),
     "method 'plug-in-greedy': sources must be a list of 2 paths or names, one per run"),
    ("episode of an unknown method", _set("episodes", 1, "method", "ghost"),
     ("episode 1: method='ghost' is not one of the file's methods; allowed: plug-in-greedy, bayes-saa, "
     "optimal-uniform, computation-only")),
    ("episode's run beyond its method's", _set("episodes", 0, "run", 1),
     "episode 0 (plug-in-greedy): run=1 is invalid; allowed: 0 … 0"),
    ("score array of another shape", _set("scores", "throughput", M, [[1.0]]),
     "method 'plug-in-greedy': throughput scores must be of shape (1, 6, 3)"),
    ("ragged score array", _set("scores", "throughput", M, 0, [[1.0], [1.0, 2.0]]),
     "method 'plug-in-greedy': throughput scores must be of shape (1, 6, 3)"),
]


@pytest.mark.parametrize("how, words", [(h, w) for _, h, w in CASES], ids=[c[0] for c in CASES])
def test_every_case_the_hand_written_check_refused_is_refused_in_one_line(how, words):
    doc = _doc()
    assert check.result_problems(doc, recompute=False) == []
    how(doc)
    problems = check.result_problems(doc, recompute=False)
    assert problems and all("\n" not in p for p in problems), problems
    assert any(p.startswith(words) for p in problems), problems


def test_the_recomputed_checks_still_refuse_an_edited_file():
    doc = _doc()
    assert check.result_problems(doc) == []
    doc["scores"]["throughput"][M][0][0][0] *= 1.5  # a valid number, no longer the episodes' ratio
    assert f"method {M!r}: throughput scores do not follow from the episodes" in check.result_problems(doc)


def test_a_schema_line_names_the_path_the_value_and_what_is_allowed():
    doc = _doc()
    doc["episodes"][5]["seed"] = -3
    doc["methods"]["bayes-saa"]["kind"] = "x" * 200
    lines = schema.schema_problems(doc)
    assert lines[0] == "$.episodes[5].seed=-3 is invalid; allowed: an integer ≥ 0: the episode's seed"
    assert re.fullmatch(r"\$\.methods\['bayes-saa'\]\.kind='x{78}… is invalid; allowed: 'controller' or 'agent'",
                        lines[1]), lines[1]  # a long value cut to 80 characters
    assert len(lines) == 2


def test_a_file_that_is_no_result_gets_one_line_and_many_problems_are_capped():
    assert schema.schema_problems([1, 2]) == ["$=[1, 2] is invalid; allowed: " + schema.result_schema()["description"]]
    assert schema.schema_problems({"format": "x", "wall_s": "y"}) == [
        ("$.format='x' is invalid; allowed: 'msenv-benchmark-result' (a file of another format is not a benchmark "
        "result)")]
    doc = _doc()
    for row in doc["episodes"]:
        row["seed"] = -1
    lines = schema.schema_problems(doc)
    assert len(lines) == schema.MAX_PROBLEMS + 1
    assert lines[-1] == f"… and {len(doc['episodes']) - schema.MAX_PROBLEMS} more problems of the schema"
    assert lines[0].startswith("$.episodes[0].seed=-1") and lines[1].startswith("$.episodes[1].seed=-1")


def test_the_optional_trace_files_are_accepted_and_checked():
    doc = _doc()
    doc["trace_files"] = [{"path": "traces/gsm8k.jsonl", "sha256": "ab" * 32, "bytes": 1234}]
    assert check.result_problems(doc, recompute=False) == []
    doc["trace_files"] = [{"path": "t.jsonl", "sha256": "AB" * 32, "bytes": -1}, {"path": "u.jsonl", "bytes": 3}]
    assert check.result_problems(doc, recompute=False) == [
        "$.trace_files[0].bytes=-1 is invalid; allowed: an integer ≥ 0: the file's size in bytes",
        f"$.trace_files[0].sha256={'AB' * 32!r} is invalid; allowed: 64 lowercase hex digits: the file's SHA-256",
        "$.trace_files[1].sha256 is missing; required: 64 lowercase hex digits: the file's SHA-256"]


def test_msenvs_readings_of_integers_numbers_and_patterns_are_stricter_than_plain_jsonschema():
    """What msenv refuses that plain jsonschema (as Python's json module reads a file) accepts: an
    integer written 1.0, a NaN, a final newline past a pattern's $. Nothing the other way."""
    plain = jsonschema.Draft202012Validator(schema.result_schema())

    def small():  # the schema compares no field with another: three episodes show every rule
        doc = _doc()
        doc["episodes"] = doc["episodes"][:3]
        return doc

    for how in (_set("methods", M, "runs", 1.0), _set("wall_s", float("nan")), _set("date", "2026-01-02\n")):
        doc = small()
        how(doc)
        assert plain.is_valid(doc) and schema.schema_problems(doc)
    for _, how, _ in CASES:
        doc = small()
        how(doc)
        if not plain.is_valid(doc):
            assert schema.schema_problems(doc)


def _explanations() -> str:
    """The leaderboard page's text after its tables (docs/_ext/msenv_leaderboard.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("leaderboard_page", ROOT / "docs" / "_ext" / "msenv_leaderboard.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EXPLANATIONS


def test_the_pages_python_lines_validate_a_committed_file_and_refuse_an_edited_one(tmp_path, monkeypatch):
    """The ``pycon`` block of the leaderboard page, run as doctest in a folder holding the schema
    and a result file: silent on a committed file, a ValidationError on an edited one."""
    import doctest

    block = re.search(r"```pycon\n(.*?)```", _explanations(), flags=re.S).group(1)
    (tmp_path / "result.schema.json").write_text(SCHEMA.read_text())
    monkeypatch.chdir(tmp_path)
    for doc, fails in ((_doc(), 0), ({**_doc(), "wall_s": "fast"}, 1)):
        (tmp_path / "paper-v1.json").write_text(json.dumps(doc))
        test = doctest.DocTestParser().get_doctest(block, {}, "leaderboard", None, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test, out=lambda text: None)
        assert runner.summarize(verbose=False).failed == fails


def test_the_pages_command_line_validates_a_file(tmp_path):
    """The page's ``jsonschema -i FILE SCHEMA`` (jsonschema's own command line, beside this Python):
    a committed file passes, an edited one fails naming its value."""
    line = re.search(r"```bash\n(jsonschema .*?)\n```", _explanations(), flags=re.S).group(1)
    assert line == "jsonschema -i paper-v1.json result.schema.json"
    script = Path(sys.executable).parent / "jsonschema"
    if not script.exists():
        pytest.skip(f"no jsonschema command beside {sys.executable}")

    def run(path):
        return subprocess.run([str(script), "-i", str(path), str(SCHEMA)], capture_output=True, text=True,
                              timeout=120, env={"PYTHONWARNINGS": "ignore::DeprecationWarning", "PATH": ""})

    r = run(SMALL)
    assert r.returncode == 0, r.stderr
    (tmp_path / "bad.json").write_text(json.dumps({**_doc(), "wall_s": "fast"}))
    r = run(tmp_path / "bad.json")
    assert r.returncode != 0 and "'fast'" in r.stdout + r.stderr


def test_check_without_jsonschema_is_one_line(monkeypatch):
    schema._validator.cache_clear()
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema raises ImportError
    try:
        assert check.result_problems(_doc()) == [
            "checking a result file needs the jsonschema package (pip install 'msenv[bench]')"]
    finally:
        monkeypatch.undo()
        schema._validator.cache_clear()
    assert check.result_problems(_doc(), recompute=False) == []


def test_the_package_data_globs_hold_the_schema():
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert any(SCHEMA.relative_to(ROOT / "evaluation").match(g) for g in data["evaluation"])
    assert "jsonschema" in " ".join(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["bench"])


@pytest.mark.slow
def test_the_wheel_ships_the_schema(tmp_path):
    pytest.importorskip("build")
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(tmp_path),
                        str(ROOT)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    wheel = next(tmp_path.glob("msenv-*.whl"))
    shipped = zipfile.ZipFile(wheel).read("evaluation/benchmark/result.schema.json")
    assert json.loads(shipped) == json.loads(SCHEMA.read_text())


@pytest.mark.slow
def test_the_site_publishes_the_schema_on_the_leaderboard_page(built_site):
    html, build = built_site  # (whether the build is free of warnings is tests/test_docs.py's to say)
    assert (html / "generated" / "leaderboard.html").exists(), build["stderr"][-3000:]
    page = (html / "generated" / "leaderboard.html").read_text()
    links = re.findall(r'href="([^"]*result\.schema\.json)"', page)
    assert links, "the leaderboard page links no schema file"
    served = (html / "generated" / links[0]).resolve()
    assert json.loads(served.read_text()) == json.loads(SCHEMA.read_text())
    assert "jsonschema" in page
