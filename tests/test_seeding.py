"""Training seeds derive independent environment streams (SeedSequence children) that never reach a
reserved block; a reserved seed passed by hand is refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.envs import make_vec_env, training_seeds
from evaluation.suites import RESERVED_SEEDS, TEST_SEEDS, VALIDATION_SEEDS, reserved_overlap
from msenv import SystemConfig
from msenv.envs.seeding import DERIVED_HIGH, DERIVED_LOW, derived_seeds

ROOT = Path(__file__).resolve().parents[1]


def test_training_seeds_0_to_4_share_no_environment_stream():
    per_seed = [training_seeds(s, 16) for s in range(5)]
    every = [x for seeds in per_seed for x in seeds]
    assert len(set(every)) == len(every) == 80
    # the streams themselves: the first 64 draws of each environment's generator are all distinct
    draws = np.array([np.random.default_rng(x).integers(2**63, size=64) for x in every])
    assert len(np.unique(draws)) == draws.size
    # the seed s … s + 15 scheme of 0.5 shared 15 of 16 seeds between neighbours; none are shared now
    assert not set(per_seed[0]) & set(per_seed[1])


def test_derived_seeds_follow_the_seed_sequence_tree():
    a = derived_seeds(7, 4, 0)
    assert a == derived_seeds(7, 4, 0)  # deterministic
    assert a[:2] == derived_seeds(7, 2, 0)  # children are the same whatever n
    # each is the spawned child's first 64-bit word mapped into [2**32, 2**63)
    child = np.random.SeedSequence(7, spawn_key=(0,)).spawn(4)[3]
    assert a[3] == DERIVED_LOW + int(child.generate_state(1, np.uint64)[0]) % (DERIVED_HIGH - DERIVED_LOW)
    assert not set(a) & set(derived_seeds(7, 4, 1)) and not set(a) & set(derived_seeds(8, 4, 0))
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match="seed"):
            derived_seeds(bad, 2)
    with pytest.raises(ValueError, match="n=0"):
        derived_seeds(0, 0)


@pytest.mark.parametrize("seed", [0, 1, 4, 123_456, TEST_SEEDS.start - 1])
def test_a_resumed_run_never_reaches_a_reserved_block_at_any_step_count(seed):
    rng = np.random.default_rng(seed)
    steps = [0, 1, 16, 1_000_000, 1_000_000 - seed, *rng.integers(1, 10**12, size=200).tolist()]
    fresh = set(training_seeds(seed, 16))
    for done in steps:
        seeds = training_seeds(seed, 16, done)
        assert reserved_overlap(seeds) is None
        assert all(DERIVED_LOW <= s < DERIVED_HIGH for s in seeds)
        assert all(s not in block for s in seeds for block in RESERVED_SEEDS.values())
        if done:
            assert not fresh & set(seeds)  # fresh streams, not the ones before the stop shifted


def test_reserved_overlap_finds_the_first_reserved_seed():
    assert reserved_overlap(range(16)) is None
    said = reserved_overlap(range(999_990, 1_000_010))
    assert "seed 1000000" in said and "test" in said
    assert "validation" in reserved_overlap([5, VALIDATION_SEEDS.start + 3])
    assert reserved_overlap(range(TEST_SEEDS.stop, TEST_SEEDS.stop + 5)) is None
    assert reserved_overlap(range(1_000_001, 1_000_100, 7)) is not None  # a stepped range, seed by seed


def test_a_seed_list_seeds_each_environment_as_its_single_env_would():
    cfg = SystemConfig(num_devices=4, episode_length=5)
    seeds = training_seeds(3, 2)
    batched = make_vec_env(cfg, 2, seeds, "batched").reset()
    dummy = make_vec_env(cfg, 2, seeds, "dummy").reset()
    np.testing.assert_array_equal(batched, dummy)
    import gymnasium as gym

    single = gym.make("msenv/MultiSpin-v0", num_devices=4, episode_length=5)
    np.testing.assert_array_equal(dummy[1], single.reset(seed=seeds[1])[0])
    with pytest.raises(ValueError, match="3 entries"):
        make_vec_env(cfg, 2, [1, 2, 3])


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--seed", str(TEST_SEEDS.start + 5)], "--seed 1000005 is invalid: seed 1000005 lies in the reserved test block"),
    (["--seed", str(VALIDATION_SEEDS.start)], "reserved validation block"),
    (["--eval-seed", str(TEST_SEEDS.start - 1)], "--eval-seed 999999 is invalid"),
    (["--eval-seed", str(TEST_SEEDS.start - 50_000)], "--eval-seed 950000 is invalid"),  # its EvalCallback episodes
])
def test_train_py_refuses_a_reserved_seed_in_one_line(args, words):
    r = subprocess.run([sys.executable, "train.py", "--quick", *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()[-1]) > 0 and "usage" in r.stderr


@pytest.mark.slow
def test_train_py_trains_on_the_derived_seeds_and_records_them(tmp_path, monkeypatch):
    import agents.envs
    import train

    seen = []
    real = agents.envs.make_vec_env

    def spy(config, n_envs, seed, kind="batched"):
        seen.append(seed)
        return real(config, n_envs, seed, kind)

    monkeypatch.setattr(agents.envs, "make_vec_env", spy)
    from msenv.envs.vector import MultiSpinVectorEnv

    resets, real_reset = [], MultiSpinVectorEnv.reset

    def reset_spy(self, *, seed=None, options=None):  # what the envs are really reset with
        resets.append((self.num_envs, seed))
        return real_reset(self, seed=seed, options=options)

    monkeypatch.setattr(MultiSpinVectorEnv, "reset", reset_spy)
    out = tmp_path / "run"
    train.main(["--quick", "--timesteps", "1024", "--seed", "2", "--log-dir", str(out), "--no-progress",
                "--baselines", "greedy-saa"])
    assert seen[0] == training_seeds(2, 8)  # --quick: 8 training envs
    # the first reset of the 8 training envs takes those seeds: SB3 seeds its env with seed + i when
    # it builds the model, and train.py puts the independent streams back before learning
    assert next(seed for n, seed in resets if n == 8) == training_seeds(2, 8)
    assert reserved_overlap(seen[0]) is None
    rec = json.loads((out / "agent" / "training.json").read_text())
    assert (rec["format"], rec["seed"], rec["seed_streams"], rec["env_id"]) == \
           ("msenv-training", 2, "independent", "msenv/MultiSpin-v0")
    assert rec["timesteps"] >= 1024 and rec["wall_s"] > 0 and rec["code"]["commit"]
