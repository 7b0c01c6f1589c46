"""The cell generator (msenv.envs.cells): replay of the single-cell env, padding, the generator's
laws, bad settings, and the library helpers (check_env, make_vec, PettingZoo)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

import msenv
from msenv import MultiSpinEnv
from msenv.engine.cells import SPEED_FEATURE
from msenv.engine.functional import device_features, layout
from msenv.envs.cells import CellConfig, MultiSpinCellsEnv, cell_rng, draw_cell, resolve_cells, size_feature

HETERO = msenv.resolve_config(msenv.ENV_IDS["msenv/MultiSpin-Hetero-v0"], episode_length=6)


def test_a_fixed_cell_replays_the_single_cell_env():
    """k_range (K, K), k_max = K, spread None: the same rounds as MultiSpinEnv on the same seed;
    the observation is its rows (speed slot re-expressed), the mask and the size."""
    env = MultiSpinCellsEnv(base=HETERO, k_range=(7, 7), k_max=7, draft_scale_max_range=None)
    single = MultiSpinEnv(HETERO.replace(num_devices=7))
    rng = np.random.default_rng(0)
    for seed in (3, 11):
        obs, info = env.reset(seed=seed)
        so, _ = single.reset(seed=seed)
        assert info == {"num_devices": 7}
        f = device_features(HETERO)
        for _ in range(6):
            rows = obs[: 7 * (f + 1)].reshape(7, f + 1)
            plain = so[: 7 * f].reshape(7, f)
            speed = layout(HETERO).device.index(SPEED_FEATURE)
            keep = [i for i in range(f) if i != speed]
            np.testing.assert_array_equal(rows[:, keep], plain[:, keep])
            scale = single.state.t_draft[0] / HETERO.t_draft_ref_s
            np.testing.assert_allclose(rows[:, speed], np.tanh(scale - 1.0), rtol=1e-6)
            assert np.all(rows[:, -1] == 1.0) and obs[-1] == pytest.approx(np.tanh(np.log(7) / 4), rel=1e-6)
            a = rng.integers(0, 21, 7)
            obs, r, _, trunc, i1 = env.step(a)
            so, r2, _, _, i2 = single.step(a)
            assert r == r2 and i1["latency"] == i2["latency"]
            np.testing.assert_array_equal(i1["tokens"], i2["tokens"])
        assert trunc


def test_padded_slots_never_change_the_round():
    """Two copies on the same seed, different entries in the padded slots: identical rewards,
    info and observations; padded rows are zero (mask 0)."""
    a, b = MultiSpinCellsEnv(k_range=(3, 9), k_max=12), MultiSpinCellsEnv(k_range=(3, 9), k_max=12)
    rng = np.random.default_rng(1)
    for seed in range(4):
        oa, ia = a.reset(seed=seed)
        ob, _ = b.reset(seed=seed)
        k = ia["num_devices"]
        f = device_features(a.config.base) + 1
        assert np.all(oa[k * f: 12 * f] == 0.0) and np.all(oa[: k * f].reshape(k, f)[:, -1] == 1.0)
        for _ in range(5):
            act = rng.integers(0, 21, 12)
            other = act.copy()
            other[k:] = rng.integers(0, 21, 12 - k)
            oa, ra, _, _, xa = a.step(act)
            ob, rb, _, _, xb = b.step(other)
            np.testing.assert_array_equal(oa, ob)
            assert ra == rb and xa["latency"] == xb["latency"] and xa["num_devices"] == k
            assert len(xa["tokens"]) == 12 and not xa["tokens"][k:].any() and not xa["modes"][k:].any()
            np.testing.assert_array_equal(xa["tokens"], xb["tokens"])


def test_generator_laws():
    """K ~ U{lo..hi} (χ²), the spread s ~ U[lo, hi] (KS), device scales ~ U[1, s] (KS on
    (scale − 1)/(s − 1)), budgets ~ the base's ranges (KS)."""
    cells = resolve_cells(dict(preset="qwen2.5", p_dl_dbm_range=(10.0, 30.0)), k_range=(4, 9), k_max=9,
                          draft_scale_max_range=(1.2, 2.0))
    n = 3000
    drawn = [draw_cell(cells, cell_rng(s)) for s in range(n)]
    ks = np.array([c.num_devices for c in drawn])
    counts = np.bincount(ks, minlength=10)[4:10]
    assert counts.sum() == n and stats.chisquare(counts).pvalue > 1e-3
    spread = np.array([c.draft_scale_range[1] for c in drawn])
    assert stats.kstest((spread - 1.2) / 0.8, "uniform").pvalue > 1e-3
    env = MultiSpinCellsEnv(cells)
    u, p_dl = [], []
    for s in range(400):
        env.reset(seed=s)
        hi = env.cell.draft_scale_range[1]
        u.extend((env.state.t_draft[0] / env.cell.t_draft_ref_s - 1.0) / (hi - 1.0))
        p_dl.append(10 * np.log10(env.state.p_dl_w[0]) + 30)
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    assert stats.kstest((np.array(p_dl) - 10.0) / 20.0, "uniform").pvalue > 1e-3
    # seeds: the same seed, the same cell and trajectory; reset without a seed continues reproducibly
    e1, e2 = MultiSpinCellsEnv(cells), MultiSpinCellsEnv(cells)
    for e in (e1, e2):
        e.reset(seed=5)
    o1, i1 = e1.reset()
    o2, i2 = e2.reset()
    assert i1 == i2 and np.array_equal(o1, o2)


