"""Acceptance replayed from traces (msenv.engine.kinds.traces, model §12): against a direct replay of
hand-made banks, written in both file formats."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import msenv
from msenv.engine.functional import engine_for
from msenv.traces import TraceBank, save_bank

ID = "msenv/MultiSpin-Traces-v0"


def _bank(rng, n=6, cap=16, drafter="eagle", lengths=None) -> TraceBank:
    lengths = lengths or [int(x) for x in rng.integers(3, 40, n)]
    reqs = [rng.integers(1, cap + 1, size=length) for length in lengths]
    return TraceBank.from_requests(reqs, [f"r{i}" for i in range(len(reqs))], cap, drafter, "hand-made")


def _env(path, k=4, **over):
    return gym.make(ID, trace_source=str(path), trace_split="all", num_devices=k, episode_length=60, **over).unwrapped


def _replay(bank, env, actions):
    """Each round's tokens, rejections and request ends by a direct replay of the bank from the
    env's first state (its requests, positions and pool), independent of the compiled step."""
    s = env.state
    req, pos = s.request[0].copy(), s.position[0].copy()
    pool, started = s.request_pool[0].copy(), np.ones(len(req), int)
    out = []
    for gamma in actions:
        toks, rej, done = [], [], []
        for i, g in enumerate(gamma):
            seq = bank.request(int(req[i]))
            f = int(seq[pos[i]])
            toks.append(min(f, g + 1, len(seq) - pos[i]))
            rej.append(f <= g)
            pos[i] += min(f, g + 1)
            done.append(pos[i] >= len(seq))
            if done[-1]:
                req[i], pos[i] = pool[i, started[i] - 1], 0
                started[i] += 1
        out.append((np.array(toks), np.array(rej), np.array(done)))
    return out


@pytest.mark.parametrize("suffix", [".npz", ".jsonl"])
def test_replay_is_exact_on_a_hand_made_bank(tmp_path, suffix):
    rng = np.random.default_rng(0)
    bank = _bank(rng)
    path = save_bank(tmp_path / f"bank{suffix}", bank)
    env = _env(path)
    env.reset(seed=3)
    actions = rng.integers(0, env.config.gamma_max + 1, (40, 4))
    expected = _replay(bank, env, actions)
    switches = 0
    for gamma, (toks, rej, done) in zip(actions, expected):
        _, reward, _, _, info = env.step(gamma)
        np.testing.assert_array_equal(info["tokens"], toks)
        np.testing.assert_array_equal(info["rejected"], rej & (gamma > 0))
        np.testing.assert_array_equal(info["request_done"], done)
        assert reward == pytest.approx(toks.sum() / info["latency"])
        switches += int(done.sum())
    assert switches >= 3  # the episode saw request switches


def test_a_request_ends_at_its_last_token_and_the_next_one_starts_the_next_round(tmp_path):
    bank = TraceBank.from_requests([[5, 4, 3, 2, 1], [1, 1, 1, 1, 1, 1, 1, 1]], ["a", "b"], 16, "eagle", "hand")
    env = _env(save_bank(tmp_path / "b.npz", bank), k=1)
    env.reset(seed=0)
    s = env.state
    seq = bank.request(int(s.request[0, 0]))
    left = len(seq) - int(s.position[0, 0])
    _, _, _, _, info = env.step(np.array([12]))  # a long draft: never past the request's end
    assert info["tokens"][0] == min(seq[s.position[0, 0]], left)
    if info["request_done"][0]:
        assert env.state.position[0, 0] == 0 and env.state.history_rounds[0, 0] == 0


