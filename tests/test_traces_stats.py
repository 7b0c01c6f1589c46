"""Replay semantics and statistics of trace banks: worked examples by hand, and every statistic
against a plain Python loop on random banks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from msenv.traces import TraceBank, bootstrap, measure
from msenv.traces.stats import FULL_PAIRS, REJ_PAIRS, ROUNDS, TOKENS, iid_tokens_per_round, round_rows


def _bank(requests, cap=8, drafter="eagle") -> TraceBank:
    return TraceBank.from_requests(requests, [f"r{i}" for i in range(len(requests))], cap, drafter, "hand")


def test_a_replay_worked_by_hand():
    # acc_len 1 3 2 1 4 1 1 2 at γ = 2:
    #   p=0: acc 1 → 1 token, nothing accepted (A=0), rejected;   p=1: acc 3 → 3 tokens, A=2, full;
    #   p=4: acc 4 → 3 tokens, A=2, full;   p=7: acc 2 → min(2, 3, 8−7) = 1 token (the end), A=1, rejected.
    # 4 rounds, 8 tokens; successive pairs (rejected → ok), (full → ok), (full → ok);
    # A pairs (0,2) (2,2) (2,1): cov = 2 − (4/3)(5/3) = −2/9, var = 8/9 and 2/9 → r = −1/2.
    fig = measure(_bank([[1, 3, 2, 1, 4, 1, 1, 2]], cap=5), gammas=(2,))
    assert fig["tokens@2"] == 2.0 and fig["p_nothing@2"] == 0.25
    assert fig["after_full@2"] == 1.0 and fig["after_rejected@2"] == 1.0
    assert fig["lag1@2"] == pytest.approx(-0.5)
    # α_d: 8 positions; ≥2: 4, ≥3: 2, ≥4: 1, ≥5: 0 → 1/2, 1/2, 1/2, 0, then nothing to count (NaN)
    assert [fig[f"alpha_{d}"] for d in range(4)] == [0.5, 0.5, 0.5, 0.0]
    assert math.isnan(fig["alpha_4"]) and math.isnan(fig["alpha_5"])
    assert fig["at_cap"] == 0.0
    assert fig["iid_tokens@2"] == pytest.approx(1 + 0.5 + 0.25)  # (1 − α³)/(1 − α) at α_0 = ½


def test_a_second_worked_example_with_two_requests_and_the_cap():
    # request A: 6 5 4 3 2 1 (cap 6); request B: 1 1 2 1.  γ = 4:
    #   A: p=0 acc 6 → 5 tokens, A=4, full; p=5 acc 1 → 1 token, A=0.          (rounds 2, tokens 6)
    #   B: p=0 acc 1 → 1; p=1 acc 1 → 1; p=2 acc 2 → 2 tokens, A=1 (rejected).  (rounds 3, tokens 4)
    # pairs: A: full → not ok; B: rej → not ok, rej → ok.  P(nothing) = 3/5.
    # γ = 1: A: acc 6 → 2 tokens (p 0→2), acc 4 → 2 (→4), acc 2 → 2 (→6): 3 rounds, all full (acc > 1);
    #        B: acc 1, 1, 2 → 1 + 1 + 2 tokens (p 0→1→2→4), the last round full.  Rounds 6, tokens 10.
    fig = measure(_bank([[6, 5, 4, 3, 2, 1], [1, 1, 2, 1]], cap=6), gammas=(4, 1))
    assert fig["tokens@4"] == pytest.approx(10 / 5) and fig["p_nothing@4"] == pytest.approx(3 / 5)
    assert fig["after_full@4"] == 0.0 and fig["after_rejected@4"] == 0.5
    assert fig["tokens@1"] == pytest.approx(10 / 6)
    assert fig["p_nothing@1"] == pytest.approx(2 / 6)
    # γ = 1 pairs: A (full → ok, full → ok); B (rejected → acc 1: not ok), (rejected → acc 2: ok)
    assert fig["after_full@1"] == 1.0 and fig["after_rejected@1"] == 0.5
    assert fig["at_cap"] == pytest.approx(1 / 10)
    assert fig["length_median"] == 5.0 and fig["alpha0_median"] == pytest.approx((5 / 6 + 1 / 4) / 2)


def test_gamma_zero_emits_one_token_a_round_and_never_rejects():
    rows = round_rows(_bank([[3, 1, 2, 5]]), 0).sum(axis=0)
    fig = measure(_bank([[3, 1, 2, 5]]), gammas=(1,))
    assert rows[TOKENS] / rows[ROUNDS] == 1.0 and rows[ROUNDS] == 4  # 4 rounds of 1 token
    # every round is "full": 3 pairs after a full round, none after a rejected one
    assert rows[FULL_PAIRS] == 3 and rows[REJ_PAIRS] == 0
    assert fig["alpha_0"] == 0.75


def _naive(requests, cap, gamma):
    """Replay and statistics in plain Python (no shared code with msenv.traces.stats)."""
    tokens, rounds, nothing = 0, 0, 0
    after = {True: [0, 0], False: [0, 0]}
    pairs = []
    for acc in requests:
        p, prev = 0, None
        while p < len(acc):
            a = int(acc[p])
            e = min(a, gamma + 1, len(acc) - p)
            A = min(a - 1, gamma)
            tokens, rounds, nothing = tokens + e, rounds + 1, nothing + (a == 1)
            if prev is not None:
                after[prev[0] > gamma][0] += 1
                after[prev[0] > gamma][1] += a >= 2
                pairs.append((prev[1], A))
            prev = (a, A)
            p += e
    flat = [int(v) for acc in requests for v in acc]
    alphas = []
    for d in range(6):
        den = sum(v >= d + 1 for v in flat)
        alphas.append(sum(v >= d + 2 for v in flat) / den if den else math.nan)
    x, y = np.array(pairs, dtype=float).T
    return dict(tokens=tokens / rounds, p_nothing=nothing / rounds,
                after_full=after[True][1] / after[True][0] if after[True][0] else math.nan,
                after_rejected=after[False][1] / after[False][0], lag1=float(np.corrcoef(x, y)[0, 1]),
                alphas=alphas, at_cap=sum(v == cap for v in flat) / len(flat),
                alpha0=[sum(v >= 2 for v in acc) / len(acc) for acc in requests])


@pytest.mark.parametrize("seed", range(4))
def test_every_statistic_matches_a_plain_loop_on_random_banks(seed):
    rng = np.random.default_rng(seed)
    cap = int(rng.integers(6, 22))
    requests = []
    for _ in range(int(rng.integers(20, 60))):
        n = int(rng.integers(1, 200))
        runs = rng.geometric(rng.uniform(0.15, 0.7), size=n)  # bursty: long runs decrease by one
        acc = np.minimum(runs, cap)
        for p in range(n - 2, -1, -1):
            if rng.random() < 0.5 and acc[p + 1] + 1 <= cap:
                acc[p] = max(acc[p], acc[p + 1] + 1) if rng.random() < 0.7 else acc[p]
        requests.append(acc)
    bank = _bank(requests, cap=cap)
    gammas = (1, 2, 3, 5, 8, 12)
    fig = measure(bank, gammas)
    for g in gammas:
        ref = _naive(requests, cap, g)
        for k in ("tokens", "p_nothing", "after_full", "after_rejected", "lag1"):
            got = fig[f"{k}@{g}"]
            assert (math.isnan(got) and math.isnan(ref[k])) or got == pytest.approx(ref[k], rel=1e-9, abs=1e-12), (k, g)
    ref = _naive(requests, cap, 1)
    for d in range(6):
        assert fig[f"alpha_{d}"] == pytest.approx(ref["alphas"][d], nan_ok=True)
    assert fig["at_cap"] == pytest.approx(ref["at_cap"])
    assert fig["alpha0_p10"] == pytest.approx(np.quantile(ref["alpha0"], 0.1))
    assert fig["alpha0_p90"] == pytest.approx(np.quantile(ref["alpha0"], 0.9))
    assert fig["length_p90"] == pytest.approx(np.quantile([len(r) for r in requests], 0.9))
    assert fig["iid_tokens@3"] == pytest.approx(sum(ref["alphas"][0] ** j for j in range(4)))


def test_the_iid_prediction_is_the_geometric_sum():
    for a in (0.0, 0.3, 0.72, 0.99):
        for g in (0, 1, 4, 8):
            assert iid_tokens_per_round(a, g) == pytest.approx(sum(a ** j for j in range(g + 1)))
    assert iid_tokens_per_round(1.0, 5) == 6.0


def test_bootstrap_intervals_cover_the_estimate_and_vanish_without_variation():
    rng = np.random.default_rng(7)
    bank = _bank([rng.integers(1, 6, size=int(rng.integers(20, 120))) for _ in range(80)])
    fig, ci = measure(bank), bootstrap(bank, n=300, seed=1)
    # values ≤ 5: nothing to count at depth 5, and no round of γ = 8 is fully accepted
    for k in ("alpha_5", "after_full@8"):
        assert math.isnan(fig[k]) and all(map(math.isnan, ci[k]))
    for k, (lo, hi) in ci.items():
        if math.isnan(fig[k]):
            continue
        assert lo <= hi
        if k.startswith(("alpha_", "tokens", "p_nothing")):
            assert lo <= fig[k] <= hi, k
    assert ci == bootstrap(bank, n=300, seed=1)
    same = _bank([[1, 3, 2, 1, 4, 1, 1, 2]] * 30)
    flat = bootstrap(same, n=50)
    assert flat["tokens@2"] == pytest.approx((2.0, 2.0)) and flat["alpha_0"] == pytest.approx((0.5, 0.5))
    with pytest.raises(ValueError, match="n=1"):
        bootstrap(same, n=1)
    with pytest.raises(ValueError, match="gammas"):
        measure(same, gammas=(0,))
