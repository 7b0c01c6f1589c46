"""Numerical helpers shared by the compiled kernels (numba), and the guard of their on-disk cache."""

from __future__ import annotations

import contextlib
import os
import sys
import threading

import numpy as np
from numba import njit, vectorize
from numba.core import event as numba_event


# ---------------------------------------------------------------------- the compiled kernels' cache
def _file_lock(path: str):
    """An exclusive lock of the file ``path`` held for a ``with`` block (POSIX ``flock``; where
    there is none, no lock)."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks: as numba does
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def held():
        with open(path, "a+b") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    return held()


def serialize_cache_saves() -> bool:
    """Make numba's saves of compiled kernels safe for processes that compile at once.

    numba saves a function's compiled specialisation in steps — read the function's index, take
    the first free data-file number, write the index, write the data — so two processes that compile
    two specialisations of one function at the same moment (the test suite's workers, parallel
    evaluations, an engine's observation drivers, which share one index) can take the same number,
    and one's machine code is later loaded for the other's types. Each save here holds an exclusive
    lock beside the index, which makes the steps one. Returns whether the guard is in place (numba
    without that cache class: no guard, as before)."""
    try:
        from numba.core.caching import IndexDataCacheFile
    except ImportError:
        return False
    save = IndexDataCacheFile.save
    if getattr(save, "serialized", False):
        return True

    def locked_save(self, key, data):
        with _file_lock(self._index_path + ".lock"):
            return save(self, key, data)

    locked_save.serialized = True
    IndexDataCacheFile.save = locked_save
    return True


serialize_cache_saves()


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the msenv folder
_stamp: list = []


def package_stamp() -> str:
    """A digest of every Python source file of msenv as this process first read them (its first
    call; later edits do not change it): the stamp of every compiled kernel's on-disk cache entry."""
    if not _stamp:
        import hashlib

        digest = hashlib.sha256()
        for folder, dirs, files in sorted(os.walk(_PACKAGE)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, _PACKAGE).encode())
                with open(path, "rb") as fh:
                    digest.update(hashlib.sha256(fh.read()).digest())
        _stamp.append(digest.hexdigest())
    return _stamp[0]


def stamp_caches_by_package() -> bool:
    """Key numba's on-disk cache of msenv's kernels by the whole package's sources.

    numba stamps a cached kernel with its own file only, and a kernel's machine code holds the
    kernels it calls from other files (an engine kind's round calls the observation's writers and
    the model's round kernel): after an edit of a callee's file, or in a process that read some
    files before a checkout and others after it, a cache entry would be loaded with the callees of
    another version. Here every msenv kernel's entry carries :func:`package_stamp` instead, so an
    entry is only ever loaded by a process that read the same sources as the one that saved it.
    Kernels outside msenv keep numba's own stamp. Returns whether the stamp is in place."""
    try:
        from numba.core import caching
    except ImportError:
        return False
    impl = getattr(caching, "CacheImpl", None)
    bases = [getattr(caching, n, None) for n in ("UserProvidedCacheLocator", "InTreeCacheLocator",
                                                 "UserWideCacheLocator")]
    if impl is None or None in bases or not hasattr(impl, "_locator_classes"):
        return False
    if any(getattr(c, "msenv_package_stamp", False) for c in impl._locator_classes):
        return True

    def stamped(base):
        class PackageStamped(base):
            msenv_package_stamp = True

            @classmethod
            def from_function(cls, py_func, py_file):
                inside = os.path.abspath(py_file).startswith(_PACKAGE + os.sep)
                return super().from_function(py_func, py_file) if inside else None

            def get_source_stamp(self):
                return package_stamp()

        PackageStamped.__name__ = PackageStamped.__qualname__ = f"PackageStamped{base.__name__}"
        return PackageStamped

    impl._locator_classes = [stamped(b) for b in bases] + list(impl._locator_classes)
    return True


stamp_caches_by_package()


