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


def check_log_dir(config: TrainingConfig) -> None:
    """Refuse (:class:`SettingError`) an output folder that cannot be written, or (a new run) that
    holds a run of another id: a run never writes into another id's folder."""
    path = Path(config.log_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        why = e.strerror or str(e)
        raise SettingError(lambda say: f"{say('log_dir', config.log_dir)}: cannot write there ({why})") from None
    saved = saved_env_id(path)
    if not config.resume and saved is not None and saved != config.env_id:
        raise SettingError(lambda say: f"{say('log_dir', config.log_dir)} holds a run of {saved}, not {config.env_id}: "
                                       f"choose another {say('log_dir')} (or {say('resume')} {config.log_dir} to "
                                       "continue that run)")


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
    names = {f.name for f in dataclasses.fields(TrainingConfig)} - {"env_config", "resume"}
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


def resumed(log_dir: str | Path, **changes: Any) -> TrainingConfig:
    """The settings of the run saved in ``log_dir`` (its checkpoint's, and its env config), to
    continue it (``resume=True``), with ``changes`` to :data:`RESUME_MUTABLE` (``timesteps``: the
    new total, at least the steps done). A change to another setting is refused (a
    :class:`SettingError`: the run keeps its settings), as is a folder with no checkpoint
    (``FileNotFoundError``)."""
    names = {f.name for f in dataclasses.fields(TrainingConfig)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise TypeError(f"resumed() got an unexpected keyword argument {unknown[0]!r}")
    state = read_state(resume_dir(log_dir))
    saved = saved_settings(state["args"])
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


__all__ = ["LEGACY_ENV_OPTIONS", "RESUME_MUTABLE", "check_log_dir", "resume_dir", "resumed", "saved_env_id",
           "saved_settings"]
