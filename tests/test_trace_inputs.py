"""Every trace surface answers a bad input in one line naming the file, field or option, the value
and what is allowed — the catalogue of the trace-surfaces issue, class by class, on files crafted
here (never the published data):

1. readers that trusted their input (nesting, FIFOs, devices, damaged or lying ``.npz`` members,
   scalars of the wrong kind, a cap that wrapped);
2. a rewritten bank replayed from the cache under its old digest;
3. ``trace_requests`` far above what memory can serve;
4. the filter's PARAMS.json ``cap``, and a model that cannot price the env's γ_max;
5. the ``msenv.traces`` command line (``--out``, unbounded numbers, an empty ``--split`` part);
6. the published files pinned, result files recording the trace files they read, ``--check``
   naming a file that changed;
7. fields that do not apply to the chosen source.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import msenv
from msenv.traces import TraceBank, load_bank, preset_bank, read_jsonl, read_npz, save_bank, write_jsonl, write_npz
from msenv.traces import files as trace_files_module
from msenv.traces.__main__ import main as traces_cli
from msenv.traces.published import PUBLISHED_FILES, TRACES_DIR_VAR, published_source
from msenv.traces.sources import bank_of, trace_files

ID = "msenv/MultiSpin-Traces-v0"


def one_line(call, *words):
    """``call()`` raises a one-line ValueError holding every one of ``words``."""
    with pytest.raises(ValueError) as e:
        call()
    text = str(e.value)
    assert "\n" not in text, text
    for w in words:
        assert str(w) in text, (w, text)
    return text


GOOD = {"format": np.str_("msenv-trace-bank"), "version": np.int64(1), "acc_len": np.array([1, 2, 3, 2], np.int32),
        "offsets": np.array([0, 2, 4]), "ids": np.array(["a", "b"]), "cap": np.int64(4), "drafter": np.str_("eagle")}


def npy(value) -> bytes:
    buf = io.BytesIO()
    np.save(buf, value)
    return buf.getvalue()


def npz(path: Path, members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> Path:
    """A zip of ``name.npy`` members (raw bytes: any header, any data)."""
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(f"{name}.npy", data)
    return path


def bank_npz(path: Path, **change) -> Path:
    fields = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    return npz(path, {k: npy(v) for k, v in fields.items()})


def header_only(shape, descr="<i4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


# ---------------------------------------------------------------------- 1. readers
def test_a_json_line_nested_100000_deep(tmp_path):
    p = tmp_path / "deep.jsonl"
    p.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    one_line(lambda: read_jsonl(p, "eagle"), p, "line 1", "malformed JSON", "nested")
    p.write_text('{"id": "r", "acc_eagle": {"acc_len": [1]}, "x": ' + "9" * 5000 + "}\n")
    one_line(lambda: read_jsonl(p, "eagle"), p, "line 1", "malformed JSON")  # a number of too many digits


def test_special_files_are_refused_before_they_are_read(tmp_path):
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    got = []
    t = threading.Thread(target=lambda: got.append(pytest.raises(ValueError, read_jsonl, fifo, "eagle")), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "reading a FIFO hung"
    assert "a FIFO" in str(got[0].value) and str(fifo) in str(got[0].value)
    zero = tmp_path / "zero.npz"
    zero.symlink_to("/dev/zero")
    one_line(lambda: load_bank(zero), zero, "a character device", "allowed: a regular file")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    one_line(lambda: read_jsonl(folder, "eagle"), folder, "cannot read", "a folder")


def test_the_documented_size_limits(tmp_path, monkeypatch):
    p = tmp_path / "b.jsonl"
    line = json.dumps({"id": "r", "acc_eagle": {"acc_len": [1] * 50}})
    p.write_text(line + "\n")
    monkeypatch.setattr(trace_files_module, "MAX_LINE_BYTES", 100)
    one_line(lambda: read_jsonl(p, "eagle"), p, "line 1", "longer than 100 bytes")
    monkeypatch.setattr(trace_files_module, "MAX_FILE_BYTES", 50)
    one_line(lambda: read_jsonl(p, "eagle"), p, f"{p.stat().st_size} bytes is too large", "at most 50 bytes")


@pytest.mark.parametrize("make, words", [
    # a damaged deflate stream: a bare zlib.error before
    (lambda p: p.write_bytes(_corrupt(bank_npz(p).read_bytes())), ["field acc_len", "allowed: a 1-D integer array"]),
    # a member without a .npy header: an AttributeError before
    (lambda p: npz(p, {**{k: npy(v) for k, v in GOOD.items()}, "acc_len": b"hello world"}),
     ["field acc_len is not a .npy array", "magic string"]),
    # a header declaring 10^13 elements: a MemoryError before (every member loaded, shapes trusted)
    (lambda p: npz(p, {**{k: npy(v) for k, v in GOOD.items()}, "acc_len": header_only((10**13,))}),
     ["field acc_len declares 10000000000000 int32 values", "at most 67108864"]),
    # ids declaring 2^20 strings of 256 characters: 1 GiB, beyond what the arrays may declare together
    (lambda p: npz(p, {**{k: npy(v) for k, v in GOOD.items()}, "ids": header_only((2**20,), "<U256")}),
     ["its arrays declare", "at most 536870912"]),
    (lambda p: bank_npz(p, version=np.str_("abc")), ["field version = 'abc' is invalid", "allowed: the integer 1"]),
    (lambda p: bank_npz(p, version=np.array([1, 1])), ["field version is an array of int64, shape (2,)",
                                                      "allowed: the integer 1"]),
    (lambda p: bank_npz(p, cap=np.float64("nan")), ["field cap = nan is invalid", "an integer in [1, 2147483647]"]),
    (lambda p: bank_npz(p, cap=np.float64(8.7)), ["field cap = 8.7 is invalid"]),  # silently 8 before
    (lambda p: bank_npz(p, cap=np.int64(2**33), acc_len=np.array([1, 2, 2**32 + 3, 2], np.int64)),
     ["field cap = 8589934592 is invalid", "[1, 2147483647]"]),  # 2^32 + 3 silently wrapped to 3 before
    (lambda p: bank_npz(p, extra=np.int64(1)), ["member 'extra.npy' is unknown", "allowed: one each of"]),
    (lambda p: bank_npz(p, offsets=np.array([0, 5, 4])), ["field offsets is invalid"]),
    (lambda p: bank_npz(p, offsets=np.array([0, 3, 3, 4]), ids=np.array(["a", "b", "c"])),
     ["request 'b'", "field acc_len has length 0"]),
    (lambda p: bank_npz(p, acc_len=np.array([[1, 2], [3, 2]], np.int32)),
     ["field acc_len is an array of int32, shape (2, 2)", "1-D integer array"]),
])
def test_a_bad_npz_is_one_line_naming_the_file_and_field(tmp_path, make, words):
    p = tmp_path / "bad.npz"
    make(p)
    one_line(lambda: read_npz(p), p, *words)


def _corrupt(raw: bytes) -> bytes:
    """The bytes of a bank file with acc_len's deflate stream damaged (its header left readable)."""
    raw = bytearray(raw)
    i = raw.find(b"acc_len.npy") + len("acc_len.npy") + 40
    raw[i:i + 30] = b"\xff" * 30
    return bytes(raw)


