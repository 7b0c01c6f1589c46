"""The paired evaluation harness (evaluation.harness)."""

from __future__ import annotations

import numpy as np
import pytest

import msenv  # noqa: F401
from baselines import make_controller
from baselines.base import Controller
from evaluation.evaluate import main as evaluate_main
from evaluation.harness import Entry, evaluate, parse_entry
from evaluation.report import TIMING_METRICS, summarize
from msenv import SystemConfig
from msenv.envs.env import MultiSpinEnv


def test_harness_hands_the_oracle_context_only_to_oracle_controllers():
    from baselines import BayesianSAA, OracleGreedy, PlugInGreedy
    from baselines.base import controller_context

    seen = {}

    class Spy(Controller):
        def act(self, context, obs=None):
            seen[self.name] = context
            return np.zeros(3, dtype=int)

    cfg = SystemConfig(num_devices=3, alpha_dynamics="request", alpha_observed=False)
    env = MultiSpinEnv(cfg)
    env.reset(seed=0)
    spy, ospy = Spy(), Spy()
    ospy.name, ospy.oracle = "o", True
    spy.act(controller_context(spy, env))
    ospy.act(controller_context(ospy, env))
    assert seen["controller"].alpha_a is not None and not seen["controller"].oracle
    assert seen["o"].oracle and seen["o"].alpha_a is None
    np.testing.assert_array_equal(seen["o"].alpha, env.state.alpha[0])
    assert OracleGreedy.oracle and not BayesianSAA.oracle and not PlugInGreedy.oracle


def test_harness_identical_seeds_identical_tables_and_bad_output(tmp_path):
    cfg = SystemConfig(episode_length=5)
    entries = [parse_entry("greedy-saa"), parse_entry("fixed-3"), parse_entry("optimal-uniform@all_dl")]
    r1 = summarize(evaluate(entries, cfg, episodes=2, seed=7))
    r2 = summarize(evaluate(entries, cfg, episodes=2, seed=7))
    for a, b in zip(r1, r2):
        for key in a:
            if key.removesuffix("_ci95") not in TIMING_METRICS:
                assert a[key] == b[key], key
    assert r1[2]["share_ul"] == 0.0  # all-DL reactive policy
    for out, match in [(np.full(19, 2), "shape"), (np.full(20, 21), "device 0"), (np.r_[np.full(19, 2), -1],
                                                                                  "device 19")]:
        with pytest.raises(ValueError, match=f"controller 'bad'.*{match}"):
            evaluate([Entry("bad", lambda o=out: _Bad(o))], cfg, episodes=1)
    with pytest.raises(ValueError, match="not known"):
        parse_entry("nope")
    with pytest.raises(ValueError, match="policy"):
        parse_entry("greedy-saa@sideways")
    rows = evaluate_main(["--controllers", "fixed-2", "fixed-5", "--episodes", "2", "--rounds", "4",
                          "--out", str(tmp_path / "t.csv"), "--no-progress"])
    assert (tmp_path / "t.csv").read_text().count("\n") == 3 and rows[0]["rel_throughput"] == 1.0
    assert (tmp_path / "t.json").exists()


def test_paired_runs_share_outcomes_across_controllers():
    """The same seed gives the same contexts whatever the controller did before."""
    cfg = SystemConfig(episode_length=6)
    seen = {}
    for name in ("fixed-1", "fixed-7"):
        env = MultiSpinEnv(cfg)
        env.reset(seed=3)
        ctl = make_controller(name)
        gains = []
        for _ in range(5):
            gains.append(env.context.g_ul.copy())
            env.step(ctl.act(env.context))
        seen[name] = np.array(gains)
    np.testing.assert_array_equal(seen["fixed-1"], seen["fixed-7"])


def test_harness_computation_time_metric():
    cfg = SystemConfig(episode_length=5, num_devices=7)
    rows = summarize(evaluate([parse_entry("fixed-0"), parse_entry("fixed-3")], cfg, episodes=2, seed=1))
    assert rows[0]["t_cmp_ms"] == pytest.approx(1e3 * (cfg.t_verify_base_s + 7 * cfg.t_verify_per_device_s))
    assert rows[0]["t_com_ms"] == 0.0
    # γ = 3: drafting adds 3 × the slowest device's per-token time, within [1, 1.15] × T_ref
    extra = rows[1]["t_cmp_ms"] - rows[0]["t_cmp_ms"]
    assert 3e3 * cfg.t_draft_ref_s <= extra <= 3e3 * cfg.t_draft_ref_s * 1.15


class _Bad(Controller):
    name = "bad"

    def __init__(self, out):
        super().__init__()
        self.out = out

    def act(self, context, obs=None):
        return self.out


@pytest.mark.parametrize("module,argv", [
    ("evaluation.evaluate", ["--controllers", "fixed-4", "--episodes", "1", "--rounds", "2", "--no-progress"]),
    ("experiments.__main__", ["fig7", "--quick", "--no-progress"]),
    ("agents.tune", ["--quick"]),
    ("agents.rllib", ["--quick"]),
])
def test_an_unreachable_ray_address_is_one_line_naming_it(module, argv, capsys):
    """Ray itself retries for minutes; every --ray command answers at once, in argparse's words.
    Only a closed loopback port is tried."""
    import importlib
    import socket

    pytest.importorskip("ray")
    if module.startswith("agents"):
        pytest.importorskip("stable_baselines3")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    with pytest.raises(SystemExit) as e:
        importlib.import_module(module).main([*argv, "--ray", address])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1
    assert err[0].endswith(f"error: --ray: nothing answers at '{address}' (Connection refused); is the Ray head "
                           "running there?")


def test_evaluate_help_lists_every_controller_and_says_set_takes_json():
    from baselines import REGISTRY
    from evaluation.evaluate import build_parser

    text = build_parser().format_help()
    lines = text.splitlines()
    for name in REGISTRY:
        line = next(x for x in lines if x.strip().startswith(name + " "))
        assert len(line.split(None, 1)[1]) > 10, f"{name}: no description"
    assert any(x.strip().startswith("fixed-<γ>") for x in lines)
    assert "JSON" in text and "draft_scale_range=[1.0,2.0]" in text.replace(" ", "")


def test_realtime_throughput_charges_each_round_its_decision_time():
    """Σ tokens / Σ (round time + decision time): a controller that thinks 30 ms per round loses
    exactly that time; the tokens and round times stay those of the same decisions made at once."""
    import time

    from baselines import Fixed

    class Slow(Fixed):
        def act(self, context, obs=None):
            time.sleep(0.03)
            return super().act(context, obs)

    cfg = SystemConfig(num_devices=4, episode_length=6)
    slow, fast = evaluate([Entry("slow", lambda: Slow(4)), Entry("fast", lambda: Fixed(4))], cfg, episodes=2)[::2]
    assert slow.tokens == fast.tokens and slow.time_s == fast.time_s and slow.throughput == fast.throughput
    assert slow.throughput == pytest.approx(slow.tokens / slow.time_s, rel=1e-12)
    assert slow.realtime_throughput == pytest.approx(slow.tokens / (slow.time_s + 6 * slow.decision_ms / 1e3),
                                                     rel=1e-12)
    assert slow.decision_ms >= 30.0
    assert slow.realtime_throughput < 0.9 * slow.throughput
    assert fast.realtime_throughput == pytest.approx(fast.throughput, rel=1e-3)
