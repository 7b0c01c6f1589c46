"""Boundary validation of public constructors: a bad value is a ValueError/TypeError naming the argument."""

import gymnasium as gym
import numpy as np
import pytest

import msenv
from agents.setpolicy import DeviceSetPolicy
from baselines import BudgetedGreedy, make_controller


def _spaces(k=4, f=3, g=2, n=5):
    obs = gym.spaces.Box(-np.inf, np.inf, shape=(k * f + g,), dtype=np.float32)
    return obs, gym.spaces.MultiDiscrete([n] * k)


def _policy(action_space=None, **kw):
    obs, act = _spaces()
    return DeviceSetPolicy(obs, act if action_space is None else action_space, lambda _: 3e-4, **kw)


@pytest.mark.parametrize("n_devices", [0, -1, 2, 5, True, 2.5])
def test_setpolicy_n_devices_must_match_action_space(n_devices):
    with pytest.raises(ValueError, match="n_devices"):
        _policy(n_devices=n_devices)


@pytest.mark.parametrize("hidden", [0, -3, True, 1.5])
def test_setpolicy_hidden(hidden):
    with pytest.raises(ValueError, match="hidden"):
        _policy(hidden=hidden)


def test_setpolicy_discrete_action_space():
    with pytest.raises(ValueError, match="action_space"):
        _policy(action_space=gym.spaces.Discrete(5))


def test_setpolicy_unequal_multidiscrete():
    with pytest.raises(ValueError, match="action_space"):
        _policy(action_space=gym.spaces.MultiDiscrete([5, 5, 4, 5]))


def test_setpolicy_valid_batch_shape():
    policy = _policy(n_devices=4)
    actions, _ = policy.predict(np.zeros((4, 14), dtype=np.float32), deterministic=True)
    assert actions.shape == (4, 4)


@pytest.mark.parametrize("budget", [True, 0, -1.0, "1"])
def test_budgeted_greedy_budget(budget):
    with pytest.raises(ValueError, match="budget_ms"):
        BudgetedGreedy(budget_ms=budget)


def test_make_controller_fixed_rejects_kwargs():
    with pytest.raises(TypeError, match="foo"):
        make_controller("fixed-4", foo=1)


def test_make_controller_none():
    with pytest.raises(TypeError, match="name"):
        make_controller(None)


def test_make_controller_unknown():
    with pytest.raises(ValueError, match="nope"):
        make_controller("nope")


@pytest.mark.slow
@pytest.mark.parametrize("flag,value", [("--episodes", "0"), ("--workers", "0"), ("--rounds", "1")])
def test_evaluate_cli_refuses_bad_counts(flag, value, tmp_path):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "evaluation.evaluate", flag, value, "--out", str(tmp_path / "e.csv")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert flag in proc.stderr


CELLS_ID = "msenv/MultiSpin-Cells-v0"


@pytest.mark.parametrize("n", [0, -1])
def test_cells_make_vec_num_envs(n):
    import msenv  # noqa: F401
    with pytest.raises(ValueError, match="num_envs"):
        gym.make_vec(CELLS_ID, num_envs=n)


def test_cells_vector_wrong_action_batch():
    import msenv  # noqa: F401
    envs = gym.make_vec(CELLS_ID, num_envs=2)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="actions"):
        envs.step(np.zeros((3, envs.single_action_space.shape[0]), dtype=np.int64))
    envs.close()


def test_cells_reset_config_option_not_a_dict():
    import msenv  # noqa: F401
    env = gym.make(CELLS_ID)
    with pytest.raises(ValueError, match="config"):
        env.reset(options={"config": 5})


@pytest.mark.slow
def test_experiments_cells_mlp_agent_checked_up_front(tmp_path):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "experiments", "cells", "--mlp-agent", str(tmp_path / "none"),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "--mlp-agent" in proc.stderr


GENERALIST = "agents/pretrained/cells"


def _generalist():
    from agents import load_agent

    return load_agent(GENERALIST)


def _first_obs(env_id, **kw):
    import msenv  # noqa: F401
    env = gym.make(env_id, **kw)
    obs, _ = env.reset(seed=0)
    return env, obs


def _generalist_width():
    """The committed generalist's padded observation: k_max rows of 6 entries and 3 globals."""
    return _generalist().config.k_max * 6 + 3