def test_the_observation_shows_the_past_never_the_future(tmp_path):
    """Two banks equal up to a position and different after it: every observation before a device
    reaches that position is the same; the oracle context alone shows the coming F."""
    head = [3, 2, 1, 4, 3, 2, 1, 2, 1, 5, 4, 3, 2, 1]
    a = TraceBank.from_requests([head + [1] * 20], ["x"], 16, "eagle", "a")
    b = TraceBank.from_requests([head + [9] * 20], ["x"], 16, "eagle", "b")
    ea, eb = _env(save_bank(tmp_path / "a.npz", a), k=1), _env(save_bank(tmp_path / "b.npz", b), k=1)
    oa, _ = ea.reset(seed=5, options={"config": {}})
    ob, _ = eb.reset(seed=5)
    # the first request starts at a random position: restart both at the head's start
    for env in (ea, eb):
        env.state.position[0, 0] = 0
    while ea.state.position[0, 0] < len(head) - 5:
        np.testing.assert_array_equal(ea.unwrapped._engine.observe(ea.state), eb.unwrapped._engine.observe(eb.state))
        assert ea.context.first_rejection is None
        f = ea.oracle_context.first_rejection[0]
        assert f == head[ea.state.position[0, 0]]
        ea.step(np.array([2]))
        eb.step(np.array([2]))


def test_the_history_entries_are_the_last_rounds_newest_first(tmp_path):
    rng = np.random.default_rng(2)
    bank = _bank(rng, n=3, lengths=[200, 200, 200])
    env = _env(save_bank(tmp_path / "h.npz", bank), k=2, trace_history=3)
    env.reset(seed=1)
    lay = msenv.layout_of(env.config)
    played = []
    for t in range(5):
        gamma = np.array([t % 4 + 1, 3])
        obs, _, _, _, info = env.step(gamma)
        played.append((gamma[0], info["accepted"][0], info["rejected"][0]))
        if info["request_done"][0]:
            played = []
    row = obs[: lay.row]
    names = lay.device
    for h, (g, acc, rej) in enumerate(reversed(played[-3:]), start=1):
        assert row[names.index(f"h{h}_gamma")] == pytest.approx(g / 12)
        assert row[names.index(f"h{h}_accepted")] == pytest.approx(acc / 12)
        assert row[names.index(f"h{h}_outcome")] == (1.0 if rej else -1.0)


def test_the_batched_vector_env_equals_single_envs(tmp_path):
    """The batched vector env plays exactly what Gymnasium's SyncVectorEnv of single envs plays,
    across autoresets: observations, rewards, ends and the trace's info."""
    import functools

    bank = _bank(np.random.default_rng(4), n=8)
    path = save_bank(tmp_path / "v.npz", bank)
    cfg = msenv.env_config(ID, trace_source=str(path), trace_split="all", num_devices=3, episode_length=4)
    vec = msenv.make_vector_env(cfg, 3)
    ref = gym.vector.SyncVectorEnv([functools.partial(msenv.MultiSpinEnv, cfg) for _ in range(3)])
    np.testing.assert_array_equal(vec.reset(seed=11)[0], ref.reset(seed=11)[0])
    rng = np.random.default_rng(0)
    for _ in range(13):
        act = rng.integers(0, cfg.gamma_max + 1, (3, 3))
        a, b = vec.step(act), ref.step(act)
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        live = a[4]["_tokens"]
        for key in ("tokens", "acc_len", "request_done"):
            if live.any():
                np.testing.assert_array_equal(a[4][key][live], b[4][key][live])


def test_bad_banks_and_settings_are_answered_in_one_line(tmp_path):
    bank = _bank(np.random.default_rng(1), cap=16)
    path = save_bank(tmp_path / "c.npz", bank)
    with pytest.raises(ValueError,
                       match=r"^config field gamma_max=16 is invalid for trace bank .*c\.npz: its cap is 16"):
        _env(path, gamma_max=16)
    with pytest.raises(ValueError, match=r"trace_source='nowhere' is invalid; allowed: a preset"):
        gym.make(ID, trace_source="nowhere")
    gone = save_bank(tmp_path / "gone.npz", bank)
    _env(gone)
    gone.unlink()  # the file vanishes mid-run: the next engine that needs it says so in one line
    with pytest.raises(ValueError) as err:
        engine_for(msenv.env_config(ID, trace_source=str(gone), trace_split="test"))
    assert str(gone) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match="trace_source='x' with|'iid' with trace_source"):
        msenv.SystemConfig(trace_source="x", channel_dynamics="gauss_markov")
