"""Bad inputs of train.py, the experiments, msenv.envs.sb3.what_if and the cell generator: one clear
line (or a ValueError naming the field), never a traceback, a NaN or an option silently ignored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["--learning-rate", "inf"], "--learning-rate inf is invalid; allowed: a finite number > 0"),
    (["--learning-rate", "nan"], "--learning-rate nan is invalid"),
    (["--action-prior", "nan"], "--action-prior nan is invalid; allowed: a finite number ≥ 0"),
    (["--checkpoint-minutes", "inf"], "--checkpoint-minutes inf is invalid"),
    (["--quick", "--set", "episode_length=7"], "episode_length=7 conflicts with --quick (episode_length=50)"),
    (["--set", "num_devices=5", "--num-devices", "10"], "num_devices=5 conflicts with --num-devices (num_devices=10)"),
    (["--set", "p_dl_dbm_range=[10,20]", "--p-dl-range", "5", "6"], "conflicts with --p-dl-range"),
])
def test_train_py_refuses_non_finite_numbers_and_conflicting_settings(args, words):
    r = _run("train.py", *args)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("args, words", [
    (["cells", "--ks", "100000"], "--ks 100000 is invalid (config field k_range"),
    (["paired", "--drops", "3", "--out", "docs/figures/cells"], "--drops is not used by paired"),
    (["budget", "--rounds", "50"], "--rounds is not used by budget"),
])
def test_experiments_refuse_bad_or_unused_options_in_one_line(args, words):
    r = _run("-m", "experiments", *args)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("text, words", [("{bad", "JSONDecodeError"), ('{"episodes": 1}', "KeyError")])
def test_paired_on_a_broken_cells_json_is_one_line(tmp_path, text, words):
    (tmp_path / "cells.json").write_text(text)
    r = _run("-m", "experiments", "paired", "--out", str(tmp_path))
    assert r.returncode == 2 and "cells.json is not the result of a cells run" in r.stderr and words in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("kind", ["batched", "dummy"])
def test_what_if_takes_one_row_per_env_and_refuses_other_shapes(kind):
    pytest.importorskip("stable_baselines3")
    from agents.envs import make_vec_env
    from msenv import SystemConfig
    from msenv.envs.sb3 import what_if

    venv = make_vec_env(SystemConfig(), 2, 0, kind)
    venv.reset()
    tokens, latency = what_if(venv, np.full((2, 20), 4))
    assert tokens.shape == latency.shape == (2,) and (tokens >= 20).all()  # ≥ one token per device
    for bad in (np.full((1, 40), 4), np.full((1, 20), 4), np.full(40, 4)):
        with pytest.raises(ValueError, match="one row per env"):
            what_if(venv, bad)


def test_what_if_on_a_non_msenv_vec_env_is_a_type_error():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_util import make_vec_env

    from msenv.envs.sb3 import what_if

    venv = make_vec_env("CartPole-v1", 2)
    venv.reset()
    with pytest.raises(TypeError, match="what_if needs msenv environments"):
        what_if(venv, np.zeros((2, 1)))


def test_the_cell_generator_refuses_a_spread_it_would_overwrite():
    import gymnasium as gym

    import msenv  # noqa: F401

    with pytest.raises(ValueError, match=r"draft_scale_range=\(1, 1\) is invalid.*draft_scale_max_range=None"):
        gym.make("msenv/MultiSpin-Cells-v0", draft_scale_range=(1, 1))
    env = gym.make("msenv/MultiSpin-Cells-v0", draft_scale_range=(1.0, 1.0), draft_scale_max_range=None)
    env.reset(seed=0)
    ctx = env.unwrapped.context
    np.testing.assert_allclose(ctx.t_draft, ctx.config.t_draft_ref_s)  # every device at exactly the reference


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="pgrep and /proc")
def test_experiments_stop_on_sigterm_in_one_line_and_end_their_workers(tmp_path):
    import os
    import signal
    import time

    p = subprocess.Popen([sys.executable, "-m", "experiments", "cells", "--ks", "200", "--kinds", "paper", "--workers",
                          "2", "--out", str(tmp_path), "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    kids: list[int] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and len(kids) < 3:  # two workers and the resource tracker
        time.sleep(0.2)
        kids = [int(x) for x in
                subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()]
    if len(kids) < 3:
        p.kill()
        pytest.fail(f"the run's workers did not start: {p.communicate()[1][-2000:]}")
    time.sleep(1.0)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143 and "stopped by SIGTERM" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1
    time.sleep(0.5)

    def alive(pid):
        try:
            os.kill(pid, 0)
            return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
        except (ProcessLookupError, OSError):
            return False

    assert not [k for k in kids if alive(k)]
