"""The documentation stays true: the site builds with warnings as errors, every Python block of
README and docs runs, every command line is accepted by its module's parser, every relative link
and path exists, every "model §N" is defined, and the generated pages cover every id and field."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import msenv

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import msenv_docs  # noqa: E402
from plain_math import markdown_math  # noqa: E402


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """The generated pages, written into a temporary folder."""
    import msenv_glance

    out = tmp_path_factory.mktemp("generated")
    msenv_docs.write_all(out)
    (out / msenv_glance.OUT.name).write_text(msenv_glance.page())  # the glance page, as the build writes it
    return out


def _pages(generated: Path | None = None) -> list[Path]:
    pages = [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if "generated" not in p.parts
                                          and "_build" not in p.parts)
    return pages + (sorted(generated.glob("*.md")) if generated else [])


def _blocks(text: str, langs: tuple[str, ...]) -> list[str]:
    return [m.group(2) for m in re.finditer(r"```(\w+)\n(.*?)```", text, flags=re.S) if m.group(1) in langs]


# ---------------------------------------------------------------------- the site
@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(built_site):
    html, r = built_site  # built once per run (tests/conftest.py), also loaded in a browser by test_browser
    warnings = [line for line in r["stderr"].splitlines() if "WARNING" in line or "ERROR" in line]
    assert r["returncode"] == 0 and not warnings, r["stderr"][-3000:]
    for page in ("index", "model", "getting-started", "training", "integrations", "api",
                 "generated/environments", "generated/configuration", "generated/controllers", "generated/cli"):
        assert (html / f"{page}.html").exists(), page
    for env_id in tuple(msenv.ENV_IDS):
        assert (html / "generated" / f"{msenv_docs.page_name(env_id)}.html").exists()
    model = (html / "model.html").read_text()
    assert "mathjax" in model.lower() and model.count('class="math') >= 20
    assert "_static/mathjax/tex-chtml.js" in model and "cdn.jsdelivr" not in model  # the site's own MathJax
    for page in sorted((html / "results").glob("*.html")):  # every figure opens its full-size file
        text = page.read_text()
        linked = re.findall(r'<a class="reference internal[^"]*" href="([^"]+)"><img [^>]*src="([^"]+)"', text)
        assert len(linked) == text.count("<img"), page.name
        assert all(link == src and (page.parent / link).is_file() for link, src in linked), (page.name, linked)
    # the API reference, one page per part; Python's names link through the vendored inventory
    api = "".join(p.read_text() for p in sorted((html / "api").glob("*.html")))
    assert 'href="https://docs.python.org/3.11/library/functions.html#float"' in api
    assert len(list((html / "api").glob("*.html"))) >= 6
    assert 'href="api/environment.html"' in (html / "api.html").read_text()
    text = re.sub(r'<span class="math[^"]*">.*?</span>|<div class="math[^"]*">.*?</div>', "", model, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    raw = re.findall(r"\w\^\(|_\{|E\[N_k\]|10\^\(", text)
    assert not raw, raw  # every formula of the model page is rendered as math


@pytest.mark.slow
def test_generated_pages_cover_every_id_and_every_field(generated):
    from msenv.config import config_fields, field_docs

    envs = (generated / "environments.md").read_text()
    for env_id in msenv.ENV_IDS:
        assert f"[`{env_id}`]" in envs
        page = (generated / f"{msenv_docs.page_name(env_id)}.md").read_text()
        for section in ("## Make it", "## Spaces", "## `info`", "## What a server can know", "## Baselines table",
                        "## Version history"):
            assert section in page, (env_id, section)
        assert (generated / "img" / f"{env_id.split('/')[-1]}.png").stat().st_size > 10_000
    for env_id in tuple(msenv.ENV_IDS):  # the animated episode at the top, small enough to commit
        name = env_id.split("/")[-1]
        gif = DOCS / "figures" / "episodes" / f"{name}.gif"
        assert gif.exists() and gif.stat().st_size < 300_000, gif
        assert f"](../figures/episodes/{name}.gif)" in (generated / f"{msenv_docs.page_name(env_id)}.md").read_text()
    for env_id in msenv.ENV_IDS:
        assert "## Version history" in (generated / f"{msenv_docs.page_name(env_id)}.md").read_text(), env_id
    assert set(msenv_docs.ADDED_IN) == set(msenv.ENV_IDS)  # a new id needs its release
    assert msenv.__version__ == msenv_docs.RELEASES[-1]
    assert f"## {msenv.__version__} " in (DOCS / "changelog.md").read_text()
    config = (generated / "configuration.md").read_text()
    docs = field_docs()
    for f in config_fields():
        f = f[2]
        row = next(line for line in config.splitlines()
                   if line.startswith(f'| <a id="config-{f.name}"></a>`{f.name}` |'))  # an anchor per field
        meaning = markdown_math(msenv_docs._plain_roles(docs[f.name]))  # its formulas as math
        assert docs[f.name] and row.rstrip(" |").endswith(meaning.replace("|", "\\|")), f.name
        assert ":func:`" not in row and ":class:`" not in row, f.name
    controllers = (generated / "controllers.md").read_text()
    from baselines import REGISTRY

    for name in REGISTRY:
        assert f"| `{name}` |" in controllers


def test_observation_and_info_docs_match_the_spaces():
    from msenv.engine.functional import engine_for, feature_docs

    for env_id in msenv.ENV_IDS:
        cfg = msenv.env_config(env_id).base
        dev, glob = feature_docs(cfg)
        lay = msenv.layout_of(cfg)
        assert (len(dev), len(glob)) == (lay.row, lay.n_globals)
        engine = engine_for(cfg)
        assert all(key.doc for key in engine.info) and engine.info_keys == tuple(key.name for key in engine.info)


# ---------------------------------------------------------------------- code blocks
@pytest.fixture(scope="module")
def quick_agent_cwd(tmp_path_factory) -> Path:
    """A folder holding ``runs/ppo-MultiSpin-v0-quick``, the smoke run the docs' agent examples load."""
    cwd = tmp_path_factory.mktemp("docs_cwd")
    r = subprocess.run([sys.executable, str(ROOT / "train.py"), "--quick", "--no-progress"], cwd=cwd,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return cwd


@pytest.mark.slow  # its fixture runs train.py --quick
@pytest.mark.parametrize("page", [p.relative_to(ROOT).as_posix() for p in _pages()
                                  if _blocks(p.read_text(), ("python",))])
def test_every_python_block_runs(page, quick_agent_cwd, monkeypatch):
    """The blocks of a page run in order, in one namespace (as a reader would paste them)."""
    monkeypatch.chdir(quick_agent_cwd)
    ns: dict = {"__name__": "__docs__"}
    for i, block in enumerate(_blocks((ROOT / page).read_text(), ("python",))):
        exec(compile(block, f"{page}[block {i}]", "exec"), ns)


@pytest.mark.slow
def test_every_python_block_of_the_generated_pages_runs(generated):
    blocks = [b for p in sorted(generated.glob("*.md")) for b in _blocks(p.read_text(), ("python",))]
    assert len(blocks) == len(msenv.ENV_IDS)
    for block in blocks:
        ns: dict = {}
        exec(compile(block, "generated", "exec"), ns)
        ns["env"].close()
        ns["venv"].close()


# ---------------------------------------------------------------------- command lines
#: ``python -m MODULE`` / ``python FILE`` → the module whose build_parser() parses its arguments;
#: None: an outside tool, not parsed here
CLI_MODULES = {
    "train.py": "train", "evaluation.evaluate": "evaluation.evaluate", "experiments": "experiments.__main__",
    "agents.tune": "agents.tune", "agents.rllib": "agents.rllib", "benchmarks.core": "benchmarks.core",
    "benchmarks.greedy": "benchmarks.greedy", "benchmarks.decisions": "benchmarks.decisions",
    "benchmarks/decisions.py": "benchmarks.decisions", "benchmarks.ppo": "benchmarks.ppo",
    "benchmarks.vector": "benchmarks.vector", "benchmarks.threads": "benchmarks.threads",
    "experiments.ppo_settings": "experiments.ppo_settings",
    "evaluation.benchmark": "evaluation.benchmark", "agents.convert": "agents.convert",
    "agents.hyperparams": "agents.hyperparams.__main__",
    "evaluation.leaderboard": "evaluation.leaderboard", "benchmarks.shells": "benchmarks.shells",
    "msenv.traces": "msenv.traces.__main__", "benchmarks.traces": "benchmarks.traces",
    "benchmarks.trace_filter": "benchmarks.trace_filter", "benchmarks.main_job": "benchmarks.main_job",
    "benchmarks.soak": "benchmarks.soak",
    # the changelog's history names the paths of its releases (kept, deprecated, until msenv 0.7)
    "baselines.evaluate": "evaluation.evaluate", "baselines.benchmark": "evaluation.benchmark",
    "baselines.leaderboard": "evaluation.leaderboard",
    "pytest": None, "sphinx": None, "http.server": None, "build": None, "rl_zoo3.train": None,
    "docs/_ext/msenv_docs.py": None, "docs/_ext/episode_gifs.py": None, "tests/make_golden.py": None,
    "tests/make_golden_dynamic.py": None,
}


def _commands(text: str) -> list[str]:
    """Every ``python …`` command of a page: lines of its shell/text blocks and inline code."""
    found = []
    for block in _blocks(text, ("bash", "text", "sh", "console")):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            for part in line.split("&&"):
                part = part.strip()
                if part.startswith("python "):
                    found.append(part)
    found += [" ".join(m.group(1).split()) for m in re.finditer(r"`(python [^`]+)`", text)]
    return found


def _parser(module: str):
    if module == "train":
        spec = importlib.util.spec_from_file_location("train_for_docs", ROOT / "train.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.build_parser()
    return importlib.import_module(module).build_parser()


@pytest.mark.slow
def test_every_command_line_is_accepted_by_its_parser(generated):
    checked, bad = 0, []
    for page in _pages(generated):
        if page.name == "cli.md":  # the commands' own --help texts
            continue
        for cmd in _commands(page.read_text()):
            cmd = cmd.replace("<ID>", "Dynamic")  # the pages' placeholder for any dynamic id
            words = shlex.split(re.sub(r"\[([^\]]*)\]", r"\1", cmd.replace("[1.0,2.0]", "1.0,2.0")), comments=True)
            target = words[2] if words[1] == "-m" else words[1]
            args = words[3:] if words[1] == "-m" else words[2:]
            if target not in CLI_MODULES:
                bad.append(f"{page.name}: {cmd!r}: unknown command {target!r}")
                continue
            if CLI_MODULES[target] is None:
                continue
            try:
                _parser(CLI_MODULES[target]).parse_args([a.replace("1.0,2.0", "[1.0,2.0]") for a in args])
                checked += 1
            except SystemExit as e:
                if e.code != 0:  # --help exits with 0
                    bad.append(f"{page.name}: {cmd!r}")
    assert checked >= 30, checked
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------- links, paths, references
#: a file (with a suffix) or a folder (ending in /) of the repository; env ids and TensorBoard tags
#: such as msenv/goodput have neither
REPO_PATH = re.compile(r"^(?:msenv|baselines|evaluation|agents|experiments|docs|tests|benchmarks)/(?:[\w.-]+/)*"
                       r"(?:[\w-]+\.\w+)?$|^train\.py$")


@pytest.mark.slow
def test_every_relative_link_and_path_exists(generated):
    bad = []
    for page in _pages(generated):
        text = page.read_text()
        base = DOCS / "generated" if page.parent == generated else page.parent
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target) or target.startswith("#"):
                continue
            path = target.split("#")[0]
            if not (base / path).exists() and not (page.parent == generated and (generated / path).exists()):
                bad.append(f"{page.name}: link {target}")
        for token in re.findall(r"`([^`\s]+)`", text):
            if REPO_PATH.match(token) and not any(c in token for c in "<>*") and not (ROOT / token).exists():
                bad.append(f"{page.name}: path {token}")
    assert not bad, "\n".join(bad)


def test_every_model_section_cited_is_defined_and_no_outside_spec_is_cited():
    defined = set(re.findall(r"^## §(\d+) ", (DOCS / "model.md").read_text(), flags=re.M))
    assert defined == {str(i) for i in range(1, 13)}
    files = [p for p in ROOT.rglob("*") if p.suffix in (".py", ".md", ".toml", ".yml") and p.is_file()
             and not {"_build", "generated", "site-packages"} & set(p.relative_to(ROOT).parts)
             and not any(part.startswith(".") for part in p.relative_to(ROOT).parts)]
    cited, outside = set(), []
    for p in files:
        text = p.read_text(errors="ignore")
        cited |= set(re.findall(r"model[ -]§(\d+)", text))
        if re.search(r"\bSPEC\b|SPEC\.md|CONVENTIONS\.md|conventions notes", text) and p.name != "test_docs.py":
            outside.append(str(p.relative_to(ROOT)))
    assert cited and cited <= defined, cited - defined
    assert not outside, outside


def test_readme_is_a_landing_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert "{{" not in text and "docs/" in text
    for page in _pages():
        assert "{{" not in page.read_text(), page


def test_the_smoke_runs_time_is_stated_once():
    """`train.py --quick` has one measured time, in one place (README), not several that drift."""
    texts = [p.read_text() for p in _pages()] + [(ROOT / "train.py").read_text()]
    claims = [m.group(1) for t in texts for at in (x.end() for x in re.finditer(r"train\.py --quick", t))
              if (m := re.search(r"(\d+(?:\.\d+)?\s?s wall|< ?\d+ ?min)", t[at:at + 60]))]
    assert len(claims) == 1, claims


@pytest.mark.slow
def test_the_house_picture_shows_every_module_on_its_floor(generated):
    """docs/design.md's picture is drawn from the repository: every module of every layer, and the
    floors in the order the imports point."""
    import re

    svg = (generated / "house.svg").read_text()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    titles = [t for t in texts if t in {f[0] for f in msenv_docs.FLOORS}]
    assert titles == [f[0] for f in msenv_docs.FLOORS]
    shown = " ".join(texts)
    for layer in ("config", "model", "engine", "envs"):
        for p in (ROOT / "msenv" / layer).glob("*.py"):
            if p.name != "__init__.py":
                assert re.search(rf"(^|[ ·]){p.stem}([ ·]|$)", shown), p


@pytest.mark.slow
def test_the_env_pages_list_config_fields_by_their_flat_names(generated):
    """Each id page's table of the fields it changes names config fields (``--set`` names), never a
    config group."""
    from msenv.config import FIELD_NAMES, GROUPS
    from msenv.envs.cells import CELL_FIELDS

    for page in generated.glob("env-*.md"):
        text = page.read_text()
        if "| field | this id | default |" not in text:
            continue
        table = text.split("| field | this id | default |")[1].split("\n\n")[0]
        names = re.findall(r"^\| `(\w+)` \|", table, flags=re.M)
        assert names and set(names) <= FIELD_NAMES | set(CELL_FIELDS) and not set(names) & set(GROUPS), page.name


def test_the_extras_table_names_every_extra_and_no_other():
    """getting-started's table of extras and pyproject.toml's extras are the same set."""
    import tomllib

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    text = (DOCS / "getting-started.md").read_text()
    table = text.split("| extra | for |")[1].split("\n\n")[0]
    named = set(re.findall(r"^\| `([\w-]+)` \|", table, flags=re.M))
    assert named == extras - {"all"}, (named ^ (extras - {"all"}))
    for page in _pages():
        for extra in re.findall(r"msenv\[([\w,-]+)\]|-e \"?\.\[([\w,-]+)\]", page.read_text()):
            for name in ",".join(e for e in extra if e).split(","):
                assert name in extras, (page.name, name)


@pytest.mark.slow
def test_every_env_page_opens_with_its_summary_box_and_has_a_baselines_table(generated):
    """As Gymnasium's env pages: the spaces, reward, episode and import line first (read from the env
    itself), and — as README promises — every id's page has its baselines table."""
    import gymnasium as gym

    for env_id in list(msenv.ENV_IDS):
        text = (generated / f"{msenv_docs.page_name(env_id)}.md").read_text()
        head = text.split("\n## ")[0]
        assert ":::{container} summary-box" in head, env_id
        env = gym.make(env_id).unwrapped
        assert f"`{env.observation_space}`" in head and f"* {env.action_space.shape[0]})`" in head, env_id
        assert "\n## Baselines" in text, env_id


def test_no_escaped_underscore_inside_math():
    """MathJax shows ``\\_`` inside ``\\text{…}`` as a backslash and an underscore: a field name in
    a formula is written beside it, in code, not escaped into it."""
    bad = []
    for page in _pages():
        for m in re.finditer(r"\$\$?[^$]+\$\$?", page.read_text()):
            if "\\_" in m.group(0):
                bad.append(f"{page.name}: {m.group(0)[:60]}")
    assert not bad, bad


@pytest.mark.slow
def test_plain_formulas_of_the_generated_pages_become_math():
    """docs/_ext/plain_math.py on worked examples of the code's notation: each formula becomes
    ``$…$`` TeX, a code name becomes code, the prose around them stays text, and code, links and
    math already written are left alone."""
    cases = {
        "a correction carries L = V_eff·(⌈log2 V⌉ + Q) bits":
            r"a correction carries $L = V_{\mathrm{eff}}\cdot (\lceil \log_2 V\rceil + Q)$ bits",
        "the round's goodput Σ_k N_k / T (tokens/s)": r"the round's goodput $\sum _{k} N_{k} / T$ (tokens/s)",
        "an exhaustive search, 21^20 vectors": r"an exhaustive search, $21^{20}$ vectors",
        "tanh((g_ul [dB] + 115)/15): UL": r"$\tanh ((g_{\mathrm{ul}} [\mathrm{dB}] + 115)/15)$: UL",
        "at most vocab_size": "at most `vocab_size`",
        "The harness hands it env.oracle_context.": "The harness hands it `env.oracle_context`.",
        "P_ul, each device's budget": r"$P_{\mathrm{ul}}$, each device's budget",
        "drafting time max_k γ_k T_k^dft, s": r"drafting time $\max _{k} \gamma _{k} T_{k}^{\mathrm{dft}}$, s",
        "`T_k` in code, $x_k$ in math, [a page](a_b.md)": "`T_k` in code, $x_k$ in math, [a page](a_b.md)",
        "K = 20 devices, a weak cell": "K = 20 devices, a weak cell",
    }
    for plain, math in cases.items():
        assert markdown_math(plain) == math, plain
    # a long formula is cut after its top-level operators, so that a table cell can wrap it
    long = markdown_math("gain: β_k = 10^(ref_gain_db/10) · d_k^(−pathloss_exponent)")
    assert long == (r"gain: $\beta _{k} =$ $10^{(\mathtt{ref\_gain\_db}/10)} \cdot$ "
                    r"$d_{k}^{(-\mathtt{pathloss\_exponent})}$")
    # every piece of math balances its braces, and no plain subscript is left outside math and code
    for plain in cases:
        out = re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)", "", markdown_math(plain))
        assert not re.search(r"[A-Za-zα-ω)\]]_[A-Za-z0-9α-ω{(]", out), out


