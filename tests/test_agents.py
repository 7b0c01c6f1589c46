"""PPO agents, callbacks, train.py and rl-zoo3 compatibility (issue: PPO training)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import msenv

pytest.importorskip("stable_baselines3")

from agents.callbacks import METRIC_NAMES, MetricsCallback
from agents.controller import PPOController, load_agent, save_agent
from agents.envs import make_vec_env, normalize
from agents.ppo import make_ppo
from evaluation.harness import Entry, evaluate
from evaluation.report import summarize
from msenv import SystemConfig
from msenv.envs.cells import MultiSpinCellsEnv
from msenv.envs.env import MultiSpinEnv

ROOT = Path(__file__).resolve().parents[1]
SMALL = SystemConfig(num_devices=4, gamma_max=8, episode_length=10)


def _train(tmp_path, kind="batched", steps=512, tb=None):
    venv = normalize(make_vec_env(SMALL, 4, 0, kind), gamma=0.0)
    model = make_ppo(venv, seed=0, n_steps=32, batch_size=64, n_epochs=2, tensorboard_log=tb)
    return model, venv


@pytest.mark.slow
def test_learn_save_load_identical_predictions(tmp_path):
    model, venv = _train(tmp_path)
    model.learn(512)
    path = save_agent(tmp_path / "agent", model, venv, SMALL)
    before = PPOController(model, venv.obs_rms, venv.clip_obs, venv.epsilon, SMALL)
    agent = load_agent(path)
    assert agent.config == SMALL
    env = MultiSpinEnv(SMALL)
    obs, _ = env.reset(seed=123)
    for _ in range(30):
        a1 = agent.act(env.context, obs)
        a2 = before.act(env.context, obs)
        norm = venv.normalize_obs(obs[None])  # SB3's own normalisation + torch forward pass
        a3, _ = model.predict(norm, deterministic=True)
        assert np.array_equal(a1, a2) and np.array_equal(a1, a3[0])
        obs, *_ = env.step(a1)
    act, _ = agent.predict(obs)
    assert act.shape == (4,)
    with pytest.raises(ValueError, match="observation"):
        agent.act(env.context, None)
    with pytest.raises(FileNotFoundError):
        load_agent(tmp_path / "nope")


@pytest.mark.slow
def test_stacked_history_agent_acts_as_sb3_vec_frame_stack(tmp_path):
    """A --frame-stack agent, reloaded, gives SB3's own actions: VecFrameStack over
    VecNormalize, torch forward pass — across an episode boundary (the stack restarts)."""
    from agents.envs import stack_frames

    venv = normalize(make_vec_env(SMALL, 4, 0, "batched"), gamma=0.0)
    model = make_ppo(stack_frames(venv, 3), seed=0, n_steps=32, batch_size=64, n_epochs=2)
    model.learn(256)
    path = save_agent(tmp_path / "agent", model, venv, SMALL, extra={"frame_stack": 3})
    agent = load_agent(path)
    assert agent.frame_stack == 3
    venv.training = False
    ref = stack_frames(normalize(make_vec_env(SMALL, 1, 77, "batched"), 0.0, training=False), 3)
    ref.obs_rms = venv.obs_rms  # VecFrameStack forwards to the VecNormalize below
    ref.venv.obs_rms = venv.obs_rms
    stacked = ref.reset()
    env = MultiSpinEnv(SMALL)
    obs, _ = env.reset(seed=77)
    agent.reset(0)
    for t in range(2 * SMALL.episode_length):
        a_ref, _ = model.predict(stacked, deterministic=True)
        a = agent.act(env.context, obs)
        assert np.array_equal(a, a_ref[0]), t
        stacked, _, done, _ = ref.step(a_ref)
        obs, _, _, trunc, _ = env.step(a)
        if trunc:
            obs, _ = env.reset()
            agent.reset(0)
    with pytest.raises(ValueError, match="frame_stack"):
        stack_frames(venv, 0)


@pytest.mark.slow
def test_action_prior_sets_initial_policy():
    model, venv = _train(None)
    env = MultiSpinEnv(SMALL)
    obs, _ = env.reset(seed=0)
    import torch

    with torch.no_grad():
        dist = model.policy.get_distribution(model.policy.obs_to_tensor(venv.normalize_obs(obs[None]))[0])
    probs = torch.stack([d.probs for d in dist.distribution]).numpy()[:, 0]  # [K, γ_max+1]
    ratio = probs[:, 1:] / probs[:, :-1]
    from agents.defaults import MAIN_JOB

    np.testing.assert_allclose(ratio, np.exp(-MAIN_JOB["action_prior"]), rtol=0.05)  # P(γ) ∝ e^(−λγ) at the start


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["batched", "dummy"])
def test_metrics_callback_writes_tensorboard_scalars(tmp_path, kind):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model, venv = _train(tmp_path, kind, tb=str(tmp_path / "tb"))
    cb = MetricsCallback({"greedy_saa": {"goodput": 123.0, "throughput": 120.0}})
    model.learn(256, callback=cb, tb_log_name="run")
    run_dir = next((tmp_path / "tb").iterdir())
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for name in METRIC_NAMES:
        assert f"msenv/{name}" in tags, name
    assert acc.Scalars("msenv/ref_greedy_saa_throughput")[0].value == pytest.approx(120.0)
    shares = [acc.Scalars(f"msenv/share_{s}")[-1].value for s in ("accepted", "ul", "dl")]
    assert sum(shares) == pytest.approx(1.0, abs=1e-5)
    g = acc.Scalars("msenv/goodput")[-1].value
    assert g == pytest.approx(cb.history[-1]["goodput"], rel=1e-5) and g > 0
    assert len(cb.history) == 2  # 256 steps / (32 × 4) rollouts


@pytest.mark.slow
def test_ppo_controller_runs_in_harness(tmp_path):
    model, venv = _train(tmp_path)
    path = save_agent(tmp_path / "a", model, venv, SMALL)
    from agents.controller import AgentFactory

    rows = summarize(evaluate([Entry("fixed-2", lambda: __import__("baselines").Fixed(2)),
                               Entry("ppo", AgentFactory(path))], SMALL, episodes=2, seed=5))
    assert rows[1]["controller"] == "ppo" and rows[1]["throughput"] > 0


@pytest.mark.slow
def test_evaluate_cli_labels_each_agent_once(tmp_path):
    from evaluation.evaluate import main as evaluate_main

    model, venv = _train(tmp_path)
    paths = [save_agent(tmp_path / d, model, venv, SMALL) for d in ("run1/agent", "x/bc", "z/x/bc")]
    args = ["--controllers", "fixed-2", "--set", "num_devices=4", "gamma_max=8", "--episodes", "2", "--rounds", "3",
            "--no-progress", "--out", str(tmp_path / "e.csv"), "--agent", *map(str, paths)]
    rows = evaluate_main(args)
    assert [r["controller"] for r in rows] == ["fixed-2", "ppo:run1", "ppo:x/bc", f"ppo:{paths[2]}"]
    assert rows[1]["throughput"] == rows[2]["throughput"] == rows[3]["throughput"]  # one policy, same seeds


def _run(args, timeout=240):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.slow
def test_train_quick_end_to_end(tmp_path):
    r = _run(["train.py", "--quick", "--no-progress", "--log-dir", str(tmp_path / "q")])
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "q"
    data = json.loads((out / "comparison.json").read_text())
    names = [row["controller"] for row in data["table"]]
    assert names == ["greedy-saa", "ppo", "optimal-uniform", "computation-only", "fixed-4"]
    assert (out / "comparison.csv").read_text().count("\n") == 6
    png = (out / "learning_curve.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert (out / "agent" / "model.zip").exists() and (out / "agent" / "vecnormalize.pkl").exists()
    assert data["summary"]["decision_speedup_vs_greedy"] > 1
    assert "PPO / GreedySAA" in r.stdout
    # the folder now belongs to msenv/MultiSpin-v0: another id may neither start nor resume in it
    import train

    for argv in (["--quick", "--env-id", "msenv/MultiSpin-DeepSeek-v0", "--log-dir", str(out)],
                 ["--resume", str(out), "--env-id", "msenv/MultiSpin-DeepSeek-v0"]):
        with pytest.raises(SystemExit) as e:
            train.parse(argv)
        assert e.value.code == 2
    assert train.parse(["--resume", str(out)])[0].env_id == "msenv/MultiSpin-v0"


@pytest.mark.parametrize("args,msg", [
    (["--n-envs", "0"], "--n-envs 0 is invalid"),
    (["--timesteps", "-5"], "--timesteps -5 is invalid"),
    (["--p-dl-range", "40", "10"], "p_dl_dbm_range"),
    (["--num-devices", "0"], "num_devices"),
    (["--mode-policy", "sideways"], "invalid choice"),
    (["--gamma", "1.5"], "--gamma 1.5 is invalid"),
    (["--env-id", "CartPole-v1"], "invalid choice"),
    (["--learning-rate", "0"], "--learning-rate 0"),
    (["--frame-stack", "0"], "--frame-stack 0 is invalid"),
    (["--bc-init", "nope"], "--bc-init: controller 'nope' is not known"),
    (["--bc-init", "greedy-saa", "--frame-stack", "2"], "--bc-init needs --frame-stack 1"),
    (["--bc-episodes", "0"], "--bc-episodes 0 is invalid"),
    (["--set", "nope=1"], "--set: SystemConfig.replace() got an unexpected keyword argument 'nope'"),
    (["--set", "p_dl_dbm=abc"], "--set: config field p_dl_dbm='abc' is invalid"),
    (["--set", "p_dl_dbm"], "expected FIELD=VALUE"),
])
def test_cli_rejects_bad_arguments(args, msg, capsys):
    import train

    with pytest.raises(SystemExit) as e:
        train.parse(args)
    assert e.value.code == 2
    assert msg in capsys.readouterr().err


def test_set_overrides_any_field_and_each_id_has_its_own_default_folder(tmp_path, monkeypatch):
    import train

    monkeypatch.chdir(tmp_path)
    args, cfg = train.parse(["--env-id", "msenv/MultiSpin-Dynamic-Small-v0", "--set", "draft_scale_range=[1.0,2.0]",
                             "p_dl_dbm=10", "csi=statistical"])
    assert (cfg.draft_scale_range, cfg.p_dl_dbm, cfg.csi, cfg.num_devices) == ((1.0, 2.0), 10.0, "statistical", 6)
    folders = {train.parse(["--env-id", i])[0].log_dir for i in msenv.ENV_IDS}
    assert len(folders) == len(msenv.ENV_IDS)  # no id writes into another's folder
    assert train.parse([])[0].log_dir == "runs/ppo-MultiSpin-v0"


@pytest.mark.slow
def test_the_cells_id_trains_on_its_own_cells_unless_told_otherwise(tmp_path, monkeypatch, capsys):
    """agents.defaults: the Cells id's policy, reward, steps and training cells; a group of config
    fields the command line touches is left to it whole."""
    import train

    monkeypatch.chdir(tmp_path)
    cells = ["--env-id", "msenv/MultiSpin-Cells-v0"]
    args, cfg = train.parse(cells)
    assert (args.policy, args.reward, args.timesteps) == ("budget", "counterfactual", 500_000)
    assert (cfg.k_range, cfg.k_max, cfg.k_law, cfg.episode_length) == ((5, 200), 200, "log_uniform", 20)
    assert cfg.base.distance_range_m == (100.0, 800.0)
    _, cfg = train.parse([*cells, "--set", "k_range=[5,50]"])
    assert (cfg.k_range, cfg.k_max, cfg.k_law, cfg.episode_length) == ((5, 50), 50, "uniform", 20)
    assert cfg.base.distance_range_m == (100.0, 800.0)
    _, cfg = train.parse([*cells, "--set", "distance_range_m=[100,500]"])
    assert (cfg.k_range, cfg.base.distance_range_m) == ((5, 200), (100.0, 500.0))
    args, cfg = train.parse([*cells, "--episode-length", "7", "--policy", "set", "--reward", "goodput"])
    assert (cfg.k_range, cfg.episode_length, args.policy, args.reward) == ((5, 200), 7, "set", "goodput")
    args, _ = train.parse([*cells, "--policy-kwargs", '{"hidden": 32, "pooling": "meanmax"}'])
    kw = args.ppo_kwargs()["policy_kwargs"]
    assert (kw["hidden"], kw["pooling"]) == (32, "meanmax")
    for argv, msg in (([*cells, "--frame-stack", "2"], "--reward counterfactual needs --frame-stack 1"),
                      ([*cells, "--policy-kwargs", '{"hidden": 0}'], "hidden=0 is invalid"),
                      ([*cells, "--policy-kwargs", '{"foo": 1}'], "unexpected keyword argument 'foo'"),
                      ([*cells, "--policy-kwargs", "[1]"], "a JSON object"),
                      (["--policy", "budget"], "--policy budget needs the cell generator"),
                      ([*cells, "--bc-init", "fixed-3"], "--bc-init needs --policy mlp or set")):
        with pytest.raises(SystemExit):
            train.parse(argv)
        assert msg in capsys.readouterr().err


def test_make_ppo_is_exported():
    from agents import make_ppo
    from agents.ppo import make_ppo as direct

    assert make_ppo is direct


def test_cli_help_documents_options():
    import train

    text = train.build_parser().format_help()
    for opt in ("--p-dl-dbm", "--p-ul-dbm", "--num-devices", "--mode-policy", "--p-dl-range", "--timesteps",
                "--n-envs", "--seed", "--log-dir", "--eval-episodes", "--quick", "--vec-env"):
        assert opt in text


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["msenv/MultiSpin-v0", "msenv/MultiSpin-Hetero-v0"])
def test_rl_zoo3_trains_with_our_hyperparameters(tmp_path, env_id, example):
    """examples/rl_zoo3_train.py: rl-zoo3 trains on agents/hyperparams/ppo.yml, saves the agent and
    its VecNormalize statistics, and SB3 plays them back."""
    pytest.importorskip("rl_zoo3")
    run = example("rl_zoo3_train").main(steps=2048, env_id=env_id, out=str(tmp_path))
    saved = list(tmp_path.rglob(f"{env_id.replace('/', '-')}.zip"))
    assert saved and saved[0].parent == run, list(tmp_path.rglob("*"))
    assert list(tmp_path.rglob("vecnormalize.pkl"))


@pytest.mark.slow
def test_subproc_vec_env_under_spawn_matches_single_envs():
    venv = make_vec_env(SMALL, 2, 7, "subproc")
    try:
        obs = venv.reset()
        ref = MultiSpinEnv(SMALL)
        assert np.array_equal(obs[1], ref.reset(seed=8)[0])
        act = np.array([[1, 2, 3, 4], [4, 3, 2, 1]])
        obs, rew, done, infos = venv.step(act)
        _, r, _, _, info = ref.step(act[1])
        assert rew[1] == pytest.approx(r)
        for key in ("goodput", "t_com", "latency", "mean_gamma", "share_accepted", "share_ul", "share_dl"):
            assert key in infos[1]
        assert infos[1]["mean_gamma"] == 2.5
        assert infos[1]["share_accepted"] + infos[1]["share_ul"] + infos[1]["share_dl"] == pytest.approx(1.0)
        assert np.array_equal(info["modes"] == 0, ~info["rejected"])
    finally:
        venv.close()
    with pytest.raises(ValueError, match="vec env kind"):
        make_vec_env(SMALL, 2, 0, "threads")


# ---------------------------------------------------------------------- run safety (issue: ecosystem)
@pytest.mark.slow
def test_signal_stops_training_saves_and_resume_finishes(tmp_path):
    """SIGINT mid-training: agent + resumable checkpoint saved, exit 130; --resume continues to
    the requested total in the same TensorBoard run; the final agent plays."""
    import signal
    import time

    out = tmp_path / "run"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.Popen(
        [sys.executable, "train.py", "--quick", "--no-progress", "--timesteps", "10000000", "--log-dir", str(out),
         "--checkpoint-minutes", "0.005"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    deadline = time.monotonic() + 180
    line = ""
    while "training PPO" not in line and time.monotonic() < deadline:
        line = proc.stdout.readline()
    assert "training PPO" in line
    # the wall-clock checkpoint (every 0.3 s) appears while training runs
    while not (out / "resume" / "state.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (out / "resume" / "state.json").exists()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr
    assert f"continue with: python train.py --resume {out}" in stdout
    saved = json.loads((out / "resume" / "state.json").read_text())
    done = saved["num_timesteps"]
    assert 0 < done < 10_000_000
    assert (out / "agent" / "model.zip").exists() and (out / "agent" / "vecnormalize.pkl").exists()
    assert json.loads((out / "agent" / "agent.json").read_text())["timesteps"] == done
    assert load_agent(out / "agent", sb3=True).model.num_timesteps == done

    target = done + 1024
    r = _run(["train.py", "--resume", str(out), "--timesteps", str(target), "--no-progress"])
    assert r.returncode == 0, r.stderr[-2000:]
    final = json.loads((out / "resume" / "state.json").read_text())["num_timesteps"]
    assert target <= final < target + 8 * 64  # SB3 finishes the last rollout (n_envs × n_steps)
    assert [p.name for p in (out / "tb").iterdir()] == ["ppo_1"]  # the same TensorBoard run
    agent = load_agent(out / "agent", sb3=True)
    assert agent.model.num_timesteps == final
    envm = MultiSpinEnv(agent.config)
    obs, _ = envm.reset(seed=1)
    for _ in range(3):
        obs, r_, *_ = envm.step(agent.act(envm.context, obs))
        assert np.isfinite(r_) and r_ > 0
    assert "PPO / GreedySAA" in r.stdout


@pytest.mark.slow
def test_resume_and_log_dir_errors_are_one_clear_line(tmp_path):
    r = _run(["train.py", "--resume", str(tmp_path / "nothing")])
    assert r.returncode == 2 and "no resumable checkpoint" in r.stderr and "Traceback" not in r.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = _run(["train.py", "--quick", "--log-dir", str(blocker / "sub")])
    assert r.returncode == 2 and "--log-dir" in r.stderr and "cannot write there" in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("python train.py: error: --log-dir")


def test_throughput_reward_is_tokens_minus_lambda_times_time():
    """N − λT per round, from the same episodes the plain env plays (tokens and latency of its info)."""
    from agents.envs import ThroughputReward

    cfg = msenv.resolve_config("qwen2.5", num_devices=4, episode_length=5)
    lam = 150.0
    venv = ThroughputReward(make_vec_env(cfg, 3, 7), lam)
    venv.reset()
    envs = [msenv.MultiSpinEnv(cfg) for _ in range(3)]
    for i, e in enumerate(envs):
        e.reset(seed=7 + i)
    rng = np.random.default_rng(0)
    for _ in range(7):  # across an episode's end (autoreset)
        act = rng.integers(0, 8, size=(3, 4))
        _, rew, done, _ = venv.step(act)
        for i, e in enumerate(envs):
            _, _, term, trunc, info = e.step(act[i])
            assert rew[i] == pytest.approx(info["tokens"].sum() - lam * info["latency"], rel=1e-5)
            if term or trunc:
                e.reset()
    with pytest.raises(ValueError, match="lam=0"):
        ThroughputReward(venv, 0)


@pytest.mark.slow
def test_train_quick_on_hetero_uses_the_ids_defaults(tmp_path):
    """With no other option, an id's defaults apply: the device-set policy on the Hetero cell, and
    its best known rival, the local search, in the table."""
    r = _run(["train.py", "--quick", "--no-progress", "--env-id", "msenv/MultiSpin-Hetero-v0",
              "--log-dir", str(tmp_path / "h")])
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads((tmp_path / "h" / "comparison.json").read_text())
    assert [row["controller"] for row in data["table"]] == ["greedy-saa", "ppo", "optimal-uniform",
                                                            "computation-only", "fixed-4", "local-search"]
    assert data["args"]["policy"] == "set"
    assert "DeviceSetPolicy" in (tmp_path / "h" / "agent" / "model.zip").read_bytes().decode("latin-1")


@pytest.mark.slow
def test_train_quick_on_the_cell_generator_then_resume(tmp_path):
    """train.py on the Cells id with the id's defaults: the budget policy on the counterfactual
    reward, a CellConfig saved with the agent and the checkpoint; a stopped run resumes from it;
    the agent acts in a larger cell."""
    out = tmp_path / "c"
    common = ["--no-progress", "--log-dir", str(out)]
    r = _run(["train.py", "--quick", "--env-id", "msenv/MultiSpin-Cells-v0", "--set", "k_range=[2,4]", "k_max=4",
              "--timesteps", "512", "--eval-freq", "256", "--checkpoint-freq", "512",
              "--baselines", "greedy-saa", "computation-only", *common])
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads((out / "comparison.json").read_text())
    assert [row["controller"] for row in data["table"]] == ["greedy-saa", "ppo", "computation-only"]
    assert data["config"]["k_range"] == [2, 4] and data["args"]["policy"] == "budget"
    assert data["args"]["reward"] == "counterfactual"
    r = _run(["train.py", "--resume", str(out), "--timesteps", "1024", "--no-progress"])
    assert r.returncode == 0, r.stderr[-2000:]
    agent = load_agent(out / "agent")
    assert agent.policy.masked and agent.policy.layout.n_levels == 4 * agent.config.gamma_max + 1
    env = MultiSpinCellsEnv(agent.config.replace(k_range=(9, 9), k_max=9))
    obs, _ = env.reset(seed=0)
    assert agent.act(env.context, obs).shape == (9,)


def test_the_main_job_trains_the_device_set_policy_unless_told_otherwise(tmp_path, monkeypatch):
    """agents.defaults: msenv/MultiSpin-v0 trains the device-set policy, 4 epochs at 1e-3, 75k steps
    (an option given wins, --quick's budget too); an id without a row of its own keeps MAIN_JOB's MLP."""
    import train

    monkeypatch.chdir(tmp_path)
    args, _ = train.parse([])
    assert (args.policy, args.n_epochs, args.learning_rate, args.timesteps) == ("set", 4, 1e-3, 75_000)
    kw = args.ppo_kwargs()
    assert (kw["n_epochs"], kw["learning_rate"]) == (4, 1e-3)
    args, _ = train.parse(["--policy", "mlp", "--n-epochs", "10", "--learning-rate", "3e-4", "--timesteps", "500000"])
    assert (args.policy, args.n_epochs, args.learning_rate, args.timesteps) == ("mlp", 10, 3e-4, 500_000)
    assert train.parse(["--quick"])[0].timesteps == 4096
    args, _ = train.parse(["--env-id", "msenv/MultiSpin-DeepSeek-v0"])
    assert (args.policy, args.n_epochs, args.learning_rate, args.timesteps) == ("mlp", 10, 3e-4, 500_000)
