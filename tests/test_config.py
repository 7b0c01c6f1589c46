"""SystemConfig validation: every field's invalid value gives a clear error."""

import dataclasses
import math

import pytest

from msenv import SystemConfig, preset, resolve_config
from msenv.config import FIELD_ORDER

BAD = {
    "preset": [3],
    "num_devices": [0, -1, 2.5, True, "20", 10_001],
    "gamma_max": [0, 1.5, None],
    "bandwidth_hz": [0.0, -1.0, math.nan, math.inf, "10e6"],
    "vocab_size": [1, 3.0],
    "vocab_eff": [0, 200_000],
    "bits_per_prob": [0, 65],
    "p_ul_dbm": [math.nan, math.inf, 200.0, None],
    "p_dl_dbm": [math.nan, -math.inf, "30"],
    "p_ul_dbm_range": [(10.0,), (20.0, 10.0), (0.0, math.nan), "a"],
    "p_dl_dbm_range": [(10.0, 500.0), [1, 2, 3]],
    "n0_server_dbm_hz": [math.nan, 5.0],
    "n0_device_dbm_hz": [-300.0, None],
    "ref_gain_db": [10.0, math.nan],
    "pathloss_exponent": [-1.0, 11.0],
    "distance_range_m": [(0.0, 10.0), (500.0, 100.0), (1.0, math.inf)],
    "fading": ["rician", 1],
    "fading_redraw": ["never"],
    "t_verify_base_s": [-0.1, math.nan, 0.0],  # T0 = 0 would allow a zero-latency round
    "t_verify_per_device_s": [-1e-3],
    "t_verify_per_padded_token_s": [-1e-3, math.inf],
    "t_verify_per_token_s": [math.inf],
    "verify_batch": ["some"],
    "t_draft_ref_s": [0.0, -0.01],
    "draft_scale_range": [(1.15, 1.0), (0.0, 1.0)],
    "tasks": [(), ("a", 3), "humaneval"],
    "acceptance_rates": [(0.5,), (0.0, 0.5, 0.5, 0.5), (1.2, 0.5, 0.5, 0.5), (math.nan, 0.5, 0.5, 0.5)],
    "mode_policy": ["best", None],
    "n_saa": [0, 1.0],
    "saa_objective": ["median"],
    "episode_length": [1, 0, 2.0],
    "reward_scale": [0.0, -1.0, math.nan],
    "channel_dynamics": ["jakes", None],
    "carrier_hz": [0.0, -1.0, math.inf],
    "speed_range_mps": [(-1.0, 1.0), (2.0, 1.0), (0.0, math.nan)],
    "csi": ["perfect"],
    "alpha_dynamics": ["drift"],
    "alpha_observed": [1, "no"],
    "alpha_concentration": [0.0, -2.0, math.inf],
    "request_mean_tokens": [(200.0,), (200.0, 250.0, 0.5, 300.0), (200.0, 250.0, math.nan, 300.0)],
    "markov_stay": [-0.1, 1.5],
    "markov_delta": [-0.1, 1.01],
    "alpha_belief": ["kalman", None],
    "alpha_grid_size": [3, 8.0, 5000],
    "trace_source": ["", 3],
    "trace_drafter": ["medusa"],
    "trace_split": ["holdout"],
    "trace_history": [0, 65, 2.0],
    "trace_requests": [2, 10**7],
    "trace_seed": [-1, 1.5],
    "trace_drop_limit": [1, 3.0],
    "trace_posterior": [1, "yes", None],
}


def test_every_field_has_bad_values_listed():
    from msenv.config.deprecation import SAA_FIELDS

    assert set(BAD) == set(FIELD_ORDER) | set(SAA_FIELDS)


@pytest.mark.parametrize("field,value", [(f, v) for f, vs in BAD.items() for v in vs])
def test_invalid_value_names_field_and_value(field, value):
    with pytest.raises(ValueError) as e:
        SystemConfig().replace(**{field: value})
    msg = str(e.value)
    assert field in msg and "allowed" in msg
    shown = tuple(value) if isinstance(value, list) else value  # lists are taken as tuples
    assert repr(shown)[:10] in msg or field in ("acceptance_rates", "request_mean_tokens")


def test_defaults_match_spec():
    c = SystemConfig()
    assert c.payload_bits == 34_816
    assert c.num_devices == 20 and c.gamma_max == 20 and c.n_saa == 1000
    assert c.p_ul_w == pytest.approx(10 ** -1.5) and c.p_dl_w == pytest.approx(1.0)
    assert c.n0_server_w_hz == pytest.approx(10 ** -19.9)
    assert c.mode_policy == "optimal"