@pytest.mark.slow
def test_every_figure_on_the_site_is_dated(built_site):
    """Every figure a page prints through a role (``{measured}``, ``{iqm}``, ``{sweep}``) carries a
    mark linking to a note at the page's end that says, without hovering, when it was measured
    (a date) and with which command; the leaderboard dates every result file and every row."""
    html, _ = built_site
    checked = 0
    for page in sorted(html.rglob("*.html")):
        text = page.read_text()
        # (Sphinx's signatures mark their * and / separators with <abbr> too: not figures)
        figures = len(re.findall(r'<abbr title="(?!Keyword-only|Positional-only)', text))
        marks = re.findall(r'class="measured-mark"><a class="reference internal" href="#(measured-\d+)"', text)
        assert len(marks) == figures, (page.name, figures, len(marks))
        for target in set(marks):
            note = re.search(rf'<li id="{target}">(.*?)</li>', text, flags=re.S)
            assert note, (page.name, target)
            words = re.sub(r"<[^>]+>", "", note.group(1))
            assert re.search(r"Measured (by )?\d{4}-\d\d-\d\d", words) and " with " in words, (page.name, words[:200])
            checked += 1
    assert checked >= 30, checked
    board = (html / "generated" / "leaderboard.html").read_text()
    files = re.findall(r"<strong>([\w.-]+\.json)</strong> — (measured [^<;]+|run not dated in the file "
                       r"\(committed [^)]+\))", board)
    assert len(files) >= 4 and all(re.search(r"\d{4}-\d\d-\d\d", d) for _, d in files), files
    # a file that records its run's date shows that date, never its commit's
    for name, said in files:
        doc = json.loads((DOCS / "leaderboard" / name).read_text()) if (DOCS / "leaderboard" / name).exists() else {}
        if doc.get("date"):
            assert said == f"measured {doc['date']}", (name, said)
    # each reproduce command is a code block of its own (with a copy button), not a paragraph
    assert "reproduce: <code" not in board and board.count('class="highlight-bash') >= len(files)


