"""The greedy SAA on the Bayes filter of the fitted trace model (baselines.bayes_trace): the
posterior against a brute-force enumeration of hidden paths, the predictive survival against Monte
Carlo draws of the model's own generator and against a large bank, one-line errors, full episodes."""

from __future__ import annotations

import dataclasses
import itertools
import json

import gymnasium as gym
import numpy as np
import pytest

import msenv
from baselines import make_controller
from baselines.bayes_trace import TraceFilterSAA
from evaluation.harness import Entry, evaluate, play
from msenv.traces import PRESETS, fitted_model, preset_bank, save_bank
from msenv.traces.model import DRAWS_PER_POSITION, FREE_DEPTH, fill_bank

ID = "msenv/MultiSpin-Traces-v0"
#: a history of one request: (γ, accepted A, rejected, tokens N = A + 1) per round — a rejection at
#: A = 1, one at A = 6 (A − 1 ≥ FREE_DEPTH: the horizon may have stopped the run), a fully accepted
#: round, a rejected first token and a round without a draft
HISTORY = [(3, 1, True, 2), (7, 6, True, 7), (2, 2, False, 3), (2, 0, True, 1), (0, 0, False, 1)]


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _logit(p):
    return np.log(p / (1.0 - p))


def _context(source, k, **over):
    env = gym.make(ID, trace_source=source, num_devices=k, **over).unwrapped
    env.reset(seed=0)
    return env.round_context(False)


def _info(rows, done=None):
    """A round's info from per-device (γ, A, rejected, N) rows."""
    g, a, r, n = (np.array(c) for c in zip(*rows))
    info = {"accepted": a, "rejected": r.astype(bool), "tokens": n}
    if done is not None:
        info["request_done"] = np.asarray(done, bool)
    return info, g


def _filtered(name, levels, history, k=2):
    """A controller with levels ``levels`` after device 0 played ``history`` (device 1 never drafts)."""
    ctrl = TraceFilterSAA(preset=name, levels=levels, n_samples=64)
    ctrl.reset(0)
    ctrl.act(_context(name, k))
    for row in history:
        info, g = _info([row] + [(0, 0, False, 1)] * (k - 1))
        ctrl.observe(g, info)
    return ctrl


def _brute_posterior(params, cap, z, w, history):
    """P(z, S at the next position | history) by enumerating every hidden path S_0 … S_n and, per
    round, every draw of F_p, C_{p+1} … C_{p+γ} and of the horizon, acc_len from its definition."""
    n = sum(row[3] for row in history)
    paths = np.array(list(itertools.product([0, 1], repeat=n + 1)))  # [P, n + 1]: 1 = high
    post = np.zeros((len(z), 2))
    tau = params.tail
    for gi, zz in enumerate(z):
        share = _sig(_logit(params.high_share) + params.high_spread * zz)
        move = 1.0 - _sig(_logit(params.stay) + params.stay_spread * zz)
        up, down = move * share, move * (1.0 - share)
        f = _sig(_logit(np.array([params.first_low, params.first_high])) + params.level_spread * zz)
        c = _sig(_logit(np.array([params.cont_low, params.cont_high])) + params.level_spread * zz)
        weight = np.where(paths[:, 0] == 1, share, 1.0 - share)
        for q in range(1, n + 1):
            a, b = paths[:, q - 1], paths[:, q]
            weight = weight * np.where(a == 1, np.where(b == 1, 1 - down, down), np.where(b == 1, up, 1 - up))
        p = 0
        for gamma, acc_a, rej, tokens in history:
            assert p + gamma <= n  # the enumerated draws lie on the enumerated path
            like = np.zeros(len(paths))
            for bits in itertools.product([0, 1], repeat=gamma + 1):
                prob = np.ones(len(paths))
                for j, bit in enumerate(bits):
                    pr = (f if j == 0 else c)[paths[:, p + j]]
                    prob = prob * (pr if bit else 1 - pr)
                run = next((j for j, bit in enumerate(bits[1:]) if not bit), gamma)  # R, capped at γ
                for h, ph in ([(FREE_DEPTH + k, tau ** k * (1 - tau)) for k in range(gamma + 2)]
                              + [(99, tau ** (gamma + 2))]):
                    acc = 1 if not bits[0] else min(cap, 2 + min(run, h))
                    if (min(acc - 1, gamma), acc <= gamma) == (acc_a, rej):
                        like += prob * ph
            weight = weight * like  # a round's event is a function of its own positions' draws only
            p += tokens
        for s in (0, 1):
            post[gi, s] = w[gi] * weight[paths[:, n] == s].sum()
    return post / post.sum()


