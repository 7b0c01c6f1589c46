"""The decision path's threads: one BLAS thread per decision.

A learned agent's decision is a few small matrix products (at K = 400 devices, 400 × 64 by
64 × 64). BLAS libraries split such products over every core by default; on a machine busy with
other work those threads wait for a core, and a decision that takes 0.3 ms on one thread can
take tens of ms (measured: ``python -m benchmarks.decisions``). :func:`one_blas_thread` limits
BLAS to one thread for the duration of a call and restores the caller's setting after it, so
the agents choose their own threads without changing the process's.
"""

from __future__ import annotations

import contextlib

_LIBS: list | None = None


def blas_libraries() -> list:
    """threadpoolctl's controllers of the BLAS libraries numpy calls (found once)."""
    global _LIBS
    if _LIBS is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl is a dependency
            _LIBS = []
        else:
            libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
            # numpy's own BLAS is the one its matrix products call (scipy may load another copy)
            mine = [lib for lib in libs if "numpy" in str(lib.filepath)]
            _LIBS = mine or libs
    return _LIBS


@contextlib.contextmanager
def one_blas_thread():
    """A context manager: BLAS (numpy's OpenBLAS/MKL/BLIS) on one thread inside, each library's
    previous setting after (a few µs: the libraries found once, then set directly)."""
    libs = blas_libraries()
    before = [lib.get_num_threads() for lib in libs]
    for lib, n in zip(libs, before):
        if n != 1:
            lib.set_num_threads(1)
    try:
        yield
    finally:
        for lib, n in zip(libs, before):
            if n != 1:
                lib.set_num_threads(n)


__all__ = ["blas_libraries", "one_blas_thread"]
