"""Controllers compared as Ray tasks, pasted as a script: the numbers of a local run.

``evaluation.harness.evaluate`` plays every (controller, episode) pair as one job;
``ray_address`` sends the jobs to Ray: ``"local"`` starts a local Ray instance, an
address such as ``"ray://head:10001"`` uses a running cluster (install
``msenv[ray]`` on every node). Every job carries its own seed, so the episodes are
the same wherever they run; only the measured decision times differ.

Run: ``python examples/ray_evaluate.py [--address ray://head:10001]``
"""

import argparse

from evaluation.harness import evaluate, parse_entry
from evaluation.report import print_table, summarize
from msenv import SystemConfig

# a small cell, so the run is quick
SMALL = SystemConfig(num_devices=4, gamma_max=8, episode_length=6)


def main(address: str = "local", episodes: int = 3) -> tuple[list, list]:
    """Play the same episodes here and on Ray; returns (local, remote) results."""
    # a controller's name, or name@mode_policy: fixed-3 with every correction over
    # the downlink
    entries = [
        parse_entry("greedy-saa"), parse_entry("fixed-3@all_dl"), parse_entry("random")
    ]
    local = evaluate(entries, SMALL, episodes, seed=21, workers=1)
    remote = evaluate(entries, SMALL, episodes, seed=21, ray_address=address)
    print_table(summarize(remote), title=f"{episodes} episodes as Ray tasks")
    return local, remote


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--address", default="local", help='"local" or a Ray cluster\'s address'
    )
    main(parser.parse_args().address)
