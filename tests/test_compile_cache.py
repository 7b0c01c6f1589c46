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


# ---------------------------------------------------------------------- the package's stamp
STATS = """
import json, sys
sys.path.insert(0, {root!r})
import numpy as np
from msenv.model import numeric
assert numeric.__file__.startswith({root!r})
numeric.pairwise_sum(np.arange(10.0))
s = numeric.pairwise_sum.stats
print(json.dumps({{"hits": sum(s.cache_hits.values()), "misses": sum(s.cache_misses.values())}}))
"""


def _stats(root: Path) -> dict:
    import json

    out = subprocess.run([sys.executable, "-c", STATS.format(root=str(root))], check=True, capture_output=True,
                         text=True, cwd=root).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_a_kernels_cache_entry_is_stamped_by_the_whole_package():
    from msenv.engine.kinds import dynamics_round
    from msenv.model import numeric

    for kernel in (numeric.pairwise_sum, dynamics_round.dynamic_rows):  # the first msenv kernel, and a round's
        locator = kernel._cache._impl.locator
        assert getattr(type(locator), "msenv_package_stamp", False)
        assert locator.get_source_stamp() == numeric.package_stamp()
    assert len(numeric.package_stamp()) == 64


def test_an_entry_is_not_loaded_after_any_file_of_the_package_changed(tmp_path):
    import shutil

    shutil.copytree(ROOT / "msenv", tmp_path / "msenv", ignore=shutil.ignore_patterns("__pycache__"))
    assert _stats(tmp_path)["misses"] == 1  # compiled and saved
    assert _stats(tmp_path) == {"hits": 1, "misses": 0}  # the same sources: loaded
    other = tmp_path / "msenv" / "engine" / "observation.py"  # not the kernel's own file
    other.write_text(other.read_text() + "\n# edited\n")
    assert _stats(tmp_path) == {"hits": 0, "misses": 1}  # compiled afresh
    assert _stats(tmp_path) == {"hits": 1, "misses": 0}
