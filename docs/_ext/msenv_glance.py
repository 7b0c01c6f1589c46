"""Sphinx extension: the page "Results at a glance", generated at the start of every build from the
committed result files — the test suites' ``docs/leaderboard/*.json`` and the sensitivity run's
``docs/figures/sensitivity_extended.csv`` — so it says what they say and nothing else: who leads each
suite (throughput, and charged its decision time), where learned agents lose, and which of the
paper's claims hold under the default reading of the reconstruction and which only with
heterogeneous drafting (the Hetero ids' spread).

Every score is printed through the ``{iqm}`` role (``docs/_ext/msenv_figures.py``): its value is
read from the result file and dated on the page. :func:`page` needs no Sphinx (the tests call it).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
BOARD = DOCS / "leaderboard"
SENSITIVITY = DOCS / "figures" / "sensitivity_extended.csv"
OUT = DOCS / "generated" / "results-at-a-glance.md"
#: the suites in the order the page shows them (others, if any, follow alphabetically)
ORDER = ("paper-v1", "traces-v1", "dynamic-v1", "cells-in-v1", "cells-out-v1")
#: the sensitivity reading that is the Hetero ids' drafting spread
HETERO_READING = "drafting U[1, 2]"
#: the paper's claims, as the sensitivity page states them
CLAIMS = {
    "C1": "Fig 7: goodput rises with the downlink budget $P_{\\mathrm{dl}}$",
    "C2": "Fig 7: … and saturates",
    "C3": "Fig 7: the mean draft length rises with $P_{\\mathrm{dl}}$",
    "C4": "Fig 7: the mean draft length is about 2–3 at 10 dBm",
    "C5": "Fig 7: the uplink share falls with $P_{\\mathrm{dl}}$ but stays above 0",
    "C6": "Fig 9: optimal mode selection is best at every point",
    "C7": "Fig 9: all-downlink falls behind it as $K$ grows",
    "C8": "Fig 11: the greedy beats optimal uniform",
    "C9": "Fig 11: the greedy beats computation-only",
}
KINDS = {"throughput": "throughput", "realtime": "charged its decision time"}


def suites(board: Path = BOARD) -> list[tuple[str, dict]]:
    """The committed result files, one per suite (a file named after its suite), in :data:`ORDER`."""
    docs = {}
    for path in sorted(board.glob("*.json")):
        doc = json.loads(path.read_text())
        if path.stem == doc["suite"]["name"]:
            docs[path.stem] = doc
    names = [n for n in ORDER if n in docs] + sorted(set(docs) - set(ORDER))
    return [(n, docs[n]) for n in names]


def _ranked(doc: dict, kind: str) -> list[tuple[str, list[float]]]:
    """The suite's rivals on one score, best first (the oracles, references and not rivals, left out)."""
    oracles = set(doc["suite"].get("oracles") or ())
    rows = [(m, a["iqm"]) for m, a in doc["aggregates"].get(kind, {}).items() if m not in oracles]
    return sorted(rows, key=lambda r: -r[1][0])


def leader(doc: dict, kind: str) -> tuple[str, list[str]]:
    """The method with the highest IQM, and those whose interval reaches its point estimate's
    interval (tied with it within the 95% intervals)."""
    rows = _ranked(doc, kind)
    top, (_, lo, _) = rows[0][0], rows[0][1]
    return top, [m for m, (_, _, hi) in rows[1:] if hi >= lo]


def _agents(doc: dict) -> set[str]:
    return {m for m, info in doc["methods"].items() if info.get("kind") == "agent"}


def _role(suite: str, method: str, kind: str) -> str:
    return f"`{method}` {{iqm}}`{suite} {method} {kind}`"


def _lead_cell(suite: str, doc: dict, kind: str) -> str:
    top, ties = leader(doc, kind)
    text = _role(suite, top, kind)
    if ties:
        text += ", level within the intervals with " + ", ".join(f"`{m}`" for m in ties)
    return text


def learned_verdict(suite: str, doc: dict) -> str:
    """Where learned agents stand on a suite's throughput: leading, level, or behind (and whom)."""
    agents = _agents(doc)
    rows = _ranked(doc, "throughput")
    if not agents:
        return "no learned agent plays this suite"
    best_agent = next(r for r in rows if r[0] in agents)
    best_rule = next(r for r in rows if r[0] not in agents)
    ref = doc["suite"]["reference"]
    a_pt, a_lo, a_hi = best_agent[1]
    r_pt, r_lo, r_hi = best_rule[1]
    agent, rule = _role(suite, best_agent[0], "throughput"), _role(suite, best_rule[0], "throughput")
    if a_lo > r_hi:
        return f"a learned agent leads: {agent}, ahead of the best controller, {rule}"
    if a_hi < r_lo:
        below_ref = a_hi < 1.0
        return (f"**learned agents lose**: the best, {agent}, is behind {rule}"
                + (f" and below the reference `{ref}`" if below_ref else ""))
    return f"level: the best learned agent, {agent}, and the best controller, {rule}, overlap"


