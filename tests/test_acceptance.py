"""Verification-outcome model (SPEC §3) against closed forms and Monte Carlo."""

import numpy as np
import pytest

from msenv.acceptance import (
    accepted_tokens, expected_tokens, first_rejection_from_uniform, rejected,
    rejection_probability, sample_first_rejection,
)

N = 400_000


@pytest.mark.parametrize("alpha", [0.3, 0.62, 0.85, 0.97])
@pytest.mark.parametrize("gamma", [0, 1, 4, 12])
def test_expected_tokens_monte_carlo(alpha, gamma):
    rng = np.random.default_rng(int(alpha * 100) + gamma)
    f = sample_first_rejection(rng, np.full(N, alpha), cap=21)
    n = accepted_tokens(f, gamma) + 1
    # independent Monte Carlo: count accepted tokens with Bernoulli draws directly
    closed = sum(alpha**j for j in range(gamma + 1))
    assert expected_tokens(np.array(alpha), np.array(gamma)) == pytest.approx(closed, rel=1e-12)
    se = n.std() / np.sqrt(N)
    assert abs(n.mean() - closed) < 5 * se + 1e-12
    rej = rejected(f, gamma)
    p = 1 - alpha**gamma
    assert rejection_probability(np.array(alpha), np.array(gamma)) == pytest.approx(p)
    assert abs(rej.mean() - p) < 5 * np.sqrt(p * (1 - p) / N) + 1e-12


def test_bernoulli_distribution_of_accepted_count():
    rng = np.random.default_rng(7)
    alpha, gamma = 0.7, 5
    f = sample_first_rejection(rng, np.full(N, alpha), cap=21)
    a = accepted_tokens(f, gamma)
    bern = rng.random((N, gamma)) < alpha  # token-by-token simulation
    a_ref = np.where(bern.all(1), gamma, np.argmin(bern, axis=1))
    for j in range(gamma + 1):
        assert abs((a == j).mean() - (a_ref == j).mean()) < 0.006
        pj = alpha**j * (1 - alpha) if j < gamma else alpha**gamma
        assert abs((a == j).mean() - pj) < 0.004


def test_gamma_zero_never_rejected_and_alpha_one_never_rejected(rng):
    f = sample_first_rejection(rng, rng.uniform(0.01, 1.0, 10_000), cap=21)
    assert f.min() >= 1 and f.max() <= 21
    assert not rejected(f, 0).any()
    f1 = sample_first_rejection(rng, np.ones(1000), cap=21)
    assert np.all(f1 == 21) and not rejected(f1, 20).any()
    assert expected_tokens(np.array(1.0), np.array(7)) == 8.0


def test_first_rejection_edges():
    # u = 1 → first token rejected; tiny u with α near 1 → capped, no overflow
    assert first_rejection_from_uniform(np.array([1.0]), np.array([0.5]), 21)[0] == 1
    assert first_rejection_from_uniform(np.array([1e-300]), np.array([1 - 1e-15]), 21)[0] == 21


def test_common_random_numbers_monotone(rng):
    """With one draw, a longer draft accepts at least as many tokens and is rejected whenever
    a shorter draft is."""
    f = sample_first_rejection(rng, rng.uniform(0.5, 0.95, (1000, 8)), cap=21)
    for g in range(20):
        assert np.all(accepted_tokens(f, g + 1) >= accepted_tokens(f, g))
        assert np.all(rejected(f, g + 1) >= rejected(f, g))
