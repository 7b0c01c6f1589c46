"""Scale-out on Ray (issue: ecosystem): Ray tasks give the local results for the same seeds;
the Tune sweep and the RLlib entry run end to end on a local instance (2 CPUs)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")

from evaluation.harness import evaluate, parse_entry  # noqa: E402
from msenv import SystemConfig  # noqa: E402

#: the whole module is a long end-to-end run (python -m pytest -m 'not slow' skips it)
pytestmark = pytest.mark.slow

SMALL = SystemConfig(num_devices=4, gamma_max=8, episode_length=6)


@pytest.fixture(scope="module", autouse=True)
def ray_local():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def _strip(results):
    from evaluation.report import TIMING_METRICS

    return [{k: v for k, v in dataclasses.asdict(r).items() if k not in TIMING_METRICS} for r in results]


def test_evaluate_as_ray_tasks_equals_the_local_run(example):
    """examples/ray_evaluate.py: the same episodes played here and as Ray tasks."""
    local, remote = example("ray_evaluate").main("local", episodes=3)
    assert len(local) == 9
    assert _strip(remote) == _strip(local)


def test_experiments_cli_with_ray_writes_the_local_csv(tmp_path):
    from experiments.__main__ import main

    assert main(["fig7", "--quick", "--drops", "2", "--rounds", "3", "--workers", "1", "--no-progress",
                 "--out", str(tmp_path / "local")]) == 0
    assert main(["fig7", "--quick", "--drops", "2", "--rounds", "3", "--no-progress", "--ray",
                 "--out", str(tmp_path / "ray")]) == 0
    a = (tmp_path / "local" / "fig7_drops.csv").read_text()
    b = (tmp_path / "ray" / "fig7_drops.csv").read_text()
    drop_cols = lambda text: [line.split(",") for line in text.splitlines()]  # noqa: E731
    ra, rb = drop_cols(a), drop_cols(b)
    header = ra[0]
    keep = [i for i, h in enumerate(header) if h not in ("decision_ms", "realtime_throughput")]
    assert [[r[i] for i in keep] for r in ra] == [[r[i] for i in keep] for r in rb]


def test_ratio_to_reference_is_the_paired_ratio_of_the_harness():
    from agents.controller import PPOController
    from agents.envs import make_vec_env, normalize
    from agents.ppo import make_ppo
    from agents.tune import greedy_reference, ratio_to_reference
    from evaluation.harness import Entry
    from evaluation.report import summarize

    venv = normalize(make_vec_env(SMALL, 2, 0), gamma=0.0)
    model = make_ppo(venv, n_steps=16, batch_size=32, n_epochs=1)
    ref = greedy_reference(SMALL, 3, 500)
    got = ratio_to_reference(model, venv, SMALL, ref, 500)
    ctrl = PPOController(model, venv.obs_rms, venv.clip_obs, venv.epsilon, SMALL)
    rows = summarize(evaluate([parse_entry("greedy-saa"), Entry("ppo", lambda: ctrl)], SMALL, 3, 500))
    assert got == pytest.approx(rows[1]["rel_throughput"], rel=1e-12)


def test_tune_sweep_quick(tmp_path):
    """``python -m agents.tune --quick``: the settings of examples/tune_sweep.py, which
    tests/test_examples.py runs as a script (and checks its table)."""
    from agents.tune import METRIC, main

    rows = main(["--quick", "--out", str(tmp_path)])
    assert len(rows) == 2
    assert [r[METRIC] for r in rows] == sorted((r[METRIC] for r in rows), reverse=True)
    for r in rows:
        assert 0.0 < r[METRIC] < 2.0 and r[f"best_{METRIC}"] >= r[METRIC]
        assert r["action_prior"] in (0.1, 0.3, 0.5)
        assert 1e-4 <= r["learning_rate"] <= 1e-3
    assert (tmp_path / "sweep.csv").read_text().count("\n") == 3


def test_rllib_entry_quick_writes_table_and_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from agents.rllib import main

    out = main(["--quick", "--log-dir", str(tmp_path)])
    names = [r["controller"] for r in out["rows"]]
    assert names == ["greedy-saa", "rllib-ppo", "optimal-uniform", "fixed-4"]
    table = json.loads((tmp_path / "comparison.json").read_text())["table"]
    assert np.isfinite(table[1]["throughput"]) and table[0]["rel_throughput"] == 1.0
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert "rllib/episode_return_mean" in tags and "rllib/goodput" in tags
    ret = acc.Scalars("rllib/episode_return_mean")[-1].value
    good = acc.Scalars("rllib/goodput")[-1].value
    assert good == pytest.approx(ret / 20, rel=1e-5)  # --quick: 20 rounds per episode, reward_scale 1