def test_log_uniform_k_law():
    """k_law="log_uniform": P(K = k) ∝ 1/k over k_range (χ² against those probabilities), both
    ends reachable; the uniform law's stream is left as it was (golden trajectories)."""
    cells = resolve_cells(dict(preset="qwen2.5"), k_range=(3, 12), k_max=12, k_law="log_uniform")
    n = 6000
    ks = np.array([draw_cell(cells, cell_rng(s)).num_devices for s in range(n)])
    counts = np.bincount(ks, minlength=13)[3:13]
    p = 1.0 / np.arange(3, 13)
    assert counts.sum() == n and counts.min() > 0
    assert stats.chisquare(counts, n * p / p.sum()).pvalue > 1e-3
    assert resolve_cells(dict(preset="qwen2.5"), k_range=(7, 7), k_max=7, k_law="log_uniform") \
        .replace(k_range=(7, 7)).k_law == "log_uniform"
    assert {draw_cell(resolve_cells(None, k_range=(7, 7), k_max=7, k_law="log_uniform"), cell_rng(s)).num_devices
            for s in range(20)} == {7}
    assert CellConfig.from_dict(cells.to_dict()) == cells


@pytest.mark.parametrize("kw,match", [
    (dict(k_law="loguniform"), "k_law"), (dict(k_law=None), "k_law"),
    (dict(k_range=(10, 5)), "k_range"), (dict(k_range=(0, 5)), "k_range"), (dict(k_range=(2.5, 5)), "k_range"),
    (dict(k_range=(5, 60), k_max=50), "k_max"), (dict(k_max=True), "k_max"),
    (dict(draft_scale_max_range=(0.5, 2.0)), "draft_scale_max_range"),
    (dict(draft_scale_max_range=(2.0, 1.5)), "draft_scale_max_range"),
    (dict(draft_scale_max_range=(1.0, float("nan"))), "draft_scale_max_range"),
    (dict(num_devices=30), "k_range"), (dict(p_dl_dbm_range=(30.0, 10.0)), "p_dl_dbm_range"),
])
def test_bad_generator_settings_raise_value_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        MultiSpinCellsEnv(**kw)


def test_unknown_keywords_and_locked_reset_options():
    with pytest.raises(TypeError, match="unexpected keyword argument 'k_min'"):
        MultiSpinCellsEnv(k_min=3)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        resolve_cells(None, bogus=1)
    env = MultiSpinCellsEnv(k_range=(3, 5), k_max=5)
    with pytest.raises(ValueError, match="k_max"):
        env.reset(seed=0, options={"config": {"k_max": 8}})
    env.reset(seed=0, options={"config": {"k_range": [4, 4], "p_dl_dbm": 12.0}})
    assert env.num_devices == 4 and env.cell.p_dl_dbm == 12.0
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match=r"\[0, 20\]"):
        env.step(np.full(5, 21))
    assert CellConfig.from_dict(env.config.to_dict()) == env.config