# ---------------------------------------------------------------------- helpers
@njit(cache=True, error_model="numpy")
def pairwise_sum(x):
    """Σ x in numpy's float order (``np.sum`` of a contiguous row: 8 partial sums for 8 ≤ n ≤ 128,
    halves beyond), so that compiled and numpy sums agree bit for bit."""
    n = x.shape[0]
    if n < 8:
        res = 0.0
        for i in range(n):
            res += x[i]
        return res
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
        i = 8
        while i < n - n % 8:
            r0 += x[i]
            r1 += x[i + 1]
            r2 += x[i + 2]
            r3 += x[i + 3]
            r4 += x[i + 4]
            r5 += x[i + 5]
            r6 += x[i + 6]
            r7 += x[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += x[i]
            i += 1
        return res
    n2 = (n // 2) - (n // 2) % 8
    return pairwise_sum(x[:n2]) + pairwise_sum(x[n2:])


_BUILDERS: list = []  # keeps numba's ufunc builders (and their compiled loops) alive


def ufunc(signatures: list[str], func):
    """A numpy ufunc compiled by numba from the scalar function ``func`` (the same source the
    compiled kernels call). Returns the plain ``numpy.ufunc`` — numba's ``DUFunc`` wrapper costs
    ≈ 1 µs more per call — for exactly ``signatures``."""
    builder = vectorize(signatures, cache=True)(func)
    _BUILDERS.append(builder)
    return builder.ufunc


def scipy_special(name: str, nargs: int):
    """SciPy's own double-precision ``scipy.special.<name>`` (the C routine behind the ufunc, from
    ``scipy.special.cython_special``) as a function compiled kernels can call — with a trailing
    ``0``, Cython's skip-dispatch flag: ``f(x, 0)`` — returning the same values bit for bit. It is
    bound to a process symbol so that numba's on-disk cache of the kernels stays valid (a ctypes
    pointer would make them uncacheable). Of fused Cython variants, the one on doubles is chosen."""
    import ctypes

    import llvmlite.binding
    import scipy.special.cython_special as cs
    from numba import types
    from numba.extending import get_cython_function_address

    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    want = "double (" + "double, " * nargs + "int __pyx_skip_dispatch)"
    for key, capsule in cs.__pyx_capi__.items():
        if key in (name, "__pyx_fuse_0" + name) and get_name(capsule).decode() == want:
            symbol = f"msenv_scipy_{name}"
            llvmlite.binding.add_symbol(symbol, get_cython_function_address("scipy.special.cython_special", key))
            return types.ExternalFunction(symbol, types.float64(*([types.float64] * nargs), types.intc))
    raise ImportError(f"scipy.special.cython_special has no {want!r} named {name}")


def as_rows(x, lead, k, dtype=float):
    """An array broadcastable to lead + (K,) as contiguous rows [N, K] (a shared row: [1, K])."""
    if type(x) is np.ndarray and x.dtype == dtype and x.shape[:-1] == lead and x.flags.c_contiguous:
        return x.reshape(-1, k)  # the hot path: already [..., K] rows
    x = np.asarray(x, dtype=dtype)
    if x.ndim <= 1:
        return np.ascontiguousarray(x.reshape(1, k) if x.shape == (k,) else np.broadcast_to(x, (k,))[None])
    if x.shape[:-1] != lead or x.shape[-1] != k:
        x = np.broadcast_to(x, lead + (k,))
    return np.ascontiguousarray(x.reshape(-1, k))


def as_flat(x, lead):
    """A scalar or an array over the leading axes as contiguous floats [N] (shared: [1])."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return x.reshape(1)
    if x.shape != lead:
        x = np.broadcast_to(x, lead)
    return np.ascontiguousarray(x.reshape(-1))


#: seconds a compile may run before the notice is printed (override: MSENV_COMPILE_NOTICE_S);
#: compiling the kernels takes ≈ 10–60 s, loading them from numba's on-disk cache no compile at all
COMPILE_NOTICE_S = 2.0


class _Compiling(numba_event.Listener):
    """Notes whether numba compiled anything (a load from its on-disk cache is no compile)."""

    def __init__(self) -> None:
        self.started = False

    def on_start(self, event) -> None:
        self.started = True

    def on_end(self, event) -> None:
        pass


@contextlib.contextmanager
def compile_notice(what: str):
    """Print one line on stderr if numba is compiling inside the block and the block has run
    :data:`COMPILE_NOTICE_S` seconds — the first use on this machine (numba caches the result),
    which would otherwise look like a hang. A slow start that only loads cached kernels (a busy
    machine) prints nothing."""
    after = float(os.environ.get("MSENV_COMPILE_NOTICE_S", COMPILE_NOTICE_S))
    compiling = _Compiling()

    def notice() -> None:
        if compiling.started:
            print(f"msenv: compiling {what} (first use on this machine; cached for later runs) ...", file=sys.stderr,
                  flush=True)

    timer = threading.Timer(after, notice)
    timer.daemon = True
    with numba_event.install_listener("numba:compile", compiling):
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