def test_a_zip_bomb_is_read_no_further_than_its_header_declares(tmp_path):
    """acc_len's header declares 4 values; its member inflates to 64 MiB. The reader stops after the
    declared 16 bytes (and one more): refused in one line, memory never near 64 MiB."""
    p = tmp_path / "bomb.npz"
    bomb = header_only((4,)) + bytes(64 * 2**20)
    npz(p, {**{k: npy(v) for k, v in GOOD.items()}, "acc_len": bomb})
    assert p.stat().st_size < 2**20
    tracemalloc.start()
    try:
        one_line(lambda: read_npz(p), p, "field acc_len holds more than 16 bytes of data, its header declares 16")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, peak


def test_an_explicit_cap_is_an_int32(tmp_path):
    p = tmp_path / "b.jsonl"
    p.write_text(json.dumps({"id": "r", "acc_eagle": {"acc_len": [1, 2**31]}}) + "\n")
    one_line(lambda: read_jsonl(p, "eagle"), p, "acc_eagle.acc_len[1] = 2147483648", "[1, 2147483647]")
    for cap in (2**31, 0, 8.7, True):
        one_line(lambda c=cap: read_jsonl(p, "eagle", cap=c), f"cap={cap!r}", "[1, 2147483647]")
    with pytest.raises(ValueError, match="cap"):
        TraceBank.from_arrays([1], [1], ["a"], 2**31, "eagle", "t")


