"""Training faults at the command line: refusals are one line, never a traceback."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def test_sigterm_during_baseline_phase_ends_every_worker(tmp_path):
    proc = subprocess.Popen([sys.executable, "train.py", "--quick", "--workers", "2", "--no-progress",
                             "--eval-episodes", "200", "--log-dir", str(tmp_path / "run")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 25
        kids: list[int] = []
        while time.monotonic() < deadline and proc.poll() is None:
            kids = _children(proc.pid)
            if len(kids) >= 3:  # the resource tracker and the two workers
                break
            time.sleep(0.1)
        assert len(kids) >= 3, f"no baseline workers seen: {kids}"
        time.sleep(0.5)
        kids = sorted(set(kids) | set(_children(proc.pid)))
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, (proc.returncode, stderr[-2000:])
    assert "stopped by SIGTERM during the baseline phase; nothing to resume yet" in stderr
    assert "Traceback" not in stderr + stdout
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in kids):
        time.sleep(0.1)
    assert not [p for p in kids if _alive(p)]
