"""Sphinx extension: the leaderboard page, generated at the start of every build from the
committed result files in ``docs/leaderboard/`` (each checked by
``evaluation.leaderboard.load_results`` as ``--check`` checks it; a bad file fails the build)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
OUT = DOCS / "generated" / "leaderboard.md"

#: the page's opening: two sentences, then the suites' tables (the explanations follow them)
LEAD = """# Leaderboard

Every controller and learned agent on the benchmark suites, ranked by the interquartile mean (IQM)
of its throughput relative to the suite's reference controller on the same test episodes, with 95%
intervals over training seeds and test episodes. The page is generated from the committed result
files in `docs/leaderboard/`, each of which passes `python -m evaluation.benchmark --check FILE`;
[how a score is made](#how-a-score-is-made), [why its intervals come from a two-way
bootstrap](#why-a-two-way-bootstrap), [how to add your row](#add-your-row) and [the result
file's schema](#the-result-files-schema) follow the tables.

"""

#: after the tables: how a score is made, why the bootstrap is two-way, how to add a row
EXPLANATIONS = """## How a score is made

A suite (`evaluation.suites`) is a named, versioned list of test cells:
an id with config overrides, episodes × rounds, and test seeds from a block that no training,
validation or results command of the repository uses (a test checks it). Every method plays
every cell on the same seeds. An episode's score is its long-run throughput (Σ tokens / Σ time)
divided by the suite's reference controller's on the same episode; the real-time score counts
each decision's wall time into the round. A learned method is several agent directories, one per
training seed; each seed plays the same test episodes. Aggregates over the cells — interquartile
mean (IQM), mean, the shortfall below the reference (the mean of max(0, 1 − score)), and the
probability of improvement (rliable's: the chance that the row beats a rival on a test episode,
over all pairs of their training seeds; against the suite's best rival, the controller with the
highest IQM, and against the reference) — come with 95% percentile intervals of a two-way
bootstrap (`evaluation.stats`): each resample draws the training seeds of every method with
replacement, and the test episodes of every cell with replacement, shared by all methods, so the
episode noise that every seed shares is counted once (2,000 resamples, seed 0). A one-seed row's
interval is over episodes only. The statistics follow `rliable` (Agarwal et al., NeurIPS 2021),
whose own stratified bootstrap resamples runs only (why not that, below). Decision times,
and so real-time scores, depend on the machine and its load: each file says where it was run.

## Why a two-way bootstrap

A method's runs are its training seeds, and every seed plays the
same test episodes, so its score matrix (seeds × episodes × cells) has two sources of noise: the
seed it was trained with, and the episodes the suite happened to draw. rliable's bootstrap treats
the rows of such a matrix as independent runs; reshaping seeds × episodes into rows would count
each episode's luck once per seed and make a five-seed interval narrower than the noise of the
episodes alone. Resampling seeds (within each method) and episodes (within each cell, the same
draw for every method) keeps both: the interval answers "would this hold with other training
seeds and other test episodes". The probability of improvement is resampled the same way; its
tasks are the (cell, episode) pairs, as rliable's are its tasks. `tests/test_stats.py` checks the
bootstrap against rliable where they coincide and against a brute-force enumeration of every
resample of a small matrix.

## Add your row

Run the suite with your agents (one directory per training seed, in the
portable format that `train.py` writes) or your registered controller:

```bash
python -m evaluation.benchmark --suite paper-v1 --agent mine=run0/agent run1/agent run2/agent run3/agent run4/agent --out results/benchmark
python -m evaluation.benchmark --check results/benchmark/paper-v1.json
```

and add the JSON file (and its PNG) to `docs/leaderboard/` under a new name. The result file
holds the suite as it was run (checked against the suite's definition), the machine, the command,
every episode's statistics, the score matrices, the aggregates with their intervals, and each
method's provenance (the code's commit, each agent's decision-file hashes and training record).
A method's label is up to 64 letters, digits and `._+@-` (not a controller's name); a learned
method has at most 100 training seeds, each its own directory; `name@policy` plays a controller
under that reactive policy. The output folder is checked before the run, the summary printed
before the files are written, and each file written atomically; SIGINT or SIGTERM stops a run in
one line (exit 130 / 143) with every worker ended.
The check recomputes the scores from the episodes, every aggregate and interval from the scores,
and replays a random sample of episodes bit for bit; the page refuses a row whose agent's files
changed since it was measured.

## The result file's schema

A result file's structure is published as a JSON Schema (draft 2020-12),
{download}`result.schema.json <../../evaluation/benchmark/result.schema.json>`, which the package
ships as `evaluation/benchmark/result.schema.json`; each field's `description` says what it holds
and what it allows. `--check` and this page validate a file against it first, one line per
problem naming the JSON path, the value and what the schema allows there — for instance
`$.methods['mine'].runs=0 is invalid; allowed: an integer in 1 … 100: the method's runs (training
seeds)` — and then check what a schema cannot say: the suite as the registry defines it, one source
per run, every episode's method and run among the file's, the score arrays' shapes, the scores,
aggregates and intervals recomputed from the episodes, the replay and the agents' file hashes.

Another tool validates a file with the schema alone; with Python's `jsonschema` package:

```pycon
>>> import json, jsonschema
>>> schema = json.load(open("result.schema.json"))
>>> # raises jsonschema.ValidationError where the file breaks the schema
>>> jsonschema.validate(json.load(open("paper-v1.json")), schema)
```

or its command line (deprecated by its authors in favour of `check-jsonschema`, which takes the
same schema):

```bash
jsonschema -i paper-v1.json result.schema.json
```

msenv reads three things more strictly than a validator given what Python's `json` module parses:
an integer is written without a fraction (`1`, not `1.0`), a number is finite (`NaN` and
`Infinity` are no JSON numbers), and a pattern's final `$` is the string's end, as ECMA-262 reads
it.
"""  # noqa: E501 (a command to copy, whole)


#: a training command's options that say nothing of how a row differs from another
_ROUTINE = re.compile(r"^--(?:seed|log-dir|env-id|no-progress|workers)$")


def training_options(doc: dict) -> dict[str, str]:
    """method → the options of its training command that set it apart (``--policy set``,
    ``--set distance_range_m=[100,500]``), read from its first agent's training record."""
    out = {}
    for label, m in doc["methods"].items():
        rec = next((a.get("training") for a in m.get("agents", []) if a.get("training")), None)
        if not rec or not rec.get("command"):
            continue
        words, keep, i = shlex.split(rec["command"]), [], 0
        while i < len(words):
            if words[i].startswith("--"):
                j = i + 1
                while j < len(words) and not words[j].startswith("--"):
                    j += 1
                if not _ROUTINE.match(words[i]):
                    keep.append(" ".join(words[i:j]))
                i = j
            else:
                i += 1
        out[label] = " ".join(keep)
    return out


def readable(md: str, docs: list[dict]) -> str:
    """The leaderboard's Markdown made easier to use: each reproduce command in a code block of its
    own (one option per line, with a copy button); a learned row's training cell with the options
    that set it apart from its neighbours; a file that records no run date said so, with the
    date of its commit for what it is."""
    options: dict[str, str] = {}
    for doc in docs:
        for label, opts in training_options(doc).items():
            options.setdefault(label, opts)

    def command(m: re.Match) -> str:
        cmd = re.sub(r" (?=--)", " \\\n    ", m.group(2))
        return f"{m.group(1)}\n\n```bash\n{cmd}\n```\n\n"

    md = re.sub(r"(\*\*[\w.-]+\.json\*\* — [^\n]*?); reproduce: `([^`]+)`\. ", command, md)
    md = re.sub(r"measured by (\d{4}-\d{2}-\d{2}) \(committed\)",
                r"run not dated in the file (committed \1)", md)
    md = re.sub(r"\| by (\d{4}-\d{2}-\d{2}) \(committed\) \|", r"| not dated (committed \1) |", md)

    def row(m: re.Match) -> str:
        label, cell = m.group(1), m.group(2)
        opts = options.get(label)
        if not opts:
            return m.group(0)
        # each option as `policy set`: a code span that starts with "--" breaks between its dashes
        said = ", ".join(f"`{o[2:]}`" for o in re.split(r" (?=--)", opts))
        return f"| {label} | agent | {cell}; its training options: {said} |"

    return re.sub(r"^\| ([\w.-]+) \| agent \| ([^|]*?) \|", row, md, flags=re.M)


def _on_builder_inited(app) -> None:
    root = str(DOCS.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from plain_math import markdown_math

    from evaluation.leaderboard import load_results, markdown

    OUT.parent.mkdir(exist_ok=True)
    results = load_results(DOCS / "leaderboard", root=DOCS.parent)
    tables = readable(markdown(results, figures="../leaderboard"), [doc for _, doc in results])
    page = LEAD + markdown_math(tables).rstrip("\n") + "\n\n" + EXPLANATIONS
    if not OUT.exists() or OUT.read_text() != page:
        OUT.write_text(page)


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
