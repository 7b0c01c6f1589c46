"""Training faults at the command line: refusals are one line, never a traceback."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_resume_timesteps_below_done_refused(tmp_path):
    resume = tmp_path / "resume"
    resume.mkdir()
    (resume / "state.json").write_text(json.dumps({"args": {"env_id": "msenv/MultiSpin-v0"}, "num_timesteps": 5168,
                                                   "config": {}}))
    (resume / "model.zip").write_bytes(b"")
    proc = subprocess.run([sys.executable, str(ROOT / "train.py"), "--resume", str(tmp_path), "--timesteps", "3000"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "--timesteps 3000" in proc.stderr and "5168" in proc.stderr


def _children(pid: int) -> list[int]:
    try:
        import psutil

        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except ImportError:
        pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead (it only waits for its parent to reap it)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _assert_all_ended(pids: list[int], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]


def _sigterm_once_workers_run(proc, seconds: float, ready=lambda: True) -> tuple[list[int], str, str]:
    """Wait (at most ``seconds``) until ``ready()`` and ``proc`` has its resource tracker and two
    workers, send SIGTERM; returns the children seen and the process's stdout and stderr."""
    try:
        deadline = time.monotonic() + seconds
        kids: list[int] = []
        while time.monotonic() < deadline and proc.poll() is None:
            if ready():
                kids = _children(proc.pid)
                if len(kids) >= 3:  # the resource tracker and the two workers
                    break
            time.sleep(0.1)
        assert len(kids) >= 3, f"no workers seen: {kids}"
        time.sleep(0.5)
        kids = sorted(set(kids) | set(_children(proc.pid)))
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return kids, stdout or "", stderr