def test_a_request_id_must_be_a_short_string_or_an_integer(tmp_path):
    p = tmp_path / "b.jsonl"
    for rid, words in ((1.5, "field id = '1.5' is invalid"), (True, "field id = 'True'"), ("x" * 300,
                       "field id has 300 characters; allowed: 1 … 256")):
        p.write_text(json.dumps({"id": rid, "acc_eagle": {"acc_len": [1]}}) + "\n")
        one_line(lambda: read_jsonl(p, "eagle"), p, "line 1", words)


def test_a_good_bank_still_reads_in_both_formats(tmp_path):
    bank = TraceBank.from_requests([[1, 5, 2], [3, 1]], ["a", "b"], cap=5, drafter="eagle", source="t")
    for path in (write_npz(tmp_path / "b.npz", bank), write_jsonl(tmp_path / "b.jsonl", bank)):
        back = load_bank(path, drafter="eagle")
        assert back.acc_len.tolist() == [1, 5, 2, 3, 1] and back.ids == ("a", "b") and back.cap == 5
        assert back.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------- 2. the cache
def test_a_rewritten_bank_is_read_again_under_its_new_digest(tmp_path):
    path = tmp_path / "bank.npz"
    cfg = msenv.env_config(ID, trace_source=str(path), trace_split="all")
    write_npz(path, preset_bank("sharegpt-eagle", requests=20, seed=1))
    first = bank_of(cfg)
    assert first.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and bank_of(cfg) is first
    second_bank = preset_bank("sharegpt-eagle", requests=20, seed=2)
    write_npz(path, second_bank)  # the same path, rewritten
    second = bank_of(cfg)
    assert second.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() != first.sha256
    assert np.array_equal(second.acc_len, second_bank.acc_len)
    assert second.files == ({"path": str(path), "sha256": second.sha256, "bytes": path.stat().st_size},)
    path.unlink()
    one_line(lambda: bank_of(cfg), path, "cannot read")  # a file gone: said, not replayed from memory


def test_an_env_made_after_a_bank_is_rewritten_replays_the_new_bank(tmp_path):
    """The engine of a config that reads files is built per version of them: an env made after the
    file changed replays the new bank, one made before keeps the bank it started with."""
    from msenv.engine.functional import engine_for

    path = tmp_path / "bank.npz"
    write_npz(path, preset_bank("cnn-ngram", requests=20, seed=1))
    cfg = msenv.env_config(ID, trace_source=str(path), trace_split="all", num_devices=3)
    before = engine_for(cfg)
    assert engine_for(cfg) is before
    write_npz(path, preset_bank("gsm8k-eagle", requests=20, seed=2))
    after = engine_for(cfg)
    assert after is not before and after.bank.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert before.bank.sha256 != after.bank.sha256


