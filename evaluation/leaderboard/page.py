"""The leaderboard page: the rows of committed benchmark result files, as Markdown.

Every ``*.json`` in a folder (the docs keep theirs in ``docs/leaderboard/``) is a result file
of ``python -m evaluation.benchmark`` that passes :func:`~evaluation.benchmark.check.check_result`
and :func:`~evaluation.benchmark.check.row_problems` (what ``--check`` applies too); the page
lists, per suite, every method of every file with its aggregates, CIs, runs (training seeds),
decision time, the machine and the command that reproduces it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import suites
from ..benchmark.check import reproducing_command, result_problems, row_problems
from ..benchmark.score import summary_rows
from ..provenance import file_date


def load_results(folder: str | Path, root: str | Path | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Every result file in ``folder``, checked: its scores, aggregates and intervals recomputed
    (:func:`~evaluation.benchmark.check.result_problems`), and a leaderboard row
    (:func:`~evaluation.benchmark.check.row_problems`: its command recorded, a current suite and
    format, and — ``root`` given, the folder agent paths are relative to — every agent's decision
    files still those its row recorded). A file that fails raises ``ValueError``, one line per
    problem, each naming the file."""
    if not Path(folder).is_dir():
        raise ValueError(f"{folder}: no such folder of result files")
    out = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except (ValueError, RecursionError) as e:
            raise ValueError(f"{path}: not readable as JSON ({type(e).__name__}: {e})") from None
        problems = result_problems(doc) or row_problems(doc, root)
        if problems:
            raise ValueError("\n".join(f"{path}: {p}" for p in problems))
        out.append((path, doc))
    return out


def _training(info: dict[str, Any]) -> str:
    """A learned row's training budget and selection, from its agents' training records."""
    if info["kind"] != "agent":
        return "—"
    recs = [a.get("training") for a in info.get("agents", [])]
    if not recs or any(r is None for r in recs):
        return "not recorded"
    steps = sorted({r["timesteps"] for r in recs})
    walls = [r["wall_s"] for r in recs if r.get("wall_s")]
    text = "/".join(f"{s / 1e3:.0f}k" for s in steps) + " steps"
    if walls:
        text += f", {min(walls) / 60:.0f}–{max(walls) / 60:.0f} min" if len(walls) > 1 else f", {walls[0] / 60:.0f} min"
    sel = {r.get("selection") for r in recs} - {None}
    return text + ("; chosen on " + ", ".join(_text(s) for s in sorted(sel)) if sel else "")


def _text(s: Any) -> str:
    """A string of a result file as page text: HTML escaped, on one line, no table cell break."""
    import html

    return html.escape(" ".join(str(s).split())).replace("|", "\\|").replace("`", "'").replace("*", "\\*")


def _code(s: Any) -> str:
    """A string of a result file as an inline code span (no backtick or line break can end it)."""
    return "`" + " ".join(str(s).split()).replace("`", "'").replace("|", "\\|") + "`"


def run_date(path: Path, doc: dict[str, Any]) -> str:
    """When a result file's run was made: the date it records, or — a file that records none (msenv
    ≤ 0.5) — the date of the commit that added it, said as such."""
    if doc.get("date"):
        return doc["date"]
    committed = file_date(path)
    return f"by {committed} (committed)" if committed else "not recorded"


def _ci(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.3f} [{row[key + '_lo']:.3f}, {row[key + '_hi']:.3f}]"


def _cells_table(suite) -> list[str]:
    lines = ["| cell | id | overrides | episodes × rounds | test seeds |", "|---|---|---|---|---|"]
    for c in suite.cells:
        over = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in c.overrides.items()) or "—"
        lines.append(f"| {c.name} | `{c.env_id}` | {over} | {c.episodes} × {c.rounds} | {c.seed} … "
                     f"{c.seed + c.episodes - 1} |")
    return lines