@pytest.mark.slow
def test_sigterm_during_baseline_phase_ends_every_worker(tmp_path):
    proc = subprocess.Popen([sys.executable, "train.py", "--quick", "--workers", "2", "--no-progress",
                             "--eval-episodes", "200", "--log-dir", str(tmp_path / "run")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kids, stdout, stderr = _sigterm_once_workers_run(proc, 25)
    assert proc.returncode == 143, (proc.returncode, stderr[-2000:])
    assert "stopped by SIGTERM during the baseline phase; nothing to resume yet" in stderr
    assert "Traceback" not in stderr + stdout
    _assert_all_ended(kids)


def _checkpoints_into_a_file(monkeypatch, tmp_path):
    """The periodic checkpoint's folder is a file: its save raises a real NotADirectoryError."""
    from stable_baselines3.common.callbacks import CheckpointCallback

    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setattr(CheckpointCallback, "_checkpoint_path",
                        lambda self, checkpoint_type="", extension="": str(blocker / f"ppo.{extension}"))
    return blocker


TINY = ["--quick", "--workers", "1", "--no-progress", "--eval-episodes", "1", "--checkpoint-freq", "1024",
        "--timesteps", "2048"]


@pytest.mark.slow
def test_io_error_in_a_periodic_checkpoint_stops_resumably(tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(ROOT))
    import train
    from agents.checkpoint import read_state

    log_dir = tmp_path / "run"
    blocker = _checkpoints_into_a_file(monkeypatch, tmp_path)
    res = train.main([*TINY, "--log-dir", str(log_dir)])
    err = capsys.readouterr().err
    assert res["exit_code"] == train.EXIT_IO_ERROR != 0
    assert f"could not write {blocker}" in err and "training stopped at step 1024" in err
    assert "Traceback" not in err
    assert read_state(log_dir / "resume")["num_timesteps"] == 1024
    monkeypatch.undo()
    res = train.main(["--resume", str(log_dir), "--timesteps", "2048", "--no-progress"])
    assert res["exit_code"] == 0
    assert read_state(log_dir / "resume")["num_timesteps"] == 2048


@pytest.mark.slow
def test_io_error_when_the_resumable_state_cannot_be_saved_either(tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(ROOT))
    import train

    log_dir = tmp_path / "run"
    log_dir.mkdir()
    (log_dir / "resume").write_text("")  # the resumable checkpoint's folder is a file
    _checkpoints_into_a_file(monkeypatch, tmp_path)
    res = train.main([*TINY, "--log-dir", str(log_dir)])
    err = capsys.readouterr().err
    assert res["exit_code"] == train.EXIT_IO_ERROR and res["resumable"] is False
    assert f"could not save the resumable state to {log_dir / 'resume'}: " in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_tensorboard_writer_thread_failing_stops_resumably_in_one_line(tmp_path, monkeypatch, capsys):
    """TensorBoard's event file cannot be written (its folder became a file, as a read-only or full
    disk would fail): the writer's background thread dies with a real NotADirectoryError. No
    thread traceback; one line naming the file; exit 74; the resumable state is saved."""
    import threading

    from tensorboard.compat.tensorflow_stub.io import gfile

    sys.path.insert(0, str(ROOT))
    import train
    from agents.checkpoint import read_state

    blocker = tmp_path / "blocker"
    blocker.write_text("")
    original = gfile.LocalFileSystem._write
    writes = []

    def into_a_file(self, filename, file_content, mode):  # the event file's header goes through, no event after
        if b"tfevents" in os.fsencode(filename):
            writes.append(threading.current_thread())
            if len(writes) > 1:
                filename = os.path.join(os.fsencode(blocker), os.path.basename(os.fsencode(filename)))
        return original(self, filename, file_content, mode)

    monkeypatch.setattr(gfile.LocalFileSystem, "_write", into_a_file)
    unhandled = []
    monkeypatch.setattr(threading, "excepthook", unhandled.append)
    log_dir = tmp_path / "run"
    res = train.main([*TINY, "--log-dir", str(log_dir)])
    err = capsys.readouterr().err
    assert res["exit_code"] == train.EXIT_IO_ERROR and res["resumable"] is True
    lines = [line for line in err.splitlines() if line.startswith("train.py: could not write")]
    assert len(lines) == 1 and str(blocker) in lines[0] and "Not a directory" in lines[0], err
    assert "Traceback" not in err and "Exception in thread" not in err
    assert not unhandled
    assert writes[-1] is not threading.main_thread()  # it failed in the writer's thread
    assert read_state(log_dir / "resume")["num_timesteps"] == res["num_timesteps"] > 0


def test_run_safety_checkpoints_by_steps_as_well_as_by_time():
    from agents.checkpoint import GracefulStop, RunSafetyCallback

    saves = []
    cb = RunSafetyCallback(GracefulStop(), lambda: saves.append(cb.num_timesteps), interval_s=3600.0,
                           interval_steps=1000)
    for step in range(0, 3200, 100):
        cb.num_timesteps = step
        assert cb._on_step()
    assert saves == [1000, 2000, 3000]
    for bad in (0, -5, True):
        with pytest.raises(ValueError, match="interval_steps"):
            RunSafetyCallback(GracefulStop(), lambda: None, 60.0, interval_steps=bad)


def test_checkpoint_cadence_defaults():
    sys.path.insert(0, str(ROOT))
    import train

    ap = train.build_parser()
    assert ap.get_default("checkpoint_minutes") == 2.0 and ap.get_default("checkpoint_steps") == 100_000


@pytest.mark.slow
def test_sigterm_during_behaviour_cloning_ends_every_worker(tmp_path):
    out = tmp_path / "stdout"
    with open(out, "w") as fh:
        proc = subprocess.Popen([sys.executable, "train.py", "--quick", "--workers", "2", "--no-progress",
                                 "--eval-episodes", "1", "--bc-init", "greedy-saa", "--bc-episodes", "400",
                                 "--bc-epochs", "1", "--log-dir", str(tmp_path / "run")],
                                cwd=ROOT, stdout=fh, stderr=subprocess.PIPE, text=True)
    kids, _, stderr = _sigterm_once_workers_run(proc, 40, lambda: "demonstration episodes" in out.read_text())
    stdout = out.read_text()
    assert proc.returncode == 143, (proc.returncode, stderr[-2000:])
    assert "stopped by SIGTERM during behaviour cloning (--bc-init greedy-saa); nothing to resume yet" in stderr
    assert "Traceback" not in stderr + stdout
    _assert_all_ended(kids)
    assert not (tmp_path / "run" / "cloned").exists()
