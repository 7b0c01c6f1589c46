"""Every writer of the project replaces its output whole or not at all. Each writer runs in a forked
child: a SIGTERM sent at each of its write points leaves the new output whole (the signal is held
until the write is done) and no temporary file; a SIGKILL at each point leaves the old output or
the new one, whole, and the next write removes what the killed writer left; a full disk
(``RLIMIT_FSIZE`` in the child) leaves the old output whole and no temporary file. The outputs are
crafted here: banks, PARAMS.json, agents, checkpoints, result files, figures."""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
import traceback
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from msenv import atomic

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------- the harness
def leftovers(folder: Path) -> list[str]:
    """The temporary files and folders of msenv.atomic under ``folder``."""
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if atomic.TEMP_MARK in p.name)


def in_child(work: Callable[[], object], log: Path, kill_at: int | None = None, sig: int = signal.SIGTERM,
             fsize: int | None = None, timeout: float = 60.0) -> str:
    """Run ``work()`` in a forked child → how it ended: ``"exit N"`` (0: returned, 3: OSError, 4:
    another error, or the int ``work`` returned) or ``"signal N"``. The child appends each write
    point's name to ``log``; ``kill_at``: it sends itself ``sig`` at that point; ``fsize``: its
    RLIMIT_FSIZE (a full disk at that many bytes). Its stderr goes to ``log`` + ``.err``."""
    log.unlink(missing_ok=True)
    err = log.with_suffix(".err")
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 4
        try:
            fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 2)
            sys.stdout = sys.stderr = os.fdopen(fd, "w", buffering=1)  # (pytest's capture stays the parent's)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            points = [0]
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)

            def hook(name: str) -> None:
                points[0] += 1
                try:
                    os.write(out, (name + "\n").encode())
                except OSError:
                    pass
                if points[0] == kill_at:
                    os.kill(os.getpid(), sig)

            atomic.write_point_hook = hook
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
            result = work()
            code = int(result) if isinstance(result, int) else 0
        except OSError:
            code = 3
        except BaseException:
            traceback.print_exc()
            code = 4
        finally:
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the writer hung (stderr: {err.read_text() if err.exists() else ''})")
        time.sleep(0.005)
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit {os.WEXITSTATUS(status)}"