def test_library_checks_make_vec_and_extreme_cells(display):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = gym.make("msenv/MultiSpin-Cells-v0", episode_length=4)
    check_env(env.unwrapped)
    sb3_check(env.unwrapped)
    vec = gym.make_vec("msenv/MultiSpin-Cells-v0", 3, vectorization_mode="vector_entry_point", k_range=(2, 6),
                       k_max=6, episode_length=3)
    cells = msenv.env_config("msenv/MultiSpin-Cells-v0", k_range=(2, 6), k_max=6, episode_length=3)
    singles = [MultiSpinCellsEnv(cells) for _ in range(3)]
    obs, _ = vec.reset(seed=[0, 1, 2])
    for i, e in enumerate(singles):
        np.testing.assert_array_equal(obs[i], e.reset(seed=i)[0])
    act = np.full((3, 6), 3)
    obs, rew, _, _, _ = vec.step(act)
    for i, e in enumerate(singles):
        o, r, *_ = e.step(act[i])
        assert r == rew[i] and np.array_equal(o, obs[i])
    shown = MultiSpinCellsEnv(k_range=(3, 3), k_max=8, render_mode="rgb_array")
    shown.reset(seed=0)
    shown.step(np.full(8, 4))
    assert shown.render().shape == (360, 640, 3)
    big = MultiSpinCellsEnv(k_range=(1, 1), k_max=200, p_dl_dbm=-20.0, episode_length=3)  # one device, weak cell
    o, _ = big.reset(seed=0)
    o, r, *_ = big.step(np.full(200, 20))
    assert big.observation_space.contains(o) and np.isfinite(r) and r > 0
    assert size_feature(1) == 0.0 and 0 < size_feature(10_000) < 1


@pytest.mark.filterwarnings("ignore:No agents present:UserWarning")  # the padded slots never join an episode
def test_pettingzoo_cells_variant():
    from pettingzoo.test import parallel_api_test

    from msenv.envs.marl import MultiSpinCellsParallelEnv

    pz = MultiSpinCellsParallelEnv(k_range=(2, 5), k_max=5, episode_length=6)
    parallel_api_test(pz, num_cycles=20)
    obs, _ = pz.reset(seed=4)
    single = MultiSpinCellsEnv(k_range=(2, 5), k_max=5, episode_length=6)
    so, info = single.reset(seed=4)
    assert len(pz.agents) == info["num_devices"] == len(obs) and len(pz.possible_agents) == 5
    _, rew, *_ = pz.step({a: 2 for a in pz.agents})
    _, r, *_ = single.step(np.full(5, 2))
    assert all(v == r for v in rew.values())
    assert pz.state().shape == single.observation_space.shape


@pytest.mark.parametrize("mode,base", [("next_step", {}), ("same_step", {}),
                                       ("next_step", dict(channel_dynamics="gauss_markov", csi="decision",
                                                          speed_range_mps=(0.5, 1.5), alpha_dynamics="markov",
                                                          alpha_observed=False))])
