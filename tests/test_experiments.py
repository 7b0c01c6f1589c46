"""Paper experiments at quick size (issue: figures)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

import msenv  # noqa: F401
from experiments import run_figure, total_power_split
from experiments.__main__ import main as cli
from msenv.envs.env import MultiSpinEnv


def _read(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
@pytest.mark.parametrize("name,n_points", [("fig7", 3), ("fig8", 3), ("fig9", 16), ("fig10", 16), ("fig11", 8)])
def test_quick_figures_write_csv_and_png(tmp_path, name, n_points):
    rows = run_figure(name, tmp_path, drops=2, rounds=2, workers=1, quick=True, progress=False)
    assert len(rows) == n_points
    table = _read(tmp_path / f"{name}.csv")
    assert len(table) == n_points
    for col in ("panel", "x_name", "x", "scheme", "drops", "throughput", "throughput_ci95", "mean_gamma",
                "share_accepted", "share_ul", "share_dl"):
        assert col in table[0], col
    assert len(_read(tmp_path / f"{name}_drops.csv")) == 2 * n_points
    for r in table:
        s = float(r["share_accepted"]) + float(r["share_ul"]) + float(r["share_dl"])
        assert s == pytest.approx(1.0)
        if r["scheme"] == r["reference"]:
            assert float(r["rel_throughput"]) == 1.0
    assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    if name in ("fig9", "fig10"):
        assert {r["scheme"] for r in table} == {"optimal", "all_ul", "all_dl", "random"}
        assert {r["panel"] for r in table} == {"ratio=4", "ratio=16"}
        assert all(float(r["share_ul"]) == 0 for r in table if r["scheme"] == "all_dl")
        assert all(float(r["share_dl"]) == 0 for r in table if r["scheme"] == "all_ul")


@pytest.mark.slow
def test_same_seed_same_results(tmp_path):
    a = run_figure("fig9", tmp_path / "a", drops=2, rounds=2, workers=1, quick=True, progress=False)
    b = run_figure("fig9", tmp_path / "b", drops=2, rounds=2, workers=2, quick=True, progress=False)
    for ra, rb in zip(a, b):
        for key in ra:
            if not key.startswith("decision"):
                assert ra[key] == rb[key], key


@pytest.mark.parametrize("k,ratio", [(5, 4), (20, 16), (40, 4)])
def test_total_power_rule(k, ratio):
    p_ul, p_dl = total_power_split(k, ratio)
    w_ul, w_dl = 10 ** ((p_ul - 30) / 10), 10 ** ((p_dl - 30) / 10)
    assert w_dl / w_ul == pytest.approx(ratio)
    assert w_dl + k * w_ul == pytest.approx(1.0 + k * 10 ** (-1.5))


def test_optimal_mode_selection_never_slower_on_identical_outcomes():
    """Same seed and draft lengths: the outcomes are identical under every reactive policy, and
    the optimal policy's T_com is never above the others'."""
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 12, (60, 20))
    t_com, tokens = {}, {}
    for policy in ("optimal", "all_ul", "all_dl", "random"):
        env = MultiSpinEnv(mode_policy=policy, episode_length=60)
        env.reset(seed=4)
        rows = [env.step(a)[4] for a in actions]
        t_com[policy] = np.array([r["t_com"] for r in rows])
        tokens[policy] = np.array([r["tokens"] for r in rows])
    for policy in ("all_ul", "all_dl", "random"):
        assert np.array_equal(tokens[policy], tokens["optimal"])
        assert np.all(t_com["optimal"] <= t_com[policy] * (1 + 1e-12))
    assert np.mean(t_com["optimal"] < t_com["all_ul"]) > 0.5


def test_cli_and_bad_arguments(tmp_path, capsys):
    assert cli(["fig11", "--quick", "--drops", "1", "--rounds", "2", "--workers", "1", "--out", str(tmp_path),
                "--no-progress"]) == 0
    assert (tmp_path / "fig11.csv").exists()
    with pytest.raises(SystemExit):
        cli(["fig12"])
    with pytest.raises(SystemExit):
        cli(["fig7", "--drops", "0"])
    assert "--drops 0 is invalid" in capsys.readouterr().err
    with pytest.raises(ValueError, match="figure"):
        run_figure("fig99", tmp_path)


def test_gap_study_quick(tmp_path, capsys):
    assert cli(["gap", "--drops", "2", "--num-devices", "2", "--gamma-max", "6", "--workers", "1",
                "--out", str(tmp_path), "--no-progress"]) == 0
    rows = _read(tmp_path / "gap.csv")
    assert len(rows) == 2
    for r in rows:
        for key in ("gap_greedy", "gap_uniform", "gap_local_search"):
            assert -1e-12 <= float(r[key]) < 1.0 and math.isfinite(float(r[key]))
        assert float(r["gap_local_search"]) <= min(float(r["gap_greedy"]), float(r["gap_uniform"])) + 1e-12
    assert "optimality gap" in capsys.readouterr().out


@pytest.mark.slow
def test_dynamics_experiment_quick(tmp_path):
    import csv

    from experiments.dynamics import run_dynamics

    rows = run_dynamics(tmp_path, drops=2, rounds=4, workers=1, quick=True, progress=False)
    schemes = {r["scheme"] for r in rows}
    assert schemes == {"oracle-greedy", "plug-in-greedy", "bayes-saa", "optimal-uniform", "fixed-4"}
    with open(tmp_path / "dynamics_gaps.csv") as fh:
        gaps = list(csv.DictReader(fh))
    drops = list(csv.DictReader(open(tmp_path / "dynamics_drops.csv")))
    g = gaps[0]
    pick = lambda s: np.array([float(d["throughput"]) for d in drops  # noqa: E731
                               if d["panel"] == g["panel"] and float(d["x"]) == float(g["x"]) and d["scheme"] == s])
    assert float(g["oracle_gap"]) == pytest.approx(np.mean(pick("oracle-greedy") / pick("plug-in-greedy") - 1),
                                                   rel=1e-9)
    assert (tmp_path / "dynamics.png").stat().st_size > 10_000


@pytest.mark.slow
def test_cells_experiment_quick(tmp_path):
    """Every point's rows, the paired real-time ratios recomputed from the episodes, and the
    generalist's row from the committed agent."""
    import json

    from experiments.cells import CELL_TYPES, DEFAULT_AGENT, KS, cell_config, run_cells

    agent = DEFAULT_AGENT if (Path(DEFAULT_AGENT) / "agent.json").exists() else None
    assert agent is not None  # the committed generalist (portable files)
    rows = run_cells(tmp_path, episodes=6, rounds=10, workers=1, agent={"generalist": agent, "again": agent},
                     quick=True)
    points = {(r["cell"], r["k"]) for r in rows}
    assert points == {("paper", 5), ("paper", 20), ("weak-hetero", 5), ("weak-hetero", 20)}
    data = json.loads((tmp_path / "cells.json").read_text())
    assert (data["episodes"], data["rounds"]) == (2, 3)  # --quick: 2 episodes × 3 rounds, as documented
    assert {e["episode"] for e in data["episode_results"]} == {0, 1}
    # the same agent twice: the same decisions, so the same throughput on every point
    for pt in points:
        same = {r["controller"]: r["throughput"] for r in rows if (r["cell"], r["k"]) == pt}
        assert same["generalist"] == same["again"]
    assert max(KS) == 400 and {"strong", "far", "deepseek-weak"} <= set(CELL_TYPES)
    for kind in CELL_TYPES:  # every type is a valid cell at the sweep's extremes
        for k in (min(KS), max(KS)):
            assert cell_config(kind, k, 3).base.num_devices >= 1
    with pytest.raises(ValueError, match="'nowhere'"):
        run_cells(tmp_path, kinds=("nowhere",))
    # an agent plays where it can read the cells: the generalist not in the dynamic cells (longer rows)
    from experiments.cells import entries

    assert "generalist" in [e.label for e in entries(cell_config("far", 7, 10), agent)]
    assert [e.label for e in entries(cell_config("dynamic", 7, 10), agent)] == [
        "greedy-saa", "budgeted-greedy", "computation-only", "optimal-uniform", "local-search"]
    eps = data["episode_results"]
    for r in rows:
        mine = sorted((e for e in eps if e["cell"] == r["cell"] and e["k"] == r["k"] and e["label"] == r["controller"]),
                      key=lambda e: e["episode"])
        ref = sorted((e for e in eps if e["cell"] == r["cell"] and e["k"] == r["k"] and e["label"] == "greedy-saa"),
                     key=lambda e: e["episode"])
        rel = np.mean([m["realtime_throughput"] / g["realtime_throughput"] for m, g in zip(mine, ref)])
        assert r["rel_realtime"] == pytest.approx(rel, rel=1e-12)
        assert r["realtime_throughput"] < r["throughput"]  # the decision time only adds
    labels = {r["controller"] for r in rows}
    assert {"greedy-saa", "budgeted-greedy", "computation-only", "optimal-uniform", "local-search"} <= labels
    assert ("generalist" in labels) == (agent is not None)
    assert (tmp_path / "cells.png").stat().st_size > 10_000 and (tmp_path / "cells_decision_time.png").exists()
    # the paired comparison: the agent against each rival, episode by episode (t-interval, 2 episodes)
    from scipy import stats

    from experiments.cells import write_paired

    paired = write_paired(tmp_path)
    assert (tmp_path / "cells_paired.csv").exists()
    assert {p["agent"] for p in paired} == {"generalist", "again"}  # every agent, none of the rivals
    assert {p["rival"] for p in paired} == {"greedy-saa", "budgeted-greedy", "computation-only", "optimal-uniform",
                                             "local-search"}
    for p in paired:
        pick = [sorted((e for e in eps if e["cell"] == p["cell"] and e["k"] == p["k"] and e["label"] == lab),
                       key=lambda e: e["episode"]) for lab in (p["agent"], p["rival"])]
        x = np.array([a["throughput"] / b["throughput"] for a, b in zip(*pick)])
        assert p["throughput_ratio"] == pytest.approx(x.mean(), rel=1e-12)
        assert p["throughput_ratio_ci95"] == pytest.approx(stats.t.ppf(0.975, 1) * x.std(ddof=1) / np.sqrt(2), rel=1e-9)


