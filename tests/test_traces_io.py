"""Trace banks: the bank type, the readers and writers of both formats, every bad input answered
in one line, and the split into training / validation / test requests."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from msenv.traces import TraceBank, load_bank, read_jsonl, read_npz, save_bank, split_indices, write_jsonl, write_npz
from msenv.traces.bank import canonical_sha256

EAGLE = [[1, 5, 4, 3, 2, 1, 3], [2, 1, 1, 16]]
NGRAM = [[1, 1, 4, 3, 2, 1, 1], [1, 1, 1, 1]]


def _line(rid, eagle=None, ngram=None, prompt=3, generated=None, **extra) -> str:
    obj = {"id": rid, "prompt_token_ids": list(range(prompt)),
           "generated_token_ids": list(range(generated if generated is not None else len(eagle or ngram)))}
    if eagle is not None:
        obj["acc_eagle"] = {"acc_len": eagle}
    if ngram is not None:
        obj["acc_ngram"] = {"acc_len": ngram}
    obj.update(extra)
    return json.dumps(obj)


@pytest.fixture
def jsonl(tmp_path):
    """A hand-made file in the published layout: two requests, both drafters."""
    path = tmp_path / "combined_tiny.jsonl"
    path.write_text(_line("134", EAGLE[0], NGRAM[0]) + "\n\n" + _line(256, EAGLE[1], NGRAM[1], prompt=8190) + "\n")
    return path


# ---------------------------------------------------------------------- the bank type
def test_a_bank_is_flat_arrays_with_offsets():
    bank = TraceBank.from_requests(EAGLE, ["a", "b"], cap=16, drafter="eagle", source="hand")
    assert bank.acc_len.dtype == np.int32 and bank.offsets.dtype == np.int64
    assert bank.offsets.tolist() == [0, 7, 11] and bank.lengths.tolist() == [7, 4] and len(bank) == 2
    assert bank.request(1).tolist() == EAGLE[1] and bank.request(-1).tolist() == EAGLE[1]
    with pytest.raises(ValueError):
        bank.acc_len[0] = 3  # read-only
    sub = bank.subset([1])
    assert sub.ids == ("b",) and sub.acc_len.tolist() == EAGLE[1] and sub.cap == 16
    assert sub.sha256 == canonical_sha256(np.array(EAGLE[1]), np.array([0, 4]), ["b"], 16, "eagle")
    assert bank.sha256 != sub.sha256
    for bad in ([], [0, 0], [2], [0.5]):
        with pytest.raises(ValueError, match="indices"):
            bank.subset(bad)


def test_the_canonical_digest_depends_on_every_part():
    base = dict(acc_len=np.array([1, 2, 3]), offsets=np.array([0, 3]), ids=["x"], cap=4, drafter="eagle")
    digests = {canonical_sha256(**base)}
    for change in (dict(acc_len=np.array([1, 2, 4])), dict(ids=["y"]), dict(cap=5), dict(drafter="ngram"),
                   dict(acc_len=np.array([1, 2, 3, 1]), offsets=np.array([0, 4]))):
        digests.add(canonical_sha256(**{**base, **change}))
    assert len(digests) == 6
    assert canonical_sha256(**base) == canonical_sha256(**{**base, "acc_len": [1, 2, 3]})


@pytest.mark.parametrize("kwargs,field", [
    (dict(requests=[[1, 0]]), "acc_len"), (dict(requests=[[1, 17]]), "acc_len"), (dict(requests=[[]]), "offsets"),
    (dict(drafter="medusa"), "drafter"), (dict(ids=["a", "a"]), "ids"), (dict(cap=0), "cap"),
])
def test_a_bad_bank_names_its_field(kwargs, field):
    args = dict(requests=EAGLE, ids=["a", "b"], cap=16, drafter="eagle", source="hand")
    args.update(kwargs)
    if len(args["requests"]) != len(args["ids"]):
        args["ids"] = args["ids"][:len(args["requests"])]
    with pytest.raises(ValueError, match=field):
        TraceBank.from_requests(**args)


# ---------------------------------------------------------------------- readers and writers
def test_the_published_jsonl_reads_either_drafter(jsonl):
    eagle = read_jsonl(jsonl, "eagle")
    assert eagle.ids == ("134", "256") and eagle.lengths.tolist() == [7, 4]
    assert eagle.acc_len.tolist() == EAGLE[0] + EAGLE[1]
    assert eagle.cap == 16 and eagle.drafter == "eagle"  # the cap: the largest value in the file
    assert eagle.sha256 == hashlib.sha256(jsonl.read_bytes()).hexdigest() and eagle.source == str(jsonl)
    ngram = load_bank(jsonl, drafter="ngram")
    assert ngram.acc_len.tolist() == NGRAM[0] + NGRAM[1] and ngram.cap == 4
    assert read_jsonl(jsonl, "ngram", cap=21).cap == 21


def test_drop_limit_leaves_out_requests_at_the_generation_limit(jsonl):
    # request 256: 8190 prompt + 4 generated = 8194 tokens ≥ 8192; request 134: 3 + 7 = 10
    assert read_jsonl(jsonl, "eagle", drop_limit=8192).ids == ("134",)
    assert read_jsonl(jsonl, "eagle", drop_limit=8194).ids == ("134",)
    assert read_jsonl(jsonl, "eagle", drop_limit=8195).ids == ("134", "256")
    assert read_jsonl(jsonl, "eagle", drop_limit=8192).cap == 5  # the largest value among those kept


def test_msenv_npz_round_trip(tmp_path, jsonl):
    bank = read_jsonl(jsonl, "eagle")
    path = write_npz(tmp_path / "bank.npz", bank)
    back = read_npz(path)
    assert np.array_equal(back.acc_len, bank.acc_len) and np.array_equal(back.offsets, bank.offsets)
    assert (back.ids, back.cap, back.drafter) == (bank.ids, bank.cap, bank.drafter)
    assert back.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert load_bank(path).acc_len.tolist() == bank.acc_len.tolist()
    with np.load(path) as z:
        assert set(z.files) == {"format", "version", "acc_len", "offsets", "ids", "cap", "drafter"}


def test_the_jsonl_writer_makes_the_published_layout(tmp_path):
    eagle = TraceBank.from_requests(EAGLE, ["a", "b"], cap=16, drafter="eagle", source="hand")
    ngram = TraceBank.from_requests(NGRAM, ["a", "b"], cap=21, drafter="ngram", source="hand")
    path = write_jsonl(tmp_path / "out.jsonl", [eagle, ngram], prompt_lens=[5, 0])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b"]
    assert len(rows[0]["prompt_token_ids"]) == 5 and len(rows[0]["generated_token_ids"]) == 7
    assert rows[1]["acc_eagle"] == {"acc_len": EAGLE[1]} and rows[1]["acc_ngram"] == {"acc_len": NGRAM[1]}
    again = read_jsonl(path, "ngram", cap=21)
    assert np.array_equal(again.acc_len, ngram.acc_len) and again.cap == 21
    save_bank(tmp_path / "one.jsonl", eagle)
    assert read_jsonl(tmp_path / "one.jsonl", "eagle").acc_len.tolist() == eagle.acc_len.tolist()
    with pytest.raises(ValueError, match="one bank per drafter"):
        write_jsonl(tmp_path / "x.jsonl", [eagle, eagle])


# ---------------------------------------------------------------------- bad inputs: one line each
def _one_line_error(fn, *must_contain):
    with pytest.raises(ValueError) as info:
        fn()
    text = str(info.value)
    assert "\n" not in text, text
    for part in must_contain:
        assert str(part) in text, (part, text)
    return text


@pytest.mark.parametrize("content,parts", [
    ('{"id": 1, "acc_eagle": {"acc_len": [1]}}\n{"id": 2, ', ["line 2", "malformed JSON"]),
    ("", ["no request"]),
    ("\n\n", ["no request"]),
    (_line("r7", [], generated=0), ["'r7'", "line 1", "acc_eagle.acc_len", "empty"]),
    (_line("r7", [1, -2]), ["'r7'", "acc_eagle.acc_len[1] = -2"]),
    (_line("r7", [0]), ["'r7'", "acc_eagle.acc_len[0] = 0"]),
    (_line("r7", [1, 2.5]), ["'r7'", "acc_eagle.acc_len[1] = 2.5"]),
    (_line("r7", [1, "2"]), ["'r7'", "acc_eagle.acc_len[1] = '2'"]),
    (_line("r7", [1, True]), ["'r7'", "acc_eagle.acc_len[1] = True"]),
    (_line("r7", ngram=[1, 2]), ["'r7'", "field acc_eagle is missing"]),
    (json.dumps({"acc_eagle": {"acc_len": [1]}}), ["line 1", "field id is missing"]),
    (json.dumps({"id": "r7", "acc_eagle": {"len": [1]}}), ["'r7'", "field acc_len is missing"]),
    (json.dumps({"id": "r7", "acc_eagle": [1, 2]}), ["'r7'", "field acc_eagle is list"]),
    ("[1, 2]", ["line 1", "not an object"]),
    (_line("r7", [1]) + "\n" + _line("r7", [2]), ["'r7'", "line 2", "repeats line 1"]),
])
def test_every_bad_jsonl_input_is_one_line_naming_file_request_and_field(tmp_path, content, parts):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    _one_line_error(lambda: read_jsonl(path, "eagle"), path, *parts)


def test_a_value_above_an_explicit_cap_and_an_unknown_drafter(jsonl):
    _one_line_error(lambda: read_jsonl(jsonl, "eagle", cap=8), jsonl, "'256'", "acc_eagle.acc_len[3] = 16", "cap=8")
    _one_line_error(lambda: read_jsonl(jsonl, "medusa"), jsonl, "'medusa'", "eagle | ngram")
    _one_line_error(lambda: load_bank(jsonl), jsonl, "drafter=None", "eagle | ngram")


def test_drop_limit_needs_the_token_lists(tmp_path):
    path = tmp_path / "no_prompt.jsonl"
    path.write_text(json.dumps({"id": "r1", "generated_token_ids": [0], "acc_eagle": {"acc_len": [1]}}))
    assert read_jsonl(path, "eagle").ids == ("r1",)
    _one_line_error(lambda: read_jsonl(path, "eagle", drop_limit=10), path, "'r1'", "prompt_token_ids is missing")
    path.write_text(_line("r1", [1], prompt=9000))
    _one_line_error(lambda: read_jsonl(path, "eagle", drop_limit=8192), path, "no request", "left out 1")


def test_a_missing_or_unreadable_file(tmp_path):
    _one_line_error(lambda: load_bank(tmp_path / "nope.jsonl", drafter="eagle"), tmp_path / "nope.jsonl",
                    "cannot read")
    _one_line_error(lambda: load_bank(tmp_path / "nope.npz"), tmp_path / "nope.npz", "cannot read")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    _one_line_error(lambda: read_jsonl(folder, "eagle"), folder, "cannot read")
    _one_line_error(lambda: load_bank(tmp_path / "bank.csv"), "bank.csv", ".jsonl", ".npz")


def test_bad_npz_files(tmp_path):
    bank = TraceBank.from_requests(EAGLE, ["a", "b"], cap=16, drafter="eagle", source="hand")
    good = {"format": np.str_("msenv-trace-bank"), "version": np.int64(1), "acc_len": bank.acc_len,
            "offsets": bank.offsets, "ids": np.array(bank.ids), "cap": np.int64(16), "drafter": np.str_("eagle")}
    path = tmp_path / "bad.npz"

    def write(**change):
        fields = {k: v for k, v in {**good, **change}.items() if v is not None}
        with path.open("wb") as f:
            np.savez(f, **fields)

    write(ids=None)
    _one_line_error(lambda: read_npz(path), path, "field ids is missing")
    write(acc_len=np.array([1, 5, 4, 3, 2, 0, 3, 2, 1, 1, 16], dtype=np.int32))
    _one_line_error(lambda: read_npz(path), path, "'a'", "acc_len[5] = 0")
    write(acc_len=np.array([1, 5, 4, 3, 2, 1, 3, 2, 1, 1, 17], dtype=np.int32))
    _one_line_error(lambda: read_npz(path), path, "'b'", "acc_len[3] = 17", "cap=16")
    write(offsets=np.array([0, 0, 11]))
    _one_line_error(lambda: read_npz(path), path, "'a'", "length 0")
    write(drafter=np.str_("medusa"))
    _one_line_error(lambda: read_npz(path), path, "'medusa'", "eagle | ngram")
    write()
    _one_line_error(lambda: read_npz(path, drafter="ngram"), path, "drafter")
    _one_line_error(lambda: load_bank(path, drop_limit=8192), path, "drop_limit")
    path.write_text("not a zip")
    _one_line_error(lambda: read_npz(path), path, "not an msenv bank file")


# ---------------------------------------------------------------------- the split
def _random_bank(seed: int, requests: int = 200) -> TraceBank:
    rng = np.random.default_rng(seed)
    reqs = [rng.geometric(rng.uniform(0.2, 0.8), size=rng.integers(1, 300)).clip(1, 12) for _ in range(requests)]
    return TraceBank.from_requests(reqs, [f"q{i}" for i in rng.permutation(requests)], cap=12, drafter="eagle",
                                   source=f"random {seed}")


def test_the_split_is_a_partition_fixed_by_the_banks_digest(tmp_path):
    bank = _random_bank(0)
    parts = split_indices(bank)
    assert list(parts) == ["train", "validation", "test"]
    everything = np.concatenate(list(parts.values()))
    assert np.array_equal(np.sort(everything), np.arange(len(bank)))  # each request in exactly one part
    ids = [set(bank.ids[i] for i in idx) for idx in parts.values()]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert [len(p) for p in parts.values()] == [120, 40, 40]
    again = split_indices(read_npz(write_npz(tmp_path / "b.npz", bank)).subset(np.arange(len(bank))))
    assert all(np.array_equal(parts[k], again[k]) for k in parts)  # the same content: the same split
    other = split_indices(_random_bank(1))
    assert not np.array_equal(parts["test"], other["test"])


def test_the_split_is_stratified_by_acceptance_and_length():
    from msenv.traces.stats import position_rows, request_alpha0

    bank = _random_bank(3, requests=300)
    parts = split_indices(bank)
    alpha0 = request_alpha0(position_rows(bank))
    low = alpha0 <= np.quantile(alpha0, 1 / 3)
    short = bank.lengths < np.median(bank.lengths)
    for mask in (low, ~low, short, ~short):
        for name, share in zip(parts, (0.6, 0.2, 0.2)):
            got = np.isin(np.flatnonzero(mask), parts[name]).sum()
            assert abs(got - share * mask.sum()) <= 3, (name, got, share * mask.sum())


def test_split_fractions_are_checked():
    bank = _random_bank(0, requests=10)
    assert [len(v) for v in split_indices(bank, (0.5, 0.5, 0.0)).values()] == [5, 5, 0]
    for bad in ((0.5, 0.5), (0.6, 0.3, 0.2), (1.2, -0.1, -0.1)):
        with pytest.raises(ValueError, match="fractions"):
            split_indices(bank, bad)
