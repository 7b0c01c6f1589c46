"""Checking a benchmark result file: what its published JSON Schema says (:mod:`.schema`), then
what no schema can — its suite, fields that agree, scores that follow from its
episodes, aggregates and intervals that follow from the scores, timed fields that hold together
(:func:`result_problems`), what a leaderboard row needs besides (:func:`row_problems`: the one
validation both ``--check`` and the leaderboard apply), and a replay of a random sample of its
episodes, bit for bit (:func:`replay_problems`). Every problem is one line."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from .. import provenance, stats, suites
from ..entries import agent_loader
from ..harness import Entry, entry_config, parse_entry, run_episode
from ..suites import Suite, get_suite
from .run import COMMAND, FORMAT_VERSION, suite_trace_files
from .schema import schema_problems
from .score import OPTIONAL_SCORES, SCORES, aggregates, rivals_of, score_matrices

#: the most runs (training seeds) a method may have in a result file
MAX_RUNS = 100
#: the command lines a result file may record: this release's, and the path it had before the
#: evaluation left ``baselines`` (files written then keep it; :func:`reproducing_command` updates it)
COMMANDS = (COMMAND, "python -m baselines.benchmark")
#: EpisodeStats fields measured with a clock: left out of a replay's comparison
CLOCK_FIELDS = ("decision_ms", "realtime_throughput")
#: how close a stored aggregate or interval must be to the recomputed one
AGGREGATE_RTOL = 1e-9


def _consistency(result: dict[str, Any]) -> Suite:
    """The suite of a document the schema (:mod:`~evaluation.benchmark.schema`) accepts, whose
    fields also agree where a schema cannot compare them: the suite as the registry defines it,
    one source per run, every episode's method among the file's and its run among that method's
    runs; ``ValueError`` naming the first that does not."""
    suite = get_suite(result["suite"]["name"])
    if result["suite"] != suite.to_dict():
        raise ValueError(f"suite {suite.name!r}: the file's cells, seeds or reference differ from the suite's")
    methods = result["methods"]
    for m, info in methods.items():
        if len(info["sources"]) != info["runs"]:
            raise ValueError(f"method {m!r}: sources must be a list of {info['runs']} paths or names, one per run")
    for i, row in enumerate(result["episodes"]):
        if row["method"] not in methods:
            raise ValueError(f"episode {i}: method={row['method'][:80]!r} is not one of the file's methods; "
                             f"allowed: {', '.join(methods)}")
        if row["run"] >= methods[row["method"]]["runs"]:
            raise ValueError(f"episode {i} ({row['method']}): run={row['run']!r} is invalid; allowed: 0 … "
                             f"{methods[row['method']]['runs'] - 1}")
    return suite


def result_problems(result: Any, recompute: bool = True) -> list[str]:
    """What is wrong with a result document, one line each (empty: nothing): what its published
    schema refuses (:func:`~evaluation.benchmark.schema.schema_problems`: each line names the JSON
    path, the value and what is allowed), its suite and the fields that must agree
    (:func:`_consistency`), every method's score arrays' shapes and — ``recompute`` — scores that
    follow from its episodes and aggregates and intervals that follow from the scores."""
    out = schema_problems(result)
    if out:
        return out
    try:
        suite = _consistency(result)
    except ValueError as e:
        return [str(e)]
    legacy = result["format_version"] == 1
    for s in [*SCORES, *(o for o in OPTIONAL_SCORES if o in result["scores"])]:
        for m, info in result["methods"].items():
            shape = ((info["runs"] * suite.episodes, len(suite.cells)) if legacy
                     else (info["runs"], suite.episodes, len(suite.cells)))
            try:
                a = np.asarray(result["scores"][s].get(m, []), dtype=float)
            except ValueError:  # ragged: the schema allows nested arrays of any lengths
                a = np.empty(0)
            if a.shape != shape:
                out.append(f"method {m!r}: {s} scores must be of shape {shape} (runs, {suite.episodes} episodes, "
                           f"{len(suite.cells)} cells), finite and positive")
    if out or not recompute:
        return out
    try:
        again = score_matrices(suite, result["episodes"])
    except (ValueError, TypeError, KeyError, IndexError) as e:
        return [f"the episodes do not make the score arrays: {e}"]
    out += _clock_problems(suite, result)
    for s, per in again.items():
        if set(per) != set(result["methods"]):
            return [f"the episodes' methods {sorted(per)} are not the file's {sorted(result['methods'])}"]
        for m, a in per.items():
            stored = np.asarray(result["scores"][s][m], dtype=float).reshape(a.shape)
            if not np.allclose(a, stored, rtol=1e-12):
                out.append(f"method {m!r}: {s} scores do not follow from the episodes")
        if legacy:  # msenv ≤ 0.5: the points only (its intervals came from a bootstrap this code no longer runs)
            for m, a in per.items():
                pts, agg = stats.point(a), result["aggregates"][s].get(m, {})
                old = {"iqm": "iqm", "mean": "mean", "shortfall": "optimality_gap"}
                if not all(np.isclose(pts[k], (agg.get(o) or [np.nan])[0], rtol=AGGREGATE_RTOL)
                           for k, o in old.items()):
                    out.append(f"method {m!r}: {s} aggregates do not follow from the scores")
            continue
        kinds = {m: info.get("kind") for m, info in result["methods"].items()}
        rivals = rivals_of(suite, per, kinds)
        if result.get("statistics", {}).get("rivals", {}).get(s) != rivals:
            out.append(f"{s}: the rivals {result.get('statistics', {}).get('rivals', {}).get(s)} are not the ones the "
                       f"scores give, {rivals}")
        recomputed = aggregates(per, rivals)
        for m, agg in recomputed.items():
            stored = result["aggregates"][s].get(m)
            for k, v in agg.items():
                got = (stored or {}).get(k)
                if not (isinstance(got, list) and len(got) == 3
                        and np.allclose(got, v, rtol=AGGREGATE_RTOL, atol=1e-12)):
                    out.append(f"method {m!r}: {s} {k} is {got}, the scores give {[round(x, 6) for x in v]}")
    return out


def _clock_problems(suite: Suite, result: dict[str, Any]) -> list[str]:
    """The timed fields hold together: each episode's real-time throughput is its tokens over its
    time plus its rounds' decision time, and the file's decision times are the episodes' means
    (an edited decision time shows)."""
    rounds = {c.name: c.rounds for c in suite.cells}
    out = []
    for r in result["episodes"]:
        try:
            want = r["tokens"] / (r["time_s"] + rounds[r["cell"]] * r["decision_ms"] / 1e3)
            ok = np.isclose(r["realtime_throughput"], want, rtol=1e-9)
        except (KeyError, TypeError, ZeroDivisionError):
            ok = False
        if not ok:
            out.append(f"method {r.get('method')!r} cell {r.get('cell')} episode {r.get('episode')}: its real-time "
                       "throughput does not follow from its tokens, time and decision_ms")
            break
    for m, per_cell in result["decision_ms"].items():
        for cell, ms in per_cell.items():
            mine = [r["decision_ms"] for r in result["episodes"] if r["method"] == m and r["cell"] == cell]
            if not mine or not np.isclose(ms, np.mean(mine), rtol=1e-12):
                out.append(f"method {m!r}: decision_ms of cell {cell} is {ms!r}, its episodes give "
                           f"{np.mean(mine) if mine else None!r}")
    return out


def check_result(result: Any, recompute: bool = True) -> None:
    """Validate a result document (:func:`result_problems`); ``ValueError`` with one line per problem."""
    problems = result_problems(result, recompute)
    if problems:
        raise ValueError("\n".join(problems))


def row_problems(result: dict[str, Any], root: str | Path | None = None) -> list[str]:
    """What keeps a valid result document (:func:`check_result` passes) off the leaderboard, one
    line each (empty: it is a row): no recorded command, a validation or archived suite, a format
    older than :data:`FORMAT_VERSION`, and — ``root`` given, the folder its agent paths are relative
    to — an agent whose decision files changed since the row was measured. The leaderboard refuses
    a file with any; ``--check`` says the same lines."""
    out = []
    if result.get("command") is None:
        out.append(f"command=None: the file records no command (a run through the API); a leaderboard row needs the "
                   f"command that reproduces it ({COMMAND} …)")
    name = result["suite"]["name"]
    if name in suites.VALIDATION_SUITES:
        out.append(f"suite {name!r} is a validation suite (for choosing among agents): its results are not "
                   "leaderboard rows; keep the file elsewhere")
    elif name not in suites.SUITES:
        out.append(f"suite {name!r} is archived; its files belong in archive/ (current suites: "
                   f"{', '.join(suites.SUITES)})")
    if result["format_version"] != FORMAT_VERSION:
        out.append(f"format_version {result['format_version']} (msenv ≤ 0.5) has no provenance and intervals of an "
                   "earlier bootstrap: re-run its command")
    if root is not None:
        out += [line for m in result["methods"].values() for line in provenance.changed_agents(m, root)]
    return out


def reproducing_command(command: str) -> str:
    """The command that reproduces a result file's run with this release: its recorded command,
    with a former module path (:data:`COMMANDS`) replaced by :data:`COMMAND`."""
    for old in COMMANDS[1:]:
        if command.startswith(old):
            return COMMAND + command[len(old):]
    return command


def replayable(result: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The methods of a result whose episodes replay bit for bit, and the others with the reason."""
    ok, skipped = [], {}
    for m, info in result["methods"].items():
        if info.get("timed"):
            skipped[m] = "timed: its decisions depend on the clock, so its episodes do not replay bit for bit"
        elif info["kind"] not in ("controller", "agent"):
            skipped[m] = f"kind {info['kind']!r} is not replayable"
        else:
            ok.append(m)
    return ok, skipped