def test_budget_shape_experiment_quick(tmp_path, capsys):
    """The budget action's shape loses (almost) nothing against the local search on the quick
    points: the best budget action with the search's devices on scores ≥ 0.99 of it, on the same
    SAA samples; the CSV is written."""
    from experiments.budget import run_budget

    rows = run_budget(tmp_path, quick=True, workers=1)
    assert len(rows) == 4 and (tmp_path / "budget.csv").exists()
    for r in rows:
        assert r["model"] == "local-search" and r["budget_same_devices"] >= 0.99, r
        assert 0 <= r["best_level"] <= 80
    assert all(r["agent"] > 0.9 and 0 <= r["agent_level"] <= 80 for r in rows)  # the committed generalist decides
    assert "best budget / local-search" in capsys.readouterr().out


def _episode(label, episode, throughput):
    from evaluation.harness import EpisodeStats

    return EpisodeStats(label, episode, 100 + episode, throughput, throughput, 5.0, 0.3, 0.4, 0.3, 20.0, 50.0, 0.1)


def test_main_job_score_is_paired_against_the_best_rule_of_each_episode():
    """A worked example: the best rule is the uniform on episode 0 (110) and the greedy on episode 1
    (200), so an agent of 99 and 210 scores 0.9 and 1.05; the mean 0.975 with the t-interval of two
    episodes (t₀.₉₇₅,₁ = 12.7062 × sd 0.106066 / √2)."""
    from experiments.main_job import paired_vs_best, summary

    rules = [_episode(name, i, v) for name, vals in (("greedy-saa", (100.0, 200.0)),
                                                     ("optimal-uniform", (110.0, 190.0)),
                                                     ("computation-only", (90.0, 195.0)), ("fixed-4", (50.0, 50.0)))
             for i, v in enumerate(vals)]
    got = paired_vs_best([_episode("ppo", 1, 210.0), _episode("ppo", 0, 99.0)], rules)
    assert got["ratio"] == pytest.approx(0.975)
    assert got["ci95"] == pytest.approx(12.7062047 * (0.15 / math.sqrt(2)) / math.sqrt(2), rel=1e-6)
    assert (got["worst_episode"], got["vs_greedy"]) == (pytest.approx(0.9), pytest.approx((0.99 + 1.05) / 2))
    rows = [{"validation_ratio": v} for v in (1.001, 0.9991, 0.9995, 1.004, 0.996)]
    assert summary(rows) == {"seeds": 5, "median": 0.9995, "min": 0.996, "meets": True}
    assert not summary(rows[:4] + [{"validation_ratio": 0.9949}])["meets"]  # one seed below 0.995
    assert not summary([{"validation_ratio": v} for v in (0.9989, 0.9989, 1.01)])["meets"]  # the median below 0.999


