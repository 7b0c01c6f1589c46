"""Sphinx extension: the leaderboard page, generated at the start of every build from the
committed result files in ``docs/leaderboard/`` (each checked with
``baselines.benchmark.check_result``; a bad file fails the build)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
OUT = DOCS / "generated" / "leaderboard.md"

HEADER = """# Leaderboard

Every controller and learned agent on the benchmark suites (generated from the committed result
files in `docs/leaderboard/`; each passes `python -m baselines.benchmark --check FILE`).

**How a score is made.** A suite (`baselines.suites`) is a named, versioned list of test cells:
an id with config overrides, episodes × rounds, and test seeds from a block that no training,
validation or results command of the repository uses (a test checks it). Every method plays
every cell on the same seeds. An episode's score is its long-run throughput (Σ tokens / Σ time)
divided by the suite's reference controller's on the same episode; the real-time score counts
each decision's wall time into the round. A learned method is several agent directories, one per
training seed; its runs are its (training seed, test episode) pairs. Aggregates over the cells —
interquartile mean (IQM), mean, optimality gap below 1, and the probability of improvement over
the reference — come with 95% stratified-bootstrap confidence intervals (resampling runs within
each cell; `rliable`, Agarwal et al., NeurIPS 2021; 2,000 resamples, seeded). Decision times,
and so real-time scores, depend on the machine and its load: each file says where it was run.

**Add your row.** Run the suite with your agents (one directory per training seed, in the
portable format that `train.py` writes) or your registered controller:

```bash
python -m baselines.benchmark --suite paper-v0 --agent mine=run0/agent run1/agent run2/agent run3/agent run4/agent --out results/benchmark
python -m baselines.benchmark --check results/benchmark/paper-v0.json
```

and add the JSON file (and its PNG) to `docs/leaderboard/` under a new name. The result file
holds the suite as it was run (checked against the suite's definition), the machine, the command,
every episode's statistics, the score matrices and the aggregates; the check recomputes the
scores from the episodes and the aggregates from the scores.

"""


def _on_builder_inited(app) -> None:
    root = str(DOCS.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from baselines.leaderboard import load_results, markdown

    OUT.parent.mkdir(exist_ok=True)
    page = HEADER + markdown(load_results(DOCS / "leaderboard", root=DOCS.parent), figures="../leaderboard")
    if not OUT.exists() or OUT.read_text() != page:
        OUT.write_text(page)


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