# ---------------------------------------------------------------------- 3. trace_requests
def test_trace_requests_is_bounded_by_memory():
    from msenv.config.groups import MAX_TRACE_REQUESTS

    assert MAX_TRACE_REQUESTS == 10_000
    one_line(lambda: msenv.env_config(ID, trace_requests=10**6), "trace_requests=1000000", "[3, 10000]")
    one_line(lambda: preset_bank("cnn-ngram", requests=10_001), "requests=10001", "[1, 10000]")
    one_line(lambda: bank_of(msenv.env_config(ID, trace_source="mix:gsm8k-eagle,cnn-eagle,sharegpt-eagle",
                                              trace_requests=4000)),
             "trace_requests=4000", "a mix of 3 presets", "at most 3333")


# ---------------------------------------------------------------------- 4. the filter's PARAMS.json
@pytest.mark.parametrize("cap", [0, -3, 1, 2.7, "abc", None, True, 2**31])
def test_a_params_files_cap_is_checked(tmp_path, cap):
    from baselines.bayes_trace import TraceFilterSAA
    from msenv.traces import PRESETS, read_fit

    p = tmp_path / "PARAMS.json"
    p.write_text(json.dumps({"params": PRESETS["cnn-eagle"].params.as_dict(), "cap": cap, "drafter": "eagle"}))
    one_line(lambda: read_fit(p), p, f"field cap = {cap!r} is invalid", "an integer in [2, 2147483647]")
    one_line(lambda: TraceFilterSAA(params=p), p, "field cap")


def test_a_model_that_cannot_price_gamma_max_is_refused(tmp_path):
    from baselines.bayes_trace import TraceFilterSAA
    from msenv.traces import PRESETS

    p = tmp_path / "PARAMS.json"
    p.write_text(json.dumps({"params": PRESETS["cnn-eagle"].params.as_dict(), "cap": 5, "drafter": "eagle"}))
    ctrl = TraceFilterSAA(params=p)
    cfg = msenv.env_config(ID, trace_source="cnn-eagle")
    assert cfg.gamma_max == 12
    one_line(lambda: ctrl.model_for(cfg), f"params={str(p)!r}", "cap=5 is invalid for gamma_max=12", "cap − 1 = 4")
    assert ctrl.model_for(cfg.replace(gamma_max=4)).cap == 5
    one_line(lambda: TraceFilterSAA(preset="gsm8k-eagle").model_for(cfg.replace(gamma_max=16)),
             "preset='gsm8k-eagle'", "cap=16 is invalid for gamma_max=16")
    one_line(lambda: TraceFilterSAA(params=5), "params=5 is invalid")


# ---------------------------------------------------------------------- 5. the command line
def cli_error(capsys, argv, *words, code=2):
    """The CLI exits ``code`` with one line (argparse's usage line aside) holding ``words``."""
    try:
        got = traces_cli(argv)
    except SystemExit as e:
        got = e.code
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if not line.startswith(("usage:", " "))]
    assert got == code and len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.mark.parametrize("argv, words", [
    (["stats", "--preset", "gsm8k-eagle", "--boot", "1000000000"], ["--boot", "[0, 10000]"]),
    (["stats", "--preset", "gsm8k-eagle", "--requests", "1000000000"], ["--requests", "[1, 10000]"]),
    (["stats", "--preset", "gsm8k-eagle", "--gammas", "100000"], ["--gammas", "[1, 1000]"]),
    (["stats", "--preset", "sharegpt-eagle", "--requests", "10000", "--boot", "5000"],
     ["--boot 5000 is invalid for a bank of 10000 requests", "B ≤ 1677"]),
    (["stats", "--preset", "gsm8k-eagle", "--drafter", "ngram"], ["--drafter does not apply with --preset"]),
    (["fit", "--published", "gsm8k-eagle", "--scale", "100000000", "--out", "x.json"], ["--scale", "[1, 64]"]),
    (["fit", "--published", "instructcoder-eagle", "--scale", "64", "--out", "{tmp}/x.json"],
     ["--scale 64 is invalid for 496 requests", "--scale ≤ 20"]),
    (["fit", "--published", "gsm8k-eagle", "--evals", "0", "--out", "x.json"], ["--evals", "[1, 100000]"]),
    (["generate", "--preset", "gsm8k-eagle", "--out", "{tmp}/bank.csv"], ["--out", "suffix '.csv' is unknown"]),
    (["generate", "--preset", "gsm8k-eagle", "--out", "{tmp}"], ["a folder; allowed: a file's path"]),
    (["generate", "--preset", "gsm8k-eagle", "--out", "{tmp}/blocker/bank.npz"], ["cannot be written"]),
])
def test_bad_options_are_one_line_before_any_work(tmp_path, capsys, monkeypatch, argv, words):
    import msenv.traces.__main__ as cli

    (tmp_path / "blocker").write_text("a file where a folder would go")
    monkeypatch.setattr(cli, "fit", lambda *a, **k: pytest.fail("the fit ran before the options were checked"))
    monkeypatch.setattr(cli, "generate_bank", lambda *a, **k: pytest.fail("a bank was drawn before the check"))
    monkeypatch.setattr(cli, "preset_bank", lambda *a, **k: pytest.fail("a bank was drawn before the check")
                        if argv[0] == "generate" else preset_bank(*a, **k))
    cli_error(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv], *words)


