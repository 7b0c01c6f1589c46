"""A run's folder: whether it can be written and holds no other id's run (:func:`check_log_dir`),
and the settings of a stopped run, to continue it (:func:`resumed`), from the checkpoint of this
release or of an earlier one (:func:`saved_settings`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from msenv.config import parse_overrides

from ..checkpoint import read_state
from ..controller import load_config
from ..defaults import MAIN_JOB
from .config import TrainingConfig
from .errors import SettingError

#: the settings a resumed run may change; everything else comes from the checkpoint
RESUME_MUTABLE = ("timesteps", "workers", "checkpoint_minutes", "checkpoint_steps", "progress")
#: the scenario options of train.py until msenv 0.6 → the config field each set (a checkpoint's record)
LEGACY_ENV_OPTIONS = {"num_devices": "num_devices", "p_ul_dbm": "p_ul_dbm", "p_dl_dbm": "p_dl_dbm",
                      "p_ul_range": "p_ul_dbm_range", "p_dl_range": "p_dl_dbm_range", "mode_policy": "mode_policy",
                      "episode_length": "episode_length"}


def resume_dir(log_dir: str | Path) -> Path:
    """Where a run in ``log_dir`` keeps its resumable checkpoint."""
    return Path(log_dir) / "resume"


def saved_env_id(log_dir: str | Path) -> str | None:
    """The env id of the run saved in ``log_dir`` (None when it holds none)."""
    try:
        return read_state(resume_dir(log_dir))["args"].get("env_id")
    except (FileNotFoundError, KeyError):
        return None


#: what a run writes into its folder (what ``overwrite`` removes)
RUN_OUTPUTS = ("resume", "agent", "comparison.json", "comparison.csv", "learning_curve.png", "cloned", "best",
               "checkpoints", "eval", "tb")
#: the files whose presence means the folder holds a run → what each is
RUN_MARKS = {"resume/state.json": "resumable checkpoint", "agent/agent.json": "agent", "agent/model.zip": "agent",
             "comparison.json": "comparison"}


def run_in(log_dir: str | Path) -> list[str]:
    """What of a run the folder ``log_dir`` holds (its resumable checkpoint, agent, comparison:
    :data:`RUN_MARKS`); [] when it holds none."""
    return list(dict.fromkeys(what for name, what in RUN_MARKS.items() if (Path(log_dir) / name).is_file()))


def check_log_dir(config: TrainingConfig) -> None:
    """Refuse (:class:`SettingError`) an output folder that cannot be written, or — a new run
    without ``overwrite`` — that holds a run already: a run never silently replaces another's agent,
    checkpoint and comparison (it names the way to continue that run and the way to replace it)."""
    path = Path(config.log_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        why = e.strerror or str(e)
        raise SettingError(lambda say: f"{say('log_dir', config.log_dir)}: cannot write there ({why})") from None
    held = run_in(path)
    if config.resume or config.overwrite or not held:
        return
    saved = saved_env_id(path)
    other = saved is not None and saved != config.env_id
    what = f"a run of {saved}" + (f", not {config.env_id}" if other else "") if saved else "a run"
    raise SettingError(lambda say: f"{say('log_dir', config.log_dir)} holds {what} (its {', '.join(held)}): "
                                   + ("" if other else f"continue it with {say('resume')} {config.log_dir}, ")
                                   + f"replace it with {say('overwrite')}, or choose another {say('log_dir')}")


def clear_run(log_dir: str | Path) -> list[str]:
    """Remove what a run wrote into ``log_dir`` (:data:`RUN_OUTPUTS`; other files stay): what a
    run with ``overwrite`` does before it starts. Returns the names removed."""
    import shutil

    removed = []
    for name in RUN_OUTPUTS:
        p = Path(log_dir) / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
        else:
            continue
        removed.append(name)
    return removed


#: ids whose row of :data:`agents.defaults.PER_ID` changed since msenv 0.6: a 0.6 checkpoint of one
#: trained with 0.6's values there, the main job's (msenv/MultiSpin-v0 then trained MAIN_JOB's MLP)
ROWS_CHANGED_SINCE_0_6 = ("msenv/MultiSpin-v0",)


def saved_settings(args: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint's recorded settings as :class:`TrainingConfig` keywords. Checkpoints of msenv
    0.6 and before recorded ``train.py``'s arguments instead: their scenario options become
    ``overrides``, ``policy_kwargs`` is parsed from its JSON, and what they left unset takes the
    value it had then (the MLP policy on the goodput; the PPO numbers, which the saved model
    itself holds, the table's)."""
    if "overrides" in args:
        return dict(args)
    names = {f.name for f in dataclasses.fields(TrainingConfig)} - {"env_config", "resume", "overwrite"}
    out = {k: v for k, v in args.items() if k in names and v is not None}
    overrides = parse_overrides(args.get("set") or [])
    for option, name in LEGACY_ENV_OPTIONS.items():
        if args.get(option) is not None:
            overrides[name] = tuple(args[option]) if isinstance(args[option], list) else args[option]
    out["overrides"] = overrides
    out["progress"] = not args.get("no_progress", False)
    if args.get("env_id") in ROWS_CHANGED_SINCE_0_6:  # it trained with 0.6's defaults: the main job's then
        for name, value in MAIN_JOB.items():
            out.setdefault(name, value)
    out.setdefault("policy", "mlp")  # checkpoints written before --policy existed
    out.setdefault("reward", "goodput")  # … or --reward
    if isinstance(out.get("policy_kwargs"), str):
        out["policy_kwargs"] = json.loads(out["policy_kwargs"])
    return out


