"""Every page of the built site, as a browser shows it: headless Chromium loads each HTML page at
1280 × 900 and at a phone's 390 px, and the page fails on

* horizontal overflow — the document wider than the window, or an element reaching past its
  column (the article, the sidebar), except inside an element that scrolls visibly
  (``overflow-x: auto`` / ``scroll``);
* a word of the navigation (an env id in the sidebar or the page's table of contents) or, on the
  wide window, of the page's title broken across lines;
* unrendered math — TeX left as text (``$…$``, ``\\frac``, ``^(``, ``_{``) outside MathJax's output,
  a ``span.math``/``div.math`` MathJax did not typeset, or a MathJax error;
* a broken image (``naturalWidth == 0``);
* literal role markup (``:func:`…```) in the text.

One Chromium process does it all (``--headless --dump-dom``): a harness page opens every page in
an iframe of the window's size, runs the checks inside it once MathJax has typeset it, and writes
the findings into its own DOM, which Chromium prints. No Python package beyond the standard
library; skipped, saying so, when no Chromium is installed (``.ci/run`` installs Debian's).
A self-test runs the same checker on deliberately bad pages and expects each fault reported.
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WIDTHS = (1280, 390)
#: pages whose text is the code's own docstrings and field comments, which write formulas in plain
#: Unicode (β_k = 10^(ref_gain_db/10), S = Σ_{k∈D} 1/g_k^dl): there ``^(`` and ``_{`` are that
#: notation, not lost TeX (``$…$``, ``\frac``, ``\(`` still fail them)
PLAIN_NOTATION = {"api.html", "generated/configuration.html"}

CHROMIUM = next((p for p in (os.environ.get("MSENV_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser"), shutil.which("google-chrome"),
                             shutil.which("google-chrome-stable")) if p), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium); "
                                    "the site's pages are not checked in a browser")

#: runs inside each page (an iframe of the harness); resolves to a list of findings (strings)
CHECK_JS = r"""
async function msenvCheck(win, plainNotation) {
  const doc = win.document, out = [];
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
  clone.querySelectorAll("pre, code, script, style, mjx-container, .highlight, textarea").forEach(e => e.remove());
  const text = clone.textContent;
  const raw = text.match(/\$[^$\s][^$]*\$|\\frac|\\sum|\\mathbb|\\(left|right)\b|\\\(|\\\[/) ||
              (plainNotation ? null : text.match(/\w\^\(|_\{/));
  if (raw) out.push(`math: raw TeX in the text: "${raw[0].slice(0, 60)}"`);
  const role = text.match(/:(func|class|meth|mod|attr|ref|doc|data|obj|exc|py:\w+):`[^`]*`?/);
  if (role) out.push(`literal role markup: "${role[0].slice(0, 60)}"`);
  // images
  for (const img of doc.images) if (img.naturalWidth === 0) out.push(`broken image: ${img.getAttribute("src")}`);
  return out;
}
"""

HARNESS = """<!doctype html><html><head><meta charset="utf-8"><style>body{margin:0}
iframe{border:0;display:block}</style></head><body><iframe id="f"></iframe><pre id="msenv-result"></pre>
<script>%(check)s
const PAGES = %(pages)s, WIDTHS = %(widths)s, PLAIN = %(plain)s;
function load(frame, url) {
  return new Promise(resolve => { frame.onload = () => resolve(); frame.src = url; });
}
(async () => {
  const frame = document.getElementById("f"), result = {};
  for (const w of WIDTHS) {
    frame.style.width = w + "px"; frame.style.height = "900px";
    for (const p of PAGES) {
      try { await load(frame, p); result[p + " @" + w + "px"] = await msenvCheck(frame.contentWindow, PLAIN.includes(p)); }
      catch (e) { result[p + " @" + w + "px"] = ["the check itself failed: " + e]; }
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
                                  "plain": json.dumps(sorted(PLAIN_NOTATION))})
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
    return json.loads(htmllib.unescape(m.group(1)))


def _html_pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not p.name.startswith("_msenv") and "_static" not in p.parts)


@needs_chromium
def test_the_checker_reports_an_overflowing_page_a_broken_image_raw_math_and_a_role(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    page = ("<!doctype html><html><head><style>body{margin:0} article{width:600px}</style></head>"
            "<body><article>%s</article></body></html>")
    (site / "wide.html").write_text(page % '<div style="width:900px">a table too wide for its column</div>')
    (site / "document.html").write_text(page % '<p style="position:absolute;left:2000px">far right</p>')
    (site / "scrolls.html").write_text(page % '<div style="overflow-x:auto"><div style="width:900px">'
                                       'scrolls visibly</div></div>')
    (site / "image.html").write_text(page % '<img src="missing.png" alt="missing">')
    (site / "math.html").write_text(page % "<p>the goodput is $G = \\frac{A}{T}$</p>")
    (site / "role.html").write_text(page % "<p>see :func:`msenv.make_cell_env`</p>")
    (site / "clean.html").write_text(page % "<p>nothing wrong here</p>")
    found = check_pages(site, _html_pages(site), widths=(1280,))
    assert any("reaches 300px past" in f for f in found["wide.html @1280px"]), found
    assert any("the document is" in f for f in found["document.html @1280px"]), found
    assert any("broken image: missing.png" in f for f in found["image.html @1280px"]), found
    assert any("raw TeX" in f for f in found["math.html @1280px"]), found
    assert any("literal role markup" in f for f in found["role.html @1280px"]), found
    assert found["scrolls.html @1280px"] == [] and found["clean.html @1280px"] == [], found


@needs_chromium
def test_every_page_of_the_site_renders_cleanly(built_site):
    site, _ = built_site
    pages = _html_pages(site)
    assert len(pages) > 40 and "model.html" in pages
    found = check_pages(site, pages)
    assert set(found) == {f"{p} @{w}px" for p in pages for w in WIDTHS}
    bad = {page: faults for page, faults in found.items() if faults}
    assert not bad, "\n".join(f"{page}: {f}" for page, faults in sorted(bad.items()) for f in faults)
