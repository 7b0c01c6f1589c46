"""The portable agent format: decisions from policy.npz + agent.json, never from a pickle."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted(p.parent for p in (ROOT / "agents" / "pretrained").rglob("agent.json"))

NO_PICKLE = r"""
import pickle, sys
import numpy as np, msenv
from agents import load_agent
from baselines import ComputationOnly
from evaluation.harness import run_episode

def cell(path):
    import json
    from agents.controller import load_config
    cfg = load_config(json.loads(open(path + "/agent.json").read())["config"])
    return cfg.replace(k_range=(7, 7), episode_length=3) if hasattr(cfg, "k_range") else cfg.replace(episode_length=3)

for path in sys.argv[1:]:  # compile the env's kernels first (numba's cache index is a pickle)
    run_episode(ComputationOnly(), cell(path), seed=5)

def refuse(*a, **k):
    raise RuntimeError("unpickling is disabled in this test")
class Refuse(pickle.Unpickler):
    def __init__(self, *a, **k):
        refuse()
pickle.load = pickle.loads = refuse
pickle.Unpickler = Refuse
for path in sys.argv[1:]:
    agent = load_agent(path)
    stats = run_episode(agent, cell(path), seed=5)
    assert np.isfinite(stats.throughput) and stats.throughput > 0
    print(path, "ok", stats.mean_gamma)
"""


@pytest.mark.slow
def test_every_committed_agent_loads_and_decides_with_pickle_disabled():
    assert COMMITTED, "no committed agent found"
    r = subprocess.run([sys.executable, "-c", NO_PICKLE, *map(str, COMMITTED)], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count(" ok ") == len(COMMITTED)


class _Marker:
    """A crafted pickle: unpickling it writes a file (what a malicious agent would do instead)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (Path(self.path), "executed"))


def test_a_crafted_pickle_in_an_agent_directory_is_never_executed(tmp_path):
    import pickle

    from agents import load_agent
    from evaluation.harness import run_episode

    src = COMMITTED[0]
    agent_dir = tmp_path / "agent"
    shutil.copytree(src, agent_dir)
    marker = tmp_path / "marker"
    for name in ("vecnormalize.pkl", "model.zip"):
        (agent_dir / name).write_bytes(pickle.dumps(_Marker(str(marker))))
    # the marker works: unpickling the file does write it
    pickle.loads((agent_dir / "vecnormalize.pkl").read_bytes())
    assert marker.exists()
    marker.unlink()
    agent = load_agent(agent_dir)
    cfg = agent.config.replace(k_range=(6, 6), episode_length=3) if hasattr(agent.config, "k_range") else agent.config
    run_episode(agent, cfg, seed=1)
    assert not marker.exists()


@pytest.mark.slow
def test_portable_decisions_equal_the_sb3_policy_mode_of_the_committed_agent():
    import msenv  # noqa: F401
    from agents import load_agent
    from agents.budget import budget_lengths
    from msenv.envs.cells import make_env

    with_sb3 = [p for p in COMMITTED if (p / "model.zip").exists()]  # the leaderboard's agents ship portable files only
    assert with_sb3
    for path in with_sb3:
        portable, sb3 = load_agent(path), load_agent(path, sb3=True)
        env = make_env(portable.config)  # the env the agent was trained in (its k_max)
        for seed in range(4):
            obs, _ = env.reset(seed=seed)
            x = sb3.normalize(obs).astype(np.float32)
            mode, _ = sb3.model.predict(x, deterministic=True)
            layout = getattr(portable.policy, "layout", None)
            if layout is not None:  # a budget agent decides a level and bits: its draft lengths from them
                mode = budget_lengths(mode[None, 0], mode[None, 1:], obs[None], layout)[0]
            assert np.array_equal(portable.predict(obs)[0], mode)