def test_readme_prints_only_figures_that_have_a_source():
    """Every measured figure README prints — a wall time, a ratio ± CI, an IQM with its interval —
    is one that docs/figures.toml holds (a pattern of an entry finds it there, and
    tests/test_figures.py holds its value to the source): README has no figure of its own."""
    sys.path.insert(0, str(DOCS / "_ext"))
    import msenv_figures

    entries = msenv_figures.load_source()
    readme = msenv_figures.checked_text((ROOT / "README.md").read_text())
    covered = [m.span(1) for e in entries.values() for pat in e["pattern"] for m in re.finditer(pat, readme)]
    figure = re.compile(r"\d+(?:\.\d+)? s wall|\d+ min \d+ s|\d\.\d{3,4} ± \d\.\d{3,4}"
                        r"|\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]"
                        r"|\d+(?:\.\d+)? ms against \d+(?:\.\d+)? ms")
    loose = [m.group(0) for m in figure.finditer(readme)
             if not any(a <= m.start() and m.end() <= b + len(" wall") for a, b in covered)]
    assert not loose, f"README figures with no entry in docs/figures.toml: {loose}"


# ---------------------------------------------------------------------- what a server can know
def _section(page: str, heading: str) -> str:
    return page.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("env_id", [i for i in msenv.ENV_IDS if not i.endswith("Cells-v0")])