def trace_file_problems(result: dict[str, Any]) -> list[str]:
    """One line per trace file of the result's suite whose SHA-256 here is not the one the result
    recorded (``trace_files``: the file changed since the run, so its episodes cannot replay),
    naming the file and both digests, and per recorded file that cannot be read here; a result that
    records no trace files (written before they did) says nothing."""
    recorded = result.get("trace_files")
    if not isinstance(recorded, list):
        return []
    now = {Path(r["path"]).name: r for r in suite_trace_files(get_suite(result["suite"]["name"]), missing_ok=True)}
    out = []
    for rec in recorded:
        if not isinstance(rec, dict) or not isinstance(rec.get("path"), str):
            out.append(f"trace_files entry {str(rec)[:80]} is invalid; allowed: {{\"path\", \"sha256\", \"bytes\"}}")
            continue
        cur = now.get(Path(rec["path"]).name)
        if cur is None:
            out.append(f"trace file {rec['path']} (sha256 {rec.get('sha256')}), which the result read, cannot be read "
                       "here: its episodes cannot replay")
        elif cur["sha256"] != rec.get("sha256"):
            out.append(f"trace file {cur['path']}: sha256 {cur['sha256']} ({cur['bytes']} bytes) is not the "
                       f"{rec.get('sha256')} ({rec.get('bytes')} bytes) the result read from {rec['path']}: the file "
                       "changed since the run, so its episodes cannot replay")
    return out


