"""``python -m evaluation.benchmark``: the command line of :mod:`evaluation.benchmark.cli`."""

# absolute: ``python -m baselines.benchmark`` (the 0.6 path, until msenv 0.7) runs this file's code too
from evaluation.benchmark.cli import main

main()
