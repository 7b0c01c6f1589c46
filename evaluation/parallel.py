"""Run independent jobs in order: in this process, over spawned processes, or as Ray tasks.

Every job carries its own seed, so the three give the same results; the harness, the
experiments and the agents' tools all map their episodes or drops through :func:`parallel_map`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def parallel_map(fn: Callable, items: Sequence, workers: int = 1, progress: bool = False, desc: str = "",
                 ray_address: str | None = None) -> list:
    """``[fn(x) for x in items]``, in order, with a progress bar: in this process (``workers`` ≤ 1),
    over ``workers`` spawned processes, or — with ``ray_address`` — as Ray tasks (``"local"``
    starts a local Ray instance; otherwise the address of a running cluster, e.g.
    ``"ray://head:10001"`` or ``"auto"``). Every item carries its own seed, so all three give the
    same results."""
    bar = _progress(len(items), desc) if progress else None
    out = []
    if ray_address is not None:
        out = _ray_map(fn, items, ray_address, bar)
    elif workers <= 1:
        for x in items:
            out.append(fn(x))
            if bar:
                bar.update(1)
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        ex = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_ignore_sigint)
        try:
            # small chunks: items can differ 100× in cost (K = 5 vs 40), big chunks leave one
            # worker busy at the end while the other idles. The workers start while submitting, with
            # SIGINT ignored (an ignored signal stays ignored across exec), so a Ctrl-C to the group
            # cannot reach one still importing, before its initializer: the parent ends them all
            results = _submit_ignoring_sigint(ex, fn, items, max(1, min(8, len(items) // (64 * workers))))
            for r in results:
                out.append(r)
                if bar:
                    bar.update(1)
        except BaseException as e:  # Ctrl-C, a stop signal, a job's error: no worker outlives the call
            from concurrent.futures.process import BrokenProcessPool

            if bar:
                bar.close()
            _abort(ex)
            if isinstance(e, BrokenProcessPool):
                raise WorkerDied(len(out)) from None
            raise
        ex.shutdown()
    if bar:
        bar.close()
    return out


class WorkerDied(RuntimeError):
    """A worker process ended without a result (killed, out of memory) while jobs ``index`` … were
    running; every other worker has been ended."""

    def __init__(self, index: int, what: str = "") -> None:
        self.index, self.what = index, what
        super().__init__(f"a worker process died while playing {what or f'job {index} or one after it'}")


class Stopped(BaseException):
    """Raised in the main thread by :class:`stop_on_signals` when SIGINT or SIGTERM arrives."""

    def __init__(self, signal_name: str, exit_code: int) -> None:
        self.signal_name, self.exit_code = signal_name, exit_code
        super().__init__(signal_name)


class stop_on_signals:
    """Context manager for a command that has nothing to save midway: the first SIGINT or SIGTERM
    raises :class:`Stopped` (exit code 130 / 143), so the work unwinds and :func:`parallel_map`
    ends its worker processes; the previous handlers come back on exit."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self.exit_code: int | None = None  #: 128 + the signal's number, once one arrived
        self._old: dict = {}

    def _handle(self, signum, frame) -> None:
        import signal

        if self.signal_name is None:
            self.signal_name, self.exit_code = signal.Signals(signum).name, 128 + signum
            raise Stopped(self.signal_name, self.exit_code)

    def __enter__(self) -> stop_on_signals:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        import signal

        for s, h in self._old.items():
            signal.signal(s, h)


def _submit_ignoring_sigint(ex, fn, items, chunksize):
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return ex.map(fn, items, chunksize=chunksize)
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return ex.map(fn, items, chunksize=chunksize)
    finally:
        signal.signal(signal.SIGINT, old)


def run_stoppable(ap, work: Callable[[], Any], note: str) -> Any:
    """``work()`` for a command line ``ap``, inside :class:`stop_on_signals`: SIGINT/SIGTERM end it
    with one line (``stopped by SIGTERM; <note>``, exit 130 / 143) — also when the signal, sent to
    the whole group, reached a worker first —, a worker that died with one line naming its job
    (exit 1); :func:`parallel_map` has ended every worker either way."""
    with stop_on_signals() as stop:
        try:
            return work()
        except Stopped:
            pass
        except WorkerDied as e:
            if stop.signal_name is None:
                ap.exit(1, f"{ap.prog}: error: {e}; {note}\n")
    ap.exit(stop.exit_code, f"{ap.prog}: stopped by {stop.signal_name}; {note}\n")


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C (sent to the whole process group) to the parent, which ends them."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _abort(ex) -> None:
    """Cancel the pending jobs and end the executor's processes (terminate, then kill)."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=2.0)
        if p.is_alive():
            p.kill()
            p.join(timeout=1.0)
    # the executor's manager thread ends with the pool; once it has, take it off the interpreter's
    # exit hook, whose wake-up of a closed pipe would print a traceback at exit (CPython ≤ 3.12)
    from concurrent.futures import process as cf_process

    manager = getattr(ex, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(timeout=2.0)
        if not manager.is_alive():
            getattr(cf_process, "_threads_wakeups", {}).pop(manager, None)


class RayConnectionError(ConnectionError):
    """Ray could not start or reach the cluster at the given address (one line, naming it)."""


def ray_init(address: str) -> None:
    """Connect to Ray once per process: ``"local"`` starts a local instance, anything else is a
    cluster address (``"auto"``, ``"ray://host:10001"``). Needs the ``[ray]`` extra; the
    cluster's nodes need msenv installed (``pip install msenv[ray]``, same version)."""
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("--ray needs Ray: pip install 'msenv[ray]'") from e
    if ray.is_initialized():
        return
    _check_reachable(address)
    try:
        ray.init(address=None if address == "local" else address, include_dashboard=False, log_to_driver=False)
    except Exception as e:  # Ray raises ConnectionError, RuntimeError or its own errors, with long texts
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        where = "start a local Ray instance" if address == "local" else f"connect to a Ray cluster at {address!r}"
        raise RayConnectionError(f"--ray: could not {where}: {first}") from None


def connect_or_exit(parser, address: str | None) -> None:
    """For a command line: connect to Ray at ``address`` (nothing when None), or exit with
    argparse's one-line error naming the address."""
    if address is None:
        return
    try:
        ray_init(address)
    except (RayConnectionError, ImportError) as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast, in one line, when nothing listens at a cluster address ``host:port`` or
    ``ray://host:port`` (Ray itself retries for minutes before giving up)."""
    import socket

    if address in ("local", "auto"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise RayConnectionError(f"--ray {address!r} is not an address; allowed: host:port, ray://host:port, auto, "
                                 "or nothing (a local Ray instance)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise RayConnectionError(f"--ray: nothing answers at {address!r} ({e.strerror or type(e).__name__}); "
                                 "is the Ray head running there?") from None


def _ray_map(fn: Callable, items: Sequence, address: str, bar) -> list:
    import ray

    ray_init(address)
    task = ray.remote(num_cpus=1)(fn)
    refs = [task.remote(x) for x in items]
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=min(len(pending), 1))
        if bar:
            bar.update(len(ready))
    return ray.get(refs)


def _progress(total: int, desc: str):
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is in the train extra
        return None
    return tqdm(total=total, desc=desc, leave=False)
