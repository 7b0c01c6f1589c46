"""The generative model: seeding, nesting, closed-form special cases, the structure of its
traces, the calibrated presets against the published figures, and the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from msenv.traces import PRESETS, PUBLISHED, ModelParams, generate_bank, load_bank, measure, preset_bank, split_indices
from msenv.traces.__main__ import main
from msenv.traces.fit import RELATIVE, TOLERANCES, CommonDraws
from msenv.traces.model import FREE_DEPTH
from msenv.traces.stats import bootstrap

BASE = dict(stay=0.5, stay_spread=0.0, high_share=0.5, high_spread=0.0, first_low=0.6, first_high=0.6,
            cont_low=0.6, cont_high=0.6, level_spread=0.0, tail=1.0, length_median=200.0, length_sigma=0.0,
            length_level_corr=0.0)


def _params(**change) -> ModelParams:
    return ModelParams(**{**BASE, **change})


def test_the_same_seed_gives_the_same_bank_and_banks_nest():
    p = _params(stay=0.8, first_high=0.9, first_low=0.2, length_sigma=0.5, level_spread=0.7, tail=0.6)
    a, b = generate_bank(p, 40, seed=3, cap=12), generate_bank(p, 40, seed=3, cap=12)
    assert np.array_equal(a.acc_len, b.acc_len) and a.sha256 == b.sha256
    assert not np.array_equal(a.acc_len, generate_bank(p, 40, seed=4, cap=12).acc_len)
    big = generate_bank(p, 90, seed=3, cap=12)
    assert np.array_equal(big.acc_len[:a.acc_len.size], a.acc_len)  # the first 40 requests are the same
    gen = generate_bank(p, 40, seed=np.random.default_rng(3), cap=12)
    assert np.array_equal(gen.acc_len, a.acc_len)
    draws = CommonDraws(40, 3)  # the fit's common draws are these banks' draws
    acc, off = draws.bank_arrays(p, 12)
    assert np.array_equal(acc, a.acc_len) and np.array_equal(off, a.offsets)


def test_independent_positions_give_the_iid_model():
    """Equal acceptance in both states, no level effect, no horizon: every drafted token is
    accepted with probability α independently, so P(acc_len ≥ k + 1) = α^k (until the cap or the
    request's end) and every α_d is α."""
    alpha = 0.7
    bank = generate_bank(_params(first_low=alpha, first_high=alpha, cont_low=alpha, cont_high=alpha, length_median=400),
                         400, seed=0, cap=30)
    fig = measure(bank, gammas=(4,))
    for d in range(6):
        assert fig[f"alpha_{d}"] == pytest.approx(alpha, abs=0.01)
    assert fig["lag1@4"] == pytest.approx(0.0, abs=0.015)
    assert fig["p_nothing@4"] == pytest.approx(1 - alpha, abs=0.01)
    assert fig["tokens@4"] == pytest.approx((1 - alpha ** 5) / (1 - alpha), rel=0.01)


def test_the_horizon_thins_only_beyond_the_free_depth():
    """With C ≡ 1 and F ≡ 1 a draft at p runs to the end (acc_len = len − p + 1 up to the cap); the
    horizon keeps FREE_DEPTH continuations and each further one with probability τ."""
    sure = dict(first_low=1 - 1e-12, first_high=1 - 1e-12, cont_low=1 - 1e-12, cont_high=1 - 1e-12)
    full = generate_bank(_params(**sure, length_median=50), 3, seed=0, cap=100)
    assert full.request(0).tolist() == list(range(51, 1, -1))
    tau = 0.6
    bank = generate_bank(_params(**sure, tail=tau, length_median=3000), 20, seed=1, cap=200)
    acc = np.concatenate([bank.request(r)[:-200] for r in range(len(bank))])  # far from the end
    k = acc - 2 - FREE_DEPTH  # continuations beyond the free depth
    assert acc.min() == 2 + FREE_DEPTH
    for j in range(1, 4):
        assert np.mean(k >= j) / np.mean(k >= j - 1) == pytest.approx(tau, abs=0.02)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_long_run_is_followed_by_decreasing_values(name):
    """Where acc_len[p] ≥ 3, mostly acc_len[p + 1] ≥ acc_len[p] − 1 (the run from p goes on from
    p + 1): n-gram's copies more strictly (measured 0.87–0.96 on the default banks) than EAGLE's
    drafts (0.73–0.78), whose first token at p + 1 may fail where the continuation from p held."""
    bank = preset_bank(name)
    acc, last = bank.acc_len.astype(int), np.zeros(bank.acc_len.size, dtype=bool)
    last[bank.offsets[1:] - 1] = True
    run = (acc[:-1] >= 3) & ~last[:-1]
    share = np.mean(acc[1:][run] >= acc[:-1][run] - 1)
    assert share > (0.85 if PRESETS[name].drafter == "ngram" else 0.7), share


def test_model_parameters_are_checked():
    with pytest.raises(ValueError, match="stay"):
        _params(stay=1.0)
    with pytest.raises(ValueError, match="tail"):
        _params(tail=0.0)
    with pytest.raises(ValueError, match="first_low"):
        _params(first_low=float("nan"))
    with pytest.raises(ValueError, match="requests"):
        generate_bank(_params(), 0)
    with pytest.raises(ValueError, match="seed"):
        generate_bank(_params(), 3, seed=-1)
    with pytest.raises(ValueError, match="preset"):
        preset_bank("gsm8k-medusa")


# ---------------------------------------------------------------------- the presets
def test_every_published_set_has_a_preset_with_its_metadata():
    assert set(PRESETS) == set(PUBLISHED) and len(PRESETS) == 8
    for name, p in PRESETS.items():
        assert p.drafter == name.split("-")[1] and p.cap == PUBLISHED[name]["cap"]
        assert p.requests == PUBLISHED[name]["requests"] and "2601.11580" in p.source
        bank = preset_bank(name)
        assert len(bank) == p.requests and bank.cap == p.cap and bank.drafter == p.drafter


def _within(fig: dict, ci: dict, target: dict, k: str) -> tuple[bool, str]:
    """Within the fixed tolerance, or the target inside the bank's 95 % bootstrap interval
    (used where that is wider); says which."""
    tol = TOLERANCES[k] * (abs(target[k]) if k in RELATIVE else 1.0)
    lo, hi = ci[k]
    if hi - lo > 2 * tol:
        return lo <= target[k] <= hi, f"{k}: {fig[k]:.3f} vs {target[k]:.3f}, 95% interval [{lo:.3f}, {hi:.3f}]"
    return abs(fig[k] - target[k]) <= tol, f"{k}: {fig[k]:.3f} vs {target[k]:.3f}, tolerance {tol:.3f}"


#: the statistics each preset must meet: α_0 … α_5 (±0.04); at γ = 2, 4, 8 tokens per round (±3 %),
#: P(nothing accepted), first-token acceptance after full / rejected (±0.04), lag-1 (±0.08); the
#: share at the cap (±0.01); per-request α_0 p10 / median / p90 (±0.04). Each is checked against
#: its fixed tolerance unless the test bank's 95 % bootstrap interval over requests is wider, then
#: against that interval (the message of a failure says which applied).
CHECKED = tuple(TOLERANCES)
#: the test bank: SCALE × the source's request count, seed 0 (the presets were fitted on seed 2026)
SCALE = 4


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_a_preset_meets_its_published_figures(name):
    bank = preset_bank(name, requests=SCALE * PRESETS[name].requests, seed=0)
    fig, ci = measure(bank), bootstrap(bank, n=400, seed=0)
    results = [_within(fig, ci, PUBLISHED[name], k) for k in CHECKED]
    misses = [why for ok, why in results if not ok]
    assert not misses, "\n".join(misses)


# ---------------------------------------------------------------------- the CLI
def test_stats_prints_the_three_tables_of_a_preset_bank(capsys):
    assert main(["stats", "--preset", "gsm8k-eagle", "--gammas", "2", "4", "8"]) == 0
    out = capsys.readouterr().out
    fig = measure(preset_bank("gsm8k-eagle"))
    lines = out.splitlines()
    assert any(line.split()[:1] == ["300"] and f"{fig['alpha_0']:.2f}" in line for line in lines)
    for g in (2, 4, 8):
        row = next(line for line in lines if line.split()[:1] == [str(g)])
        for k in ("tokens", "p_nothing", "after_full", "after_rejected", "lag1"):
            assert f"{fig[f'{k}@{g}']:.2f}" in row, (g, k, row)
        assert f"({fig[f'iid_tokens@{g}']:.2f})" in row
    assert f"{fig['alpha0_median']:.2f}" in out and "length median" in out


def test_generate_writes_a_bank_that_stats_and_load_bank_read(tmp_path, capsys):
    out = tmp_path / "bank.npz"
    assert main(["generate", "--preset", "cnn-ngram", "--requests", "50", "--seed", "5", "--out", str(out)]) == 0
    bank = load_bank(out)
    assert np.array_equal(bank.acc_len, preset_bank("cnn-ngram", requests=50, seed=5).acc_len)
    jsonl = tmp_path / "bank.jsonl"
    assert main(["generate", "--preset", "cnn-ngram", "--requests", "50", "--seed", "5", "--out", str(jsonl)]) == 0
    assert np.array_equal(load_bank(jsonl, drafter="ngram", cap=21).acc_len, bank.acc_len)
    capsys.readouterr()
    assert main(["stats", str(jsonl), "--drafter", "ngram", "--gammas", "3", "--boot", "20"]) == 0
    assert "[" in capsys.readouterr().out  # intervals printed


def test_fit_writes_parameters_that_generate_reads(tmp_path, capsys):
    src = tmp_path / "src.npz"
    main(["generate", "--preset", "gsm8k-eagle", "--requests", "30", "--out", str(src)])
    params = tmp_path / "params.json"
    assert main(["fit", str(src), "--out", str(params), "--evals", "12", "--scale", "1"]) == 0
    spec = json.loads(params.read_text())
    assert spec["drafter"] == "eagle" and spec["requests"] == 30 and math.isfinite(spec["objective"])
    ModelParams(**spec["params"])
    out = tmp_path / "again.npz"
    assert main(["generate", "--params", str(params), "--out", str(out)]) == 0
    assert len(load_bank(out)) == 30
    train = tmp_path / "train.json"  # --split: the targets are the figures of that part's requests only
    assert main(["fit", str(src), "--split", "train", "--out", str(train), "--evals", "4", "--scale", "1"]) == 0
    bank = load_bank(src)
    part = bank.subset(split_indices(bank)["train"])
    spec = json.loads(train.read_text())
    assert spec["requests"] == len(part) < 30 and "train requests" in spec["source"]
    assert spec["targets"]["alpha_0"] == pytest.approx(measure(part)["alpha_0"])


@pytest.mark.parametrize("argv", [
    ["stats", "missing.jsonl", "--drafter", "eagle"], ["stats", "x.npz", "--gammas", "0"], ["stats"],
    ["stats", "--preset", "gsm8k-medusa"], ["generate", "--preset", "gsm8k-eagle"], ["fit", "--out", "p.json"],
    ["fit", "--published", "gsm8k-eagle", "--split", "train", "--out", "p.json"],
    ["stats", "--preset", "gsm8k-eagle", "--boot", "1"], ["generate", "--out", "x.npz"],
])
def test_bad_arguments_exit_2_with_one_line(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err and "error" in err[-1]


def test_the_hidden_states_are_the_generators_by_a_plain_replay():
    """``hidden_states`` (what a state oracle knows) against a plain-Python replay of the model's
    draws (module docstring of msenv.traces.model): for every request the same level, for every
    position the same state, and acc_len from those states, F, C and the horizon as generated."""
    import math

    from msenv.traces.model import DRAWS_PER_POSITION, FREE_DEPTH, generate_bank, hidden_states

    params, cap, n = PRESETS["cnn-ngram"].params, 21, 6
    bank = generate_bank(params, n, seed=5, cap=cap)
    z, high = hidden_states(params, n, seed=5, cap=cap)
    rng = np.random.default_rng(5)
    children = rng.spawn(n)
    z_ref = rng.standard_normal((n, 2))[:, 0]
    np.testing.assert_array_equal(z, z_ref)

    def sig(x):
        return 1.0 / (1.0 + math.exp(-min(max(x, -30.0), 30.0)))

    def logit(p):
        return math.log(p / (1.0 - p))

    for r in range(n):
        lo, hi = bank.offsets[r], bank.offsets[r + 1]
        u = children[r].random(DRAWS_PER_POSITION * (hi - lo)).reshape(-1, DRAWS_PER_POSITION)
        share = sig(logit(params.high_share) + params.high_spread * z[r])
        move = 1.0 - sig(logit(params.stay) + params.stay_spread * z[r])
        f_p = [sig(logit(p) + params.level_spread * z[r]) for p in (params.first_low, params.first_high)]
        c_p = [sig(logit(p) + params.level_spread * z[r]) for p in (params.cont_low, params.cont_high)]
        state = bool(u[0, 0] < share)
        states, first, cont = [], [], []
        for q in range(hi - lo):
            if q > 0:
                state = bool(u[q, 0] >= move * (1.0 - share)) if state else bool(u[q, 0] < move * share)
            states.append(int(state))
            first.append(u[q, 1] < f_p[state])
            cont.append(u[q, 2] < c_p[state])
        np.testing.assert_array_equal(high[lo:hi], states)
        for q in range(hi - lo):  # acc_len from the states' F and C (and the horizon beyond FREE_DEPTH)
            run = 0
            while q + 1 + run < hi - lo and cont[q + 1 + run]:
                run += 1
            if not first[q]:
                expect = 1
            else:
                depth = run
                if params.tail < 1.0 and run > FREE_DEPTH:
                    extra = math.log(1.0 - u[q, 3]) / math.log(params.tail)
                    depth = FREE_DEPTH + int(extra) if extra < run - FREE_DEPTH else run
                expect = min(cap, 2 + depth)
            assert bank.acc_len[lo + q] == expect, (r, q)
