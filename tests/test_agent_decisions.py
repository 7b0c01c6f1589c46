"""Every committed agent still makes the decisions it made when it was recorded
(tests/data/agent_decisions.npz, written by tests/make_agent_decisions.py), bit for bit."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
sys.path.insert(0, str(Path(__file__).parent))
from make_agent_decisions import COMMITTED, PATH, decisions, key

RECORDED = dict(np.load(PATH))


def test_every_committed_agent_has_a_recording():
    assert COMMITTED
    missing = [key(p) for p in COMMITTED if not any(k.startswith(key(p) + "/") for k in RECORDED)]
    assert not missing, f"record them: python tests/make_agent_decisions.py ({missing})"


@pytest.mark.parametrize("path", COMMITTED, ids=key)
def test_a_committed_agent_reproduces_its_recorded_decisions(path):
    now = decisions(path)
    mine = {k[len(key(path)) + 1:]: v for k, v in RECORDED.items() if k.startswith(key(path) + "/")}
    assert set(now) == set(mine)
    for name, gamma in now.items():
        np.testing.assert_array_equal(gamma, mine[name], err_msg=f"{key(path)} {name}")
        assert gamma.shape[0] == 4 and gamma.min() >= 0  # four rounds of draft lengths, never negative
