"""Sphinx extension: every measured figure that more than one page prints comes from one source.

``docs/figures.toml`` holds each figure once — its text as printed, the command that measured it,
the release it was measured for, when and on what machine — or says which committed result file
and key it is read from (``docs/leaderboard/*.json``, ``docs/figures/**/cells.csv``), so a re-run
result file changes every page at the next build. Pages print them with roles:

- ``{measured}`name``` — an entry of ``docs/figures.toml`` (hover: its command and release);
- ``{iqm}`SUITE METHOD KIND``` — a leaderboard aggregate, ``point [low, high]``, from
  ``docs/leaderboard/SUITE.json`` (KIND: ``throughput`` or ``realtime``);
- ``{sweep}`DIR CELL K CONTROLLER``` — a sweep entry, ``rel ± ci / real-time rel``, from
  ``docs/figures/DIR/cells.csv``;

and the directive ``sweep-table`` writes a whole table of the sweep from those CSV files. A name,
key or row that is missing fails the build with a message saying which. The page
``generated/figures`` lists every entry with its provenance. README (rendered by GitHub) prints the
literal values; ``tests/test_figures.py`` holds README and every page to this source.

The loading and checking functions need no Sphinx (the test imports them).
"""

from __future__ import annotations

import csv
import json
import re
from functools import cache
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: Sphinx's own dependency
    import tomli as tomllib

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
SOURCE = DOCS / "figures.toml"
OUT = DOCS / "generated" / "figures.md"
REQUIRED = ("what", "command")
#: ``{field}``, ``{field:spec}``, ``{field/1000:spec}``, ``{0:.3f}``
FIELD = re.compile(r"\{(\w+)(?:/(\d+(?:\.\d+)?))?(?::([^}]*))?\}")
#: a role on a page: {measured}`name`, {iqm}`…`, {sweep}`…`
ROLE = re.compile(r"\{(measured|iqm|sweep)\}`([^`]+)`")
#: a heading whose section holds superseded figures, labelled with their release
HISTORY = re.compile(r"^(#+) .*\bhistory\b", re.I)


class FigureError(Exception):
    """A figure's source is missing or does not say what it must (fails the docs build)."""


# ---------------------------------------------------------------------- reading the sources
def load_source(path: Path = SOURCE) -> dict[str, dict]:
    """The entries of ``docs/figures.toml``, checked: each has what/command, and either a text with
    its version and machine, or a result file with a key/row and a format."""
    with open(path, "rb") as f:
        entries = tomllib.load(f)
    for name, e in entries.items():
        missing = [k for k in REQUIRED if not e.get(k)]
        if "text" in e:
            missing += [k for k in ("version", "machine", "measured") if not e.get(k)]
        elif "from" in e:
            missing += [k for k in ("format",) if not e.get(k)]
            if ("key" in e) == ("row" in e):
                missing.append("key (a JSON file) or row (a CSV file)")
        else:
            missing.append("text or from")
        if missing:
            raise FigureError(f"{path.name}: entry {name!r} lacks {', '.join(missing)}")
        e["pattern"] = [e["pattern"]] if isinstance(e.get("pattern"), str) else list(e.get("pattern", []))
    return entries


@cache
def _json(path: str) -> dict:
    p = ROOT / path
    if not p.is_file():
        raise FigureError(f"result file {path} does not exist")
    return json.loads(p.read_text())


@cache
def _csv(path: str) -> tuple[dict, ...]:
    p = ROOT / path
    if not p.is_file():
        raise FigureError(f"result file {path} does not exist")
    with open(p, newline="") as f:
        return tuple(csv.DictReader(f))


def _dig(doc, key: list, where: str):
    for i, k in enumerate(key):
        try:
            doc = doc[k]
        except (KeyError, IndexError, TypeError):
            have = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
            raise FigureError(f"{where}: no key {key[:i + 1]!r} (there: {have})") from None
    return doc


def csv_row(path: str, where: str, **match: str) -> dict:
    """The one row of a result CSV whose columns equal ``match``."""
    rows = [r for r in _csv(path) if all(r.get(c) == str(v) for c, v in match.items())]
    if len(rows) != 1:
        raise FigureError(f"{where}: {len(rows)} rows of {path} have {match} (one expected)")
    return rows[0]


def _format(fmt: str, fields, where: str) -> str:
    def one(m: re.Match) -> str:
        name, div, spec = m.group(1), m.group(2), m.group(3) or ""
        try:
            v = fields[int(name)] if name.isdigit() else fields[name]
        except (KeyError, IndexError, TypeError):
            raise FigureError(f"{where}: the result has no field {name!r}") from None
        if v in ("", None):
            raise FigureError(f"{where}: field {name!r} is empty")
        if div or spec:
            v = float(v) / float(div or 1)
        return format(v, spec)

    return FIELD.sub(one, fmt)


