"""``python -m evaluation.leaderboard``: the command line of :mod:`evaluation.leaderboard.cli`."""

# absolute: ``python -m baselines.leaderboard`` (the 0.6 path, until msenv 0.7) runs this file's code too
from evaluation.leaderboard.cli import main

main()