def resumed(log_dir: str | Path, /, **changes: Any) -> TrainingConfig:
    """The settings of the run saved in ``log_dir`` (its checkpoint's, and its env config), to
    continue it (``resume=True``), with ``changes`` to :data:`RESUME_MUTABLE` (``timesteps``: the
    new total, at least the steps done). A change to another setting is refused (a
    :class:`SettingError`: the run keeps its settings; a ``log_dir`` other than the run's own
    among them), as is a folder with no checkpoint (``FileNotFoundError``)."""
    names = {f.name for f in dataclasses.fields(TrainingConfig)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise TypeError(f"resumed() got an unexpected keyword argument {unknown[0]!r}")
    if "log_dir" in changes and Path(str(changes["log_dir"])).resolve() == Path(log_dir).resolve():
        changes = {k: v for k, v in changes.items() if k != "log_dir"}  # the run's own folder, however spelled
    state = read_state(resume_dir(log_dir))
    saved = saved_settings(state["args"])
    saved.pop("overwrite", None)  # a resumed run continues its folder, whatever its first start said
    saved.update(log_dir=str(log_dir), resume=True)
    if "env_id" in changes and changes["env_id"] != saved.get("env_id"):
        raise SettingError(lambda say: f"{say('resume')} {log_dir} holds a run of {saved.get('env_id')}, not "
                                       f"{changes['env_id']}: leave out {say('env_id')} to continue it, or start a new "
                                       f"run in another {say('log_dir')}")
    for name, value in changes.items():
        if name not in RESUME_MUTABLE and value != saved.get(name, value):
            raise SettingError(lambda say, n=name, v=value: f"{say(n, v)} cannot change when {say('resume')} {log_dir} "
                                                            f"continues a run (it keeps its settings); allowed: "
                                                            f"{', '.join(say(m) for m in RESUME_MUTABLE)}")
    saved.update(changes)
    done = int(state.get("num_timesteps", 0))
    timesteps = saved.get("timesteps")
    if isinstance(timesteps, int) and timesteps < done:
        raise SettingError(lambda say: f"{say('timesteps', timesteps)} is below the {done} steps {say('resume')} "
                                       f"{log_dir} has done; allowed: an integer ≥ {done}")
    return TrainingConfig(**saved, env_config=load_config(state["config"]))


__all__ = ["LEGACY_ENV_OPTIONS", "RESUME_MUTABLE", "RUN_MARKS", "RUN_OUTPUTS", "check_log_dir", "clear_run",
           "resume_dir", "resumed", "run_in", "saved_env_id", "saved_settings"]