@pytest.mark.parametrize("batch", [False, True])
def test_generalist_predict_refuses_an_unpadded_observation(batch):
    _, obs = _first_obs("msenv/MultiSpin-v0", num_devices=5)
    x = np.stack([obs, obs]) if batch else obs
    with pytest.raises(ValueError, match=rf"shape \((2, 27|27,)\) does not fit; expected \({_generalist_width()},\)"):
        _generalist().predict(x)


def test_generalist_predict_refuses_a_dynamic_observation():
    _, obs = _first_obs("msenv/MultiSpin-Dynamic-v0")
    with pytest.raises(ValueError, match=rf"shape \(162,\) does not fit; expected \({_generalist_width()},\)"):
        _generalist().predict(obs)


def test_generalist_act_refuses_a_dynamic_observation():
    env, obs = _first_obs("msenv/MultiSpin-Dynamic-v0")
    with pytest.raises(ValueError, match="device rows of 6 entries; this cell's have 9"):
        _generalist().act(env.unwrapped.context, obs)


def test_generalist_act_refuses_too_few_rows_for_the_cell():
    env, _ = _first_obs("msenv/MultiSpin-v0")  # K = 20
    _, small = _first_obs("msenv/MultiSpin-v0", num_devices=5)
    with pytest.raises(ValueError, match=r"shape \(27,\)"):
        _generalist().act(env.unwrapped.context, small)


def test_generalist_predict_still_reads_the_generator_and_single_cells():
    agent = _generalist()
    env, obs = _first_obs("msenv/MultiSpin-Cells-v0")
    assert agent.predict(obs)[0].shape == (50,)
    env, obs = _first_obs("msenv/MultiSpin-v0", num_devices=5)
    assert agent.act(env.unwrapped.context, obs).shape == (5,)


@pytest.mark.parametrize("obs,match", [(np.full(303, np.nan), "NaN"), (np.array(["a"] * 303), "dtype"),
                                       (np.zeros((2, 3, 303)), r"shape \(2, 3, 303\)")])
def test_controller_refuses_bad_observations(obs, match):
    with pytest.raises(ValueError, match=match):
        _generalist().predict(obs)


def test_mlp_agent_predict_refuses_a_wrong_width():
    from agents.controller import load_agent

    agent = load_agent("agents/pretrained/leaderboard/mlp-s0")
    with pytest.raises(ValueError, match=r"shape \(4, 27\) does not fit; expected \(102,\) or \(n, 102\)"):
        agent.predict(np.zeros((4, 27), dtype=np.float32))


def test_setpolicy_torch_predict_wrong_width_is_sb3s_clear_error():
    policy = _policy(n_devices=4)
    with pytest.raises(ValueError, match=r"Unexpected observation shape \(4, 13\).*\(14,\)"):
        policy.predict(np.zeros((4, 13), dtype=np.float32), deterministic=True)


@pytest.mark.parametrize("agent,env_id,match", [
    (GENERALIST, "msenv/MultiSpin-Dynamic-v0", "device rows of 6 entries"),
    ("agents/pretrained/leaderboard/mlp-s0", "msenv/MultiSpin-Cells-v0", "reads observations of 102 entries"),
    ("agents/pretrained/leaderboard/set-s0", "msenv/MultiSpin-Cells-v0", "reads single-cell observations"),
])
def test_agent_factory_check_refuses_an_env_it_cannot_read(agent, env_id, match):
    from agents.controller import AgentFactory
    from msenv import env_config

    with pytest.raises(ValueError, match=match):
        AgentFactory(agent).check(env_config(env_id))


def test_agent_factory_check_gamma_max():
    from agents.controller import AgentFactory
    from msenv import env_config

    with pytest.raises(ValueError, match="gamma_max"):
        AgentFactory("agents/pretrained/leaderboard/set-s0").check(env_config("msenv/MultiSpin-v0", gamma_max=10))


