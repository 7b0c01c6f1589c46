"""Every page of the built site, as a browser shows it: headless Chromium loads each HTML page at
1280 × 900 and at a phone's 390 px, and the page fails on

* horizontal overflow — the document wider than the window, or an element reaching past its
  column (the article, the sidebar), except inside an element that scrolls visibly
  (``overflow-x: auto`` / ``scroll``);
* a word of the navigation (an env id in the sidebar or the page's table of contents) or, on the
  wide window, of the page's title broken across lines;
* unrendered math — TeX left as text (``$…$``, ``\\frac``, ``\\_``, ``^(``, ``_{``) outside MathJax's output,
  a ``span.math``/``div.math`` MathJax did not typeset, or a MathJax error;
* a formula written as plain text (``γ_k``, ``T_com``, ``τ^dl``, ``2^M``) in running text, outside
  code and MathJax — except on the pages generated from the code's own docstrings and field
  comments (:data:`PLAIN_NOTATION`), which write that notation on purpose;
* a shell block (commands, program output) that scrolls sideways at any width: they wrap, so a
  command copied from a phone is whole;
* on the wide window, a code block or a table that scrolls sideways (its content wider than the
  column; not on the pages that list the source and the general index, :data:`SOURCE_LISTINGS`);
* a figure whose smallest label shows smaller than the body text on the wide window, or than
  :data:`PHONE_LABEL_SHARE` of it on a phone (where the stylesheet keeps each figure wide enough
  and lets it scroll sideways in its own box): each figure PNG records its smallest label in
  pixels (``msenv:label-px``, written by ``evaluation.report.save_figure``), which the check
  scales by the width the page shows it at; a PNG without that record fails, except the
  environments' own frames (:data:`FRAMES`); an SVG's smallest label is its smallest
  ``font-size`` over its ``viewBox`` width;
* a broken image (``naturalWidth == 0``);
* a placeholder of the source taken for an HTML element (``combined_<set>.jsonl`` shown as
  ``combined_.jsonl``: any element the browser does not know);
* a mathematical function written as plain text (``tanh((β [dB] + 115)/15)``) outside math and code;
* on a phone, a table or a figure that scrolls sideways in its box without saying so (its last
  columns or its legend out of sight): the site marks such a box (``docs/_static/msenv-scroll.js``)
  and the stylesheet writes a line under it;
* literal role markup (``:func:`…```) in the text.

One Chromium process does it all (``--headless --dump-dom``): a harness page opens every page in
an iframe of the window's size, runs the checks inside it once MathJax has typeset it, and writes
the findings into its own DOM, which Chromium prints (the figures' records are read in Python,
``evaluation.report.png_text``). Skipped, saying so, when no Chromium is installed (``.ci/run`` installs Debian's).
A self-test runs the same checker on deliberately bad pages and expects each fault reported.
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from evaluation import report

ROOT = Path(__file__).resolve().parents[1]
WIDTHS = (1280, 390)
#: pages whose text is the code's docstrings as autodoc shows them (the API page and the index of
#: its names) and the changelog (a record, written as it was), which write formulas in plain
#: Unicode (β_k = 10^(ref_gain_db/10), S = Σ_{k∈D} 1/g_k^dl): there ``x_k``, ``^(`` and ``_{`` are
#: that notation, not lost TeX (``$…$``, ``\frac``, ``\(`` still fail them). The generated
#: reference pages (environments, configuration, controllers, leaderboard) are not among them: they
#: turn that notation into math (``docs/_ext/plain_math.py``) and are held to every rule.
PLAIN_NOTATION = ("api.html", "api/", "genindex.html", "changelog.html")
#: images that are an environment's rendered frames (its episode GIFs and first rounds, as Gymnasium's
#: pages show an episode), not figures: the label-size rule does not apply to them. The round
#: picture of the landing page and README (docs/figures/render.png) is drawn for the page and held to it.
FRAMES = re.compile(r"(^|/)MultiSpin-[\w-]+\.(png|gif)$|\.gif$")
#: pages that list the code's source as it is (its lines scroll, as in an editor, and its names are
#: the code's), and the general index's two-column table of every name, which scrolls by design
SOURCE_LISTINGS = ("_modules/", "genindex.html", "py-modindex.html")
#: the window width from which code blocks and tables must fit their column and figures' labels
#: must be as large as the body text (a phone scrolls them, and shows figures smaller)
WIDE = 1024
#: on a narrower window (a phone) a figure's smallest label shows at this share of the body text or
#: more — 12 of 16 px: the stylesheet keeps every figure 34rem wide at least (its labels 12.6 px)
#: and lets it scroll sideways inside its own box, so that most of it shows at once
PHONE_LABEL_SHARE = 0.75

CHROMIUM = next((p for p in (os.environ.get("MSENV_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser"), shutil.which("google-chrome"),
                             shutil.which("google-chrome-stable")) if p), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium); "
                                    "the site's pages are not checked in a browser")

#: runs inside each page (an iframe of the harness); resolves to a list of findings (strings)
CHECK_JS = r"""
const SHELL = ["bash", "sh", "console", "shell"].map(l => `article div.highlight-${l} pre`).join(", ");
async function msenvCheck(win, plainNotation, wide, source) {
  const doc = win.document, out = [], images = [];
  if (win.MathJax && win.MathJax.startup && win.MathJax.startup.promise) {
    try { await win.MathJax.startup.promise; } catch (e) { out.push("MathJax failed: " + e); }
  }
  await Promise.all([...doc.images].map(img => img.complete ? null :
    new Promise(r => { img.addEventListener("load", r); img.addEventListener("error", r); })));
  const W = doc.documentElement.clientWidth;
  if (doc.documentElement.scrollWidth > W + 1)
    out.push(`overflow: the document is ${doc.documentElement.scrollWidth}px wide in a ${W}px window`);
  const visible = el => { const s = win.getComputedStyle(el);
    return s.display !== "none" && s.visibility !== "hidden" && el.getClientRects().length > 0; };
  const describe = el => {
    let s = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "");
    const t = (el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 60);
    return t ? `${s} "${t}"` : s;
  };
  // an element reaching past its column, unless an ancestor inside the column scrolls it
  const columns = [...doc.querySelectorAll("article, .sidebar-drawer .sidebar-container, .toc-drawer .toc-scroll")]
    .filter(visible);
  for (const col of columns) {
    const edge = col.getBoundingClientRect().right;
    for (const el of col.querySelectorAll("*")) {
      if (!visible(el) || el.closest("mjx-assistive-mml")) continue;
      let scrolled = false;
      for (let a = el.parentElement; a && a !== col; a = a.parentElement) {
        const ox = win.getComputedStyle(a).overflowX;
        if (ox === "auto" || ox === "scroll") { scrolled = true; break; }
      }
      if (scrolled) continue;
      // the theme's headings reach out by their own negative margin, by design
      const slack = Math.max(0, -parseFloat(win.getComputedStyle(el).marginRight) || 0);
      const right = el.getBoundingClientRect().right;
      if (right > edge + slack + 1) { out.push(`overflow: ${describe(el)} reaches ${Math.round(right - edge)}px past ` +
                                       `its column ${describe(col).split(" ")[0]}`); break; }
    }
  }
  // a word of the navigation broken across lines
  // (and a page's title, where the window is wide enough for an id to fit on one line)
  for (const nav of doc.querySelectorAll(".sidebar-tree, .toc-tree" + (win.innerWidth >= 640 ? ", article h1" : ""))) {
    if (!visible(nav)) continue;
    const walker = doc.createTreeWalker(nav, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.parentElement || !visible(n.parentElement)) continue;
      const re = /\S+/g; let m;
      while ((m = re.exec(n.data))) {
        const r = doc.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(q => q.width > 0).map(q => Math.round(q.top)));
        if (tops.size > 1) out.push(`broken word in the navigation: "${m[0]}"`);
      }
    }
  }
  // math
  const maths = doc.querySelectorAll("span.math, div.math");
  if (maths.length) {
    if (!win.MathJax) out.push(`math: ${maths.length} formulas but no MathJax on the page`);
    for (const m of maths) if (!m.querySelector("mjx-container")) {
      out.push(`math: not typeset: ${describe(m)}`); break; }
    const errors = doc.querySelectorAll("mjx-merror");
    if (errors.length) out.push(`math: MathJax error in ${describe(errors[0])}`);
  }
  // text as a reader sees it: outside code, MathJax's output, scripts
  const main = doc.querySelector("article") || doc.body;
  const clone = main.cloneNode(true);
  clone.querySelectorAll("pre, code, script, style, mjx-container, .highlight, textarea, dl.py").forEach(e => e.remove());
  const text = clone.textContent;
  const raw = text.match(/\$[^$\s][^$]*\$|\\frac|\\sum|\\mathbb|\\(left|right)\b|\\\(|\\\[|\w\\_/) ||
              (plainNotation ? null : text.match(/\w\^\(|_\{/));
  if (raw) out.push(`math: raw TeX in the text: "${raw[0].slice(0, 60)}"`);
  // a formula as plain text: a letter (Latin or Greek) or bracket, then _ or ^, then a symbol
  const plain = plainNotation ? null :
    text.match(/[A-Za-z\u0370-\u03FF)\]]_[A-Za-z0-9\u0370-\u03FF{(]|[A-Za-z0-9\u0370-\u03FF)\]]\^[\w\u0370-\u03FF({\u2212-]/);
  if (plain) { const i = plain.index;
    out.push(`math: a formula in plain text: "${text.slice(Math.max(0, i - 20), i + 20).replace(/\s+/g, " ").trim()}"`); }
  // shell commands wrap at every width (a command copied from a phone is whole) ...
  for (const pre of doc.querySelectorAll(SHELL)) if (visible(pre) && pre.scrollWidth > pre.clientWidth + 1)
    out.push(`scrolls: a shell block ${pre.scrollWidth}px wide in its ${pre.clientWidth}px box: ` +
             `"${pre.textContent.trim().slice(0, 60)}"`);
  // ... and only between words: an option (--episodes, -m) of any code block shown on one line
  for (const pre of doc.querySelectorAll("article div.highlight pre")) {
    if (!visible(pre)) continue;
    const nodes = [], walker = doc.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
    const text = nodes.map(n => n.data).join(""), re = /(^|\s)(--?[A-Za-z][^\s]*)/g; let m, split = null;
    while (!split && (m = re.exec(text))) {
      const start = m.index + m[1].length, end = start + m[2].length, r = doc.createRange();
      let at = 0;
      for (const n of nodes) {
        const a = at, b = at + n.data.length; at = b;
        if (b > start && a <= start) r.setStart(n, start - a);
        if (b >= end && a < end) { r.setEnd(n, end - a); break; }
      }
      const tops = new Set([...r.getClientRects()].filter(q => q.width > 0).map(q => Math.round(q.top)));
      if (tops.size > 1) split = m[2];
    }
    if (split) out.push(`split: the option "${split.slice(0, 40)}" is broken across lines in "${text.trim().slice(0, 50)}"`);
  }
  // the box at the top of an env page fits its column at every width (nothing cut off, no scrolling)
  for (const box of doc.querySelectorAll("article .summary-box")) {
    const t = box.querySelector("table"), col = (doc.querySelector("article") || main).getBoundingClientRect().right;
    if (!t || !visible(t)) continue;
    const wrap = t.parentElement;
    if (t.getBoundingClientRect().right > col + 1 || t.scrollWidth > t.clientWidth + 1 ||
        (wrap && wrap.scrollWidth > wrap.clientWidth + 1))
      out.push(`summary box: ${Math.round(t.scrollWidth)}px of table in a ${Math.round(Math.min(wrap ? wrap.clientWidth : 1e9, t.clientWidth))}px column`);
  }
  if (wide) {
    // code and tables fit the column on a wide window
    for (const pre of (source ? [] : doc.querySelectorAll("article div.highlight pre"))) {
      if (!visible(pre) || pre.scrollWidth <= pre.clientWidth + 1) continue;
      out.push(`scrolls: a code block ${pre.scrollWidth}px wide in its ${pre.clientWidth}px box: ` +
               `"${(pre.textContent.split("\n").reduce((a, b) => b.length > a.length ? b : a, "")).trim().slice(0, 60)}"`);
    }
    for (const t of (source ? [] : doc.querySelectorAll("article table"))) {
      if (!visible(t) || t.closest(".summary-box")) continue;
      const box = t.parentElement, ox = box ? win.getComputedStyle(box).overflowX : "";
      if (t.scrollWidth > t.clientWidth + 1 ||
          ((ox === "auto" || ox === "scroll") && box.scrollWidth > box.clientWidth + 1))
        out.push(`scrolls: a table ${t.scrollWidth}px wide in its ${t.clientWidth}px box: ${describe(t.querySelector("tr") || t)}`);
    }
  }
  // figures: what their labels show at is checked in Python, from each PNG's record
  const body = parseFloat(win.getComputedStyle(doc.querySelector("article p") || main).fontSize);
  for (const img of doc.querySelectorAll("article img"))
    if (visible(img) && img.naturalWidth && !img.getAttribute("src").includes("_static/"))
      images.push({src: img.getAttribute("src"), natural: img.naturalWidth, wide: wide,
                   shown: img.getBoundingClientRect().width, body: body, window: win.innerWidth});
  // a placeholder of the source (combined_<set>.jsonl) that the browser took for an element: its
  // text is gone from the page
  for (const el of main.querySelectorAll("*")) if (el instanceof win.HTMLUnknownElement) {
    out.push(`swallowed tag: <${el.tagName.toLowerCase()}> is an element, not text, in ` +
             describe(el.parentElement || main)); break; }
  // a mathematical function written as plain text, tanh((β [dB] + 115)/15), outside math and code
  const call = plainNotation ? null : text.match(/(?:tanh|sqrt)\(|\bexp\(/);
  if (call) out.push(`math: a formula in plain text: "${text.slice(Math.max(0, call.index - 10), call.index + 30)
    .replace(/\s+/g, " ").trim()}"`);
  // on a narrow window, a table or a figure that scrolls sideways in its box says so (its last
  // columns, or a figure's legend, are out of sight otherwise)
  if (!wide && !source) for (const box of doc.querySelectorAll("article table, article .table-wrapper, article span.msenv-figure")) {
    if (!visible(box)) continue;
    const ox = win.getComputedStyle(box).overflowX;
    if ((ox !== "auto" && ox !== "scroll") || box.scrollWidth <= box.clientWidth + 1) continue;
    const hint = win.getComputedStyle(box, "::after").content || "";
    if (!/scroll/i.test(hint)) {
      const what = box.matches("span.msenv-figure") ? `a figure (${(box.querySelector("img") || box).getAttribute("src") || ""})`
        : `a table (${describe(box.querySelector("tr") || box)})`;
      out.push(`hidden: ${what} shows ${box.clientWidth}px of ${box.scrollWidth}px and does not say it scrolls`);
    }
  }
  const role = text.match(/:(func|class|meth|mod|attr|ref|doc|data|obj|exc|py:\w+):`[^`]*`?/);
  if (role) out.push(`literal role markup: "${role[0].slice(0, 60)}"`);
  // images
  for (const img of doc.images) if (img.naturalWidth === 0) out.push(`broken image: ${img.getAttribute("src")}`);
  return {faults: out, images: images};
}
"""  # noqa: E501 (JavaScript: its template strings stay whole)

HARNESS = """<!doctype html><html><head><meta charset="utf-8"><style>body{margin:0}
iframe{border:0;display:block}</style></head><body><iframe id="f"></iframe><pre id="msenv-result"></pre>
<script>%(check)s
const PAGES = %(pages)s, WIDTHS = %(widths)s, PLAIN = %(plain)s, WIDE = %(wide)d, SOURCE = %(source)s;
function load(frame, url) {
  return new Promise(resolve => { frame.onload = () => resolve(); frame.src = url; });
}
(async () => {
  const frame = document.getElementById("f"), result = {};
  for (const w of WIDTHS) {
    frame.style.width = w + "px"; frame.style.height = "900px";
    for (const p of PAGES) {
      try { await load(frame, p); result[p + " @" + w + "px"] = await msenvCheck(frame.contentWindow,
                                                PLAIN.concat(SOURCE).some(q => p.startsWith(q)), w >= WIDE,
                                                SOURCE.some(q => p.startsWith(q))); }
      catch (e) { result[p + " @" + w + "px"] = {faults: ["the check itself failed: " + e], images: []}; }
    }
  }
  document.getElementById("msenv-result").textContent = "MSENV-RESULT" + JSON.stringify(result) + "MSENV-END";
})();
</script></body></html>
"""


def check_pages(site: Path, pages: list[str], widths=WIDTHS, timeout: float = 300) -> dict[str, list[str]]:
    """Every page of ``pages`` (paths relative to ``site``) → its findings, [] when it is clean."""
    harness = site / "_msenv_browser_check.html"
    harness.write_text(HARNESS % {"check": CHECK_JS, "pages": json.dumps(pages), "widths": json.dumps(list(widths)),
                                  "plain": json.dumps(PLAIN_NOTATION), "wide": WIDE,
                                  "source": json.dumps(SOURCE_LISTINGS)})
    profile = site.parent / f".chromium-profile-{os.getpid()}"
    try:
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            "--allow-file-access-from-files", f"--user-data-dir={profile}", "--window-size=1400,1000",
                            "--virtual-time-budget=3600000", "--dump-dom", harness.as_uri()],
                           capture_output=True, text=True, timeout=timeout)
    finally:
        harness.unlink()
        shutil.rmtree(profile, ignore_errors=True)
    m = re.search(r"MSENV-RESULT(.*?)MSENV-END", r.stdout, flags=re.S)
    assert m, f"Chromium printed no result (exit {r.returncode}): {r.stderr[-2000:]}"
    found = {}
    for key, seen in json.loads(htmllib.unescape(m.group(1))).items():
        page = site / key.rsplit(" @", 1)[0]
        found[key] = seen["faults"] + [f for img in seen["images"] for f in _label_faults(page, img)]
    return found


def _label_faults(page: Path, img: dict) -> list[str]:
    """A figure's smallest label as shown on ``page`` against the body text (see the module's doc)."""
    src = img["src"].split("#")[0].split("?")[0]
    if FRAMES.search(src) or not src.lower().endswith((".png", ".svg")):
        return []
    path = (page.parent / src).resolve()
    if src.lower().endswith(".svg"):
        px, natural = _svg_label(path.read_text()) if path.is_file() else (None, None)
        if px is None:
            return [f"figure: {src} states no font size and viewBox (font-size=\"N\" on its text)"]
        img = {**img, "natural": natural}
    else:
        px = report.png_text(path).get(report.LABEL_PX_KEY) if path.is_file() else None
    if px is None:
        return [f"figure: {src} records no label size (msenv:label-px); draw it with evaluation.report.save_figure"]
    shown = float(px) * img["shown"] / img["natural"]
    need = img["body"] if img["wide"] else PHONE_LABEL_SHARE * img["body"]
    if shown + 0.05 < need:
        under = (f"the body text's {img['body']:g}px" if img["wide"] else
                 f"{need:g}px ({PHONE_LABEL_SHARE:g} of the body text's {img['body']:g}px) "
                 f"on a {img['window']}px window")
        return [(f"figure: {src}'s smallest label shows at {shown:.1f}px, under {under} "
                f"(drawn {img['natural']:g}px wide, shown {img['shown']:.0f}px)")]
    return []


def _svg_label(svg: str) -> tuple[float | None, float | None]:
    """An SVG's smallest ``font-size`` and its ``viewBox`` width (user units), or Nones."""
    sizes = [float(s) for s in re.findall(r'font-size[=:]\s*"?([\d.]+)', svg)]
    box = re.search(r'viewBox="\s*[-\d.]+[\s,]+[-\d.]+[\s,]+([\d.]+)', svg)
    return (min(sizes), float(box.group(1))) if sizes and box else (None, None)


def _html_pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not p.name.startswith("_msenv") and "_static" not in p.parts)


def _png(path: Path, width: int, height: int, text: dict[str, str] | None = None) -> None:
    """A grey PNG of ``width`` × ``height`` with ``text`` as tEXt chunks (standard library only)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + b"\x80" * width for _ in range(height))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
                     + b"".join(chunk(b"tEXt", k.encode() + b"\0" + v.encode()) for k, v in (text or {}).items())
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_png_text_reads_the_records_a_png_carries(tmp_path):
    _png(tmp_path / "a.png", 3, 2, {"msenv:label-px": "25.0", "Software": "x"})
    assert report.png_text(tmp_path / "a.png") == {"msenv:label-px": "25.0", "Software": "x"}
    _png(tmp_path / "b.png", 3, 2)
    assert report.png_text(tmp_path / "b.png") == {}
    (tmp_path / "c.png").write_bytes((tmp_path / "a.png").read_bytes()[:-5] + b"xxxxx")
    with pytest.raises(ValueError, match="fails its CRC"):
        report.png_text(tmp_path / "c.png")


@needs_chromium
def test_the_checker_reports_each_kind_of_fault(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    page = ("<!doctype html><html><head><style>body{margin:0;font-size:16px} article{width:600px}"
            "pre{overflow-x:auto}</style></head><body><article><p>text</p>%s</article></body></html>")
    (site / "wide.html").write_text(page % '<div style="width:900px">a table too wide for its column</div>')
    (site / "document.html").write_text(page % '<p style="position:absolute;left:2000px">far right</p>')
    (site / "scrolls.html").write_text(page % '<div style="overflow-x:auto"><div style="width:900px">'
                                       'scrolls visibly</div></div>')
    (site / "image.html").write_text(page % '<img src="missing.png" alt="missing">')
    (site / "math.html").write_text(page % "<p>the goodput is $G = \\frac{A}{T}$</p>")
    (site / "escaped.html").write_text(page % "<p>the field draft\\_scale\\_max\\_range</p>")
    (site / "notation.html").write_text(page % "<p>each device drafts γ_k tokens, at most 2^M</p>")
    (site / "role.html").write_text(page % "<p>see :func:`msenv.make_cell_env`</p>")
    (site / "code.html").write_text(page % ('<div class="highlight"><pre>short\nenv = msenv.make(' + "x, " * 80
                                            + ')</pre></div>'))
    (site / "shell.html").write_text(page % ('<div class="highlight-bash"><div class="highlight"><pre>'
                                             'pip install -e "' + ".[all]" * 60 + '"</pre></div></div>'))
    (site / "table.html").write_text(page % '<div style="overflow-x:auto"><table><tr><td style="min-width:900px">'
                                     'ten columns</td></tr></table></div>')
    (site / "split.html").write_text(page % ('<div class="highlight-bash"><div class="highlight"><pre style="'
                                             'white-space:pre-wrap;overflow-wrap:anywhere;width:120px">python -m '
                                             'evaluation.evaluate --episodes-and-rounds 4</pre></div></div>'))
    (site / "whole.html").write_text(page % ('<div class="highlight-bash"><div class="highlight"><pre style="'
                                             'white-space:pre-wrap;width:220px;font-size:12px">'
                                             'python -m evaluation.evaluate '
                                             '<span style="white-space:nowrap">--episodes</span> 4</pre></div></div>'))
    (site / "summary.html").write_text(page % ('<div class="summary-box"><div style="overflow-x:auto">'
                                               '<table><tr><td style="white-space:nowrap">Observation space '
                                               + "Box(-1.0, 1.0, (122,), float32) " * 4
                                               + '</td></tr></table></div></div>'))
    (site / "output.html").write_text(page % ('<div class="highlight-text"><div class="highlight"><pre>'
                                              + "│ greedy-saa │ 1.0000 " * 12 + '</pre></div></div>'))
    (site / "generated").mkdir()
    (site / "generated" / "env-x.html").write_text(page % "<table><tr><td>the goodput Σ_k N_k / T</td></tr></table>")
    _png(site / "small.png", 1200, 40, {"msenv:label-px": "20"})  # shown at 600 px: 10 px labels
    _png(site / "large.png", 1200, 40, {"msenv:label-px": "40"})  # shown at 600 px: 20 px labels
    _png(site / "phone.png", 1200, 40, {"msenv:label-px": "30"})  # 12 px labels at 480 px
    _png(site / "bare.png", 300, 40)
    (site / "small.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 300 40" width="300" '
                                    'height="40"><text x="4" y="20" font-size="12">8 px at 200 px</text></svg>')
    (site / "svg.html").write_text(page % '<img src="small.svg" style="width:200px">')
    _png(site / "MultiSpin-v0.png", 300, 40)  # an env's frame: no record needed
    _png(site / "render.png", 300, 40)  # the landing page's round picture is a figure: it needs one
    (site / "round.html").write_text(page % '<img src="render.png">')
    (site / "small-labels.html").write_text(page % '<img src="small.png" style="width:600px">')
    (site / "no-record.html").write_text(page % '<img src="bare.png">')
    # in a column that follows the window: a figure that shrinks with it, and one that keeps
    # 544 px (13.6 px labels) and scrolls in its own box
    fluid = page.replace("article{width:600px}", "article{max-width:600px}")
    (site / "shrinks.html").write_text(fluid % '<img src="phone.png" style="width:100%">')
    (site / "keeps.html").write_text(fluid % ('<span style="display:block;overflow-x:auto"><img src="phone.png" '
                                              'style="width:100%;min-width:544px"></span>'))
    (site / "clean.html").write_text(page % ('<p>nothing wrong here, <code>p_dl_dbm</code> in code</p>'
                                             '<div class="highlight"><pre>short = 1</pre></div>'
                                             '<img src="large.png" style="width:600px"><img src="MultiSpin-v0.png">'))
    (site / "swallowed.html").write_text(page % "<p>the files $DIR/combined_<set>.jsonl, one per set</p>")
    (site / "formula.html").write_text(page % "<table><tr><td>tanh((β [dB] + 115)/15): the gain</td></tr></table>")
    found = check_pages(site, _html_pages(site), widths=(1280,))
    one = {name: found[f"{name}.html @1280px"] for name in
           ("wide", "document", "image", "math", "escaped", "notation", "role", "code", "table",
            "small-labels", "no-record", "shell", "split", "summary", "output", "generated/env-x", "round",
            "svg")}
    assert any("reaches 300px past" in f for f in one["wide"]), found
    assert any("the document is" in f for f in one["document"]), found
    assert any("broken image: missing.png" in f for f in one["image"]), found
    assert any("raw TeX" in f for f in one["math"]), found
    assert any('raw TeX in the text: "t\\_"' in f for f in one["escaped"]), found
    assert any('a formula in plain text: "' in f and "γ_k" in f for f in one["notation"]), found
    assert any("literal role markup" in f for f in one["role"]), found
    assert any("scrolls: a code block" in f and "msenv.make(" in f for f in one["code"]), found
    assert any("scrolls: a table" in f for f in one["table"]), found
    assert any('scrolls: a shell block' in f and "pip install -e" in f for f in one["shell"]), found
    assert any("small.png's smallest label shows at 10.0px, under the body text's 16px" in f
               for f in one["small-labels"]), found
    assert any("bare.png records no label size" in f for f in one["no-record"]), found
    assert any("small.svg's smallest label shows at 8.0px, under the body text's 16px" in f for f in one["svg"]), found
    assert any('split: the option "--episodes-and-rounds"' in f for f in one["split"]), found
    assert any("summary box:" in f for f in one["summary"]), found
    assert any("scrolls: a code block" in f for f in one["output"]), found  # output fits a wide window
    assert any("a formula in plain text" in f and "Σ_k" in f for f in one["generated/env-x"]), found
    assert any("render.png records no label size" in f for f in one["round"]), found
    assert any("swallowed tag: <set>" in f for f in found["swallowed.html @1280px"]), found
    assert any("a formula in plain text" in f and "tanh((" in f for f in found["formula.html @1280px"]), found
    for clean in ("scrolls", "clean", "whole"):
        assert found[f"{clean}.html @1280px"] == [], found
    # a phone scrolls code and tables, and shows figures smaller: labels of 12 px (3/4 of 16) pass
    # a figure or a table that scrolls on a phone without saying so hides its legend or its last columns
    hint = ('<style>.msenv-scrolls::after{content:"scroll sideways";display:block}</style>')
    (site / "cut.html").write_text(fluid % ('<span class="msenv-figure" style="display:block;overflow-x:auto">'
                                            '<img src="phone.png" style="width:100%;min-width:544px"></span>'))
    (site / "told.html").write_text(fluid % (hint + '<span class="msenv-figure msenv-scrolls" style="display:block;'
                                             'overflow-x:auto"><img src="phone.png" style="width:100%;'
                                             'min-width:544px"></span>'))
    (site / "columns.html").write_text(fluid % ('<div class="table-wrapper" style="overflow-x:auto"><table><tr>'
                                                '<td style="min-width:900px">a real-time column out of sight</td>'
                                                '</tr></table></div>'))
    narrow = check_pages(site, ["code.html", "table.html", "small-labels.html", "shell.html", "output.html",
                                "split.html", "summary.html", "shrinks.html", "keeps.html", "cut.html", "told.html",
                                "columns.html"], widths=(390,))
    assert any("hidden: a figure (phone.png)" in f for f in narrow["cut.html @390px"]), narrow
    assert any("hidden: a table" in f for f in narrow["columns.html @390px"]), narrow
    assert narrow["told.html @390px"] == [], narrow
    assert any("scrolls: a shell block" in f for f in narrow["shell.html @390px"]), narrow
    assert any("split: the option" in f for f in narrow["split.html @390px"]), narrow
    assert any("summary box:" in f for f in narrow["summary.html @390px"]), narrow
    assert any("small.png's smallest label shows at 10.0px, under 12px (0.75 of the body text's 16px) on a "
               "390px window" in f for f in narrow["small-labels.html @390px"]), narrow
    assert any("phone.png's smallest label shows at 9.8px, under 12px" in f
               for f in narrow["shrinks.html @390px"]), narrow
    assert narrow["keeps.html @390px"] == [], narrow  # a plain box: no msenv-figure, not held to the hint
    assert all(not any(f.startswith(("scrolls", "figure")) for f in v) for k, v in narrow.items()
               if k.split(".")[0] in ("code", "table", "output"))


@pytest.mark.slow
@needs_chromium
def test_every_page_of_the_site_renders_cleanly(built_site):
    site, _ = built_site
    pages = _html_pages(site)
    assert len(pages) > 40 and "model.html" in pages
    found = check_pages(site, pages)
    assert set(found) == {f"{p} @{w}px" for p in pages for w in WIDTHS}
    bad = {page: faults for page, faults in found.items() if faults}
    assert not bad, "\n".join(f"{page}: {f}" for page, faults in sorted(bad.items()) for f in faults)
