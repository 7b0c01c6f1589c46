"""Numerical helpers shared by the compiled kernels (numba)."""

from __future__ import annotations

from numba import njit, vectorize


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