def value(name: str, entry: dict) -> str:
    """The figure as printed: the entry's text, or its result file's value formatted."""
    if "text" in entry:
        return entry["text"]
    where = f"figures.toml [{name}] ({entry['from']})"
    if "key" in entry:
        return _format(entry["format"], _dig(_json(entry["from"]), entry["key"], where), where)
    return _format(entry["format"], csv_row(entry["from"], where, **entry["row"]), where)


def provenance(name: str, entry: dict) -> dict:
    """What the generated page and the hover text say: version, machine, command, when, source."""
    out = {k: entry.get(k, "") for k in ("what", "command", "version", "measured", "machine", "superseded")}
    if "from" in entry:
        out["source"] = entry["from"]
        if entry["from"].endswith(".json"):
            doc = _json(entry["from"])
            out["version"] = out["version"] or doc.get("msenv_version", "")
            m = doc.get("machine") or {}
            out["machine"] = out["machine"] or (f"{m.get('cpus')} CPUs, {m.get('workers')} workers, "
                                                f"threads `{json.dumps(m.get('threads'))}`" if m else "")
            out["command"] = doc.get("command") or out["command"]
    return out


_DATE = re.compile(r"\d{4}-\d\d-\d\d")


def file_date(path: str) -> str:
    """The date of a committed result file's run: the date it records, else the date of the commit
    that last wrote it (said so), else ``not recorded``."""
    import subprocess

    if path.endswith(".json") and _json(path).get("date"):
        return _json(path)["date"]
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", path], cwd=ROOT, capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return f"{out} (the date it was committed)" if out else "not recorded"


def dated(role: str, arg: str, entries: dict[str, dict]) -> dict[str, str]:
    """What a page's note under a figure says (:func:`add_notes`): ``what``, ``date`` (a
    ``YYYY-MM-DD`` in it) and ``command`` — for ``{measured}`` from its entry,
    for ``{iqm}`` and ``{sweep}`` from the result file (a former module path as today's)."""
    if role == "measured":
        e = entries[arg]
        p = provenance(arg, e)
        command = p["command"]
        date = p["measured"] or (file_date(e["from"]) if "from" in e else "")
        if not _DATE.search(date):
            raise FigureError(f"figures.toml [{arg}]: no date (YYYY-MM-DD) in its measured field or result file")
        return {"what": p["what"], "date": date, "command": command, "version": p["version"]}
    if role == "iqm":
        suite, method, kind = arg.split()
        path = f"docs/leaderboard/{suite}.json"
        doc = _json(path)
        return {"what": f"{method} on {suite}: IQM of {kind} relative to the reference [95% CI], from `{path}`",
                "date": file_date(path), "version": doc.get("msenv_version", ""),
                "command": re.sub(r"^python -m baselines\.benchmark", "python -m evaluation.benchmark",
                                  doc.get("command") or "")}
    folder = arg.split()[0]
    path = f"docs/figures/{folder}/cells.csv"
    return {"what": f"the sweep's row {' '.join(arg.split()[1:])}: throughput relative to the greedy ± 95% CI / "
                    f"charged its decision time, from `{path}`",
            "date": file_date(path), "command": f"python -m experiments cells --out docs/figures/{folder}",
            "version": ""}


def values(entries: dict[str, dict] | None = None) -> dict[str, str]:
    """Every entry's value (raises FigureError on the first one that cannot be read)."""
    entries = load_source() if entries is None else entries
    return {name: value(name, e) for name, e in entries.items()}


def iqm(spec: str) -> str:
    """``SUITE METHOD KIND`` → the leaderboard aggregate ``point [low, high]`` (3 decimals)."""
    try:
        suite, method, kind = spec.split()
    except ValueError:
        raise FigureError(f"iqm role {spec!r}: expected 'SUITE METHOD KIND'") from None
    path = f"docs/leaderboard/{suite}.json"
    point = _dig(_json(path), ["aggregates", kind, method, "iqm"], f"iqm {spec!r} ({path})")
    return _format("{0:.3f} [{1:.3f}, {2:.3f}]", point, spec)