def points_of(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@dataclass
class Writer:
    """A writer under test: ``old(path)`` makes the earlier output, ``new(path)`` writes the new one
    (in the child), ``state(path)`` says which is there: "old", "new", or anything else for a
    broken output."""

    name: str
    old: Callable[[Path], None]
    new: Callable[[Path], object]
    state: Callable[[Path], str]
    full_at: int = 64  #: the RLIMIT_FSIZE, in bytes, at which the new output cannot be written whole
    full_ends: str = "exit 3"  #: how the child ends on the full disk (3: the OSError reached it)
    term_ends: str = "signal 15"  #: how it ends on SIGTERM (a command with its own handler: its exit code)
    #: what a SIGKILL at a write point may leave: (point, state) → acceptable (default: old or new, whole)
    killed_ok: Callable[[str, str], bool] = lambda point, state: state in ("old", "new")
    #: the signals sent at each write point (a writer slow to start in a child: SIGTERM only)
    signals: tuple = (signal.SIGTERM, signal.SIGKILL)


def check_writer(w: Writer, tmp_path: Path, target: str = "out") -> None:
    """The whole fault-injection routine for one writer (module docstring)."""
    log = tmp_path / "points.log"
    ref = tmp_path / "clean" / target
    w.old(ref)
    assert w.state(ref) == "old"
    assert in_child(lambda: w.new(ref), log) == "exit 0", (tmp_path / "points.err").read_text()
    points = points_of(log)
    assert w.state(ref) == "new" and not leftovers(ref.parent) and len(points) >= 4, points
    for k, point in enumerate(points, 1):
        for sig in w.signals:
            path = tmp_path / f"{sig.name}-{k}" / target
            w.old(path)
            ended = in_child(lambda p=path: w.new(p), log, kill_at=k, sig=sig)
            want = w.term_ends if sig == signal.SIGTERM else f"signal {sig.value}"
            assert ended == want, (point, ended, (tmp_path / "points.err").read_text())
            if sig == signal.SIGTERM:  # held until the write was done: the new output, and nothing else
                assert w.state(path) == "new" and not leftovers(path.parent), (point, w.state(path))
                assert points_of(log) == points  # every write point was reached
            else:  # killed outright: the old output or the new one, whole; the next write cleans up
                assert w.killed_ok(point, w.state(path)), (point, w.state(path))
                w.new(path)
                assert w.state(path) == "new" and not leftovers(path.parent), (point, leftovers(path.parent))
    path = tmp_path / "full" / target
    w.old(path)
    assert in_child(lambda: w.new(path), log, fsize=w.full_at) == w.full_ends, (tmp_path / "points.err").read_text()
    assert w.state(path) == "old" and not leftovers(path.parent)


def bytes_state(old: bytes, new: bytes) -> Callable[[Path], str]:
    def state(path: Path) -> str:
        data = path.read_bytes() if path.is_file() else None
        return "old" if data == old else "new" if data == new else f"broken ({None if data is None else len(data)})"
    return state


# ---------------------------------------------------------------------- the helper itself
def test_one_file(tmp_path):
    old, new = b"old" * 100, b"new" * 1000
    check_writer(Writer("file", lambda p: atomic.write_bytes(p, old), lambda p: atomic.write_bytes(p, new),
                        bytes_state(old, new)), tmp_path)


def test_several_files_as_one_output(tmp_path):
    """Signals and a full disk: all replaced or none. A SIGKILL between two renames (no signal can be
    held) leaves each file whole, some old and some new: a group in a shared folder is one output
    for everything but a kill outright."""
    names = ("a.json", "b.csv", "c.png")

    def write(folder: Path, tag: bytes):
        atomic.atomic_files({folder / n: (lambda fh, n=n: fh.write(tag * 500 + n.encode())) for n in names})

    def state(folder: Path) -> str:
        tags = set()
        for n in names:
            data = (folder / n).read_bytes() if (folder / n).exists() else b""
            tag = next((t for t in (b"old", b"new") if data == t * 500 + n.encode()), None)
            if tag is None:
                return f"broken {n}"
            tags.add(tag.decode())
        return tags.pop() if len(tags) == 1 else "mixed, each file whole"

    w = Writer("group", lambda p: write(p, b"old"), lambda p: write(p, b"new"), state)
    w.killed_ok = lambda point, s: s in ("old", "new") or (point.startswith("renamed") and s.startswith("mixed"))
    check_writer(w, tmp_path)


@pytest.mark.parametrize("exchange", [True, False])
def test_a_folder_as_one_output(tmp_path, monkeypatch, exchange):
    if not exchange:  # the two renames where the system cannot exchange folders in one step
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)

    def write(folder: Path, tag: str):
        with atomic.replace_dir(folder) as tmp:
            for i in range(3):
                (tmp / f"f{i}").write_text(tag * 400)
            (tmp / "sub").mkdir()
            (tmp / "sub" / "x").write_text(tag)

    def state(folder: Path) -> str:
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) \
            if folder.is_dir() else []
        tags = {p.read_text()[:3] for p in folder.rglob("*") if p.is_file()} if files else set()
        ok = files == ["f0", "f1", "f2", "sub/x"] and len(tags) == 1
        return tags.pop() if ok else f"broken {files}"

    w = Writer("folder", lambda p: write(p, "old"), lambda p: write(p, "new"), state)
    if not exchange:  # between the two renames the folder is away: only the exchange is whole against SIGKILL
        w.killed_ok = lambda point, s: s in ("old", "new") or (point == "moved out/ aside" and s == "broken []")
    check_writer(w, tmp_path)


def test_held_signals_reach_the_handler_that_was_in_place(tmp_path):
    """A signal held during a write goes, once the write is done, to the handler in place before."""
    got = []
    old = signal.signal(signal.SIGTERM, lambda s, f: got.append(s))
    try:
        with atomic.held_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)
            assert got == []
        assert got == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, old)


def test_a_write_onto_a_folder_or_two_paths_the_same_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        atomic.write_text(tmp_path / "d", "x")
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError):
        with atomic.replace_dir(tmp_path / "f"):
            pass
    with pytest.raises(ValueError, match="distinct files"):
        atomic.atomic_files({tmp_path / "a": lambda fh: None, tmp_path / "d" / ".." / "a": lambda fh: None})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "f"]