def test_out_into_a_missing_folder_is_made_and_an_empty_split_named(tmp_path, capsys):
    out = tmp_path / "new" / "folder" / "bank.npz"
    assert traces_cli(["generate", "--preset", "gsm8k-eagle", "--requests", "5", "--out", str(out)]) == 0
    assert len(load_bank(out)) == 5
    tiny = write_npz(tmp_path / "two.npz", TraceBank.from_requests([[1, 2, 3], [2, 2]], ["a", "b"], cap=4,
                                                                   drafter="eagle", source="t"))
    capsys.readouterr()
    cli_error(capsys, ["fit", str(tiny), "--split", "test", "--out", str(tmp_path / "p.json")],
              "--split test: the bank's test part holds no request", "train 1, validation 1, test 0")
    cli_error(capsys, ["stats", str(tmp_path / "nope.npz")], "nope.npz: cannot read the file")


def test_generate_reads_the_params_file_it_is_given(tmp_path, capsys):
    p = tmp_path / "PARAMS.json"
    p.write_text(json.dumps({"params": {"stay": 0.5}, "cap": 9, "drafter": "eagle", "requests": 3}))
    cli_error(capsys, ["generate", "--params", str(p), "--out", str(tmp_path / "b.npz")], str(p), "field params")
    p.write_text(json.dumps({"params": {}, "cap": 0}))
    cli_error(capsys, ["generate", "--params", str(p), "--out", str(tmp_path / "b.npz")], "field cap = 0 is invalid")
    p.write_text(json.dumps({"params": {}, "cap": 2.7}))  # silently 2 before
    cli_error(capsys, ["generate", "--params", str(p), "--out", str(tmp_path / "b.npz")], "field cap = 2.7 is invalid")


# ---------------------------------------------------------------------- 6. the published files
#: the pins as the issue gives them (SpecDecode-Bench/simulator data/llama3.1-8B/, commit 2fdccbd)
PINS = {"combined_gsm8k.jsonl": ("6d6bfb9993f4a540ff73cb330bdd4348dc3e6a6c77a111d3e35b96caf83c26f1", 769_056),
        "combined_sharegpt.jsonl": ("748df2df1e89b986009aad1a42fee604b1fe57558b690aef0da7d9c7b9708b75", 3_329_829),
        "combined_cnn.jsonl": ("90637b8cb4c410b3de6cdf2898ef1104d41b0fc5bff5e8692a6bfc836101899b", 2_605_070),
        "combined_instructcoder.jsonl": ("cfd6b6b156076a704f7aff0f060920bb7c5e4c3b80ef32efbe858b62d85cd910",
                                         2_114_054)}


def test_the_published_files_are_pinned():
    assert {f.file: (f.sha256, f.bytes) for f in PUBLISHED_FILES.values()} == PINS


