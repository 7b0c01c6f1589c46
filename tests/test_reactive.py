"""Reactive stage (model §5) against independent computations: brute force, closed form,
numerical min-max, and the worked example."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from msenv import SystemConfig
from msenv.model.goodput import communication_time
from msenv.model.reactive import MODE_DL, MODE_UL, solve

CFG = SystemConfig()
L = 1024 * (18 + 16)
N0S = 10 ** ((-169 - 30) / 10)
N0D = 10 ** ((-167 - 30) / 10)


def log2_1p(x):
    """accurate log2(1 + x) for tiny x (1 + x would round)."""
    return np.log1p(x) / np.log(2.0)


def brute_force(g_ul, g_dl, p_ul, p_dl, bandwidth=10e6, bits=L):
    """min over all 2^M UL/DL assignments; UL at full power, DL by Lemma 1 (own code)."""
    m = len(g_ul)
    b = bandwidth / m
    tau_ul = bits / (b * log2_1p(p_ul * g_ul / (N0S * b)))
    best = np.inf
    for assign in itertools.product([0, 1], repeat=m):
        a = np.array(assign, bool)  # True = UL
        t_ul = tau_ul[a].max() if a.any() else 0.0
        if (~a).any():
            s = np.sum(1 / g_dl[~a])
            t_dl = bits / (b * log2_1p(p_dl / (N0D * b * s)))
        else:
            t_dl = 0.0
        best = min(best, max(t_ul, t_dl))
    return best


def kernel(rejected, g_ul, g_dl, p_ul, p_dl, policy="optimal", coins=None):
    return solve(
        rejected, g_ul, g_dl, p_ul_w=p_ul, p_dl_w=p_dl, n0_ul_w_hz=N0S, n0_dl_w_hz=N0D,
        bandwidth_hz=10e6, bits=L, policy=policy, coins=coins,
    )


def test_worked_example():
    g_ul = np.array([[1e-12, 5e-13, 2e-13, 8e-14]])
    g_dl = np.array([[2e-12, 1e-12, 1e-13, 4e-14]])
    rej = np.ones((1, 4), bool)
    p_ul, p_dl = 10 ** (-1.5), 1.0
    sol = kernel(rej, g_ul, g_dl, p_ul, p_dl)
    np.testing.assert_allclose(sol.ul_delay[0] * 1e3, [13.879, 23.715, 52.716, 124.856], rtol=1e-4)
    np.testing.assert_allclose(sol.t_com * 1e3, [21.806], rtol=1e-4)
    assert list(sol.modes[0]) == [MODE_UL, MODE_DL, MODE_DL, MODE_DL]  # n* = 1
    np.testing.assert_allclose(kernel(rej, g_ul, g_dl, p_ul, p_dl, "all_ul").t_com * 1e3, [124.856], rtol=1e-4)
    np.testing.assert_allclose(kernel(rej, g_ul, g_dl, p_ul, p_dl, "all_dl").t_com * 1e3, [22.051], rtol=1e-4)
    # τ^dl(D(n)) for n = 0..4 through the all-DL policy on the suffix sets
    expected = [22.051, 21.806, 21.316, 16.393]
    for n, e in enumerate(expected):
        mask = np.zeros((1, 4), bool)
        mask[0, n:] = True
        coins = np.where(mask, 1.0, 0.0)  # coins ≥ ½ → DL
        sol_n = kernel(rej, g_ul, g_dl, p_ul, p_dl, "random", coins)
        assert sol_n.t_com[0] * 1e3 >= e * (1 - 1e-4)  # max(τ_ul(n), τ_dl(n)) ≥ τ_dl(n)
        only_dl = solve(
            mask, g_ul, g_dl, p_ul_w=p_ul, p_dl_w=p_dl, n0_ul_w_hz=N0S, n0_dl_w_hz=N0D,
            bandwidth_hz=10e6 * (4 - n) / 4, bits=L, policy="all_dl",
        )  # same b = B/4 per device: bandwidth scaled to the subset size
        np.testing.assert_allclose(only_dl.t_com[0] * 1e3, e, rtol=1e-4)


def test_single_device_example_300m():
    g = 1e-3 * 300**-3.5
    assert 10 * np.log10(g) == pytest.approx(-116.7, abs=0.05)
    b = 1e6  # M = 10
    cfg = CFG
    rej = np.zeros((1, 10), bool)
    rej[0, 0] = True
    # bandwidth 1e6 per device: run with a single rejected device and B = 1 MHz
    sol = solve(rej[:, :1], np.array([[g]]), np.array([[g]]), p_ul_w=cfg.p_ul_w, p_dl_w=cfg.p_dl_w,
                n0_ul_w_hz=N0S, n0_dl_w_hz=N0D, bandwidth_hz=b, bits=L, policy="all_ul")
    assert sol.t_com[0] * 1e3 == pytest.approx(13.03, rel=1e-3)
    sol = solve(rej[:, :1], np.array([[g]]), np.array([[g]]), p_ul_w=cfg.p_ul_w, p_dl_w=cfg.p_dl_w,
                n0_ul_w_hz=N0S, n0_dl_w_hz=N0D, bandwidth_hz=b, bits=L, policy="all_dl")
    assert sol.t_com[0] * 1e3 == pytest.approx(5.15, rel=1e-3)


@st.composite
def instances(draw):
    m = draw(st.integers(1, 10))
    extra = draw(st.integers(0, 4))
    logg = st.floats(-19.0, -9.0)
    g_ul = np.array([10 ** draw(logg) for _ in range(m + extra)])
    g_dl = np.array([10 ** draw(logg) for _ in range(m + extra)])
    p_ul = 10 ** ((draw(st.floats(-30, 40)) - 30) / 10)
    p_dl = 10 ** ((draw(st.floats(-30, 50)) - 30) / 10)
    perm = draw(st.permutations(list(range(m + extra))))
    rejected = np.zeros(m + extra, bool)
    rejected[np.array(perm[:m])] = True
    return rejected, g_ul, g_dl, p_ul, p_dl


@settings(max_examples=1000, deadline=None)
@given(instances())
def test_optimal_equals_brute_force(inst):
    rejected, g_ul, g_dl, p_ul, p_dl = inst
    sol = kernel(rejected[None], g_ul[None], g_dl[None], p_ul, p_dl)
    ref = brute_force(g_ul[rejected], g_dl[rejected], p_ul, p_dl)
    assert sol.t_com[0] == pytest.approx(ref, rel=1e-9)
    # the reported assignment achieves the reported time
    modes = sol.modes[0]
    assert np.all((modes > 0) == rejected)
    m = rejected.sum()
    b = 10e6 / m
    ul = modes == MODE_UL
    dl = modes == MODE_DL
    t_ul = (L / (b * log2_1p(p_ul * g_ul[ul] / (N0S * b)))).max() if ul.any() else 0.0
    if dl.any():
        p = sol.dl_power[0][dl]
        assert p.sum() == pytest.approx(p_dl, rel=1e-9)
        d = L / (b * log2_1p(p * g_dl[dl] / (N0D * b)))
        np.testing.assert_allclose(d, d[0], rtol=1e-7)  # Lemma 1: delays equalised
        t_dl = d.max()
    else:
        t_dl = 0.0
    assert np.all(sol.dl_power[0][~dl] == 0)
    assert max(t_ul, t_dl) == pytest.approx(sol.t_com[0], rel=1e-7)


def test_batched_equals_rowwise_and_presorted(rng):
    n, k = 300, 12
    rej = rng.random((n, k)) < 0.5
    g_ul = 10 ** rng.uniform(-15, -10, (n, k))
    g_dl = 10 ** rng.uniform(-15, -10, (n, k))
    batched = kernel(rej, g_ul, g_dl, 0.03, 1.0)
    for i in range(0, n, 37):
        row = kernel(rej[i : i + 1], g_ul[i : i + 1], g_dl[i : i + 1], 0.03, 1.0)
        assert row.t_com[0] == batched.t_com[i]
        assert np.array_equal(row.modes[0], batched.modes[i])
    # shared gains sorted by g_ul descending → presorted path gives the same answer
    gu = np.sort(g_ul[0])[::-1].copy()
    gd = g_dl[0]
    a = kernel(rej, gu, gd, 0.03, 1.0)
    b = solve(rej, gu, gd, p_ul_w=0.03, p_dl_w=1.0, n0_ul_w_hz=N0S, n0_dl_w_hz=N0D,
              bandwidth_hz=10e6, bits=L, presorted=True)
    np.testing.assert_allclose(a.t_com, b.t_com, rtol=1e-12)
    assert np.array_equal(a.modes, b.modes)


def _lemma1_numeric(g, p_dl, b):
    """min t s.t. Σ_k p_k(t) = P_dl, p_k(t) = (2^{L/(b t)} − 1)·N0·b/g_k: root-finding."""
    def excess(t):
        with np.errstate(over="ignore"):  # inf while bracketing very small t is fine
            return np.sum(np.expm1(L / (b * t) * np.log(2.0)) * N0D * b / g) - p_dl
    lo = 1e-9
    while excess(lo) < 0:
        lo /= 10
    hi = 1.0
    while excess(hi) > 0:
        hi *= 10
    return brentq(excess, lo, hi, xtol=1e-15, rtol=1e-13)


@pytest.mark.parametrize("seed", range(20))
def test_lemma1_against_numerical_minmax(seed):
    r = np.random.default_rng(seed)
    m = int(r.integers(1, 9))
    g = 10 ** r.uniform(-15, -11, m)
    p_dl = 10 ** r.uniform(-2, 1)
    rej = np.ones((1, m), bool)
    sol = kernel(rej, np.full((1, m), 1e-30), g[None], 1e-3, p_dl, "all_dl")
    t_num = _lemma1_numeric(g, p_dl, 10e6 / m)
    assert sol.t_com[0] == pytest.approx(t_num, rel=1e-8)


def test_no_rejection_costs_nothing():
    rej = np.zeros((3, 5), bool)
    for policy in ("optimal", "all_ul", "all_dl", "random"):
        sol = kernel(rej, np.full(5, 1e-12), np.full(5, 1e-12), 0.03, 1.0, policy, np.zeros((3, 5)))
        assert np.all(sol.t_com == 0) and np.all(sol.modes == 0) and np.all(sol.dl_power == 0)


def test_random_policy_follows_coins(rng):
    rej = np.ones((1, 6), bool)
    g = 10 ** rng.uniform(-14, -11, (1, 6))
    coins = np.array([[0.1, 0.9, 0.4, 0.6, 0.0, 0.99]])
    sol = kernel(rej, g, g, 0.03, 1.0, "random", coins)
    assert list(sol.modes[0]) == [1, 2, 1, 2, 1, 2]
    with pytest.raises(ValueError, match="coins"):
        kernel(rej, g, g, 0.03, 1.0, "random", None)
    with pytest.raises(ValueError, match="policy"):
        kernel(rej, g, g, 0.03, 1.0, "bogus")


def test_optimal_never_worse_than_baselines(rng):
    n, k = 2000, 20
    rej = rng.random((n, k)) < 0.4
    g_ul = 1e-3 * rng.uniform(100, 500, (n, k)) ** -3.5 * rng.exponential(size=(n, k))
    g_dl = 1e-3 * rng.uniform(100, 500, (n, k)) ** -3.5 * rng.exponential(size=(n, k))
    opt = communication_time(rej, g_ul, g_dl, CFG).t_com
    for policy in ("all_ul", "all_dl", "random"):
        other = communication_time(rej, g_ul, g_dl, CFG, policy=policy, coins=rng.random((n, k))).t_com
        assert np.all(opt <= other * (1 + 1e-12))


def test_extreme_but_valid_inputs_are_finite():
    rej = np.ones((2, 4), bool)
    g = np.array([[1e-25, 1e-22, 1e-20, 1e-30], [1e-13, 1e-30, 1e-12, 1e-11]])
    sol = kernel(rej, g, g, 1e-6, 1e-6)  # −30 dBm both ways, deep fades
    assert np.all(np.isfinite(sol.t_com)) and np.all(sol.t_com > 0)
    assert np.all(np.isfinite(sol.dl_power))


def test_compiled_sum_follows_numpy_float_order():
    """The compiled kernels sum in numpy's pairwise order, so DL powers and filter
    normalisations equal numpy's np.sum bit for bit (lengths across every branch)."""
    from msenv.model.numeric import pairwise_sum

    rng = np.random.default_rng(0)
    for n in list(range(1, 40)) + [127, 128, 129, 255, 256, 300, 1000]:
        x = rng.standard_normal(n) * 10.0 ** rng.uniform(-12, 12, n)
        assert pairwise_sum(x) == np.sum(x), n