def test_what_a_server_can_know_is_what_the_engine_hides(env_id, tmp_path):
    """Each id page's "What a server can know" names exactly the fields that the oracle context
    holds and the server's context does not (compared here on a fresh env, independently of the
    generator); an id with none says nothing is hidden, and only then."""
    import dataclasses

    import gymnasium as gym
    import numpy as np

    env = gym.make(env_id).unwrapped
    env.reset(seed=3)
    ctx, orc = env.context, env.oracle_context
    hidden = {f.name for f in dataclasses.fields(orc)
              if f.name != "oracle" and isinstance(getattr(orc, f.name), np.ndarray)
              and not (isinstance(getattr(ctx, f.name), np.ndarray)
                       and np.array_equal(getattr(ctx, f.name), getattr(orc, f.name)))}
    env.close()
    knows = _section(msenv_docs.env_page(env_id, tmp_path), "What a server can know")
    named = set(re.findall(r"^- `(\w+)`:", knows, flags=re.M))
    assert named == hidden, (named, hidden)
    assert ("Nothing is hidden" in knows) == (not hidden)
    if env_id == "msenv/MultiSpin-Traces-v0":
        assert {"first_rejection", "hidden_level", "hidden_high"} <= named
        assert "never sees α" in knows and "model.md#model-12" in knows


