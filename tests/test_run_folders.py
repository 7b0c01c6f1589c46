"""A run folder is never silently overwritten: ``train.py`` into a folder that holds a run, without
``--resume``, is refused in one line naming ``--resume`` and ``--overwrite``; ``--overwrite``
removes the earlier run's outputs (and only those) when the new run starts; ``--resume DIR
--log-dir OTHER`` is one line, not a ``TypeError``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agents.training import TrainingConfig
from agents.training.errors import SettingError
from agents.training.resume import RUN_OUTPUTS, check_log_dir, clear_run, resumed, run_in
from msenv import SystemConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _run_folder(folder: Path, env_id: str = "msenv/MultiSpin-v0") -> Path:
    """A folder holding a (crafted) finished run: its checkpoint, agent and comparison."""
    args = TrainingConfig(env_id=env_id, log_dir=str(folder)).to_dict()
    (folder / "resume").mkdir(parents=True)
    (folder / "resume" / "state.json").write_text(json.dumps({"args": args, "num_timesteps": 4096,
                                                              "config": SystemConfig().to_dict()}))
    (folder / "resume" / "model.zip").write_bytes(b"")
    (folder / "agent").mkdir()
    (folder / "agent" / "agent.json").write_text("{}")
    (folder / "comparison.json").write_text("{}")
    (folder / "tb").mkdir()
    (folder / "notes.txt").write_text("the user's own file")
    return folder


def _parse_error(capsys, argv) -> str:
    import train

    with pytest.raises(SystemExit) as e:
        train.parse(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and "Traceback" not in "\n".join(err)
    return err[-1]


def test_a_new_run_into_a_folder_that_holds_one_is_refused_in_one_line(tmp_path, capsys):
    out = _run_folder(tmp_path / "run")
    assert run_in(out) == ["resumable checkpoint", "agent", "comparison"]
    line = _parse_error(capsys, ["--quick", "--log-dir", str(out)])
    assert line == (f"python train.py: error: --log-dir {out} holds a run of msenv/MultiSpin-v0 (its resumable "
                    f"checkpoint, agent, comparison): continue it with --resume {out}, replace it with --overwrite, "
                    "or choose another --log-dir")
    line = _parse_error(capsys, ["--quick", "--env-id", "msenv/MultiSpin-DeepSeek-v0", "--log-dir", str(out)])
    assert "holds a run of msenv/MultiSpin-v0, not msenv/MultiSpin-DeepSeek-v0" in line and "--overwrite" in line
    with pytest.raises(SettingError, match=r"log_dir='.*' holds a run .* replace it with overwrite, or choose another "
                                           r"log_dir"):
        check_log_dir(TrainingConfig(log_dir=str(out)))
    import train

    assert train.parse(["--quick", "--log-dir", str(out), "--overwrite"])[0].overwrite is True
    assert train.parse(["--quick", "--log-dir", str(tmp_path / "fresh")])[0].overwrite is False
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "train.log").write_text("")  # a folder with a log but no run is not a run
    assert train.parse(["--quick", "--log-dir", str(tmp_path / "empty")])[0].log_dir == str(tmp_path / "empty")


def test_overwrite_removes_the_earlier_runs_outputs_only(tmp_path):
    out = _run_folder(tmp_path / "run")
    removed = clear_run(out)
    assert removed == ["resume", "agent", "comparison.json", "tb"]
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert set(removed) <= set(RUN_OUTPUTS) and run_in(out) == []


def test_resume_with_another_log_dir_is_one_line(tmp_path, capsys):
    out = _run_folder(tmp_path / "run")
    line = _parse_error(capsys, ["--resume", str(out), "--log-dir", str(tmp_path / "other")])
    assert line == (f"python train.py: error: --log-dir {tmp_path / 'other'} cannot change when --resume {out} "
                    "continues a run (it keeps its settings); allowed: --timesteps, --workers, --checkpoint-minutes, "
                    "--checkpoint-steps, --no-progress")
    import train

    assert train.parse(["--resume", str(out), "--log-dir", f"{out}/"])[0].log_dir == str(out)  # its own folder
    assert resumed(out, log_dir=str(out)).resume is True
    line = _parse_error(capsys, ["--resume", str(out), "--overwrite"])
    assert "--overwrite replaces the run in a folder and --resume continues it; allowed: one of them" in line
    with pytest.raises(SettingError, match="overwrite replaces the run in a folder and resume continues it"):
        TrainingConfig(resume=True, overwrite=True)
    with pytest.raises(SettingError, match="overwrite=1 is invalid; allowed: True | False"):
        TrainingConfig(overwrite=1)


def test_a_resumed_run_does_not_carry_an_overwrite(tmp_path):
    """A run started with --overwrite records it; resuming that run continues it (never clears it)."""
    out = tmp_path / "run"
    (out / "resume").mkdir(parents=True)
    args = TrainingConfig(log_dir=str(out), overwrite=True).to_dict()
    (out / "resume" / "state.json").write_text(json.dumps({"args": args, "num_timesteps": 10,
                                                           "config": SystemConfig().to_dict()}))
    (out / "resume" / "model.zip").write_bytes(b"")
    c = resumed(out)
    assert c.resume is True and c.overwrite is False


def test_the_cli_says_it_in_one_line_without_a_traceback(tmp_path):
    out = _run_folder(tmp_path / "run")
    r = subprocess.run([sys.executable, str(ROOT / "train.py"), "--resume", str(out), "--log-dir", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(f"python train.py: error: --log-dir {tmp_path / 'x'} cannot "
                                                        "change when --resume")
