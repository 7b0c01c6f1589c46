"""The training library (agents.training): the validated settings, the one table of defaults
(agents.defaults) and rl-zoo3's YAML generated from it, the old names' shims, resuming a checkpoint
of 0.6, and the comparison table's paired ratios."""

from __future__ import annotations

import ast
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("stable_baselines3")

from agents import defaults
from agents.defaults import MAIN_JOB, PER_ID, QUICK, ROW_KEYS
from agents.training import SettingError, TrainingConfig
from agents.training.compare import comparison_rows, leaders, leaders_line
from agents.training.options import cli_names
from agents.training.resume import resumed, saved_settings
from evaluation.harness import EpisodeStats
from msenv import ENV_IDS, SystemConfig, env_config, layout_of

ROOT = Path(__file__).resolve().parents[1]
FIELDS = {f for f in TrainingConfig.__dataclass_fields__}


# ---------------------------------------------------------------------- the settings
def test_a_setting_left_out_takes_quick_then_the_ids_row_then_the_main_job(tmp_path):
    main = TrainingConfig()
    for name, value in {**MAIN_JOB, **defaults.id_defaults("msenv/MultiSpin-v0")}.items():
        assert getattr(main, name) == value, name
    assert (main.policy, main.n_epochs, main.learning_rate, main.timesteps) == ("set", 4, 1e-3, 75_000)
    assert main.gae_lambda == 0.0 and main.log_dir == "runs/ppo-MultiSpin-v0"
    hetero = TrainingConfig(env_id="msenv/MultiSpin-Hetero-v0")
    assert (hetero.policy, hetero.timesteps, hetero.n_envs) == ("set", 1_000_000, MAIN_JOB["n_envs"])
    assert hetero.baselines[-1] == "local-search"
    quick = TrainingConfig(env_id="msenv/MultiSpin-Hetero-v0", quick=True)
    assert (quick.policy, quick.timesteps, quick.n_envs) == ("set", QUICK["timesteps"], QUICK["n_envs"])
    assert quick.env_config.episode_length == QUICK["episode_length"] and quick.log_dir.endswith("-quick")
    given = TrainingConfig(env_id="msenv/MultiSpin-Hetero-v0", quick=True, timesteps=7000, policy="mlp")
    assert (given.policy, given.timesteps) == ("mlp", 7000)
    assert TrainingConfig(gamma=0.9).gae_lambda == 0.95 and TrainingConfig(gamma=0.9, gae_lambda=0.5).gae_lambda == 0.5
    kw = TrainingConfig(learning_rate=1e-3, net_arch=[32], policy_kwargs={"ortho_init": False}).ppo_kwargs()
    assert kw["learning_rate"] == 1e-3 and kw["gamma"] == 0.0
    assert kw["policy_kwargs"] == {"net_arch": {"pi": [32], "vf": [32]}, "ortho_init": False}


@pytest.mark.parametrize("kwargs, words", [
    (dict(n_envs=0), "n_envs=0 is invalid; allowed: an integer in 1 … 1,024"),
    (dict(timesteps=1e6), "timesteps=1000000.0 is invalid; allowed: an integer in 1 … 10,000,000,000"),
    (dict(learning_rate=math.nan), "learning_rate=nan is invalid; allowed: a finite number > 0"),
    (dict(gamma=1.5), "gamma=1.5 is invalid; allowed: a number in [0, 1]"),
    (dict(ent_coef=-0.1), "ent_coef=-0.1 is invalid; allowed: a finite number ≥ 0"),
    (dict(seed=-1), "seed=-1 is invalid; allowed: an integer ≥ 0"),
    (dict(policy="cnn"), "policy='cnn' is invalid; allowed: mlp | set | budget"),
    (dict(net_arch=(64, 0)), "net_arch=(64, 0) is invalid; allowed: a tuple of layer widths"),
    (dict(env_id="CartPole-v1"), "env_id='CartPole-v1' is invalid; allowed: a registered id"),
    (dict(seed=1_000_005), "seed 1000005 is invalid: seed 1000005 lies in the reserved test block"),
    (dict(bc_init="nope"), "bc_init: controller 'nope' is not known"),
    (dict(bc_init="greedy-saa", frame_stack=2), "bc_init needs frame_stack 1 (got 2)"),
    (dict(bc_init="fixed-50"), "bc_init: controller 'fixed-50' drafts 50 tokens"),
    (dict(baselines=["computation-only"]), "baselines=('computation-only',): greedy-saa is missing"),
    (dict(policy="budget"), "policy budget needs the cell generator's env"),
    (dict(overrides={"p_dl_dbm": "abc"}), "config field p_dl_dbm='abc' is invalid"),
])
def test_a_bad_setting_is_a_value_error_naming_it_its_value_and_what_is_allowed(kwargs, words):
    with pytest.raises(ValueError) as e:
        TrainingConfig(**kwargs)
    assert words in str(e.value)


