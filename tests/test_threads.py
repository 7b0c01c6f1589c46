"""The decision path's threads (agents.threads): one BLAS thread inside a decision, the caller's
setting after it, and the libraries found when an agent is loaded, not in its first decision."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import agents.threads as threads
from agents.controller import load_agent


def numpy_blas_threads() -> list[int]:
    """numpy's BLAS threads, as threadpoolctl reads them (independently of agents.threads)."""
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas" and "numpy" in i["filepath"]]


def test_one_blas_thread_inside_and_the_callers_setting_after():
    if not numpy_blas_threads():
        pytest.skip("numpy's BLAS is not one threadpoolctl can see")
    with threadpool_limits(limits=2, user_api="blas"):
        assert set(numpy_blas_threads()) == {2}
        with threads.one_blas_thread():
            assert set(numpy_blas_threads()) == {1}
            np.ones((64, 64)) @ np.ones((64, 64))
        assert set(numpy_blas_threads()) == {2}


def test_loading_an_agent_finds_the_blas_libraries(monkeypatch):
    """Finding the libraries takes milliseconds once per process; a loaded agent has paid it, so a
    harness timing its first decision times the decision alone."""
    monkeypatch.setattr(threads, "_LIBS", None)
    load_agent("agents/pretrained/cells")
    assert threads._LIBS is not None
