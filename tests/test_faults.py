"""Training faults at the command line: refusals are one line, never a traceback."""

import json
import subprocess
import sys
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
