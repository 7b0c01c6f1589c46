"""The layout a config fixes, derived in one place: spaces, agents and reset options read it.

A reset option is refused exactly when it changes the layout — checked for every field of every
registered id against a fresh env built with the changed config."""

from __future__ import annotations

import dataclasses
import typing

import gymnasium as gym
import numpy as np
import pytest

import msenv
from msenv import layout_of
from msenv.config import (
    ALPHA_BELIEFS,
    ALPHA_DYNAMICS,
    CHANNEL_DYNAMICS,
    CSI_MODES,
    FADING_MODELS,
    FADING_REDRAW,
    MODE_POLICIES,
    PRESETS,
    SAA_OBJECTIVES,
    VERIFY_BATCH,
    CellConfig,
    SystemConfig,
    config_fields,
)
from msenv.config.cells import K_LAWS
from msenv.config.deprecation import SAA_FIELDS

CHOICES = (ALPHA_BELIEFS, ALPHA_DYNAMICS, CHANNEL_DYNAMICS, CSI_MODES, FADING_MODELS, FADING_REDRAW, MODE_POLICIES,
           tuple(PRESETS), SAA_OBJECTIVES, VERIFY_BATCH, K_LAWS)


def _types() -> dict[str, object]:
    """Every flat field's declared type (SystemConfig's groups and the generator's own)."""
    out = {name: field.type for name, _, field in config_fields()}
    out.update({f.name: f.type for f in dataclasses.fields(CellConfig) if f.name != "base"})
    return out


TYPES = _types()


def _candidates(name: str, value):
    """Other values of the field's type to try, in order (the first valid one is used)."""
    kind = str(TYPES[name])
    if isinstance(value, bool):
        return [not value]
    if name == "trace_source":
        from msenv.traces import PRESETS

        return [p for p in PRESETS if p != value]
    if isinstance(value, str):
        return [c for group in CHOICES if value in group for c in group if c != value] + [value + "x"]
    if isinstance(value, int):
        return [value + 1, value - 1]
    if isinstance(value, float):
        return [value * 0.9 if value else 0.5, value * 1.1 + 0.01]
    if value is None:
        return [(10.0, 20.0), (1.0, 2.0)]
    if isinstance(value, tuple) and value and isinstance(value[0], str):
        return [("other",) + value[1:]]
    if isinstance(value, tuple) and "int" in kind:
        return [(value[0], value[1] - 1), (value[0] + 1, value[1])]
    if isinstance(value, tuple):
        return [tuple(0.95 * x for x in value), tuple(1.05 * x for x in value)]
    raise AssertionError(f"no candidate for {name}={value!r}")


def _changed(config, name, value):
    """``config`` with field ``name`` changed to a valid other value, or None when none is valid."""
    for cand in _candidates(name, value):
        try:
            return cand, config.replace(**{name: cand})
        except (ValueError, TypeError):
            continue
    return None, None


IDS = list(msenv.ENV_IDS)


@pytest.mark.parametrize("env_id", IDS)
def test_every_field_may_change_at_reset_or_is_refused_by_the_layout(env_id):
    """For every field: the reset option is refused, in one line naming the field, exactly when an
    env built with the changed config has other spaces or another observation layout; otherwise
    the env plays the changed config from that episode on, its spaces as they were."""
    config = msenv.env_config(env_id)
    refused = allowed = 0
    for name, value in config.fields().items():
        if name in SAA_FIELDS:
            continue  # deprecated: the SAA controllers' settings, which no env reads
        alt, new = _changed(config, name, value)
        if new is None:
            continue  # no valid other value alone (e.g. a field the generator draws)
        env = gym.make(env_id).unwrapped
        spaces = (env.observation_space, env.action_space)
        try:
            fresh = gym.make(env_id, **{name: alt}).unwrapped
        except ValueError:  # valid alone as a config, but no env plays it (e.g. γ_max at a trace bank's cap)
            with pytest.raises(ValueError) as why:
                env.reset(seed=0, options={"config": {name: alt}})
            assert name in str(why.value) or str(alt) in str(why.value), why.value
            continue
        differs = (fresh.observation_space, fresh.action_space) != spaces or layout_of(new) != layout_of(config)
        if differs:
            with pytest.raises(ValueError) as err:
                env.reset(seed=0, options={"config": {name: alt}})
            msg = str(err.value)
            assert f"config.{name}=" in msg and "\n" not in msg and "layout" in msg, msg
            refused += 1
        else:
            obs, _ = env.reset(seed=0, options={"config": {name: alt}})
            assert (env.observation_space, env.action_space) == spaces and obs in env.observation_space
            assert env.config.fields()[name] == alt
            env.step(env.action_space.sample())
            allowed += 1
    assert refused >= 2 and allowed >= 20, (refused, allowed)  # gamma_max and the slots, at least


def test_the_dynamic_id_refuses_a_reset_that_drops_its_chain_features():
    """``alpha_dynamics="fixed"`` on MultiSpin-Dynamic-v0 would turn its observation from 162 entries
    into 142: refused in one line naming the field; the vector env refuses it too."""
    env = gym.make("msenv/MultiSpin-Dynamic-v0")
    assert env.observation_space.shape == (162,)
    with pytest.raises(ValueError, match=r"^reset option config\.alpha_dynamics='fixed' is not allowed: it changes the "
                                         r"observation or action layout \(current 'markov'\); make a new env instead$"):
        env.reset(options={"config": {"alpha_dynamics": "fixed"}})
    venv = gym.make_vec("msenv/MultiSpin-Dynamic-v0", 2, vectorization_mode="vector_entry_point")
    with pytest.raises(ValueError, match=r"config\.alpha_dynamics='fixed'"):
        venv.reset(options={"config": {"alpha_dynamics": "fixed"}})
    obs, _ = env.reset(options={"config": {"markov_stay": 0.8}})  # the layout stays: allowed
    assert obs.shape == (162,) and env.unwrapped.config.markov_stay == 0.8


def test_the_layout_is_the_spaces_and_the_agents_read_it():
    """Every shell's spaces are its layout's; the padded layout is the cell's plus a mask entry per
    row and the size entry; names say what each entry is."""
    for env_id in IDS:
        env = gym.make(env_id).unwrapped
        lay = layout_of(env.config)
        assert env.observation_space.shape == (lay.obs_size,) == (lay.slots * lay.row + lay.n_globals,)
        np.testing.assert_array_equal(env.action_space.nvec, lay.action_nvec)
        obs, _ = env.reset(seed=3)
        assert obs.shape == (lay.obs_size,)
    cells = msenv.env_config("msenv/MultiSpin-Cells-v0")
    single, padded = layout_of(cells.base), layout_of(cells)
    assert padded.device == single.device + ("device_mask",) and padded.globals == single.globals + ("cell_size",)
    assert padded.slots == cells.k_max and padded.masked and not single.masked
    assert layout_of(SystemConfig()).device == ("alpha", "draft_speed", "g_ul", "g_dl", "beta")
    hidden = msenv.env_config("msenv/MultiSpin-Dynamic-v0")
    assert layout_of(hidden).device == ("alpha_predictive_mean", "draft_speed", "g_ul", "g_dl", "beta", "alpha_sd",
                                        "p_hard", "doppler")


def test_types_are_known_for_every_field():
    assert set(TYPES) | set(SAA_FIELDS) >= set(msenv.env_config("msenv/MultiSpin-Cells-v0").fields())
    assert typing.get_type_hints  # the declared types are strings under postponed evaluation
