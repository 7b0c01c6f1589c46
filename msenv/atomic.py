"""Atomic writes: every output the project writes replaces its old version whole, or not at all.

The bottom floor of the project: it imports nothing of it, and every writer uses it — agents,
checkpoints, result files, banks, fits, figures.

- :func:`atomic_write` — one file: a temporary file in the same folder
  (``.<name>.tmp-<pid>-<random>``) written by ``write(fh)``, flushed and fsynced, renamed over the
  file, the folder fsynced.
- :func:`atomic_files` — several files that make one output (a result and its table and figure):
  every temporary file is written and fsynced before the first rename, so a failed write replaces
  none of them.
- :func:`replace_dir` — a folder that makes one output (a saved agent, a resumable checkpoint):
  written into a temporary folder beside it, then put in its place whole (exchanged in one step
  where the system can, Linux's ``renameat2(RENAME_EXCHANGE)``), the old one removed.

**Signals.** SIGINT, SIGTERM and SIGHUP that arrive while a write runs in the main thread are held
until it is done, then delivered as they would have been: a stopped writer leaves its new output
whole, never half of one and never a temporary file. **Failures.** A write that fails (a full disk,
a file-size limit, a folder that cannot be written) removes its temporary files and raises the
``OSError``; the old output is untouched. Temporary files of a writer killed outright (SIGKILL,
a power cut) are removed by the next write of the same output, once the process that made them
is gone.

:data:`write_point_hook`, when set, is called with the name of each write point (a temporary file
opened, written, synced, renamed …): the fault-injection tests use it to stop a writer at each one.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

#: what marks a temporary file or folder of the output ``name``: ``.<name>.tmp-<pid>-…``
TEMP_MARK = ".tmp-"
#: the signals held while a write runs (then delivered)
HELD_SIGNALS = tuple(getattr(signal, s) for s in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, s))
#: called with each write point's name when set (fault-injection tests); None in normal use
write_point_hook: Callable[[str], None] | None = None

_UMASK = os.umask(0)
os.umask(_UMASK)
#: the longest output name kept whole in a temporary name (file names stop at 255 bytes)
_NAME_KEPT = 200


def _point(name: str) -> None:
    """A write point: the hook's turn."""
    hook = write_point_hook
    if hook is not None:
        hook(name)


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP received while the block runs are held, then delivered in the
    order they came when it ends (to the handlers that were in place before). Only the main thread
    can hold signals; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []

    def hold(signum, frame) -> None:
        got.append(signum)

    old = {}
    try:
        for s in HELD_SIGNALS:
            if signal.getsignal(s) is not None:  # None: a handler not set from Python, left alone
                old[s] = signal.signal(s, hold)
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        for s in dict.fromkeys(got):
            signal.raise_signal(s)


def _prefix(name: str) -> str:
    """The start of a temporary name of output ``name`` made by this process."""
    return f".{name[:_NAME_KEPT]}{TEMP_MARK}{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def sweep(parent: str | os.PathLike, name: str) -> list[Path]:
    """Remove the temporary files and folders of output ``name`` in ``parent`` left by writers that
    are gone (killed before they could clean up); returns what was removed."""
    parent, mark = Path(parent), f".{name[:_NAME_KEPT]}{TEMP_MARK}"
    try:
        entries = os.listdir(parent)
    except OSError:
        return []
    removed = []
    for entry in entries:
        pid = entry[len(mark):].split("-", 1)[0] if entry.startswith(mark) else ""
        if not pid.isdigit() or _alive(int(pid)):
            continue
        p = parent / entry
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed


def _fsync_dir(path: Path) -> None:
    """fsync a folder (its entries: the renames); a system that cannot is left as it is."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """fsync every file and folder under ``root``."""
    for folder, _, files in os.walk(root):
        for f in files:
            p = Path(folder) / f
            if p.is_symlink():
                continue
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(folder))


def _mode_for(path: Path) -> int:
    """The permissions a new version of ``path`` gets: the old file's, else the umask's default."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~_UMASK


def atomic_files(writers: Mapping[str | os.PathLike, Callable[[BinaryIO], object]]) -> list[Path]:
    """Write several files as one output: each ``write(fh)`` fills a temporary file beside its
    path (a binary file object); when every one is written and fsynced, all are renamed into
    place (signals held: module docstring). A failure removes every temporary file and replaces
    nothing. Returns the paths."""
    items = [(Path(p), w) for p, w in writers.items()]
    if len({p.resolve() for p, _ in items}) != len(items):
        raise ValueError(f"paths {[str(p) for p, _ in items]} are invalid; allowed: distinct files")
    for path, _ in items:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    temps: list[Path] = []
    with held_signals():
        try:
            for path, write in items:
                path.parent.mkdir(parents=True, exist_ok=True)
                sweep(path.parent, path.name)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_prefix(path.name))
                temps.append(Path(tmp))
                with os.fdopen(fd, "wb") as fh:
                    os.fchmod(fh.fileno(), _mode_for(path))
                    _point(f"opened {path.name}")
                    write(fh)
                    _point(f"written {path.name}")
                    fh.flush()
                    os.fsync(fh.fileno())
                _point(f"synced {path.name}")
            for tmp, (path, _) in zip(temps, items):
                os.replace(tmp, path)
                _point(f"renamed {path.name}")
        except BaseException:
            for tmp in temps:
                tmp.unlink(missing_ok=True)
            raise
        for parent in dict.fromkeys(p.parent for p, _ in items):
            _fsync_dir(parent)
    return [p for p, _ in items]


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Write ``path`` through ``write(fh)`` on a temporary file beside it, fsync, rename into
    place: a failed write (a full disk, a signal) never replaces a good file with a truncated one."""
    return atomic_files({path: write})[0]


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """:func:`atomic_write` of ``data``."""
    return atomic_write(path, lambda fh: fh.write(data))


def write_text(path: str | os.PathLike, text: str) -> Path:
    """:func:`atomic_write` of ``text`` in UTF-8."""
    return write_bytes(path, text.encode())


_RENAME_EXCHANGE, _AT_FDCWD = 2, -100


def _renameat2():
    """libc's renameat2, or None where there is none."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    fn.restype = ctypes.c_int
    return fn


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (True), or False where the system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


@contextlib.contextmanager
def replace_dir(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary folder beside ``path`` to write a folder output into; when the block ends
    without an error, its files are fsynced and it takes ``path``'s place whole (the old folder,
    if any, removed). An error in the block removes the temporary folder and leaves ``path`` as it
    was. Signals are held while the block runs (module docstring)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "is a file, not a folder", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    with held_signals():
        sweep(path.parent, path.name)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=_prefix(path.name)))
        try:
            os.chmod(tmp, 0o777 & ~_UMASK)
            _point(f"opened {path.name}/")
            yield tmp
            _point(f"written {path.name}/")
            _fsync_tree(tmp)
            _point(f"synced {path.name}/")
            if not path.exists():
                os.rename(tmp, path)
            elif not _exchange(tmp, path):
                old = Path(tempfile.mkdtemp(dir=path.parent, prefix=_prefix(path.name)))
                os.replace(path, old)  # onto the empty folder just made
                _point(f"moved {path.name}/ aside")
                os.rename(tmp, path)
                tmp = old
            _point(f"renamed {path.name}/")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(tmp, ignore_errors=True)  # the old folder (exchanged into tmp's place)
        _fsync_dir(path.parent)


__all__ = ["HELD_SIGNALS", "TEMP_MARK", "atomic_files", "atomic_write", "held_signals", "replace_dir", "sweep",
           "write_bytes", "write_point_hook", "write_text"]
