"""A crafted or careless agent directory is refused with one ValueError naming the file, the
field and what is allowed — before anything large is allocated, and never through a pickle."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
from agents import load_agent
from agents.portable import MAX_WEIGHT_BYTES, read_portable

ROOT = Path(__file__).resolve().parents[1]
BUDGET = ROOT / "agents" / "pretrained" / "cells"
SET = ROOT / "agents" / "pretrained" / "leaderboard" / "cells-per-device-s0"
MLP = ROOT / "agents" / "pretrained" / "leaderboard" / "mlp-s0"


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def _edit_json(path: Path, edit) -> None:
    doc = json.loads((path / "agent.json").read_text())
    edit(doc)
    (path / "agent.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("src, edit, words", [
    (BUDGET, lambda d: d["policy"].__setitem__("per_token", 10**9), "per_token=1000000000 is invalid"),
    (BUDGET, lambda d: d["policy"].update(per_token=1000, gamma_max=1000), "too many budget levels"),
    (BUDGET, lambda d: d["policy"].__setitem__("masked", "false"), "masked='false' is invalid; allowed: true or false"),
    (SET, lambda d: d["policy"].__setitem__("hidden", 64.9), "hidden=64.9 is invalid; allowed: an integer"),
    (SET, lambda d: d["policy"].__setitem__("width", 3), "layout key 'width' is not known"),
    (SET, lambda d: d["policy"].pop("pooling"), "layout key 'pooling' is missing"),
    (SET, lambda d: d.__setitem__("frame_stack", 2), "frame_stack=2 is invalid; allowed: 1 (a set policy"),
    (MLP, lambda d: d.__setitem__("frame_stack", True), "frame_stack=True is invalid"),
    (MLP, lambda d: d["policy"].__setitem__("layers", ["linear", "exec"]), "layers=['linear', 'exec'] is invalid"),
    (MLP, lambda d: d["policy"].__setitem__("nvec", [21.5] * 20), "nvec="),
])
def test_a_bad_layout_is_refused_naming_the_field(tmp_path, src, edit, words):
    path = _copy(src, tmp_path)
    _edit_json(path, edit)
    with pytest.raises(ValueError) as e:
        read_portable(path)
    assert str(path / "agent.json") in str(e.value) and words in str(e.value), e.value
    assert "\n" not in str(e.value)


def _npy(shape, dtype="<f8", data=b""):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue() + data


def test_an_array_declaring_terabytes_is_refused_before_it_is_read(tmp_path):
    path = _copy(SET, tmp_path)
    with zipfile.ZipFile(path / "policy.npz", "a") as z:
        z.writestr("huge.npy", _npy((10**13,)))
    with pytest.raises(ValueError, match=f"more than {MAX_WEIGHT_BYTES // 2**20} MiB"):
        read_portable(path)


def test_weights_beyond_float32_are_refused(tmp_path):
    path = _copy(SET, tmp_path)
    with np.load(path / "policy.npz") as data:
        arrays = {k: data[k].astype(np.float64) for k in data.files}
    arrays["head.bias"] = arrays["head.bias"] * 0 + 1e300  # finite in float64, inf in float32
    np.savez(path / "policy.npz", **arrays)
    with pytest.raises(ValueError, match="'head.bias' holds entries that are not finite in float32"):
        read_portable(path)


def test_a_lone_npy_or_an_object_array_is_not_a_weights_file(tmp_path):
    path = _copy(SET, tmp_path)
    np.save(path / "policy.npy", np.zeros(3))
    (path / "policy.npy").replace(path / "policy.npz")
    with pytest.raises(ValueError, match=r"policy.npz: not a valid weights file \(BadZipFile"):
        read_portable(path)
    with zipfile.ZipFile(path / "policy.npz", "w") as z:
        z.writestr("head.weight.npy", _npy((2,), "|O"))
    with pytest.raises(ValueError, match="policy.npz: not a valid weights file"):
        read_portable(path)


def test_a_deeply_nested_agent_json_is_one_line(tmp_path):
    path = _copy(SET, tmp_path)
    (path / "agent.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="agent.json: not a valid agent file"):
        load_agent(path)


def test_the_committed_agents_still_load():
    for src in (BUDGET, SET, MLP):
        policy, _, meta = read_portable(src)
        assert meta["kind"] in ("mlp", "set", "budget") and policy is not None


def test_an_sb3_load_of_a_model_zip_that_is_a_portable_policy_says_what_it_is(tmp_path):
    """``load_agent(path, sb3=True)`` on a ``model.zip`` that is really a ``policy.npz`` (a zip of
    ``.npy`` arrays without SB3's ``data`` entry) is one line naming the file, what it holds and
    what is expected — not SB3's bare ``AssertionError: No data found in the saved file``."""
    path = _copy(BUDGET, tmp_path)
    shutil.copy(path / "policy.npz", path / "model.zip")
    with pytest.raises(ValueError) as e:
        load_agent(path, sb3=True)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{path / 'model.zip'}: not an SB3 model: a NumPy .npz archive"), msg
    first = zipfile.ZipFile(path / "policy.npz").namelist()[0]
    assert first in msg and "'data' entry" in msg and "expected model.zip from PPO.save" in msg
    assert load_agent(_copy(BUDGET, tmp_path / "intact"), sb3=True).name == "ppo"  # SB3's own file loads