def sweep(spec: str) -> str:
    """``DIR CELL K CONTROLLER`` → ``rel ± ci / real-time rel`` from docs/figures/DIR/cells.csv."""
    try:
        folder, cell, k, controller = spec.split(maxsplit=3)
    except ValueError:
        raise FigureError(f"sweep role {spec!r}: expected 'DIR CELL K CONTROLLER'") from None
    path = f"docs/figures/{folder}/cells.csv"
    row = csv_row(path, f"sweep {spec!r}", cell=cell, k=k, controller=controller)
    return _format("{rel_throughput:.3f} ± {rel_throughput_ci95:.3f} / {rel_realtime:.3f}", row, spec)


# ---------------------------------------------------------------------- the sweep's tables
def _decision(ms: float) -> str:
    return f"{ms:.2f}" if ms < 10 else f"{ms:.0f}"


def decision_table(files: list[str], cells: list[str], rows: list[tuple[str, str]]) -> list[list[str]]:
    """Milliseconds per decision (header first): a row per controller and cell, a column per K; a
    controller's ``(timed only)`` rows fill the K where it was timed but not played."""
    data = [r for f in files for r in _csv(f)]
    ks = sorted({int(r["k"]) for r in data if r["cell"] in cells})
    by = {(r["cell"], r["controller"], int(r["k"])): r for r in data}
    table = [["controller", "cell", *(f"K = {k}" for k in ks)]]
    for controller, label in rows:
        for cell in cells:
            line = [label, cell]
            for k in ks:
                r = by.get((cell, controller, k)) or by.get((cell, f"{controller} (timed only)", k))
                line.append(_decision(float(r["decision_ms"])) if r and r.get("decision_ms") else "—")
            if all(x == "—" for x in line[2:]):
                raise FigureError(f"sweep-table: no decision times of {controller!r} in cell {cell!r} of {files}")
            table.append(line)
    return table


def sweep_table(files: list[str], cell: str, rows: list[tuple[str, str]], reference_label: str = "",
                decision: bool = False) -> list[list[str]]:
    """A sweep table (header first) from result CSVs (later files add their K): a row per
    (controller, label); per K ``rel ± ci / real-time rel``, the best real-time of a column in
    bold, ``—`` where the controller did not play; the reference's row in tokens/s. With
    ``decision``: milliseconds per decision instead."""
    data = [r for f in files for r in _csv(f) if r["cell"] == cell]
    if not data:
        raise FigureError(f"sweep-table: no rows of cell {cell!r} in {files}")
    ks = sorted({int(r["k"]) for r in data})
    by = {(r["controller"], int(r["k"])): r for r in data}
    for controller, _ in rows:
        if not any(c == controller for c, _ in by):
            raise FigureError(f"sweep-table: controller {controller!r} not in {files} for cell {cell!r}")
    shown = {c for c, _ in rows}
    played = {k: [r for (c, kk), r in by.items() if kk == k and c in shown and r["rel_realtime"] not in ("", None)]
              for k in ks}
    best = {k: max((float(r["rel_realtime"]) for r in played[k]), default=None) for k in ks}
    table = [["controller", *(f"K = {k}" for k in ks)]]
    for controller, label in rows:
        line = [label]
        for k in ks:
            r = by.get((controller, k))
            if decision:
                ms = r and r.get("decision_ms")
                line.append(_decision(float(ms)) if ms else "—")
            elif r is None or r["rel_throughput"] in ("", None):
                line.append("—")
            elif (float(r["rel_throughput"]) == 1.0 and float(r["rel_throughput_ci95"]) == 0.0
                  and controller == rows[0][0]):
                line.append(f"{float(r['throughput']):.1f}")
            else:
                rt = float(r["rel_realtime"])
                rt_text = f"{rt:.3f}"
                if rt == best[k] and controller != rows[0][0]:
                    rt_text = f"**{rt_text}**"
                line.append(f"{float(r['rel_throughput']):.3f} ± {float(r['rel_throughput_ci95']):.3f} / {rt_text}")
        table.append(line)
    if reference_label and not decision:
        table[1][0] = reference_label
    return table


# ---------------------------------------------------------------------- checking pages
def checked_text(text: str) -> str:
    """A page without its History sections (superseded figures, each labelled with its release)."""
    out, skip_level = [], 0
    in_code = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        m = re.match(r"^(#+) ", line) if not in_code else None
        if m:
            level = len(m.group(1))
            if skip_level and level <= skip_level:
                skip_level = 0
            if not skip_level and HISTORY.match(line):
                skip_level = level
        if not skip_level:
            out.append(line)
    return "".join(out)


def rendered(text: str, vals: dict[str, str]) -> str:
    """A page's text with its figure roles replaced by their values, as the site prints it."""
    def one(m: re.Match) -> str:
        role, arg = m.groups()
        if role == "measured":
            return vals.get(arg, m.group(0))
        try:
            return (iqm if role == "iqm" else sweep)(arg)
        except FigureError:
            return m.group(0)

    return ROLE.sub(one, text)