def _published_like(folder: Path, name: str, seed: int) -> Path:
    """A crafted file in the published layout (both drafters), under a published file's name."""
    eagle = preset_bank("cnn-eagle", requests=12, seed=seed)
    acc = eagle.acc_len.copy()
    acc[0] = 21  # the largest value: the JSONL reader's cap
    ngram = TraceBank.from_arrays(acc, eagle.lengths, eagle.ids, 21, "ngram", "t")
    folder.mkdir(exist_ok=True)
    return write_jsonl(folder / name, [eagle, ngram])


def test_a_file_that_differs_from_its_pin_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "traces"
    crafted = _published_like(folder, "combined_gsm8k.jsonl", 1)  # e.g. combined_cnn.jsonl renamed
    monkeypatch.setenv(TRACES_DIR_VAR, str(folder))
    digest = hashlib.sha256(crafted.read_bytes()).hexdigest()
    text = one_line(lambda: published_source("published:gsm8k-eagle"), crafted, f"sha256 {digest}",
                    f"({crafted.stat().st_size} bytes) differs from the pinned {PINS['combined_gsm8k.jsonl'][0]}")
    one_line(lambda: bank_of(msenv.env_config(ID, trace_source="published:gsm8k-eagle")), text)
    # the same file under its own pin plays, and its files are recorded
    from msenv.traces import published

    monkeypatch.setitem(published.PUBLISHED_FILES, "gsm8k", published.PublishedFile(
        "combined_gsm8k.jsonl", digest, crafted.stat().st_size))
    cfg = msenv.env_config(ID, trace_source="published:gsm8k-eagle", trace_split="all", gamma_max=8)
    assert bank_of(cfg).sha256 == digest
    assert trace_files(cfg) == [{"path": str(crafted), "sha256": digest, "bytes": crafted.stat().st_size}]


def test_the_traces_folder_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(TRACES_DIR_VAR, "")
    one_line(lambda: published_source("published:cnn-ngram"), "MSENV_TRACES_DIR=''", "allowed: the folder")
    (tmp_path / "f").write_text("x")
    monkeypatch.setenv(TRACES_DIR_VAR, str(tmp_path / "f"))
    one_line(lambda: published_source("published:cnn-ngram"), "is a file", "allowed: the folder")
    monkeypatch.setenv(TRACES_DIR_VAR, str(tmp_path))
    one_line(lambda: published_source("published:cnn-ngram"), "combined_cnn.jsonl: not found", TRACES_DIR_VAR)
    os.mkfifo(tmp_path / "combined_cnn.jsonl")
    one_line(lambda: published_source("published:cnn-ngram"), "a FIFO")
    one_line(lambda: published_source("published:cnn-medusa"), "trace_source='published:cnn-medusa'")


def _trace_suite(path: Path):
    from evaluation.suites import CELL_STRIDE, TEST_SEEDS, Cell, Suite

    return Suite("traces-v1", "a tiny trace suite for the tests", (
        Cell("file", ID, 2, 3, TEST_SEEDS.start + 960 * CELL_STRIDE,
             {"trace_source": str(path), "trace_split": "all", "num_devices": 3}),
        Cell("preset", ID, 2, 3, TEST_SEEDS.start + 961 * CELL_STRIDE,
             {"trace_source": "gsm8k-eagle", "trace_split": "test", "num_devices": 3}),
        Cell("shipped", ID, 2, 3, TEST_SEEDS.start + 962 * CELL_STRIDE,
             {"trace_source": "eagle-mix-v1", "trace_split": "test", "num_devices": 3})), reference="greedy-saa",
        controllers=("greedy-saa",))


