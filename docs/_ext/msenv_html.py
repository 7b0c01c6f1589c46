"""Sphinx extension: shell commands that copy whole and wrap only between words.

sphinx-copybutton (configured in ``conf.py``) puts a copy button on every command and code block
(not on ``text`` blocks, which are program output); it strips a ``$ ``/``>>> ``/``... `` prompt
and the lines without one, so what lands on the clipboard is the command alone.

In a shell block (``bash``, ``sh``, ``console``) every word is wrapped in a ``span.nw`` that the
stylesheet keeps on one line: the block wraps at spaces only, so ``--episodes`` never shows as
``-`` / ``-episodes`` (a browser may break after a hyphen). The text — and so what a reader
selects or copies — is unchanged. Program output (``text`` blocks) keeps its lines and scrolls.

Every figure (a PNG that ``evaluation.report.save_figure`` wrote: it records its smallest label;
an SVG with text) sits in a ``span.msenv-figure`` box: the stylesheet gives the figure a minimum width at which its
labels stay readable, and the box scrolls sideways where the column is narrower (a phone).
"""

from __future__ import annotations

import re

#: the shell languages whose blocks wrap between words (``text``, program output, scrolls instead)
SHELL = ("bash", "sh", "console", "shell")
_BLOCK = re.compile(rf'(<div class="highlight-(?:{"|".join(SHELL)})\b[^"]*"><div class="highlight"><pre>)(.*?)(</pre>)',
                    re.S)
_TAG_OR_TEXT = re.compile(r"(<[^>]+>)|([^<]+)")
_WORD = re.compile(r"[^\s]+")


#: a word longer than this (a path, a list of agents) may not fit a phone's line: it is not kept
#: whole but may break anywhere (``span.lw``) — options are always kept whole
LONG = 30


def _span(word: str) -> str:
    long = len(word) > LONG and not word.startswith("-")
    return f'<span class="{"lw" if long else "nw"}">{word}</span>'


def nowrap_words(pre: str) -> str:
    """The HTML inside a ``<pre>`` with each run of non-space text (between tags) in a ``span.nw``
    (kept on one line), or, a word longer than :data:`LONG` that is no option, a ``span.lw``."""
    out = []
    for tag, text in _TAG_OR_TEXT.findall(pre):
        out.append(tag or _WORD.sub(lambda m: _span(m.group(0)), text))
    return "".join(out)


def shell_blocks_nowrap(html: str) -> str:
    """Every shell block of a page's HTML through :func:`nowrap_words`."""
    return _BLOCK.sub(lambda m: m.group(1) + nowrap_words(m.group(2)) + m.group(3), html)


_CODE_TEXT = re.compile(r'(<code class="[^"]*\bliteral\b[^"]*">)(.*?)(</code>)', re.S)
#: a name in a table cell longer than this gets places to break (``<wbr>``) after ``_ . = , /``
LONG_NAME = 14


def breakable_cell_code(html: str) -> str:
    """Every code literal inside a table cell (``<td>``) longer than :data:`LONG_NAME` characters
    with a ``<wbr>`` after each ``_``, ``.``, ``=``, ``,`` and ``/`` — where a name may break
    when its column has no room for it (``draft_scale_max_range``, ``baselines.KaplanMeierGreedy``)."""
    def code(m: re.Match) -> str:
        inner = m.group(2)
        text = re.sub(r"<[^>]+>", "", inner)
        if len(text) <= LONG_NAME:
            return m.group(0)
        return m.group(1) + re.sub(r"([_.=,/])(?=[^<>]*<)", r"\1<wbr>", inner) + m.group(3)

    out, pos = [], 0
    for cell in re.finditer(r"<td>.*?</td>", html, flags=re.S):
        out.append(html[pos:cell.start()])
        out.append(_CODE_TEXT.sub(code, cell.group(0)))
        pos = cell.end()
    out.append(html[pos:])
    return "".join(out)


#: the PNG text key of a figure's smallest label (``evaluation.report.LABEL_PX_KEY``)
LABEL_PX_KEY = b"msenv:label-px"


def is_figure(path) -> bool:
    """Whether ``path`` is a figure: a PNG that records its smallest label (not a rendered frame of
    an env, which records none), or an SVG with text (the design page's house)."""
    from pathlib import Path

    path = Path(path)
    if not path.is_file() or path.suffix.lower() not in (".png", ".svg"):
        return False
    head = path.read_bytes()
    if path.suffix.lower() == ".svg":
        return b"<text" in head
    return head.startswith(b"\x89PNG") and b"tEXt" + LABEL_PX_KEY + b"\0" in head.split(b"IDAT", 1)[0]


def _box_figures(app, doctree) -> None:
    """Every figure's image node inside an ``inline`` of class ``msenv-figure`` (a ``span``)."""
    from docutils import nodes

    for image in list(doctree.findall(nodes.image)):
        uri = image.get("candidates", {}).get("*", image["uri"])
        if "://" in uri or not is_figure(app.srcdir / uri):
            continue
        box = nodes.inline(classes=["msenv-figure"])
        image.replace_self(box)
        box.append(image)


def words_nowrap_in_code(html: str) -> str:
    """Every code literal of ``html`` (a page's contents list) with each word in a ``span.nw``: a
    command as a heading (``python -m experiments traces-tune``) wraps between its words in the
    list's narrow column, never at a word's hyphen."""
    def words(inner: str) -> str:
        return "".join(tag or _WORD.sub(lambda w: f'<span class="nw">{w.group(0)}</span>', text)
                       for tag, text in _TAG_OR_TEXT.findall(inner))

    return _CODE_TEXT.sub(lambda m: m.group(1) + words(m.group(2)) + m.group(3), html)


_SOURCE_TITLE = re.compile(r"(<h1>[^<]*?)([\w.]+)(</h1>)")


def breakable_source_title(html: str) -> str:
    """A source listing's title (``Source code for msenv.engine.kinds.dynamics_round``) with a
    ``<wbr>`` after each dot of the module's name: a name wider than the column breaks between its
    parts, not inside one."""
    return _SOURCE_TITLE.sub(lambda m: m.group(1) + m.group(2).replace(".", ".<wbr>") + m.group(3), html, count=1)


def _on_page_context(app, pagename, templatename, context, doctree) -> None:
    if "body" in context:
        context["body"] = breakable_cell_code(shell_blocks_nowrap(context["body"]))
        if pagename.startswith("_modules/"):
            context["body"] = breakable_source_title(context["body"])
    if context.get("toc"):
        context["toc"] = words_nowrap_in_code(context["toc"])


def setup(app):
    app.connect("html-page-context", _on_page_context)
    app.connect("doctree-read", _box_figures, priority=900)  # after Sphinx resolved the images' paths
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