def markdown(results: Iterable[tuple[Path, dict[str, Any]]], figures: str = "") -> str:
    """The leaderboard page; ``figures`` is the relative folder of the result files' PNGs."""
    by_suite: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for path, doc in results:
        by_suite.setdefault(doc["suite"]["name"], []).append((path, doc))
    parts = []
    for name, suite in suites.SUITES.items():
        parts += [f"## {name}", "", suite.description, "", *_cells_table(suite), ""]
        files = by_suite.get(name, [])
        if not files:
            parts += ["No result file of this suite is committed yet.", ""]
            continue
        rivals = sorted({doc["statistics"]["rivals"]["throughput"]["best_rival"] for _, doc in files})
        parts += [f"Scores are throughput relative to `{suite.reference}` on the same episode; 95% intervals of the "
                  "two-way bootstrap (training seeds and test episodes; one seed: episodes only). Best rival: "
                  + ", ".join(f"`{r}`" for r in rivals) + "."
                  + (" Oracles (upper references that see what a server cannot; never a rival): "
                     + ", ".join(f"`{o}`" for o in suite.oracles) + "." if suite.oracles else "")
                  + " Seeds marked *shared* were trained by a `train.py` "
                  "that gave seed s the environment seeds s … s + 15, so they share streams.", "",
                  "| method | seeds | IQM | P(> best rival) | real-time IQM | decide ms |",
                  "|---|---|---|---|---|---|"]
        rows = []
        for path, doc in files:
            for r in summary_rows(doc):
                rows.append((r, path, doc))
        rows.sort(key=lambda t: -t[0]["throughput_iqm"])
        more = ["", ("Each method's kind and training, its shortfall below the reference (the mean of "
                     "max(0, 1 − score)) and its probability of beating the reference:"), "",
                "| method | kind | training | measured | shortfall | P(> reference) |", "|---|---|---|---|---|---|"]
        for r, path, doc in rows:
            info = doc["methods"][r["method"]]
            seeds = str(r["runs"]) + (f" ({info['seed_streams']})" if info["kind"] == "agent" else "")
            parts.append(f"| {r['method']} | {seeds} | {_ci(r, 'throughput_iqm')} | "
                         f"{_ci(r, 'throughput_p_improvement_over_best_rival')} | {_ci(r, 'realtime_iqm')} | "
                         f"{r['decision_ms']:.3f} |")
            more.append(f"| {r['method']} | {r['kind']} | {_training(info)} | {run_date(path, doc)} | "
                        f"{_ci(r, 'throughput_shortfall')} | "
                        f"{_ci(r, 'throughput_p_improvement_over_reference')} |")
        parts += more
        tails = [r for r, _, doc in rows if "device_p10" in doc["aggregates"]]
        if tails:
            parts += ["", ("The worst-served devices: each episode's 10th percentile, over its devices, of a "
                      "device's goodput $\\sum_t N_{k,t} / \\sum_t T_t$, relative to the reference's on the same "
                      "episode (IQM, 95% interval):"), "", "| method | device 10th-percentile goodput |", "|---|---|",
                      *[f"| {r['method']} | {_ci(r, 'device_p10_iqm')} |" for r in tails]]
        parts.append("")
        for path, doc in files:
            m = doc["machine"]
            learned = [_code(k) + ": " + ", ".join(_code(s) for s in v["sources"]) for k, v in doc["methods"].items()
                       if v["kind"] == "agent"]
            parts += [f"**{_text(path.name)}** — measured {run_date(path, doc)}; reproduce: "
                      f"{_code(reproducing_command(doc['command']))}. Played in {doc['wall_s'] / 60:.1f} "
                      f"min wall on {_text(m.get('cpus'))} cores ({_text(m['processor'])}, {_text(m['platform'])}), "
                      f"{_text(m.get('workers', 1))} worker(s), thread settings {_code(json.dumps(m.get('threads')))}; "
                      f"msenv {_text(doc.get('msenv_version'))}."
                      + (" Agents: " + "; ".join(learned) + "." if learned else "")
                      + f" Code: commit {_text((doc.get('code', {}).get('commit') or 'unknown')[:10])}"
                      + (" (dirty)" if doc.get("code", {}).get("dirty") else "") + "."
                      + (f" {_text(doc['note'])}" if doc.get("note") else ""), ""]
            if figures:
                parts += [(f"[![{name} aggregates and performance profile]({figures}/{path.stem}.png)]"
                           f"({figures}/{path.stem}.png)"), ""]
    return "\n".join(parts)


__all__ = ["load_results", "markdown", "run_date"]
