"""The evaluation of controllers and learned agents: the paired harness (:mod:`~evaluation.harness`),
the entries of a comparison (:mod:`~evaluation.entries`), parallel runs (:mod:`~evaluation.parallel`),
summaries, files and the figure writer (:mod:`~evaluation.report`), the benchmark suites
(:mod:`~evaluation.suites`), their statistics (:mod:`~evaluation.stats`), the benchmark
(:mod:`~evaluation.benchmark`), the leaderboard (:mod:`~evaluation.leaderboard`) and the
provenance of a result (:mod:`~evaluation.provenance`).

A layer above the controllers (:mod:`baselines`) and below the agents: it reaches saved agents only
through the loaders installed under the ``msenv.agents`` entry point. Command lines:
``python -m evaluation.evaluate``, ``python -m evaluation.benchmark``, ``python -m evaluation.leaderboard``.
"""