def test_presets_and_resolution():
    d = preset("deepseek-r1")
    assert (d.t_verify_base_s, d.t_verify_per_device_s, d.t_draft_ref_s) == (0.0693, 0.0091, 0.0196)
    assert d.acceptance_rates == (0.80, 0.84, 0.62, 0.66)
    q = preset("qwen2.5", num_devices=5)
    assert q.num_devices == 5 and q.t_verify_base_s == 0.0428
    with pytest.raises(ValueError, match="preset"):
        preset("llama")
    with pytest.raises(TypeError, match=r"SystemConfig.replace\(\) got an unexpected keyword argument 'foo'"):
        SystemConfig().replace(foo=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        resolve_config({"foo": 1})
    assert resolve_config({"preset": "deepseek-r1", "p_dl_dbm": 20}).p_dl_dbm == 20
    assert resolve_config("deepseek-r1") == d
    assert SystemConfig.from_dict(q.to_dict()) == q
    with pytest.raises(ValueError, match="config="):
        resolve_config(42)
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.num_devices = 3  # type: ignore[misc]


def test_every_field_is_documented_where_declared():
    """Each field's meaning is its ``#:`` comment in msenv/config/groups.py (and system.py), read
    back in declaration order (the configuration reference and the CLI help are generated from it)."""

    from msenv.config import field_docs

    docs = field_docs()
    assert list(docs) == list(FIELD_ORDER)
    assert [name for name, doc in docs.items() if len(doc) < 15] == []
    assert docs["fading"].startswith("[R]") and "reciprocal" in docs["fading"]
    assert "dBm" in docs["p_dl_dbm"] and "dBm" not in docs["num_devices"]


# ---------------------------------------------------------------------- a config per concern
def test_the_config_is_a_few_groups_and_every_field_keeps_its_flat_name():
    from msenv.config import GROUPS, RadioConfig

    top = [f.name for f in dataclasses.fields(SystemConfig)]
    assert len(top) <= 15 and set(GROUPS) <= set(top)
    cfg = SystemConfig()
    for name, group, _ in __import__("msenv.config", fromlist=["config_fields"]).config_fields():
        if group is not None:
            assert getattr(cfg, name) == getattr(getattr(cfg, group), name), name
    # flat keywords, a group, and a flat field beside its group all give the same config
    flat = SystemConfig(p_dl_dbm=20.0, episode_length=7, csi="decision")
    assert flat == SystemConfig(radio=RadioConfig(p_dl_dbm=20.0), episode_length=7, csi="decision")
    assert flat == SystemConfig(radio=RadioConfig(p_dl_dbm=10.0), p_dl_dbm=20.0, episode_length=7, csi="decision")
    assert flat == SystemConfig().replace(p_dl_dbm=20.0, episode_length=7, csi="decision")
    assert flat.radio.p_dl_dbm == 20.0 and flat.episode.episode_length == 7 and flat.dynamics.csi == "decision"
    assert flat.replace(radio={"p_dl_dbm": 10.0}).p_dl_dbm == 10.0
    with pytest.raises(TypeError, match="unexpected keyword argument 'p_dl'"):
        SystemConfig(p_dl=20.0)
    with pytest.raises(ValueError, match="radio"):
        SystemConfig(radio=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        flat.p_dl_dbm = 3.0


def test_saved_configs_of_0_5_load_and_save_in_their_format():
    """The committed agents' configs (saved by 0.5 as one flat dict of 44 fields) load, and
    ``to_dict`` writes their keys back, with the fields added since at their defaults; a config
    pickled by 0.5 (a flat ``__dict__``) unpickles."""
    import json
    from pathlib import Path

    from msenv.config.deprecation import SAA_FIELDS

    root = Path(__file__).resolve().parent.parent / "agents" / "pretrained"
    flat = [json.loads(p.read_text())["config"] for p in sorted(root.rglob("agent.json"))]
    flat = [c for c in flat if "preset" in c and "base" not in c]
    assert flat, "no 0.5 config among the committed agents"
    for data in flat:
        cfg = SystemConfig.from_dict(data)
        assert set(data) <= set(cfg.to_dict()) == set(FIELD_ORDER) | set(SAA_FIELDS)  # (the 0.5 format)
        assert all(cfg.to_dict()[k] == getattr(SystemConfig(), k) for k in set(FIELD_ORDER) - set(data))
        assert all(cfg.to_dict()[k] == (tuple(v) if isinstance(v, list) else v) for k, v in data.items())
    old = object.__new__(SystemConfig)
    old.__setstate__(dict(SystemConfig(p_dl_dbm=12.0).to_dict()))  # what unpickling a 0.5 config does
    assert old == SystemConfig(p_dl_dbm=12.0) and hash(old) == hash(SystemConfig(p_dl_dbm=12.0))