def _refused(main, argv, capsys, *needles):
    """``main(argv)`` stops with argparse's one-line error (exit 2) holding ``needles``."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and all(n in lines[0] for n in needles), err


def test_evaluate_cli_refuses_an_agent_for_another_env_up_front(tmp_path, capsys):
    from evaluation.evaluate import main

    _refused(main, ["--env-id", "msenv/MultiSpin-Dynamic-v0", "--agent", GENERALIST, "--episodes", "1", "--rounds", "2",
                    "--controllers", "fixed-4", "--out", str(tmp_path / "e.csv")], capsys,
             f"--agent {GENERALIST}", "device rows of 6 entries")
    _refused(main, ["--seed", "-1", "--out", str(tmp_path / "e.csv")], capsys, "--seed")
    assert not (tmp_path / "e.csv").exists()


def test_benchmark_cli_refuses_an_agent_for_another_cell_up_front(tmp_path, capsys):
    from evaluation.benchmark import main

    _refused(main, ["--suite", "dynamic-v0", "--agent", GENERALIST, "--out", str(tmp_path)], capsys,
             f"--agent {GENERALIST}", "dynamic-v0")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv,needle", [
    (["fig7", "--rounds", "1"],
     "--rounds 1 is invalid (config field episode_length=1 is invalid; allowed: an integer in [2,"),
    (["cells", "--rounds", "0"], "--rounds 0 is invalid (config field episode_length=0"),
    (["table", "--drops", "0"], "--drops 0 is invalid; allowed: an integer in 1 … 100,000"),
    (["hetero", "--workers", "-1"], "--workers -1 is invalid; allowed: an integer in 1 … 256"),
    (["fig9", "--seed", "-1"], "--seed -1 is invalid; allowed: an integer ≥ 0"),
    (["gap", "--num-devices", "0"], "--num-devices 0 is invalid (config field num_devices=0"),
    (["gap", "--gamma-max", "-1"], "--gamma-max -1 is invalid (config field gamma_max=-1"),
    (["fig11", "--agent", "/nonexistent"], "--agent /nonexistent: no saved agent there"),
    (["dynamics", "--agent", "/nonexistent"], "--agent /nonexistent: no saved agent there"),
    (["hetero", "--agent", "/nonexistent"], "--agent /nonexistent: no saved agent there"),
    (["table", "--agent", "/nonexistent"], "--agent /nonexistent: no saved agent there"),
    (["cells", "--agent", "/nonexistent"], "--agent /nonexistent: no saved agent there"),
    (["dynamics", "--quick", "--agent", "agents/pretrained/leaderboard/mlp-s0"], "no point has K = 20"),
    (["dynamics", "--quick", "--agent", GENERALIST], "a cell generator's agent has no K"),
    (["table", "--env-id", "msenv/MultiSpin-Dynamic-v0", "--agent", GENERALIST], "device rows of 6 entries"),
    (["cells", "--agent", "agents/pretrained/leaderboard/mlp-s0"], "reads observations of 102 entries"),
    (["fig11", "--quick", "--agent", "agents/pretrained/leaderboard/mlp-s0"], "32 entries for 6 devices"),
    (["fig7", "--agent", GENERALIST], "--agent is not used by fig7"),
    (["gap", "--mlp-agent", GENERALIST], "--mlp-agent is not used by gap"),
])
def test_experiments_cli_refuses_before_work(argv, needle, tmp_path, capsys):
    from experiments.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(tmp_path / "out"), "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


SINGLE_IDS = sorted(msenv.ENV_IDS)


@pytest.mark.parametrize("env_id", SINGLE_IDS)
def test_make_vec_num_envs_of_every_id(env_id):
    for n in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="num_envs"):
            gym.make_vec(env_id, num_envs=n)


@pytest.mark.parametrize("env_id", SINGLE_IDS)
def test_vector_step_wrong_action_batch_of_every_id(env_id):
    envs = gym.make_vec(env_id, num_envs=2)
    envs.reset(seed=0)
    k = envs.single_action_space.shape[0]
    try:
        for bad in (np.zeros((3, k), np.int64), np.zeros((2, k + 1), np.int64), np.zeros(k, np.int64),
                    np.full((2, k), 99), np.full((2, k), -1), np.full((2, k), 1.5)):
            with pytest.raises(ValueError, match="action"):
                envs.step(bad)
    finally:
        envs.close()


@pytest.mark.parametrize("name,kwargs,exc,match", [
    ("fixed-x", {}, ValueError, "'fixed-x' is not known"),
    ("fixed--1", {}, ValueError, "gamma=-1"),
    ("greedy-saa", {"nope": 1}, TypeError, "nope"),
    ("local-search", {"foo": 1}, TypeError, "foo"),
    ("greedy-saa", {"n_samples": 0}, ValueError, "n_samples=0"),
    ("optimal-uniform", {"n_samples": True}, ValueError, "n_samples=True"),
    ("budgeted-greedy", {"budget_ms": float("nan")}, ValueError, "budget_ms=nan"),
    ("", {}, ValueError, "'' is not known"),
])
def test_make_controller_bad_names_and_kwargs(name, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_controller(name, **kwargs)


def test_registry_skips_broken_non_callable_and_reserved_plugins(monkeypatch):
    from importlib.metadata import EntryPoint

    from baselines import registry

    eps = [EntryPoint("pi-controller", "math:pi", registry.GROUP),
           EntryPoint("missing", "no_such_module_xyz:Thing", registry.GROUP),
           EntryPoint("fixed-3", "baselines.simple:Fixed", registry.GROUP),
           EntryPoint("a@b", "baselines.simple:Fixed", registry.GROUP),
           EntryPoint("my-fixed", "baselines.simple:Fixed", registry.GROUP)]
    monkeypatch.setattr(registry, "entry_points", lambda group: eps)
    reg = {}
    with pytest.warns(UserWarning) as record:
        added = registry.register_entry_points(reg)
    assert added == ["my-fixed"] and list(reg) == ["my-fixed"]
    text = "\n".join(str(w.message) for w in record)
    for name in ("'pi-controller'", "'missing'", "'fixed-3'", "'a@b'"):
        assert name in text


def _broken_agent(tmp_path, src, doc_update=None, arrays_update=None, raw_npz=None):
    import json
    import shutil
    from pathlib import Path

    d = tmp_path / "agent"
    shutil.copytree(src, d)
    if doc_update is not None:
        doc = json.loads((Path(src) / "agent.json").read_text())
        (d / "agent.json").write_text(json.dumps({**doc, **doc_update}))
    if arrays_update is not None:
        arrays = dict(np.load(Path(src) / "policy.npz"))
        np.savez(d / "policy.npz", **{**arrays, **arrays_update(arrays)})
    if raw_npz is not None:
        (d / "policy.npz").write_bytes(raw_npz)
    return d


MLP0, SET0 = "agents/pretrained/leaderboard/mlp-s0", "agents/pretrained/leaderboard/set-s0"


@pytest.mark.parametrize("src,change,file,match", [
    (MLP0, dict(raw_npz=b""), "policy.npz", "not a valid weights file"),
    (MLP0, dict(raw_npz=np.random.default_rng(0).bytes(500)), "policy.npz", "not a valid weights file"),
    (MLP0, dict(arrays_update=lambda a: {"layer0.bias": a["layer0.bias"][:-1]}), "policy.npz", "layer0.bias"),
    (MLP0, dict(arrays_update=lambda a: {"obs.mean": a["obs.mean"][:5]}), "policy.npz", "obs.mean"),
    (MLP0, dict(arrays_update=lambda a: {"layer0.weight": np.full_like(a["layer0.weight"], np.nan)}), "policy.npz",
     "not finite"),
    (SET0, dict(arrays_update=lambda a: {"head.bias": a["head.bias"][:-1]}), "policy.npz", "head.bias"),
    (MLP0, dict(doc_update={"normalization": [1]}), "agent.json", "normalization"),
    (MLP0, dict(doc_update={"normalization": {"clip": "x", "epsilon": 1e-8}}), "agent.json", "clip='x'"),
    (MLP0, dict(doc_update={"frame_stack": 0}), "agent.json", "frame_stack=0"),
    (MLP0, dict(doc_update={"policy": [1]}), "agent.json", "policy=\\[1\\]"),
    (SET0, dict(doc_update={"policy": {"n_features": "six", "n_globals": 2, "hidden": 64, "masked": False,
                                       "pooling": "mean", "phi": 2, "psi": 1}}), "agent.json", "six"),
])
def test_load_agent_refuses_garbage_files_naming_them(tmp_path, src, change, file, match):
    from agents import load_agent

    d = _broken_agent(tmp_path, src, **change)
    with pytest.raises(ValueError, match=match) as exc:
        load_agent(d)
    assert str(d / file) in str(exc.value)


def test_benchmark_cli_bad_agents_and_controllers_in_one_line(tmp_path, capsys):
    from evaluation.benchmark import main

    garbage = _broken_agent(tmp_path, MLP0, raw_npz=b"garbage")
    for argv, needle in ((["--suite", "paper-v0", "--agent", str(garbage)], f"{garbage / 'policy.npz'}"),
                         (["--suite", "paper-v0", "--controllers", "fixed-30"], "'fixed-30' drafts 30 tokens"),
                         (["--suite", "nope"], "invalid choice: 'nope'"),
                         (["--suite", "cells-in-v0", "--agent", MLP0], "reads observations of 102 entries")):
        with pytest.raises(SystemExit) as exc:
            main([*argv, "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and needle in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_evaluate_cli_fixed_beyond_gamma_max_and_garbage_agent(tmp_path, capsys):
    from evaluation.evaluate import main

    garbage = _broken_agent(tmp_path, MLP0, doc_update={"frame_stack": "two"})
    for argv, needle in ((["--controllers", "fixed-50"], "'fixed-50' drafts 50 tokens; this env allows 0..20"),
                         (["--agent", str(garbage)], "frame_stack='two'")):
        with pytest.raises(SystemExit) as exc:
            main([*argv, "--episodes", "1", "--rounds", "2", "--out", str(tmp_path / "e.csv")])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and needle in err, err
    assert not (tmp_path / "e.csv").exists()


def test_convert_cli_nonexistent_and_garbage_dirs(tmp_path, capsys):
    from agents.convert import main

    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "model.zip").write_text("not a zip")
    for d in (tmp_path / "none", tmp_path / "garbage"):
        with pytest.raises(SystemExit) as exc:
            main([str(d)])
        err = capsys.readouterr().err
        assert exc.value.code == 1 and f"error: {d}:" in err and len(err.strip().splitlines()) == 1, err


def test_train_bc_init_fixed_beyond_gamma_max_refused(capsys, tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import train

    with pytest.raises(SystemExit) as exc:
        train.parse(["--bc-init", "fixed-50", "--log-dir", str(tmp_path / "run")])
    assert exc.value.code == 2 and "--bc-init: controller 'fixed-50' drafts 50 tokens" in capsys.readouterr().err


def test_train_baselines_refused_before_any_work_and_defaults(capsys, tmp_path):
    """--baselines: every name known and playable, greedy-saa (the reference) among them; by
    default the slow Bayesian and oracle rivals join on a dynamic single cell, not on dynamic
    cells of up to 200 devices."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import train
    from msenv import env_config

    for names, message in ((["computation-only"], "greedy-saa is missing"),
                           (["greedy-saa", "nope"], "controller 'nope' is not known"),
                           (["greedy-saa", "fixed-30"], "controller 'fixed-30' drafts 30 tokens")):
        with pytest.raises(SystemExit) as exc:
            train.parse(["--baselines", *names, "--log-dir", str(tmp_path / "run")])
        assert exc.value.code == 2 and message in capsys.readouterr().err
    args, _ = train.parse(["--baselines", "greedy-saa", "local-search", "--log-dir", str(tmp_path / "run")])
    assert args.baselines == ("greedy-saa", "local-search")
    dyn = dict(channel_dynamics="gauss_markov", alpha_dynamics="markov", alpha_observed=False)
    assert train.default_baselines("msenv/MultiSpin-v0", env_config("msenv/MultiSpin-v0")) == train.BASELINES
    assert train.default_baselines("msenv/MultiSpin-Dynamic-v0", env_config("msenv/MultiSpin-Dynamic-v0")) == (
        train.BASELINES + train.DYNAMIC_BASELINES)
    assert train.default_baselines("msenv/MultiSpin-Cells-v0", env_config("msenv/MultiSpin-Cells-v0", **dyn)) == (
        train.BASELINES)


def test_make_controller_names_the_controller_of_an_unexpected_keyword():
    from baselines import make_controller

    for name in ("local-search", "computation-only", "greedy-saa"):
        with pytest.raises(TypeError, match=rf"controller '{name}' .*'foo'"):
            make_controller(name, foo=1)
