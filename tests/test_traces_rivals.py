"""The rivals of learned control on traces (baselines/trace_rules.py), each against an independent
computation: the local search never ends below the greedy it starts from on the same SAA samples
and ends at a ±1 local optimum; the state oracle's survival is the filter's forward algorithm from
the point mass at each device's true (z, S_p), and its decision is the filter rule's on that survival."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from baselines import REGISTRY, make_controller
from baselines.greedy import greedy_local_search, greedy_search
from baselines.saa import SAAEstimator
from baselines.trace_rules import KaplanMeierLS, StateOracle, TraceFilterLS
from msenv import env_config
from msenv.envs.cells import make_env
from msenv.traces import fitted_model
from msenv.traces.model import filter_model, predictive_survival

TRACES = "msenv/MultiSpin-Traces-v0"


def _env(source="cnn-ngram", rounds=3, **kw):
    cfg = env_config(TRACES, trace_source=source, trace_split="validation", episode_length=rounds,
                     trace_posterior=True, **kw)
    env = make_env(cfg)
    env.reset(seed=11)
    return env


def _advance(env, rounds, gamma=3):
    for _ in range(rounds):
        env.step(np.full(env.unwrapped.config.num_devices, gamma))


def test_the_rivals_are_registered_and_only_the_state_oracle_is_an_oracle():
    assert REGISTRY["trace-filter-ls"] is TraceFilterLS and REGISTRY["km-ls"] is KaplanMeierLS
    assert REGISTRY["state-oracle"] is StateOracle
    assert not make_controller("trace-filter-ls").oracle and not make_controller("km-ls").oracle
    assert make_controller("state-oracle").oracle == "alpha"  # the server's channel, the trace's hidden part


@pytest.mark.parametrize("source", ["cnn-ngram", "gsm8k-eagle"])
def test_local_search_never_ends_below_the_greedy_on_the_same_samples_and_is_a_local_optimum(source):
    env = _env(source, rounds=5)
    _advance(env, 2)
    ctx = env.unwrapped.round_context()
    ctx = dataclasses.replace(ctx, survival=ctx.posterior)
    for seed in range(3):
        est = SAAEstimator(ctx, np.random.default_rng(seed))
        g0, v0 = greedy_search(est)
        est = SAAEstimator(ctx, np.random.default_rng(seed))  # the same draws again
        gamma = greedy_local_search(est)
        value = float(est.evaluate(gamma))
        assert value >= v0 - 1e-12
        k, gmax = len(gamma), ctx.config.gamma_max
        moves = np.concatenate([np.eye(k, dtype=np.int64), -np.eye(k, dtype=np.int64)]) + gamma
        moves = moves[np.all((moves >= 0) & (moves <= gmax), axis=1)]
        assert np.all(est.evaluate(moves) <= value + 1e-12)  # no ±1 move improves


def test_local_search_on_a_tiny_cell_matches_brute_force_on_the_same_samples():
    """K = 2, γ_max = 3: every one of the 16 vectors scored on the estimator's samples; the greedy +
    local search lands on a vector within the exhaustive maximum's neighbourhood value (a local
    optimum), and on this worked case on the maximum itself."""
    env = _env("cnn-ngram", rounds=4, num_devices=2, gamma_max=3)
    _advance(env, 1, gamma=2)
    ctx = env.unwrapped.round_context()
    ctx = dataclasses.replace(ctx, survival=ctx.posterior)
    est = SAAEstimator(ctx, np.random.default_rng(0))
    grid = np.array([(a, b) for a in range(4) for b in range(4)])
    best = float(est.evaluate(grid).max())
    assert float(est.evaluate(greedy_local_search(est))) == pytest.approx(best, rel=1e-12)


def test_filter_ls_plays_its_decide_on_its_own_filter_which_matches_the_env_posterior():
    env = _env(rounds=6)
    rule = make_controller("trace-filter-ls")
    rule.reset(3)
    for _ in range(4):
        ctx = env.unwrapped.round_context()
        gamma = rule.act(ctx)
        np.testing.assert_allclose(rule.survival(ctx.config.gamma_max), ctx.posterior, atol=1e-12)
        _, _, _, _, info = env.step(gamma)
        rule.observe(gamma, info)


def test_state_oracle_is_the_filter_rule_on_the_point_mass_of_the_true_state():
    env = _env(rounds=6)
    _advance(env, 3)
    ctx = env.unwrapped.round_context("alpha")
    params, cap = fitted_model("cnn-ngram")
    k, gmax = len(ctx.t_draft), ctx.config.gamma_max
    want = np.empty((k, gmax + 1))
    for i in range(k):  # device by device: a one-level model at its z, the belief a point mass at its S_p
        m = filter_model(params, cap, z=np.array([ctx.hidden_level[i]]), weights=np.array([1.0]))
        belief = np.zeros((1, 1, 2))
        belief[0, 0, int(ctx.hidden_high[i])] = 1.0
        predictive_survival(belief, m.trans, m.first, m.cont, m.tail, m.cap, want[i:i + 1])
    oracle, rule = StateOracle(), TraceFilterLS()
    np.testing.assert_allclose(oracle.state_survival(ctx), want, rtol=1e-12, atol=1e-15)
    oracle.reset(5)
    rule.reset(5)
    np.testing.assert_array_equal(oracle.act(ctx), rule.decide(ctx, want))


def test_state_oracle_refuses_a_bank_without_hidden_state_in_one_line():
    env = _env("eagle-mix-v1", rounds=2)
    ctx = env.unwrapped.round_context("alpha")
    with pytest.raises(ValueError, match=r"trace_source is invalid.*no hidden state.*allowed"):
        StateOracle().act(ctx)
