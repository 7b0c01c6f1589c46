"""The traces experiments (model §12): their seeds and one table recomputed by hand."""

from __future__ import annotations

import csv
import inspect
from itertools import combinations

import gymnasium as gym
import numpy as np
import pytest

from evaluation.suites import TEST_SEEDS, VALIDATION_SEEDS
from experiments import traces
from experiments.__main__ import TRACE_COMMANDS, build_parser, parse_args

#: each experiment's function (the CLI's subcommand) and the episodes it plays by default
FUNCTIONS = {"traces-tune": traces.tune, "traces-headroom": traces.headroom, "traces-sensitivity": traces.sensitivity,
             "traces-training": traces.training, "traces-choice": traces.choose_agent, "traces-shares": traces.shares}


def _blocks() -> dict[str, range]:
    """The seeds each experiment's default run plays, read from the CLI and from the functions."""
    blocks = {}
    for command in TRACE_COMMANDS:
        if command == "traces-presets":  # plays no episodes
            continue
        args = parse_args(build_parser(), [command])
        blocks[command] = range(args.seed, args.seed + args.drops)
    choice = inspect.signature(traces.choose_agent).parameters
    blocks["traces-choice"] = range(choice["seed"].default, choice["seed"].default + choice["episodes"].default)
    return blocks


def test_every_traces_experiment_plays_validation_seeds_of_its_own_by_default():
    blocks = _blocks()
    assert set(blocks) == set(FUNCTIONS)
    for name, block in blocks.items():
        assert block.start in VALIDATION_SEEDS and block.stop - 1 in VALIDATION_SEEDS, (name, block)
        assert not set(block) & set(TEST_SEEDS), name
        # the function called from Python plays what the CLI plays
        assert inspect.signature(FUNCTIONS[name]).parameters["seed"].default == block.start, name
    for (a, ra), (b, rb) in combinations(blocks.items(), 2):
        assert not set(ra) & set(rb), (a, b)


def test_the_cli_refuses_a_test_seed_for_a_traces_experiment(capsys):
    with pytest.raises(SystemExit):
        parse_args(build_parser(), ["traces-headroom", "--seed", str(TEST_SEEDS.start)])
    assert "validation block" in capsys.readouterr().err


def _played(preset: str, gamma: int, rounds: int, seed: int) -> float:
    """Throughput of a fixed draft length on one episode, played through the registered id by hand:
    Σ tokens / Σ round time."""
    env = gym.make(traces.TRACES_ID, trace_source=preset, trace_split="validation", episode_length=rounds)
    env.reset(seed=seed)
    k = env.unwrapped.config.num_devices
    tokens = time_s = 0.0
    done = False
    while not done:
        _, _, term, trunc, info = env.step(np.full(k, gamma))
        tokens += float(info["tokens"].sum())
        time_s += float(info["latency"])
        done = term or trunc
    env.close()
    return tokens / time_s


def test_headroom_table_against_episodes_played_by_hand(tmp_path):
    from baselines.tuned import TRACE_TUNED

    preset, episodes, rounds, seed = "cnn-ngram", 2, 12, VALIDATION_SEEDS.start + 5
    tuned = TRACE_TUNED[preset]
    traces.headroom(tmp_path, {preset: tuned}, presets=(preset,), episodes=episodes, rounds=rounds, seed=seed,
                    workers=1)
    with open(tmp_path / "traces_headroom.csv") as f:
        rows = {r["controller"]: r for r in csv.DictReader(f)}
    best = tuned["fixed"]["gamma"]
    by_hand = np.array([_played(preset, best, rounds, seed + e) for e in range(episodes)])
    reference = rows[f"fixed-{best}"]
    assert float(reference["throughput"]) == pytest.approx(by_hand.mean(), rel=1e-9)
    assert float(reference["ratio_vs_best_fixed"]) == pytest.approx(1.0)
    assert float(reference["share_of_clairvoyant_gain"]) == pytest.approx(0.0)
    assert float(rows["clairvoyant"]["share_of_clairvoyant_gain"]) == pytest.approx(1.0)
    # a share is the controller's gain over the reference as a part of the clairvoyant's
    gain = float(rows["clairvoyant"]["throughput"]) / by_hand.mean() - 1.0
    for row in rows.values():
        share = (float(row["throughput"]) / by_hand.mean() - 1.0) / gain
        assert float(row["share_of_clairvoyant_gain"]) == pytest.approx(share, rel=1e-9, abs=1e-12)