def test_an_undeclared_hidden_field_fails_the_build(monkeypatch):
    from msenv.engine.kinds import traces

    monkeypatch.setattr(traces, "HIDDEN", {k: v for k, v in traces.HIDDEN.items() if k != "first_rejection"})
    with pytest.raises(RuntimeError, match="first_rejection"):
        msenv_docs.oracle_only("msenv/MultiSpin-Traces-v0")


def test_the_traces_page_shows_measured_baselines_and_links_its_results(generated):
    page = (generated / "env-MultiSpin-Traces-v0.md").read_text()
    table = _section(page, "Baselines table")
    assert "Not measured" not in table and "{iqm}`traces-v1 ppo-capped throughput`" in table
    assert "../results/traces.md" in page and "model.md#model-12" in page


# ---------------------------------------------------------------------- the folders commands name
def test_every_runs_folder_the_site_names_is_one_a_command_writes(generated):
    """A `runs/ppo-…` folder quoted on the site (README, every page) is one that `train.py` writes by
    default (``runs/ppo-<id>``, ``-quick`` for the smoke run) or one a command on the site names with
    `--log-dir`/`--out`: never a stale default such as an old preset's name."""
    from agents.training.config import default_log_dir

    texts = {p.name: p.read_text() for p in _pages(generated)} | {"train.py": (ROOT / "train.py").read_text()}
    written = {default_log_dir(i, q) for i in msenv.ENV_IDS for q in (False, True)}
    named = {m for t in texts.values() for m in re.findall(r"--(?:log-dir|out|resume)\s+(runs/[\w.<>-]+)", t)}
    bad = []
    for name, text in texts.items():
        for folder in re.findall(r"\b(runs/ppo-[\w.<>-]*[\w>])", text):
            ok = (folder in written or folder in named or "<" in folder
                  or any(folder.startswith(w + suffix) for w in written | named for suffix in ("-mlp", "-2")))
            if not ok:
                bad.append(f"{name}: {folder}")
    assert not bad, bad