def test_main_job_validation_episodes_are_apart_from_every_other_block():
    """The validation episodes lie in baselines.suites' validation block, on no validation suite's
    seeds, and apart from train.py's held-out episodes and its evaluations during training."""
    from evaluation.suites import VALIDATION_SEEDS
    from experiments.main_job import (
        HELD_OUT_EPISODES,
        HELD_OUT_SEED,
        VALIDATION_EPISODES,
        VALIDATION_SEED,
        validation_clash,
    )

    block = range(VALIDATION_SEED, VALIDATION_SEED + VALIDATION_EPISODES)
    assert block.start in VALIDATION_SEEDS and block[-1] in VALIDATION_SEEDS
    assert validation_clash() is None
    from agents.training.config import EVAL_CALLBACK_OFFSET, TrainingConfig

    assert (TrainingConfig().eval_seed, TrainingConfig().eval_episodes) == (HELD_OUT_SEED, HELD_OUT_EPISODES)
    during = range(HELD_OUT_SEED + EVAL_CALLBACK_OFFSET, HELD_OUT_SEED + EVAL_CALLBACK_OFFSET + 4)
    assert not set(block) & (set(range(HELD_OUT_SEED, HELD_OUT_SEED + HELD_OUT_EPISODES)) | set(during))


def test_main_job_seeds_refuses_options_it_does_not_read(capsys):
    for opt in (["--drops", "3"], ["--seed", "5"], ["--rounds", "4"]):
        with pytest.raises(SystemExit):
            cli(["main-job-seeds", *opt])
        assert f"{opt[0]} is not used by main-job-seeds" in capsys.readouterr().err


@pytest.mark.slow
def test_main_job_seeds_quick_trains_with_train_py_and_writes_its_table(tmp_path, monkeypatch, capsys):
    """One seed of ``train.py --quick`` (4096 steps), scored on two episodes of each block: one row
    with the held-out interval around its ratio, the training inside the whole command's wall."""
    monkeypatch.chdir(tmp_path)
    assert cli(["main-job-seeds", "--quick", "--out", str(tmp_path / "out"), "--workers", "1", "--no-progress"]) == 0
    rows = _read(tmp_path / "out" / "main_job_seeds.csv")
    assert len(rows) == 1 and rows[0]["seed"] == "0" and rows[0]["steps"] == "4096"
    r = {k: float(v) for k, v in rows[0].items()}
    assert r["lo"] == pytest.approx(r["ratio"] - r["ci95"]) and r["hi"] == pytest.approx(r["ratio"] + r["ci95"])
    assert 0 < r["ratio"] < 1.5 and 0 < r["validation_ratio"] < 1.5
    assert 0 < r["train_wall_s"] < r["command_wall_s"]
    assert (tmp_path / "runs" / "main-job-quick" / "s0" / "agent" / "training.json").exists()
    assert "over 1 training seeds" in capsys.readouterr().out