def claims(path: Path = SENSITIVITY) -> dict[str, dict[str, dict]]:
    """reading → claim → its row (holds, value, detail) of the sensitivity run."""
    out: dict[str, dict[str, dict]] = {}
    with open(path) as fh:
        for row in csv.DictReader(fh):
            out.setdefault(row["reading"], {})[row["claim"]] = row
    return out


def _holds(row: dict | None) -> str:
    if row is None:
        return "—"
    return "✓ holds" if row["holds"] == "True" else "✗ does not hold"


def page(board: Path = BOARD, sensitivity: Path = SENSITIVITY) -> str:
    results = suites(board)
    lines = ["# Results at a glance", "",
             ("What the committed results say, generated at every build of this site from the test suites' "
             "result files (`docs/leaderboard/*.json`, the [leaderboard](leaderboard.md)) and the sensitivity "
             "run (`docs/figures/sensitivity_extended.csv`, [how the conclusions depend on the reconstruction]"
             "(../results/sensitivity.md)). A score is the interquartile mean (IQM) of a method's throughput "
             "relative to the suite's reference controller on the same test episodes, with its 95% interval "
             "over training seeds and test episodes; *charged its decision time* adds each decision's wall "
             "time to its round. Each figure's mark links to the date of its run."), "",
             "## Who leads each suite", ""]
    for suite, doc in results:
        lines.append(f"- **`{suite}`**, relative to `{doc['suite']['reference']}`. Throughput: "
                     f"{_lead_cell(suite, doc, 'throughput')}. Charged its decision time: "
                     f"{_lead_cell(suite, doc, 'realtime')}.")
    lines += ["", "What each suite holds:", ""]
    lines += [f"- `{s}`: {' '.join(d['suite']['description'].split()).split('. ')[0].rstrip('.')}." for s, d in results]
    lines += ["", "## Where learned agents stand", ""]
    for suite, doc in results:
        lines.append(f"- `{suite}`: {learned_verdict(suite, doc)}.")
    rows = claims(sensitivity)
    default, hetero = rows.get("default", {}), rows.get(HETERO_READING, {})
    held = [c for c in CLAIMS if default.get(c, {}).get("holds") == "True"]
    failed = [c for c in CLAIMS if c in default and c not in held]
    only_hetero = [c for c in failed if hetero.get(c, {}).get("holds") == "True"]
    lines += ["", "## The paper's claims under our reconstruction", "",
              f"The paper's equations were lost; msenv reconstructs them ([the model](../model.md)). Under the "
              f"default reading {len(held)} of the paper's {len(CLAIMS)} claims hold and {len(failed)} do not "
              f"({', '.join(failed)}); "
              + (f"{', '.join(only_hetero)} hold{'s' if len(only_hetero) == 1 else ''} only with heterogeneous "
                 "drafting speeds ($T_k^{\\mathrm{dft}}$ spread $\\mathcal{U}[1, 2]$ around the reference, the "
                 "spread of `msenv/MultiSpin-Hetero-v0`)" if only_hetero else
                 "none of them holds with heterogeneous drafting speeds either")
              + ". Each claim is tested on paired per-drop differences of the reduced Figs 7, 9 and 11 "
              "(`python -m experiments sensitivity --extended --out docs/figures`); a claim holds when the 95% "
              "interval of its difference excludes 0.", "",
              "| claim | default reading | heterogeneous drafting, $\\mathcal{U}[1, 2]$ | behind it (default) |",
              "|---|---|---|---|"]
    for c, text in CLAIMS.items():
        d = default.get(c)
        detail = " ".join(d["detail"].split()).replace("|", "/") if d else ""
        if detail.startswith("mean γ at"):  # the value is the mean draft length itself
            detail = f"mean γ {float(d['value']):.2f}" + detail[len("mean γ"):]
        lines.append(f"| **{c}** {text} | {_holds(d)} | {_holds(hetero.get(c))} | {detail} |")
    lines += ["", ("Every other reading the sensitivity run tried, and what survives under each: "
              "[the sensitivity page](../results/sensitivity.md)."), ""]
    return "\n".join(lines)


def _on_builder_inited(app) -> None:
    from plain_math import markdown_math

    OUT.parent.mkdir(exist_ok=True)
    text = markdown_math(page())
    if not OUT.exists() or OUT.read_text() != text:
        OUT.write_text(text)


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