def test_the_batched_vector_env_equals_the_stepped_one_bit_for_bit(mode, base):
    """Every sub-env's round in one padded batch (the paper scenario: one kernel call; the model
    §11 dynamics: each row by its cell's engine) gives exactly what Gymnasium's SyncVectorEnv of
    single cell envs gives: observations, rewards, ends and the per-round info (in same-step mode
    SyncVectorEnv moves the last round's info to final_info; the batched env keeps it in info, so
    only the shared keys are compared)."""
    from msenv.envs.cells_vector import MultiSpinCellsSyncVectorEnv, MultiSpinCellsVectorEnv

    cells = CellConfig().replace(k_range=(1, 12), k_max=12, episode_length=4, p_dl_dbm_range=(0.0, 30.0), **base)
    fast, slow = MultiSpinCellsVectorEnv(5, cells, autoreset_mode=mode), MultiSpinCellsSyncVectorEnv(5, cells,
                                                                                                     autoreset_mode=mode)
    o1, i1 = fast.reset(seed=7)
    o2, i2 = slow.reset(seed=7)
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(i1["num_devices"], i2["num_devices"])
    rng = np.random.default_rng(0)
    ends = 0
    for t in range(19):
        act = rng.integers(0, cells.gamma_max + 1, (5, 12))
        a, b = fast.step(act), slow.step(act)
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        ends += int(b[3].sum())
        for key, val in b[4].items():
            if key in ("final_info", "_final_info") or (mode == "same_step" and key.endswith("num_devices")):
                continue
            if key == "final_obs":
                for u, v in zip(a[4][key], val):
                    assert (u is None) == (v is None) and (v is None or np.array_equal(u, v))
                continue
            assert a[4][key].dtype == val.dtype, key
            np.testing.assert_array_equal(a[4][key], val, err_msg=f"{mode} step {t} info[{key!r}]")
    assert ends >= 5  # every sub-env crossed an episode end
    # padded slots: any entries there change nothing
    fast.reset(seed=1)
    k = fast.num_devices
    act = np.full((5, 12), 3)
    junk = act.copy()
    for i in range(5):
        junk[i, k[i]:] = cells.gamma_max
    o_a, r_a, *_ = fast.step(act)
    fast.reset(seed=1)
    o_b, r_b, *_ = fast.step(junk)
    np.testing.assert_array_equal(o_a, o_b)
    np.testing.assert_array_equal(r_a, r_b)


def test_make_vec_and_sb3_take_the_batched_cells_env():
    from agents.envs import make_vec_env
    from msenv.envs.cells_vector import MultiSpinCellsSyncVectorEnv, MultiSpinCellsVectorEnv

    vec = gym.make_vec("msenv/MultiSpin-Cells-v0", 2, vectorization_mode="vector_entry_point")
    assert isinstance(vec, MultiSpinCellsVectorEnv)
    dyn = gym.make_vec("msenv/MultiSpin-Cells-v0", 2, vectorization_mode="vector_entry_point",
                       channel_dynamics="gauss_markov")
    assert isinstance(dyn, MultiSpinCellsVectorEnv)  # every engine pads its cells
    drawn = gym.make_vec("msenv/MultiSpin-Cells-v0", 2, vectorization_mode="vector_entry_point",
                         render_mode="rgb_array")
    assert isinstance(drawn, MultiSpinCellsSyncVectorEnv)
    with pytest.raises(ValueError, match="num_envs=0"):
        MultiSpinCellsVectorEnv(0)
    with pytest.raises(ValueError, match="autoreset_mode='disabled'"):
        MultiSpinCellsVectorEnv(2, autoreset_mode="disabled")
    with pytest.raises(TypeError, match="'foo'"):
        MultiSpinCellsVectorEnv(2, foo=1)
    v = MultiSpinCellsVectorEnv(2)
    v.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions of shape \(2, 49\)"):
        v.step(np.zeros((2, 49), np.int64))
    # SB3: the same transitions as the DummyVecEnv of Monitor-wrapped single envs
    cells = CellConfig().replace(k_range=(1, 9), k_max=9, episode_length=3)
    a, b = make_vec_env(cells, 3, 11, "batched"), make_vec_env(cells, 3, 11, "dummy")
    assert type(a).__name__ == "SB3VecEnv" and type(b).__name__ == "DummyVecEnv"
    np.testing.assert_array_equal(a.reset(), b.reset())
    rng = np.random.default_rng(2)
    for _ in range(7):
        act = rng.integers(0, cells.gamma_max + 1, (3, 9))
        (o1, r1, d1, i1), (o2, r2, d2, i2) = a.step(act), b.step(act)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(d1, d2)
        for x, y in zip(i1, i2):
            for key in ("episode_throughput", "mean_gamma", "share_ul", "share_dl", "share_accepted"):
                assert x[key] == pytest.approx(y[key], rel=1e-12)
            if "terminal_observation" in y:
                np.testing.assert_array_equal(x["terminal_observation"], y["terminal_observation"])