def test_a_result_records_its_trace_files_and_check_names_a_changed_one(tmp_path, monkeypatch, capsys):
    from evaluation import benchmark
    from evaluation.benchmark import check, cli

    path = save_bank(tmp_path / "bank.npz", preset_bank("sharegpt-eagle", requests=15, seed=3))
    suite = _trace_suite(path)
    monkeypatch.setattr(check, "get_suite", lambda name: suite)
    monkeypatch.setattr(cli, "get_suite", lambda name: suite)
    result = json.loads(json.dumps(benchmark.run_benchmark(suite, benchmark.controller_methods(["fixed-2"])),
                                   default=float))
    shipped = msenv.traces.SHIPPED["eagle-mix-v1"]
    assert result["trace_files"] == [
        {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "bytes": path.stat().st_size},
        {"path": "msenv/traces/data/eagle-mix-v1.npz", "sha256": shipped.sha256,
         "bytes": (msenv.traces.published.DATA / shipped.file).stat().st_size}]
    assert check.trace_file_problems(result) == []
    old = result["trace_files"][0]["sha256"]
    save_bank(path, preset_bank("sharegpt-eagle", requests=15, seed=4))  # the file changes after the run
    new = hashlib.sha256(path.read_bytes()).hexdigest()
    problems = check.replay_problems(result, 2, seed=0)
    assert problems == [(f"trace file {path}: sha256 {new} ({path.stat().st_size} bytes) is not the {old} "
                         f"({result['trace_files'][0]['bytes']} bytes) the result read from {path}: the file changed "
                         "since the run, so its episodes cannot replay")]
    path.unlink()
    assert "cannot be read here" in check.trace_file_problems(result)[0]
    result.pop("trace_files")  # a result written before they were recorded: nothing to say
    assert check.trace_file_problems(result) == []


# ---------------------------------------------------------------------- 7. fields that do not apply
@pytest.mark.parametrize("fields, words", [
    ({"trace_source": "gsm8k-eagle", "trace_drop_limit": 8192},
     ["trace_drop_limit=8192 does not apply to trace_source='gsm8k-eagle'", "allowed: None"]),
    ({"trace_source": "eagle-mix-v1", "trace_drop_limit": 8192}, ["trace_drop_limit=8192", "an .npz bank"]),
    ({"trace_source": "{npz}", "trace_drop_limit": 8192}, ["trace_drop_limit=8192", "an .npz bank"]),
    ({"trace_source": "gsm8k-eagle", "trace_drafter": "ngram"},
     ["trace_drafter='ngram' does not apply to trace_source='gsm8k-eagle'", "its own drafter, eagle"]),
    ({"trace_source": "{npz}", "trace_drafter": "ngram"},
     ["trace_drafter='ngram'", "an .npz bank names its own drafter, eagle"]),
    ({"trace_source": "published:cnn-eagle", "trace_drafter": "ngram"},
     ["trace_drafter='ngram'", "own drafter, eagle"]),
    ({"trace_source": "mix:gsm8k-eagle,gsm8k-eagle"}, ["mix: and 1 … 16 distinct names"]),
])
def test_a_field_that_does_not_apply_is_refused(tmp_path, fields, words):
    npz_path = save_bank(tmp_path / "b.npz", preset_bank("sharegpt-eagle", requests=6, seed=0))
    fields = {k: (str(npz_path) if v == "{npz}" else v) for k, v in fields.items()}
    one_line(lambda: bank_of(msenv.env_config(ID, **fields)), *words)


def test_fields_that_agree_with_the_source_are_accepted(tmp_path):
    assert bank_of(msenv.env_config(ID, trace_source="cnn-ngram", trace_drafter="ngram")).cap == 21
    assert bank_of(msenv.env_config(ID, trace_source="cnn-ngram")).cap == 21  # the default drafter: the source's
    jsonl = _published_like(tmp_path, "mine.jsonl", 0)
    cfg = msenv.env_config(ID, trace_source=str(jsonl), trace_drafter="ngram", trace_drop_limit=10**6,
                           trace_split="all")
    assert bank_of(cfg).cap == 21 and trace_files(cfg)[0]["sha256"] == hashlib.sha256(jsonl.read_bytes()).hexdigest()


def test_the_env_refuses_them_at_make(tmp_path):
    import gymnasium as gym

    one_line(lambda: gym.make(ID, trace_source="gsm8k-eagle", trace_drop_limit=100), "trace_drop_limit=100")