def test_permissions_of_a_replaced_file_are_kept(tmp_path):
    p = tmp_path / "x"
    p.write_text("old")
    p.chmod(0o640)
    atomic.write_text(p, "new")
    assert p.read_text() == "new" and (p.stat().st_mode & 0o777) == 0o640


# ---------------------------------------------------------------------- the trace banks and fits
def _bank(seed: int, requests: int = 40):
    from msenv.traces import preset_bank

    return preset_bank("sharegpt-eagle", requests=requests, seed=seed)


def _bank_state(old, new):
    from msenv.traces import load_bank
    from msenv.traces.bank import canonical_sha256

    def content(b):
        return canonical_sha256(b.acc_len, b.offsets, b.ids, b.cap, b.drafter)

    def state(path: Path) -> str:
        try:
            b = load_bank(path, drafter="eagle") if path.suffix == ".jsonl" else load_bank(path)
        except ValueError as e:
            return f"broken: {e}"
        if path.suffix == ".jsonl":  # the published layout has no cap: the largest value is read
            return {content(old.__class__.from_arrays(x.acc_len, x.lengths, x.ids, int(b.cap), x.drafter, "")): tag
                    for x, tag in ((old, "old"), (new, "new"))}.get(content(b), "broken")
        return {content(old): "old", content(new): "new"}.get(content(b), "broken")
    return state


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_bank_files(tmp_path, suffix):
    from msenv.traces import save_bank

    old, new = _bank(1, 10), _bank(2, 40)
    check_writer(Writer("bank", lambda p: save_bank(p, old), lambda p: save_bank(p, new), _bank_state(old, new),
                        full_at=2048), tmp_path, f"bank{suffix}")


def test_the_generate_command(tmp_path):
    """``python -m msenv.traces generate --out`` (the issue's SIGTERM left 294 bytes and no bank)."""
    from msenv.traces import save_bank
    from msenv.traces.__main__ import main

    old, new = _bank(1, 10), _bank(7, 40)
    argv = ["generate", "--preset", "sharegpt-eagle", "--requests", "40", "--seed", "7", "--out"]
    check_writer(Writer("generate", lambda p: save_bank(p, old), lambda p: main([*argv, str(p)]),
                        _bank_state(old, new), full_at=2048, full_ends="exit 74"), tmp_path, "bank.npz")
    err = (tmp_path / "points.err").read_text().strip().splitlines()  # the full disk's run
    assert len(err) == 1 and "could not write" in err[0] and "bank.npz" in err[0], err


