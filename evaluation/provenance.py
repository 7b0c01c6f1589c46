"""Where a result came from: the code that played it, and for a learned method each agent's
decision files (their SHA-256) and training record.

An agent directory's **decision files** are the files its loader reads to decide (msenv's PPO
loader: ``agent.json`` and ``policy.npz``; a loader without ``decision_files`` has every file of
the directory hashed). Its **training record** is ``training.json`` beside them, written by
``train.py`` (:func:`training_record`): the training seed and how its environments were seeded,
the steps, the wall time, the machine and threads, the code, and — filled in when an agent is
committed — how it was chosen. A record is provenance only: it never changes a decision.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

#: the training record's file name, in an agent directory
TRAINING_FILE = "training.json"
TRAINING_FORMAT = "msenv-training"
#: how train.py seeded a run's environments: "independent" — children of numpy.random.SeedSequence(seed),
#: no stream shared with another seed (train.py ≥ 0.6); "shared" — integer seeds seed … seed + n_envs − 1, so
#: seeds s and s + 1 share all but one stream (train.py ≤ 0.5)
SEED_STREAMS = ("independent", "shared")
#: the folders whose changes make the code "dirty" for a result (what decides and scores episodes)
CODE_PATHS = ("msenv", "baselines", "evaluation", "agents", "experiments", "train.py", "pyproject.toml")
ROOT = Path(__file__).resolve().parents[1]


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def code_version() -> dict[str, Any]:
    """msenv's version and the checkout's commit (``None`` outside a git checkout), with
    ``dirty`` True when a tracked file of :data:`CODE_PATHS` differs from that commit."""
    import msenv

    out: dict[str, Any] = {"msenv": msenv.__version__, "commit": None, "dirty": None}
    try:
        run = dict(cwd=ROOT, capture_output=True, text=True, timeout=10, check=True)
        out["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], **run).stdout.strip() or None
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS],
                                 **run).stdout
        out["dirty"] = bool(changed.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def run_date() -> str:
    """Today's date in UTC, ``YYYY-MM-DD``: the date a result file records for its run."""
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def file_date(path: str | Path) -> str | None:
    """The date (``YYYY-MM-DD``) of the commit that last wrote ``path``, None when git cannot say
    (not a checkout, or the file not committed)."""
    path = Path(path).resolve()
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", path.name], cwd=path.parent,
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out or None


def decision_files(path: str | Path, factory: Any = None) -> list[Path]:
    """The files of agent directory ``path`` that decide: the loader's ``decision_files()`` if it
    has one, else every regular file but the training record."""
    listed = getattr(factory, "decision_files", None)
    path = Path(path)
    if callable(listed):
        return [path / name for name in listed()]
    return sorted(p for p in path.iterdir() if p.is_file() and p.name != TRAINING_FILE)


def file_hashes(path: str | Path, factory: Any = None) -> dict[str, str]:
    """name → SHA-256 of each decision file of ``path``."""
    return {p.name: sha256(p) for p in decision_files(path, factory)}


def read_training(path: str | Path) -> dict[str, Any] | None:
    """The training record of agent directory ``path`` (``None`` when it has none); ``ValueError``
    naming the file when it is not a training record."""
    f = Path(path) / TRAINING_FILE
    if not f.exists():
        return None
    try:
        doc = json.loads(f.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{f}: not readable as JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != TRAINING_FORMAT:
        raise ValueError(f"{f}: not a training record (format must be {TRAINING_FORMAT!r})")
    if doc.get("seed_streams") not in SEED_STREAMS:
        raise ValueError(f"{f}: seed_streams={doc.get('seed_streams')!r} is invalid; allowed: "
                         f"{', '.join(SEED_STREAMS)}")
    return doc


def training_record(*, seed: int, timesteps: int, wall_s: float | None, torch_threads: int | None, command: str,
                    env_id: str, selection: str | None = None) -> dict[str, Any]:
    """A training record of a run of this code, as ``train.py`` writes it."""
    return {"format": TRAINING_FORMAT, "env_id": env_id, "seed": int(seed), "seed_streams": "independent",
            "timesteps": int(timesteps), "wall_s": wall_s, "torch_threads": torch_threads,
            "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                        "cpus": os.cpu_count()},
            "code": code_version(), "command": command, "selection": selection}


def agent_record(path: str | Path, factory: Any = None) -> dict[str, Any]:
    """What a result file records of one agent: its path, its decision files' hashes, its
    training record (or ``None``)."""
    return {"path": str(path), "files": file_hashes(path, factory), "training": read_training(path)}


def seed_streams(records: list[dict[str, Any]]) -> str:
    """How a learned method's seeds were trained: "independent", "shared" (its seeds share
    environment streams) or "unknown" (a seed has no training record)."""
    kinds = {(r.get("training") or {}).get("seed_streams", "unknown") for r in records}
    if len(records) == 1:
        return kinds.pop()
    return "shared" if "shared" in kinds else "unknown" if "unknown" in kinds else "independent"


def changed_agents(method: dict[str, Any], root: str | Path = ".") -> list[str]:
    """One line per agent of a result file's method row whose decision files no longer match the
    recorded hashes (paths relative to ``root``); a missing directory is a mismatch too."""
    out = []
    for rec in method.get("agents", []):
        path = Path(root) / rec["path"]
        if not path.is_dir():
            out.append(f"agent {rec['path']}: the directory is missing")
            continue
        now = {name: sha256(path / name) if (path / name).is_file() else None for name in rec["files"]}
        for name, digest in rec["files"].items():
            if now[name] != digest:
                out.append(f"agent {rec['path']}: {name} " + ("is missing" if now[name] is None else
                                                             f"has SHA-256 {now[name][:12]}…, the row recorded "
                                                             f"{digest[:12]}…"))
    return out


__all__ = ["CODE_PATHS", "SEED_STREAMS", "TRAINING_FILE", "agent_record", "changed_agents", "code_version",
           "decision_files", "file_date", "run_date", "file_hashes", "read_training", "seed_streams", "sha256",
           "training_record"]