@pytest.mark.slow
def test_the_posterior_is_the_brute_force_enumeration_of_hidden_paths():
    ctrl = _filtered("cnn-eagle", 2, HISTORY)  # cnn-eagle: τ = 0.77, so the horizon's term matters
    m = ctrl.model
    expected = _brute_posterior(PRESETS["cnn-eagle"].params, PRESETS["cnn-eagle"].cap, m.z, m.prior.sum(axis=1),
                                HISTORY)
    np.testing.assert_allclose(ctrl.belief[0], expected, rtol=1e-10, atol=1e-14)
    # the device that never drafted learned nothing: the chain's stationary law is the prior
    np.testing.assert_allclose(ctrl.belief[1], m.prior, rtol=1e-12)
    assert np.abs(expected - m.prior).sum() > 0.1  # the history moved the belief
    # ... and the horizon's term of the rejection at A = 6 matters: without a horizon it would differ
    no_horizon = dataclasses.replace(PRESETS["cnn-eagle"].params, tail=1.0)
    assert np.abs(_brute_posterior(no_horizon, PRESETS["cnn-eagle"].cap, m.z, m.prior.sum(axis=1), HISTORY)
                  - expected).sum() > 0.01


def test_a_request_end_resets_the_device_to_the_prior():
    ctrl = _filtered("cnn-ngram", 24, HISTORY[:2])
    assert not np.allclose(ctrl.belief[0], ctrl.model.prior)
    info, g = _info([(2, 1, True, 2), (1, 1, False, 2)], done=[True, False])
    before = ctrl.belief[1].copy()
    ctrl.observe(g, info)
    np.testing.assert_array_equal(ctrl.belief[0], ctrl.model.prior)
    assert not np.allclose(ctrl.belief[1], before)


@pytest.mark.parametrize("name,history", [("cnn-eagle", HISTORY), ("sharegpt-ngram", HISTORY[:1] + HISTORY[2:])])
def test_the_predictive_survival_is_a_monte_carlo_of_the_models_generator(name, history):
    """Draw (z, S) from the filter's posterior, then acc_len at the next position with the model's
    compiled generator (its first state forced through the first uniform: high iff u < π(z))."""
    ctrl = _filtered(name, 24, history)
    gmax = 12
    surv = ctrl.survival(gmax)[0]
    rng = np.random.default_rng(7)
    n, length = 200_000, gmax + 2
    m = ctrl.model
    cell = rng.choice(m.z.size * 2, size=n, p=ctrl.belief[0].reshape(-1))
    level, state = m.z[cell // 2], cell % 2
    u = rng.random((n, length * DRAWS_PER_POSITION))
    u[:, 0] = np.where(state == 1, 0.0, np.nextafter(1.0, 0.0))  # uniform 0 of a position: the state's step
    acc, offsets = fill_bank(PRESETS[name].params, u.reshape(-1), np.arange(n) * length * DRAWS_PER_POSITION,
                             level, np.full(n, length, np.int64), PRESETS[name].cap)
    first = acc[offsets[:-1]]
    mc = (first[:, None] > np.arange(gmax + 1)[None]).mean(axis=0)
    se = np.sqrt(surv * (1 - surv) / n)
    assert np.all(np.abs(mc - surv) <= 4.5 * se + 1e-12), (mc, surv)
    assert surv[0] == 1.0 and np.all(np.diff(surv) <= 0)


@pytest.mark.parametrize("name", ["cnn-ngram", "gsm8k-eagle"])
def test_the_prior_survival_is_the_acceptance_of_a_large_bank(name):
    """At a request's start the predictive P(acc_len > j) is the model's: measured on 2,000
    requests, each request weighted equally (pooling positions would weight a request by its length,
    which the model ties to z), at positions far enough from the end that the run is not cut."""
    gmax = 12
    bank = preset_bank(name, requests=2000, seed=11)
    means = []
    for i in range(len(bank)):
        seq = bank.request(i)
        keep = seq[: max(0, len(seq) - gmax)]
        if len(keep):
            means.append((keep[:, None] > np.arange(gmax + 1)[None]).mean(axis=0))
    means = np.array(means)
    measured, se = means.mean(axis=0), means.std(axis=0, ddof=1) / np.sqrt(len(means))
    ctrl = TraceFilterSAA(preset=name)
    ctrl.reset(0)
    ctrl.act(_context(name, 3))
    prior = ctrl.survival(gmax)[0]
    assert np.all(np.abs(prior - measured) <= 4.5 * se + 1e-12), (prior, measured, se)


def test_bad_presets_and_sources_are_answered_in_one_line(tmp_path):
    for bad in ("nope", 3):
        with pytest.raises(ValueError, match="preset=") as e:
            make_controller("trace-filter-saa", preset=bad)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="levels=1"):
        TraceFilterSAA(levels=1)
    with pytest.raises(TypeError):
        make_controller("trace-filter-saa", nope=1)
    path = save_bank(tmp_path / "bank.npz", preset_bank("cnn-eagle", requests=12))
    ctx = _context(str(path), 3, trace_split="all")
    ctrl = TraceFilterSAA()
    ctrl.reset(0)
    with pytest.raises(ValueError, match="trace_source=") as e:
        ctrl.act(ctx)
    assert "\n" not in str(e.value) and "bank file" in str(e.value)
    with pytest.raises(ValueError, match="trace_source=None"):
        ctrl.model_for(msenv.SystemConfig(num_devices=3))
    with pytest.raises(ValueError, match="trace_source='mix:cnn-ngram,gsm8k-eagle'.*a mix"):
        ctrl.model_for(msenv.env_config(ID, trace_source="mix:cnn-ngram,gsm8k-eagle"))
    named = TraceFilterSAA(preset="cnn-eagle")  # a preset named by the caller filters a file's bank
    named.reset(0)
    assert named.act(ctx).shape == (3,)
    (tmp_path / "bad.json").write_text('{"params": {"stay": 0.5}}')
    with pytest.raises(ValueError, match="bad.json: not a PARAMS.json") as e:
        TraceFilterSAA(params=tmp_path / "bad.json")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="at most one"):
        TraceFilterSAA(preset="cnn-eagle", params=tmp_path / "bad.json")