def test_the_fit_command(tmp_path, monkeypatch):
    """``python -m msenv.traces fit --out PARAMS.json`` (the fit itself replaced by a known answer:
    the write is what is tested)."""
    import msenv.traces.__main__ as cli
    from msenv.traces import PRESETS

    monkeypatch.setattr(cli, "fit", lambda *a, **k: (PRESETS["gsm8k-eagle"].params, 1.25))
    out = tmp_path / "ref.json"
    assert cli.main(["fit", "--published", "gsm8k-eagle", "--scale", "1", "--out", str(out)]) == 0
    new, old = out.read_bytes(), b'{"params": {}, "cap": 16, "note": "an earlier fit"}\n'
    argv = ["fit", "--published", "gsm8k-eagle", "--scale", "1", "--out"]
    check_writer(Writer("fit", lambda p: atomic.write_bytes(p, old), lambda p: cli.main([*argv, str(p)]),
                        bytes_state(old, new), full_at=len(new) // 2, full_ends="exit 74"), tmp_path, "PARAMS.json")


# ---------------------------------------------------------------------- agents and checkpoints

@pytest.fixture(scope="module")
def models():
    """Two small PPO models (seeds 1 and 2) with their VecNormalize, and the config."""
    from agents.envs import make_vec_env, normalize
    from agents.ppo import make_ppo
    from msenv import SystemConfig

    cfg = SystemConfig(num_devices=2, gamma_max=4, episode_length=5)
    out = {}
    for tag, seed in (("old", 1), ("new", 2)):
        venv = normalize(make_vec_env(cfg, 2, seed), gamma=0.0)
        venv.reset()
        for _ in range(3):
            venv.step(np.full((2, 2), seed, dtype=np.int64))
        out[tag] = (make_ppo(venv, seed=seed, n_steps=8, batch_size=16, n_epochs=1), venv)
    return out, cfg


def _norm_bytes(venv, tmp: Path) -> bytes:
    venv.save(str(tmp))
    return tmp.read_bytes()


def _folder_state(models, tmp_path, marker_files):
    """The state of an agent or checkpoint folder: each file says the same one of old / new."""
    (pairs, _) = models
    norms = {tag: _norm_bytes(v, tmp_path / f"{tag}.pkl") for tag, (_, v) in pairs.items()}
    seeds = {1: "old", 2: "new"}

    def state(folder: Path) -> str:
        try:
            tags = {seeds.get(json.loads(zipfile.ZipFile(folder / "model.zip").read("data"))["seed"])}
            tags.add({b: t for t, b in norms.items()}.get((folder / "vecnormalize.pkl").read_bytes()))
            for name, key in marker_files:
                tags.add(json.loads((folder / name).read_text())[key])
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
            return f"broken: {e}"
        return tags.pop() if len(tags) == 1 else f"mixed {tags}"
    return state


def test_save_agent(tmp_path, models):
    """The issue's kill after model.zip left the new model.zip beside the old policy.npz; here every
    file of the folder — SB3's, the portable pair, the training record — is of one save."""
    from agents.controller import load_agent, save_agent

    pairs, cfg = models

    def save(path: Path, tag: str) -> None:
        model, venv = pairs[tag]
        save_agent(path, model, venv, cfg, extra={"which": tag}, files={"training.json": json.dumps(
            {"which": tag}).encode()})

    base = _folder_state(models, tmp_path, [("config.json", "which"), ("agent.json", "which"),
                                            ("training.json", "which")])

    def state(path: Path) -> str:
        s = base(path)
        if s in ("old", "new"):
            load_agent(path)  # the portable pair is consistent (its digest checked)
        return s

    check_writer(Writer("agent", lambda p: save(p, "old"), lambda p: save(p, "new"), state, full_at=4096), tmp_path,
                 "agent")


def test_save_resumable(tmp_path, models):
    from agents.checkpoint import read_state, save_resumable

    pairs, _ = models

    def save(path: Path, tag: str) -> None:
        model, venv = pairs[tag]
        save_resumable(path, model, venv, {"which": tag})

    base = _folder_state(models, tmp_path, [("state.json", "which")])

    def state(path: Path) -> str:
        s = base(path)
        if s in ("old", "new"):
            read_state(path)
        return s

    check_writer(Writer("checkpoint", lambda p: save(p, "old"), lambda p: save(p, "new"), state, full_at=4096),
                 tmp_path, "resume")


def test_a_portable_pair_written_into_an_existing_agent(tmp_path, models):
    """``write_portable`` (what ``python -m agents.convert`` writes beside SB3's files): the two
    files as one output; a pair from two saves is refused when loading."""
    from agents.controller import PPOController
    from agents.portable import AGENT_FILE, POLICY_FILE, read_portable, write_portable

    pairs, cfg = models

    def write(folder: Path, tag: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        model, venv = pairs[tag]
        write_portable(folder, PPOController(model, config=cfg).policy, None, {"config": cfg.to_dict(), "which": tag})

    def state(folder: Path) -> str:
        try:
            return read_portable(folder)[2]["which"]
        except (OSError, ValueError) as e:
            return f"broken: {e}"

    w = Writer("portable", lambda p: write(p, "old"), lambda p: write(p, "new"), state, full_at=1024)
    # a SIGKILL between the two renames: a pair of two saves, which the loader refuses (never loads)
    w.killed_ok = lambda point, s: s in ("old", "new") or (point == f"renamed {POLICY_FILE}" and "different saves" in s)
    check_writer(w, tmp_path, "agent")
    mixed = tmp_path / "mixed"
    write(mixed, "old")
    write(tmp_path / "other", "new")
    (mixed / POLICY_FILE).write_bytes((tmp_path / "other" / POLICY_FILE).read_bytes())
    with pytest.raises(ValueError, match=rf"{POLICY_FILE}: its SHA-256 is not the policy_sha256=.* that {AGENT_FILE}"):
        read_portable(mixed)


# ---------------------------------------------------------------------- result files and figures
def test_report_writers(tmp_path):
    from evaluation.report import read_csv, write_csv, write_json

    rows = [{"a": i, "b": "x" * 50} for i in range(40)]
    check_writer(Writer("csv", lambda p: write_csv(rows[:2], p), lambda p: write_csv(rows, p),
                        lambda p: {2: "old", 40: "new"}.get(len(read_csv(p)) if p.exists() else -1, "broken")),
                 tmp_path / "csv", "t.csv")
    doc = {"rows": rows}
    check_writer(Writer("json", lambda p: write_json({"rows": []}, p), lambda p: write_json(doc, p),
                        bytes_state(json.dumps({"rows": []}, indent=2).encode(), json.dumps(doc, indent=2).encode())),
                 tmp_path / "json", "t.json")


def test_a_figure(tmp_path):
    pytest.importorskip("matplotlib")
    from evaluation.report import figure_style, save_figure

    def draw(path: Path, n: int) -> None:
        with figure_style() as plt:
            fig, ax = plt.subplots(figsize=(2.0, 1.5))
            ax.plot(range(n), range(n), label=f"{n} points")
            ax.set_title(f"{n}")
            ax.legend()
            save_figure(fig, path)
            plt.close(fig)

    refs = {}
    for n in (3, 30):
        draw(tmp_path / f"ref{n}.png", n)
        refs[n] = (tmp_path / f"ref{n}.png").read_bytes()
    check_writer(Writer("png", lambda p: draw(p, 3), lambda p: draw(p, 30), bytes_state(refs[3], refs[30]),
                        full_at=len(refs[30]) // 2, signals=(signal.SIGTERM,)), tmp_path, "fig.png")


@pytest.fixture(scope="module")
def results():
    """Two small benchmark results of the same suite (different controllers)."""
    from evaluation import benchmark
    from evaluation.suites import CELL_STRIDE, TEST_SEEDS, Cell, Suite

    tiny = Suite("paper-v1", "a tiny suite for the tests", (
        Cell("a", "msenv/MultiSpin-v0", 2, 3, TEST_SEEDS.start + 950 * CELL_STRIDE, {"num_devices": 4}),))
    return {tag: json.loads(json.dumps(benchmark.run_benchmark(tiny, benchmark.controller_methods([c])),
                                       default=float))
            for tag, c in (("old", "computation-only"), ("new", "fixed-2"))}


def _small_figure(plt, result):
    """A quick stand-in for the result's figure (the write is what is tested, not the drawing)."""
    fig, ax = plt.subplots(figsize=(2.0, 1.5))
    ax.set_title(" ".join(result["methods"]))
    return fig


def test_the_benchmarks_result_set(tmp_path, results, monkeypatch):
    """``evaluation.benchmark --out``: the JSON, CSV and PNG are replaced as one output (the issue's
    kill between two renames left a new JSON beside the old CSV and a stray .tmp)."""
    pytest.importorskip("matplotlib")
    from evaluation.benchmark import cli
    from evaluation.benchmark.cli import build_parser, write_result

    monkeypatch.setattr(cli, "draw", _small_figure)
    ap = build_parser()
    names = ("paper-v1.json", "paper-v1.csv", "paper-v1.png")
    ref = {}
    for tag in ("old", "new"):
        write_result(ap, results[tag], tmp_path / f"ref-{tag}")
        ref[tag] = {n: (tmp_path / f"ref-{tag}" / n).read_bytes() for n in names}
    assert all(ref["old"][n] != ref["new"][n] for n in names)

    def state(folder: Path) -> str:
        got = {n: (folder / n).read_bytes() if (folder / n).exists() else None for n in names}
        return next((tag for tag in ref if got == ref[tag]), "mixed or broken")

    def new(folder: Path) -> int:
        try:
            write_result(ap, results["new"], folder)
        except SystemExit as e:
            return e.code
        return 0

    check_writer(Writer("result set", lambda p: write_result(ap, results["old"], p), new, state, full_at=4096,
                        full_ends="exit 74", term_ends="exit 143", signals=(signal.SIGTERM,)), tmp_path, "out")
    err = (tmp_path / "points.err").read_text().strip().splitlines()
    assert err == [] or (len(err) == 1 and "could not write" in err[0])


def test_a_signal_during_the_benchmarks_write_ends_it_after_the_files_in_one_line(tmp_path, results, monkeypatch):
    from evaluation.benchmark import cli
    from evaluation.benchmark.cli import build_parser, write_result

    monkeypatch.setattr(cli, "draw", _small_figure)
    ap = build_parser()
    log = tmp_path / "log"

    def work():
        try:
            write_result(ap, results["new"], tmp_path / "out")
        except SystemExit as e:
            return e.code
        return 0

    # SIGTERM at the second write point, with the command's own handlers (stop_on_signals) in place
    assert in_child(work, log, kill_at=2) == "exit 143"
    err = (tmp_path / "log.err").read_text().strip().splitlines()
    assert len(err) == 1 and "stopped by SIGTERM after writing" in err[0], err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["paper-v1.csv", "paper-v1.json", "paper-v1.png"]


def test_every_writer_goes_through_the_helper():
    """No module of the project writes a file of its outputs but through msenv.atomic: no file
    opened for writing, no write_text/write_bytes, no numpy save, savefig or model save onto a path
    (onto the helper's file object they are the writers it runs); the places left are listed with
    why."""
    import ast

    allowed = {  # file: why it writes directly
        "experiments/main_job.py": "train.log, the stream of a training subprocess's output",
        "agents/training/resume.py": "the probe that a run folder can be written",
        "agents/hyperparams/__init__.py": "rl-zoo3's hyperparameter file, written on request",
        "evaluation/report.py": "save_figure hands matplotlib the helper's file object",
        "evaluation/benchmark/cli.py": "hands the helper's file objects to the writers",
        "evaluation/provenance.py": "reads only",
        "agents/controller.py": "writes inside replace_dir's temporary folder",
        "agents/checkpoint.py": "writes inside replace_dir's temporary folder",
        "msenv/atomic.py": "the helper",
        "msenv/model/numeric.py": "opens the lock file of numba's cache index (an empty file, not an output)",
    }
    bad = []
    for folder in ("msenv", "agents", "evaluation", "experiments", "baselines"):
        for p in sorted((ROOT / folder).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel in allowed:
                continue
            for node in ast.walk(ast.parse(p.read_text())):
                call = node if isinstance(node, ast.Call) else None
                if call is None:
                    continue
                name = ast.unparse(call.func)
                first = call.args[0] if call.args else None
                to_path = isinstance(first, (ast.BinOp, ast.JoinedStr, ast.Constant, ast.Call))  # not a file object
                writes = name.endswith((".write_text", ".write_bytes")) or (to_path and name.endswith(
                    ("np.save", "np.savez", "np.savez_compressed", ".savefig", ".save")))
                mode = [a for a in call.args[1:2] if isinstance(a, ast.Constant)] + \
                    [k.value for k in call.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
                opened = name in ("open", "os.fdopen") or name.endswith(".open")
                if writes or (opened and any(isinstance(m.value, str) and set(m.value) & set("wax") for m in mode)):
                    if name in ("atomic.write_text", "atomic.write_bytes"):
                        continue
                    bad.append(f"{rel}:{node.lineno} {name}")
    assert not bad, "writes that do not go through msenv.atomic:\n" + "\n".join(bad)


def test_a_figure_written_into_a_group_keeps_its_label_size(tmp_path):
    pytest.importorskip("matplotlib")
    from evaluation.report import LABEL_PX_KEY, figure_style, figure_writer, png_text

    with figure_style() as plt:
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        ax.set_title("t")
        atomic.atomic_files({tmp_path / "f.png": figure_writer(fig), tmp_path / "f.txt": lambda fh: fh.write(b"x")})
        plt.close(fig)
    assert float(png_text(tmp_path / "f.png")[LABEL_PX_KEY]) > 0


def test_a_stray_temporary_file_of_a_live_writer_is_left_alone(tmp_path):
    """Only a gone writer's leftovers are removed: a concurrent writer's temporary file is its own."""
    live = tmp_path / f".x{atomic.TEMP_MARK}{os.getpid()}-abc"
    live.write_text("in progress")
    dead = tmp_path / f".x{atomic.TEMP_MARK}999999999-abc"
    dead.write_text("left by a killed writer")
    atomic.write_text(tmp_path / "x", "new")
    assert live.exists() and not dead.exists()
