"""The pure batched core (msenv.engine.functional): reset/step against recorded golden trajectories
and an independent numpy implementation."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import msenv

GOLDEN = Path(__file__).parent / "data" / "golden_paper.npz"


def test_paper_scenario_bit_identical_to_golden():
    """Every obs, reward and info key of the default ids (and [R] variants) equals the
    trajectories recorded before the dynamics were added (tests/make_golden.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_golden", Path(__file__).parent / "make_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gold = np.load(GOLDEN)
    for name, (env_id, kw) in mod.CASES.items():
        now = mod.record(env_id, kw)
        keys = {k.split("/", 1)[1] for k in gold.files if k.startswith(name + "/")}
        assert keys == set(now), name
        for key in keys:
            np.testing.assert_array_equal(now[key], gold[f"{name}/{key}"], err_msg=f"{name}/{key}")


def test_dynamic_step_matches_the_numpy_implementation():
    """The compiled model §11 step against trajectories of the numpy implementation it replaced
    (tests/make_golden_dynamic.py, 6 configs: every id's dynamics, the random policy, statistical
    CSI, the chain filter, fixed hidden α): every obs, reward and info key bit-identical."""
    import importlib.util
    import sys

    here = Path(__file__).parent
    sys.path.insert(0, str(here))
    try:
        spec = importlib.util.spec_from_file_location("make_golden_dynamic", here / "make_golden_dynamic.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(here))
    gold = np.load(here / "data" / "golden_dynamic.npz")
    for name, (env_id, kw) in mod.CASES.items():
        now = mod.record(env_id, kw)
        assert {k.split("/", 1)[1] for k in gold.files if k.startswith(name + "/")} == set(now), name
        for key, val in now.items():
            ref = gold[f"{name}/{key}"]
            np.testing.assert_array_equal(val, ref, err_msg=f"{name}/{key}")


def test_every_id_keeps_its_recorded_trajectory():
    """Gymnasium's rule: an id's version changes whenever its behaviour changes. Every registered id
    has a trajectory recorded at its release (tests/make_golden_ids.py); obs, rewards and every info
    key must stay equal (floats to the last bits: :func:`assert_same_trajectory`) — a change needs a
    new id version."""
    import importlib.util
    import sys

    here = Path(__file__).parent
    sys.path.insert(0, str(here))
    spec = importlib.util.spec_from_file_location("make_golden", here / "make_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gold = np.load(here / "data" / "golden_ids.npz")
    recorded = {k.rsplit("/", 1)[0] for k in gold.files}
    ids = list(msenv.ENV_IDS)
    assert recorded == set(ids), "record a new id with tests/make_golden_ids.py"
    for env_id in ids:
        now = mod.record(env_id, {})
        keys = {k[len(env_id) + 1:] for k in gold.files if k.startswith(env_id + "/")}
        assert keys == set(now), env_id
        for key in keys:
            assert_same_trajectory(now[key], gold[f"{env_id}/{key}"], f"{env_id}/{key}")


def assert_same_trajectory(now: np.ndarray, gold: np.ndarray, what: str) -> None:
    """Integers, booleans (modes, tokens, masks) exactly; floats to a few units in the last place.

    The compiled kernels are built for the CPU they run on (vector width, fused multiply-add), so a
    trajectory recorded on one machine can differ from another's in the last bit of a float — the
    same behaviour, which an exact comparison would call a change. A real change moves values by
    far more (and usually flips a discrete outcome)."""
    assert now.shape == gold.shape and now.dtype == gold.dtype, what
    if not np.issubdtype(gold.dtype, np.floating):
        np.testing.assert_array_equal(now, gold, err_msg=what)
        return
    eps = np.finfo(gold.dtype).eps
    scale = float(np.max(np.abs(gold))) if gold.size else 0.0
    np.testing.assert_allclose(now, gold, rtol=16 * eps, atol=16 * eps * scale, err_msg=what)
