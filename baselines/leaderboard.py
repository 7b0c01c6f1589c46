"""The leaderboard: the rows of committed benchmark result files, as a Markdown page.

Every ``*.json`` in a folder (the docs keep theirs in ``docs/leaderboard/``) is a result file
of ``python -m baselines.benchmark`` that passes :func:`~baselines.benchmark.check_result`; the
page lists, per suite, every method of every file with its aggregates, CIs, runs (training
seeds), decision time, the machine and the command that reproduces it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .benchmark import check_result, summary_rows
from .suites import SUITES


def load_results(folder: str | Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every result file in ``folder``, checked (a bad file raises ``ValueError`` naming it)."""
    out = []
    for path in sorted(Path(folder).glob("*.json")):
        doc = json.loads(path.read_text())
        try:
            check_result(doc)
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: {e}") from None
        out.append((path, doc))
    return out


def _ci(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.3f} [{row[key + '_lo']:.3f}, {row[key + '_hi']:.3f}]"


def _cells_table(suite) -> list[str]:
    lines = ["| cell | id | overrides | episodes × rounds | test seeds |", "|---|---|---|---|---|"]
    for c in suite.cells:
        over = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in c.overrides.items()) or "—"
        lines.append(f"| {c.name} | `{c.env_id}` | {over} | {c.episodes} × {c.rounds} | {c.seed} … {c.seed + c.episodes - 1} |")
    return lines


def markdown(results: Iterable[tuple[Path, dict[str, Any]]], figures: str = "") -> str:
    """The leaderboard page; ``figures`` is the relative folder of the result files' PNGs."""
    by_suite: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for path, doc in results:
        by_suite.setdefault(doc["suite"]["name"], []).append((path, doc))
    parts = []
    for name, suite in SUITES.items():
        parts += [f"## {name}", "", suite.description, "", *_cells_table(suite), ""]
        files = by_suite.get(name, [])
        if not files:
            parts += ["No result file of this suite is committed yet.", ""]
            continue
        parts += [f"Scores are throughput relative to `{suite.reference}` on the same episode; a run is one "
                  "(training seed, test episode) pair; 95% stratified-bootstrap CIs.", "",
                  "| method | kind | seeds | IQM | mean | optimality gap | P(> reference) | real-time IQM | decide ms |",
                  "|---|---|---|---|---|---|---|---|---|"]
        rows = []
        for path, doc in files:
            for r in summary_rows(doc):
                rows.append((r, path, doc))
        rows.sort(key=lambda t: -t[0]["throughput_iqm"])
        for r, path, doc in rows:
            parts.append(f"| {r['method']} | {r['kind']} | {r['runs']} | {_ci(r, 'throughput_iqm')} | "
                         f"{_ci(r, 'throughput_mean')} | {_ci(r, 'throughput_optimality_gap')} | "
                         f"{_ci(r, 'throughput_p_improvement')} | {_ci(r, 'realtime_iqm')} | {r['decision_ms']:.3f} |")
        parts.append("")
        for path, doc in files:
            m = doc["machine"]
            learned = [f"`{k}`: " + ", ".join(f"`{s}`" for s in v["sources"]) for k, v in doc["methods"].items()
                       if v["kind"] == "agent"]
            parts += [f"**{path.name}** — reproduce: `{doc['command']}`. Played in {doc['wall_s'] / 60:.1f} min wall "
                      f"on {m['cpus']} cores ({m['processor']}, {m['platform']}), {m.get('workers', 1)} worker(s), "
                      f"thread settings {json.dumps(m['threads'])}; msenv {doc['msenv_version']}."
                      + (" Agents: " + "; ".join(learned) + "." if learned else "")
                      + (f" {doc['note']}" if doc.get("note") else ""), ""]
            if figures:
                parts += [f"[![{name} aggregates and performance profile]({figures}/{path.stem}.png)]"
                          f"({figures}/{path.stem}.png)", ""]
    return "\n".join(parts)


__all__ = ["load_results", "markdown"]