def test_a_fit_file_is_filtered_as_the_model_it_holds(tmp_path):
    """params=PARAMS.json (the fit CLI's format) filters the model it names: with a preset's own
    parameters written into it, the same decisions as preset=; a shipped bank filters its own fit."""
    spec = {"params": PRESETS["sharegpt-ngram"].params.as_dict(), "cap": PRESETS["sharegpt-ngram"].cap,
            "drafter": "ngram"}
    (tmp_path / "p.json").write_text(json.dumps(spec))
    cfg = msenv.env_config(ID, trace_source="sharegpt-ngram", episode_length=12)
    played = {}
    for name, kw in (("preset", dict(preset="sharegpt-ngram")), ("params", dict(params=tmp_path / "p.json"))):
        ctrl = TraceFilterSAA(n_samples=64, **kw)
        played[name] = [g.tolist() for _, g, _, _, _ in play(ctrl, cfg, 3)]
    assert played["preset"] == played["params"]
    assert fitted_model("published:gsm8k-eagle") == (PRESETS["gsm8k-eagle"].params, PRESETS["gsm8k-eagle"].cap)
    assert fitted_model("mix:cnn-ngram,gsm8k-eagle") is None and fitted_model(str(tmp_path / "b.npz")) is None
    shipped = msenv.env_config(ID, trace_source="eagle-mix-v1", episode_length=3)
    fit_params, cap = fitted_model("eagle-mix-v1")
    ctrl = TraceFilterSAA(n_samples=64)
    assert ctrl.model_for(shipped).cap == cap == 20 and fit_params != PRESETS["gsm8k-eagle"].params
    assert all(g.shape == (20,) for _, g, _, _, _ in play(ctrl, shipped, 1))


def test_the_shipped_fit_is_fitted_to_its_banks_train_requests_only():
    from msenv.traces import SHIPPED, load_bank, measure, shipped_path, split_indices
    from msenv.traces.published import DATA
    from msenv.traces.stats import TARGET_GAMMAS

    for name, item in SHIPPED.items():
        doc = json.loads((DATA / item.fit).read_text())
        bank = load_bank(shipped_path(name))
        train = measure(bank.subset(split_indices(bank)["train"]), TARGET_GAMMAS)
        assert item.sha256 in doc["source"] and doc["requests"] == train["requests"] < len(bank)
        assert doc["targets"] == pytest.approx(train)


def test_it_plays_full_episodes_and_replays_them_bit_for_bit():
    cfg = msenv.env_config(ID, trace_source="sharegpt-ngram", trace_split="validation", episode_length=20)
    entry = Entry("trace-filter-saa", lambda: make_controller("trace-filter-saa", n_samples=200))
    first = evaluate([entry], cfg, 2, seed=5)
    again = evaluate([entry], cfg, 2, seed=5)
    assert len(first) == 2 and all(np.isfinite(e.throughput) and e.throughput > 0 for e in first)
    assert [e.throughput for e in first] == [e.throughput for e in again]