def mismatches(text: str, entries: dict[str, dict], vals: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, printed, source value) for every place a page prints a figure other than its source's
    (roles count as what they render; History sections are skipped)."""
    text = rendered(checked_text(text), vals)
    bad = []
    for name, e in entries.items():
        for pat in e["pattern"]:
            for m in re.finditer(pat, text):
                if m.group(1) != vals[name]:
                    bad.append((name, m.group(1), vals[name]))
    return bad


def unknown_roles(text: str, entries: dict[str, dict]) -> list[str]:
    """Roles of a page that name no figure (or a result that cannot be read)."""
    bad = []
    for role, arg in ROLE.findall(re.sub(r"``.*?``", "", text, flags=re.S)):  # a literal is no role
        try:
            if role == "measured":
                if arg not in entries:
                    raise FigureError(f"no entry {arg!r} in figures.toml")
            else:
                (iqm if role == "iqm" else sweep)(arg)
        except FigureError as err:
            bad.append(f"{{{role}}}`{arg}`: {err}")
    return bad


# ---------------------------------------------------------------------- the generated page
def figures_page(entries: dict[str, dict]) -> str:
    lines = ["# Figures and their sources", "",
             ("Every measured figure that README or more than one page prints, written once in "
              "`docs/figures.toml` (or read from the committed result file named here at every build), "
              "with the command that measured it, the release it was measured for and the machine it "
              "depends on. Pages print these values; `tests/test_figures.py` fails when README or a page "
              "prints one that differs. Figures of the benchmark suites and of the sweep are read from "
              "their result files (the leaderboard, `docs/figures/cells/`)."), ""]
    for name, e in entries.items():
        p = provenance(name, e)
        lines += [f"## {name}", "", f"**{value(name, e)}** — {p['what']}", ""]  # plain text: the TOC wraps it
        lines.append(f"- measured for: {p['version'] or '—'}" + (f", {p['measured']}" if p["measured"] else ""))
        lines.append(f"- machine: {p['machine'] or '—'}")
        code = p["command"].startswith(("python ", "/usr/bin/time", "export "))  # else prose naming one
        lines.append(f"- command: `{p['command']}`" if code else f"- command: {p['command']}")
        if p.get("source"):
            lines.append(f"- read from: `{p['source']}`, " + (f"key `{e['key']}`" if "key" in e else
                                                               f"the row {e['row']}"))
        if p["superseded"]:
            lines.append(f"- earlier measurements: {p['superseded']}")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------- the notes under a page
def _inline(text: str):
    """Note text as docutils nodes: ``$…$`` as math, backticks as code, the rest as text."""
    from docutils import nodes

    out = []
    for i, piece in enumerate(re.split(r"(\$[^$]+\$|`[^`]+`)", text)):
        if i % 2 and piece.startswith("$"):
            out.append(nodes.math(piece, piece[1:-1]))
        elif i % 2:
            out.append(nodes.literal(piece, piece[1:-1]))
        elif piece:
            out.append(nodes.Text(piece))
    return out


def plain_date(date: str) -> str:
    """A figure's date as a page says it: the day (and, for a result file, how it is known),
    without the development notes its source keeps (the commit, what changed since the release:
    the page generated/figures lists them)."""
    return re.sub(r"\s*\((?:commit [0-9a-f]{7}|[0-9a-f]{7}\b)[^()]*\)", "", date).strip()


def plain_version(version: str) -> str:
    """The release a figure was measured for, as a page says it."""
    return "0.5.0 and the changes since" if version.startswith("unreleased") else version


def add_notes(doctree, entries: dict[str, dict]) -> None:
    """Every figure a page prints through a role gets a numbered mark linking to a note at the end
    of the page that says, without hovering, what it is, when it was measured and with which
    command (the reader of a phone has no hover)."""
    from docutils import nodes

    marked = [n for n in doctree.findall(nodes.abbreviation) if n.get("msenv_note")]
    if not marked:
        return
    order: dict[tuple, int] = {}
    for node in marked:
        key = tuple(node["msenv_note"])
        number = order.setdefault(key, len(order) + 1)
        mark = nodes.superscript("", "", classes=["measured-mark"])
        mark += nodes.reference("", f"[{number}]", refid=f"measured-{number}")
        node.parent.insert(node.parent.index(node) + 1, mark)
    notes = nodes.container(classes=["measured-notes"])
    notes += nodes.rubric("", "Measured figures on this page")
    listing = nodes.enumerated_list(enumtype="arabic")
    for (role, arg), number in order.items():
        d = dated(role, arg, entries)
        para = nodes.paragraph()
        para += _inline(d["what"] + ". ")
        para += nodes.strong("", f"Measured {plain_date(d['date'])}")
        if d["version"]:
            para += nodes.Text(f" (msenv {plain_version(d['version'])})")
        para += nodes.Text(" with ")
        para += nodes.literal("", d["command"]) if d["command"].startswith(("python", "/usr/bin/time", "export")) \
            else _inline(d["command"])
        para += nodes.Text(".")
        item = nodes.list_item("", para, ids=[f"measured-{number}"])
        listing += item
    notes += listing
    doctree += notes


# ---------------------------------------------------------------------- Sphinx
def setup(app):
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives
    from sphinx.errors import ExtensionError

    state: dict = {}

    def builder_inited(app) -> None:
        _json.cache_clear()
        _csv.cache_clear()
        try:
            entries = load_source()
            state["entries"], state["values"] = entries, values(entries)
            page = figures_page(entries)
        except FigureError as err:
            raise ExtensionError(f"docs/figures.toml: {err}") from None
        OUT.parent.mkdir(exist_ok=True)
        if not OUT.exists() or OUT.read_text() != page:
            OUT.write_text(page)

    def _error(inliner, lineno, rawtext, message):
        msg = inliner.reporter.error(message, line=lineno)
        prb = inliner.problematic(rawtext, rawtext, msg)
        return [prb], [msg]

    def measured_role(name, rawtext, text, lineno, inliner, options=None, content=None):
        entries = state["entries"]
        if text not in entries:
            return _error(inliner, lineno, rawtext, f"figure {text!r} is not in docs/figures.toml")
        p = provenance(text, entries[text])
        title = f"measured for {p['version']}" if p["version"] else "measured"
        title += f" with {p['command']}" + (f"; {p['machine']}" if p["machine"] else "")
        title = title.replace("`", "")  # a hover text is plain: no code spans
        node = nodes.abbreviation(rawtext, state["values"][text], explanation=title)
        node["msenv_note"] = ("measured", text)  # a dated note under the page (msenv_notes)
        return [node], []

    def result_role(fn, what):
        def role(name, rawtext, text, lineno, inliner, options=None, content=None):
            try:
                node = nodes.abbreviation(rawtext, fn(text), explanation=f"read from {what(text)}")
                node["msenv_note"] = (name, " ".join(text.split()))
                return [node], []
            except FigureError as err:
                return _error(inliner, lineno, rawtext, str(err))
        return role

    class SweepTable(Directive):
        """```{sweep-table} docs/figures/cells/cells.csv docs/figures/cells-k400/cells.csv
        :cell: paper
        :reference: greedy SAA, tokens/s
        greedy-saa = greedy SAA
        generalist = **generalist**
        ```

        (``:decision:`` and ``:cell: paper weak-hetero``: the milliseconds per decision, a row per
        controller and cell.)"""

        required_arguments = 1
        final_argument_whitespace = True
        option_spec = {"cell": directives.unchanged_required, "reference": directives.unchanged,
                       "decision": directives.flag}
        has_content = True

        def run(self):
            rows = []
            for line in self.content:
                if line.strip():
                    controller, _, label = line.partition("=")
                    rows.append((controller.strip(), label.strip() or controller.strip()))
            try:
                files, cells = self.arguments[0].split(), self.options["cell"].split()
                if "decision" in self.options:
                    table = decision_table(files, cells, rows)
                else:
                    table = sweep_table(files, cells[0], rows, self.options.get("reference", ""))
            except FigureError as err:
                raise self.error(str(err)) from None
            md = ["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
            md += ["| " + " | ".join(r) + " |" for r in table[1:]]
            node = nodes.container()
            self.state.nested_parse(self._string_list(md), self.content_offset, node)
            return node.children

        def _string_list(self, lines):
            from docutils.statemachine import StringList

            return StringList(lines, source=self.state.document.current_source)

    app.connect("builder-inited", builder_inited)
    app.connect("doctree-read", lambda app, doctree: add_notes(doctree, state["entries"]))
    app.add_role("measured", measured_role)
    app.add_role("iqm", result_role(iqm, lambda s: f"docs/leaderboard/{s.split()[0]}.json"))
    app.add_role("sweep", result_role(sweep, lambda s: f"docs/figures/{s.split()[0]}/cells.csv"))
    app.add_directive("sweep-table", SweepTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
