"""README's commands stay true: CI runs exactly the README test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks():
    return re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_ci_runs_readme_test_command():
    cmds = [line.strip() for b in _bash_blocks() for line in b.splitlines()]
    test_cmd = next(c for c in cmds if "pytest" in c)
    assert test_cmd.startswith("pip install torch==2.13.0 && ")
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_cmd in ci_lines


def test_readme_main_job_command_present():
    cmds = [line.strip() for b in _bash_blocks() for line in b.splitlines()]
    assert any(c.startswith("pip install torch==2.13.0 && ") and c.endswith("python train.py") for c in cmds)


def test_readme_usage_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    ns: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)  # the 10-line env example
    assert ns["info"]["goodput"] > 0 and len(ns["info"]["modes"]) == 20


def test_the_license_and_the_citation_exist():
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    cff = (ROOT / "CITATION.cff").read_text()
    import msenv

    assert "cff-version:" in cff and f'version: "{msenv.__version__}"' in cff and "license: MIT" in cff
    assert "@software{msenv" in (ROOT / "README.md").read_text()


def test_readme_reads_on_a_code_host_and_says_how_to_get_the_code():
    """A code host shows docs/*.md as raw MyST: README links to none of them (it names the built
    site's pages instead). It says how to get the code without a made-up address: a source tree,
    or the wheel and source archive `python -m build` makes; the main job installs the train extra."""
    text = (ROOT / "README.md").read_text()
    assert not re.findall(r"\]\((?:\./)?docs/[^)]*\.md\b", text)
    assert "python -m build" in text and "dist/msenv-" in text and ".whl" in text
    assert not re.search(r"github\.com|gitlab\.com|<the project|example\.com", text, flags=re.I)
    assert 'pip install -e ".[train]" && python train.py' in text