def test_an_unknown_keyword_is_pythons_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        TrainingConfig(foo=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        TrainingConfig(env_id="msenv/MultiSpin-Cells-v0", policy_kwargs={"foo": 1})
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        TrainingConfig(overrides={"nope": 1})


def test_one_check_names_the_settings_as_python_and_as_the_command_line_do():
    with pytest.raises(SettingError) as e:
        TrainingConfig(bc_init="greedy-saa", frame_stack=2)
    assert str(e.value) == "bc_init needs frame_stack 1 (got 2)"
    assert e.value.spelled(cli_names) == "--bc-init needs --frame-stack 1 (got 2)"
    with pytest.raises(SettingError) as e:
        TrainingConfig(checkpoint_minutes=0)
    assert e.value.spelled(cli_names) == "--checkpoint-minutes 0 is invalid; allowed: a finite number > 0"


def test_settings_round_trip_through_their_record(tmp_path):
    a = TrainingConfig(env_id="msenv/MultiSpin-Cells-v0", overrides={"k_range": (5, 50)}, policy_kwargs={"hidden": 8},
                       log_dir=str(tmp_path))
    record = json.loads(json.dumps(a.to_dict()))
    b = TrainingConfig(**record, env_config=a.env_config)
    assert b == a and "env_config" not in record


# ---------------------------------------------------------------------- the one table
def test_every_row_of_the_table_is_settings_and_builds_a_valid_config(tmp_path):
    for env_id, row in PER_ID.items():
        assert set(row) <= FIELDS | set(ROW_KEYS), (env_id, set(row) - FIELDS - set(ROW_KEYS))
        config = TrainingConfig(env_id=env_id, log_dir=str(tmp_path))
        for name, value in row.items():
            if name not in ROW_KEYS:
                assert getattr(config, name) == value
        for group in row.get("config", ()):
            for name, value in group.items():
                got = getattr(config.env_config, name, None)
                got = getattr(config.env_config.base, name) if got is None else got
                assert got == value, (env_id, name)
    assert set(MAIN_JOB) <= FIELDS


def test_new_defaults_for_an_id_are_a_few_values_in_its_row(monkeypatch):
    """What choosing new defaults for the main job takes: its row, and every reader follows."""
    from agents.hyperparams import zoo_yaml
    from agents.ppo import make_ppo  # noqa: F401 - the factory reads the same table

    monkeypatch.setitem(PER_ID, "msenv/MultiSpin-v0", {"learning_rate": 1e-4, "timesteps": 2_000_000, "n_steps": 128})
    c = TrainingConfig()
    assert (c.learning_rate, c.timesteps, c.n_steps, c.batch_size) == (1e-4, 2_000_000, 128, MAIN_JOB["batch_size"])
    text = zoo_yaml()
    main = text[text.index("msenv/MultiSpin-v0:"):text.index("msenv/MultiSpin-DeepSeek-v0:")]
    assert "learning_rate: !!float 0.0001" in main and "n_timesteps: 2000000" in main
    assert "msenv/MultiSpin-DeepSeek-v0:\n  learning_rate" not in text  # DeepSeek keeps the main job's, in full
    monkeypatch.setitem(PER_ID, "msenv/MultiSpin-v0", {"policy": "set", "n_epochs": 4})
    assert TrainingConfig().policy == "set"
    text = zoo_yaml()
    main = text[text.index("msenv/MultiSpin-v0:"):text.index("msenv/MultiSpin-DeepSeek-v0:")]
    assert "policy: 'agents.setpolicy.DeviceSetPolicy'" in main and "n_epochs: 4" in main
    deepseek = text[text.index("msenv/MultiSpin-DeepSeek-v0:"):]
    assert deepseek.split("\n")[1] == "  n_envs: 16" and "policy: 'MlpPolicy'" in deepseek  # the MLP, in full
    monkeypatch.setitem(PER_ID, "msenv/MultiSpin-v0", {"policy": "budget"})
    comments = " ".join(line[2:] for line in zoo_yaml().splitlines() if line.startswith("# "))
    assert "msenv/MultiSpin-v0 (policy 'budget')" in comments
    monkeypatch.setitem(PER_ID, "msenv/MultiSpin-v0", {"learnig_rate": 1e-4})  # a slip is said, not dropped
    with pytest.raises(TypeError, match="unexpected key 'learnig_rate'"):
        TrainingConfig()


def test_the_committed_yaml_is_the_tables_text_and_says_its_numbers():
    yaml = pytest.importorskip("yaml")
    from agents.hyperparams import PATH, expressible, zoo_yaml

    assert PATH.read_text() == zoo_yaml(), "run python -m agents.hyperparams"
    doc = yaml.safe_load(PATH.read_text())
    assert set(doc) == {i for i in ENV_IDS if expressible(i) is None} and "msenv/MultiSpin-v0" in doc
    for env_id, hp in doc.items():
        try:
            layout_of(env_config(env_id))
        except ValueError:  # an id no env of this checkout can play (a trace bank it does not hold)
            continue
        c = TrainingConfig(env_id=env_id)
        kw = c.ppo_kwargs()
        assert (hp["n_envs"], hp["n_timesteps"]) == (c.n_envs, c.timesteps)
        for key in defaults.PPO_KEYS:
            assert hp[key] == kw[key], (env_id, key)
        if c.policy == "mlp":
            assert hp["policy"] == "MlpPolicy" and hp["normalize"].startswith("dict(norm_obs=True")
            assert hp["policy_kwargs"] == "dict(net_arch=dict(pi=[128, 128], vf=[128, 128]))"
        else:  # the device-set policy on raw observations, with the env's layout
            assert hp["policy"] == "agents.setpolicy.DeviceSetPolicy"
            assert hp["normalize"].startswith("dict(norm_obs=False")
            lay = layout_of(c.env_config)
            assert hp["policy_kwargs"] == f"dict(n_devices={lay.slots}, n_globals={lay.n_globals}, masked={lay.masked})"
        assert hp["callback"] == [{"agents.callbacks.ActionPriorCallback": {"decay": c.action_prior}}]


# ---------------------------------------------------------------------- the names of 0.6
#: 0.6's values of the names the one table replaced
OLD = {
    "agents.ppo.DEFAULT_PPO": dict(learning_rate=3e-4, n_steps=64, batch_size=256, n_epochs=10, gamma=0.0,
                                   gae_lambda=0.0, clip_range=0.2, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5,
                                   policy_kwargs=dict(net_arch=dict(pi=[128, 128], vf=[128, 128]))),
    "agents.ppo.DEFAULT_ACTION_PRIOR": 0.3,
    "agents.defaults.ID_DEFAULTS": {"msenv/MultiSpin-v0": {"policy": "set", "n_epochs": 4, "learning_rate": 1e-3,
                                                           "timesteps": 75_000},
                                    "msenv/MultiSpin-Hetero-v0": {"policy": "set", "timesteps": 1_000_000},
                                    "msenv/MultiSpin-Hetero-DR-v0": {"policy": "set"},
                                    "msenv/MultiSpin-Cells-v0": {"policy": "budget", "reward": "counterfactual",
                                                                 "timesteps": 500_000}},
    "agents.defaults.ID_CONFIG": {"msenv/MultiSpin-Cells-v0": ({"k_range": (5, 200), "k_max": 200,
                                                                "k_law": "log_uniform"}, {"episode_length": 20},
                                                               {"distance_range_m": (100.0, 800.0)})},
    "agents.defaults.ID_BASELINES": {"msenv/MultiSpin-Hetero-v0": ("local-search",),
                                     "msenv/MultiSpin-Hetero-DR-v0": ("local-search",)},
    "agents.DEFAULT_PPO": None,  # the same as agents.ppo.DEFAULT_PPO
}


@pytest.mark.parametrize("old", sorted(OLD))
def test_an_old_name_reads_the_table_with_a_warning_naming_the_new_path(old):
    import importlib

    module, _, name = old.rpartition(".")
    said = rf"^{re.escape(old)} is agents\.defaults\..*removed in msenv 0\.7\)$"
    with pytest.warns(DeprecationWarning, match=said) as w:
        value = getattr(importlib.import_module(module), name)
    assert w[0].filename == __file__
    assert value == (OLD[old] if OLD[old] is not None else OLD["agents.ppo.DEFAULT_PPO"])
    assert defaults.id_defaults("msenv/MultiSpin-Hetero-v0") == OLD["agents.defaults.ID_DEFAULTS"][
        "msenv/MultiSpin-Hetero-v0"]


# ---------------------------------------------------------------------- resuming
#: train.py's arguments as a checkpoint of msenv 0.6 recorded them (vars of its argparse Namespace)
ARGS_0_6 = {"env_id": "msenv/MultiSpin-v0", "set": ["draft_scale_range=[1.0,2.0]"], "num_devices": None,
            "p_ul_dbm": None, "p_dl_dbm": 20.0, "p_ul_range": None, "p_dl_range": [10.0, 30.0], "mode_policy": None,
            "episode_length": 50, "timesteps": 4096, "n_envs": 8, "vec_env": "batched", "seed": 3,
            "learning_rate": None, "n_steps": None, "batch_size": None, "n_epochs": None, "gamma": None,
            "frame_stack": 1, "action_prior": None, "reward": None, "policy": None,
            "policy_kwargs": '{"ortho_init": false}', "bc_init": None, "bc_episodes": 300, "bc_epochs": 40,
            "torch_threads": 1, "eval_episodes": 2, "eval_seed": 10000, "eval_freq": 2048, "checkpoint_freq": 4096,
            "checkpoint_minutes": 2.0, "checkpoint_steps": 100000, "resume": None, "baselines": None, "workers": 2,
            "log_dir": "runs/ppo-MultiSpin-v0-quick", "quick": True, "no_progress": True}


def _checkpoint(folder: Path, args: dict, done: int, config: dict | None = None) -> Path:
    (folder / "resume").mkdir(parents=True)
    (folder / "resume" / "state.json").write_text(json.dumps({"args": args, "num_timesteps": done,
                                                              "config": config or {}}))
    (folder / "resume" / "model.zip").write_bytes(b"")
    return folder


def test_a_checkpoint_of_0_6_resumes_with_its_settings(tmp_path):
    s = saved_settings(ARGS_0_6)
    assert s["overrides"] == {"draft_scale_range": [1.0, 2.0], "p_dl_dbm": 20.0, "p_dl_dbm_range": (10.0, 30.0),
                              "episode_length": 50}
    assert (s["policy"], s["reward"], s["policy_kwargs"], s["progress"], s["seed"]) == (
        "mlp", "goodput", {"ortho_init": False}, False, 3)
    _checkpoint(tmp_path, ARGS_0_6, 4096, SystemConfig(episode_length=50).to_dict())
    c = resumed(tmp_path, timesteps=8192)
    assert (c.resume, c.log_dir, c.timesteps, c.n_envs, c.learning_rate) == (True, str(tmp_path), 8192, 8, 3e-4)
    assert c.env_config == SystemConfig(episode_length=50)


def test_resuming_refuses_a_setting_it_would_ignore(tmp_path, capsys):
    sys.path.insert(0, str(ROOT))
    import train

    _checkpoint(tmp_path, TrainingConfig(log_dir=str(tmp_path)).to_dict(), 4096, SystemConfig().to_dict())
    with pytest.raises(SettingError, match=r"n_envs=4 cannot change when resume .* allowed: timesteps, workers"):
        resumed(tmp_path, n_envs=4)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        resumed(tmp_path, foo=1)
    assert resumed(tmp_path, env_id="msenv/MultiSpin-v0", workers=1).workers == 1  # the run's own id: accepted
    for argv, words in ((["--n-envs", "4"], "--n-envs 4 cannot change when --resume"),
                        (["--set", "p_dl_dbm=20"], "--set {\"p_dl_dbm\": 20} cannot change"),
                        (["--timesteps", "100"], "--timesteps 100 is below the 4096 steps")):
        with pytest.raises(SystemExit):
            train.parse(["--resume", str(tmp_path), *argv])
        assert words in capsys.readouterr().err


# ---------------------------------------------------------------------- the comparison table
def _episodes(label: str, throughput, realtime, decision_ms: float) -> list[EpisodeStats]:
    return [EpisodeStats(label, i, 10_000 + i, goodput=t, throughput=t, mean_gamma=3.0, share_accepted=0.5,
                         share_ul=0.3, share_dl=0.2, t_com_ms=1.0, t_cmp_ms=2.0, decision_ms=decision_ms,
                         realtime_throughput=r) for i, (t, r) in enumerate(zip(throughput, realtime))]


def test_the_table_pairs_each_throughput_per_episode_with_greedy_saa():
    greedy = ([100.0, 120.0, 90.0, 110.0, 105.0], [80.0, 95.0, 70.0, 90.0, 85.0])
    ppo = ([99.0, 121.0, 88.0, 108.0, 104.0], [98.0, 120.0, 87.0, 107.0, 103.0])
    fixed = ([60.0, 70.0, 50.0, 65.0, 64.0], [59.0, 69.0, 49.0, 64.0, 63.0])
    results = _episodes("ppo", *ppo, 0.05) + _episodes("fixed-4", *fixed, 0.01) + _episodes("greedy-saa", *greedy, 4.0)
    rows = comparison_rows(results)
    assert [r["controller"] for r in rows] == ["greedy-saa", "ppo", "fixed-4"]
    t = stats.t.ppf(0.975, 4)
    for row, (thr, rt) in zip(rows, (greedy, ppo, fixed)):
        for column, mine, ref in (("rel_throughput", thr, greedy[0]), ("rel_realtime", rt, greedy[1])):
            ratio = np.array(mine) / np.array(ref)
            assert row[column] == pytest.approx(ratio.mean(), rel=1e-12)
            assert row[f"{column}_ci95"] == pytest.approx(t * ratio.std(ddof=1) / np.sqrt(5), rel=1e-9)
    assert leaders(rows) == {"long-run": "greedy-saa", "real-time": "ppo"}
    r = np.array(ppo[0]) / np.array(greedy[0])
    h = t * r.std(ddof=1) / np.sqrt(5)
    line = leaders_line(rows)
    assert line.startswith(f"long-run: greedy-saa leads (ppo {r.mean():.3f} [{r.mean() - h:.3f}, {r.mean() + h:.3f}]")
    assert "; real-time: ppo leads (ppo 1.2" in line


# ---------------------------------------------------------------------- the script
def test_train_py_is_a_thin_script_and_agents_modules_stay_small():
    source = (ROOT / "train.py").read_text()
    assert len(source.splitlines()) < 250
    tree = ast.parse(source)
    nested = [n.lineno for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
              for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not nested, f"train.py imports inside functions at lines {nested}"
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "agents").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 450}
    assert not long, long