#: the relative difference two replays of a float statistic may have: an episode's mean is summed in
#: the order numpy picks for the CPU and its version, which moves its last bits (a few units in the
#: last place), never its twelfth significant digit
REPLAY_RTOL = 1e-12


def same_statistic(recorded, replayed) -> bool:
    """A replayed statistic equals the recorded one: integers and text exactly, floats to
    :data:`REPLAY_RTOL`."""
    if isinstance(recorded, float) or isinstance(replayed, float):
        return math.isclose(float(recorded), float(replayed), rel_tol=REPLAY_RTOL, abs_tol=0.0)
    return recorded == replayed


def replay_problems(result: dict[str, Any], n: int, seed: int | None = None, root: str | Path = ".") -> list[str]:
    """Replay ``n`` episodes of the file drawn at random (seeded by ``seed``) among the replayable
    methods' and compare every statistic but the timed ones (:data:`CLOCK_FIELDS`) to the bit; one
    line per mismatch, and per agent whose decision files changed since the file was written. A
    trace file that changed since the run (:func:`trace_file_problems`) is named instead, and
    nothing is replayed."""
    changed_files = trace_file_problems(result)
    if changed_files:
        return changed_files
    suite = get_suite(result["suite"]["name"])
    ok, _ = replayable(result)
    rows = [r for r in result["episodes"] if r["method"] in ok]
    rng = np.random.default_rng(seed)
    picks = [rows[i] for i in sorted(rng.choice(len(rows), size=min(n, len(rows)), replace=False))] if rows else []
    out, changed = [], {}
    cells = {c.name: c for c in suite.cells}
    for row in picks:
        info = result["methods"][row["method"]]
        if info["kind"] == "agent":
            rec = info.get("agents", [{}] * info["runs"])[row["run"]]
            path = rec.get("path", info["sources"][row["run"]])
            if path not in changed:
                changed[path] = provenance.changed_agents({"agents": [rec]} if rec.get("files") else {}, root)
                out += changed[path]
            if changed[path]:
                continue
            entry = Entry(row["label"], agent_loader()(str(Path(root) / path), row["label"]))
        else:
            entry = parse_entry(info["sources"][0])
        again = asdict(run_episode(entry.factory(), entry_config(entry, cells[row["cell"]].config()), row["seed"],
                                   row["label"], row["episode"]))
        for k, v in again.items():  # a statistic added after the file was written is not in it
            if k not in CLOCK_FIELDS and k in row and not same_statistic(row[k], v):
                out.append(f"method {row['method']!r} cell {row['cell']} episode {row['episode']} (seed {row['seed']}, "
                           f"run {row['run']}): {k} replays as {v!r}, the file has {row.get(k)!r}")
    return out


__all__ = ["AGGREGATE_RTOL", "CLOCK_FIELDS", "COMMANDS", "MAX_RUNS", "check_result", "replay_problems", "replayable",
           "reproducing_command", "result_problems", "row_problems", "same_statistic", "trace_file_problems"]
