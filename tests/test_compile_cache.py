"""The compiled kernels' on-disk cache: processes that compile specialisations of one function at the
same moment (the suite's workers, parallel evaluations) each keep their own entry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULE = """
from numba import njit

@njit(cache=True)
def twice_plus_one(x):
    return x * 2 + 1
"""
#: one process per specialisation: an argument of each type
VALUES = {"int": "3", "float": "3.5", "array": "np.arange(3.0)", "int32": "np.int32(7)", "complex": "1j"}


def _script(folder: Path, code: str) -> str:
    """A process that imports msenv (its cache guard) and the cached module of ``folder``, then runs ``code``."""
    head = f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(folder)!r}]\n"
    return head + "import msenv\nimport numpy as np\nimport cached\n" + code


def _run(folder: Path, code: str) -> str:
    return subprocess.run([sys.executable, "-c", _script(folder, code)], check=True, capture_output=True,
                          text=True).stdout


def test_numbas_cache_saves_are_serialized_by_msenv():
    from numba.core.caching import IndexDataCacheFile

    import msenv  # noqa: F401

    assert getattr(IndexDataCacheFile.save, "serialized", False)


@pytest.mark.slow
def test_specialisations_compiled_at_once_each_load_their_own_code(tmp_path):
    """Five processes compile five specialisations of one cached function at once; afterwards every
    one loads from the cache (no compilation) with its own results, and the index holds five
    entries in five data files."""
    (tmp_path / "cached.py").write_text(MODULE)
    procs = [subprocess.Popen([sys.executable, "-c", _script(tmp_path, f"print(cached.twice_plus_one({v}))")],
                              stdout=subprocess.PIPE, text=True) for v in VALUES.values()]
    for p in procs:
        assert p.wait(timeout=300) == 0
    cache = tmp_path / "__pycache__"
    assert len(list(cache.glob("cached.twice_plus_one-*.nbc"))) == len(VALUES)
    assert list(cache.glob("*.nbi.lock"))  # the saves took the lock
    out = _run(tmp_path, "res = [" + ", ".join(f"cached.twice_plus_one({v})" for v in VALUES.values()) + "]\n"
               "print(repr([complex(np.sum(r)) for r in res])); print(len(cached.twice_plus_one.stats.cache_hits))")
    values, hits = out.strip().splitlines()
    expected = [complex(np.sum(eval(v, {"np": np}) * 2 + 1)) for v in VALUES.values()]
    assert values == repr(expected) and int(hits) == len(VALUES)
