"""Sphinx configuration of msenv's documentation (MyST Markdown pages, furo theme).

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html``. The reference pages
(environments, configuration, controllers, command lines) are generated from the code when the
build starts (``docs/_ext/msenv_docs.py``), into ``docs/generated/`` — never edited by hand.
Measured figures that more than one page prints come from one source, ``docs/figures.toml`` and
the committed result files it names (``docs/_ext/msenv_figures.py``: the roles ``{measured}``,
``{iqm}``, ``{sweep}`` and the directive ``sweep-table``; the page ``generated/figures``).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE / "_ext")]

import msenv  # noqa: E402

project = "msenv"
author = "the msenv developers"
copyright = "2026, the msenv developers"
release = version = msenv.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx.ext.intersphinx",
    "sphinx_copybutton",
    "msenv_html",
    "msenv_docs",
    "msenv_leaderboard",
    "msenv_glance",
    "msenv_figures",
    "msenv_traces_tables",
    "msenv_main_job_tables",
]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist", "attrs_inline"]
myst_heading_anchors = 3
# no typographic dashes or quotes: "--policy set" and "qwen2.5" must stay as typed, pasteable
smartquotes = False
exclude_patterns = ["_build", "figures", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_theme = "furo"
# the site documents the release plus whatever the changelog lists as unreleased: its title says so
_unreleased = "\n## Unreleased\n" in (Path(__file__).parent / "changelog.md").read_text()
html_title = f"msenv {release}" + ("+dev" if _unreleased else "")  # 0.5.0+dev: 0.5.0 and what came after it
html_static_path: list[str] = ["_static"]
# a copy button on commands and code, not on program output (text blocks); a "$ ", ">>> " or "... "
# prompt is stripped and a block with prompts copies only its prompted lines (no output)
copybutton_selector = ", ".join(f"div.highlight-{lang} pre" for lang in (
    "bash", "sh", "console", "shell", "python", "python3", "pycon", "toml", "yaml", "bibtex", "default", "json"))
copybutton_prompt_text = r"\$ |>>> |\.\.\. "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True
copybutton_exclude = ".linenos, .gp, .go"
html_css_files = ["msenv.css"]
html_js_files = ["msenv-scroll.js"]
# Intersphinx from a local inventory only, so the build never needs the network (links still point
# to docs.python.org). docs/_inventories/python-3.11.inv is the objects.inv Debian's python3.11-doc
# ships (/usr/share/doc/python3.11/html/objects.inv, 3.11.2). NumPy, Gymnasium, SB3 and torch have
# no offline inventory (no Debian package or wheel ships one), so their names are not linked; see
# docs/development.md.
intersphinx_mapping = {"python": ("https://docs.python.org/3.11", str(HERE / "_inventories" / "python-3.11.inv"))}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
suppress_warnings = ["myst.header"]
# MathJax 3.2.2 ships with the site (docs/_static/mathjax: tex-chtml.js, its fonts, its Apache-2.0
# LICENSE), so the formulas render offline and in the browser test, and no page loads a CDN.
mathjax_path = "mathjax/tex-chtml.js"
# the API page's "on this page" lists members by their own name (is_paper_scenario), not
# SystemConfig.is_paper_scenario: the long dotted names did not fit the column
toc_object_entries_show_parents = "hide"