def test_broken_portable_files_are_refused_naming_the_file(tmp_path):
    from agents import load_agent

    agent_dir = tmp_path / "agent"
    shutil.copytree(COMMITTED[0], agent_dir)
    (agent_dir / "agent.json").write_text("{not json")
    with pytest.raises(ValueError, match="agent.json"):
        load_agent(agent_dir)
    shutil.copy(COMMITTED[0] / "agent.json", agent_dir / "agent.json")
    (agent_dir / "policy.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match="policy.npz"):
        load_agent(agent_dir)
    (agent_dir / "policy.npz").unlink()
    with pytest.raises(FileNotFoundError, match="policy.npz"):
        load_agent(agent_dir)
    doc = json.loads((COMMITTED[0] / "agent.json").read_text())
    shutil.copy(COMMITTED[0] / "policy.npz", agent_dir / "policy.npz")
    (agent_dir / "agent.json").write_text(json.dumps({**doc, "format_version": 99}))
    with pytest.raises(ValueError, match="format_version"):
        load_agent(agent_dir)
    (agent_dir / "agent.json").write_text(json.dumps({**doc, "policy": {**doc["policy"], "hidden": 3}}))
    with pytest.raises(ValueError, match="hidden"):
        load_agent(agent_dir)


def test_broken_budget_agents_are_refused_naming_the_field(tmp_path):
    """A budget agent's own layout fields: gamma_max, per_token, masked, the level network."""
    from agents import load_agent

    budget = [p for p in COMMITTED if json.loads((p / "agent.json").read_text())["kind"] == "budget"]
    assert budget, "no committed budget agent"
    agent_dir = tmp_path / "agent"
    shutil.copytree(budget[0], agent_dir)
    doc = json.loads((budget[0] / "agent.json").read_text())
    for field, value, match in (("gamma_max", 0, "gamma_max=0"), ("per_token", "4", "per_token='4'"),
                                ("masked", False, "masked=false"), ("level", 1, "level")):
        (agent_dir / "agent.json").write_text(json.dumps({**doc, "policy": {**doc["policy"], field: value}}))
        with pytest.raises(ValueError, match=match):
            load_agent(agent_dir)


@pytest.mark.slow
def test_an_old_agent_without_portable_files_is_refused_with_the_way_to_convert_it(tmp_path):
    from agents import load_agent
    from agents.convert import main

    agent_dir = tmp_path / "agent"
    shutil.copytree(COMMITTED[0], agent_dir)
    (agent_dir / "agent.json").unlink()
    (agent_dir / "policy.npz").unlink()
    with pytest.raises(FileNotFoundError, match="agents.convert"):
        load_agent(agent_dir)
    main([str(agent_dir)])  # trusted: our own committed agent
    a, b = load_agent(agent_dir), load_agent(COMMITTED[0])
    assert np.array_equal(np.load(agent_dir / "policy.npz")["head.weight"],
                          np.load(COMMITTED[0] / "policy.npz")["head.weight"])
    assert a.frame_stack == b.frame_stack


# ---------------------------------------------------------------------- policy kinds by protocol
def test_every_committed_policy_kind_follows_the_protocol_and_round_trips(tmp_path):
    """Each kind of :data:`agents.policies.KINDS` among the committed agents is a ``Policy``; its
    portable files, written again from the loaded policy, load to the same decisions."""
    from agents import load_agent
    from agents.policies import KINDS, Policy, policy_class
    from agents.portable import read_portable, write_portable

    seen = {}
    for path in COMMITTED:
        kind = json.loads((path / "agent.json").read_text())["kind"]
        seen.setdefault(kind, path)
    assert set(seen) == set(KINDS)
    rng = np.random.default_rng(0)
    for kind, path in seen.items():
        agent = load_agent(path)
        policy = agent.policy
        assert isinstance(policy, Policy) and policy.KIND == kind and type(policy) is policy_class(kind)
        policy2, norm, meta = read_portable(write_portable(tmp_path / kind, policy, agent.normalization,
                                                           {"config": agent.config.to_dict()}))
        width = policy.reads(agent.config, agent.frame_stack)[0]
        x = rng.uniform(-1, 1, size=(4, width))
        if policy.masked:
            x[:, policy.n_features - 1: width - policy.n_globals: policy.n_features] = 1.0
        assert np.array_equal(policy.act(x), policy2.act(x)), kind
        assert policy2.to_portable()[0] == policy.to_portable()[0]


def test_no_module_of_the_agents_switches_on_a_policys_class():
    """The controller and the portable format ask a policy (``agents.policies.Policy``); neither
    tests its class."""
    import re

    for name in ("controller.py", "portable.py"):
        src = (ROOT / "agents" / name).read_text()
        assert not re.search(r"isinstance\([^)]*polic", src, re.I), name
        assert not re.search(r"getattr\(self\.policy", src), name