def test_a_stale_runs_folder_is_caught(generated, tmp_path, monkeypatch):
    page = tmp_path / "stale.md"
    page.write_text("TensorBoard: `tensorboard --logdir runs/ppo-qwen2.5/tb`\n")
    monkeypatch.setattr(sys.modules[__name__], "_pages", lambda generated=None: [page])
    with pytest.raises(AssertionError, match="qwen2.5"):
        test_every_runs_folder_the_site_names_is_one_a_command_writes(generated)


# ---------------------------------------------------------------------- results at a glance
def test_results_at_a_glance_says_what_the_result_files_say():
    """The page is generated from the result files: each suite's leader is its highest IQM; a
    doctored file changes the page; README and the landing page count the claims that fail under
    the default reading as the sensitivity run does."""
    import copy

    import msenv_glance as glance

    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
    page = glance.page()
    for suite, doc in glance.suites():
        top = max((m for m in doc["aggregates"]["throughput"] if m not in (doc["suite"].get("oracles") or ())),
                  key=lambda m: doc["aggregates"]["throughput"][m]["iqm"][0])
        assert (f"- **`{suite}`**, relative to `{doc['suite']['reference']}`. Throughput: `{top}` "
                f"{{iqm}}`{suite} {top} throughput`") in page
    claims = glance.claims()["default"]
    failed = sum(r["holds"] != "True" for r in claims.values())
    assert f"{failed} do not" in page
    for text in ((ROOT / "README.md").read_text(), (DOCS / "index.md").read_text()):
        assert f"{words[failed]} of the paper's" in text and f"{words[len(claims)]}" in text
    doc = copy.deepcopy(dict(glance.suites())["paper-v1"])
    doc["aggregates"]["throughput"]["mlp-ppo"]["iqm"] = [2.0, 1.9, 2.1]
    assert glance.learned_verdict("paper-v1", doc).startswith("a learned agent leads: `mlp-ppo`")
    assert glance.leader(doc, "throughput")[0] == "mlp-ppo"
