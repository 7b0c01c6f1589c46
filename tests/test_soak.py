"""The long-replay soak (``python -m benchmarks.soak``) in small: a bank file in the published
layout replayed through ``gymnasium.make``, every observation inside the space and the Python heap
flat from one block of rounds to the next (the full 20,000 rounds are the benchmark's; its figures
are on the benchmarks page)."""

from __future__ import annotations

import hashlib

from benchmarks.soak import soak, write_bank
from msenv.traces import load_bank


def test_a_replay_stays_in_the_space_with_a_flat_heap(tmp_path):
    path = write_bank(tmp_path, requests=40, seed=1)
    bank = load_bank(path, drafter="eagle")
    assert len(bank) == 40 and bank.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    res = soak(path, rounds=3000, every=1000, seed=2)
    assert res["outside"] == 0 and res["episodes"] == 30
    assert len(res["heap"]) == 3 and res["heap"][-1] - res["heap"][0] < 64 * 1024, res["heap"]
