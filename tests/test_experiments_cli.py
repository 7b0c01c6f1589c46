"""``python -m experiments`` as argparse subcommands: every subcommand of the former positional,
each reading exactly the options its run reads with the defaults it had, its own ``--help``, and
every bad or misplaced option refused in one line (exit 2) before any work starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.suites import VALIDATION_SEEDS
from experiments import budget, cells, hetero, tables
from experiments.__main__ import COMMANDS, build_parser, main, parse_args

ROOT = Path(__file__).resolve().parents[1]
SWEEP = {"--drops", "--rounds", "--seed", "--workers", "--ray", "--quick"}
TRACE = {"--drops", "--rounds", "--seed", "--workers"}
#: each subcommand of the former positional → the options its run read (besides --out and --no-progress)
OPTIONS = {
    **{f: SWEEP for f in ("fig7", "fig8", "fig9", "fig10")},
    "fig11": SWEEP | {"--agent"}, "all": SWEEP | {"--agent"},
    "gap": {"--drops", "--seed", "--workers", "--ray", "--num-devices", "--gamma-max"},
    "sensitivity": SWEEP | {"--readings", "--extended"},
    "dynamics": SWEEP | {"--agent"},
    "table": {"--env-id", "--drops", "--rounds", "--seed", "--workers", "--ray", "--agent"},
    "hetero": SWEEP | {"--agent"},
    "cells": SWEEP | {"--agent", "--mlp-agent", "--ks", "--kinds"},
    "budget": {"--drops", "--seed", "--workers", "--quick", "--agent"},
    "paired": set(), "replot": set(),
    "traces-tune": TRACE, "traces-headroom": TRACE, "traces-sensitivity": TRACE, "traces-presets": set(),
    "traces-training": TRACE | {"--runs"},
    "traces-shares": TRACE | {"--agent-dir", "--result", "--split"},
    "traces-agent": {"--seeds", "--timesteps", "--bc-rounds", "--bc-epochs"},
    "main-job-seeds": {"--workers", "--quick"},
}
TRACE_SEED = VALIDATION_SEEDS.start + 60_000  # experiments.traces' block
#: the defaults of the former parse_args: (drops, rounds, seed) where the subcommand reads them
DEFAULTS = {
    **{f: (50, 10, 0) for f in ("fig7", "fig8", "fig9", "fig10", "fig11", "all")},
    "gap": (50, None, 0), "sensitivity": (14, 10, 0), "dynamics": (20, 30, 0),
    "table": (tables.EPISODES, tables.ROUNDS, tables.SEED), "hetero": (hetero.EPISODES, hetero.ROUNDS, hetero.SEED),
    "cells": (cells.EPISODES, cells.ROUNDS, cells.SEED), "budget": (budget.EPISODES, None, budget.SEED),
    "traces-tune": (8, 100, TRACE_SEED), "traces-headroom": (8, 100, TRACE_SEED + 10_000),
    "traces-sensitivity": (4, 100, TRACE_SEED + 20_000), "traces-training": (8, 100, TRACE_SEED + 35_000),
    "traces-shares": (10, 100, TRACE_SEED + 38_000),
}


def _flags(parser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings} - {"-h", "--help", "--out", "--no-progress"}


def test_every_former_subcommand_is_a_subparser_with_the_options_its_run_reads():
    ap = build_parser()
    assert list(ap.subcommands) == list(OPTIONS) == list(COMMANDS)
    for name, expected in OPTIONS.items():
        assert _flags(ap.subcommands[name]) == expected, name


@pytest.mark.parametrize("name", list(OPTIONS))
def test_each_subcommand_keeps_its_defaults(name):
    args = parse_args(build_parser(), [name])
    assert args.command == name and args.out == "results" and args.no_progress is False
    drops, rounds, seed = DEFAULTS.get(name, (None, None, None))
    for option, value in (("drops", drops), ("rounds", rounds), ("seed", seed)):
        assert getattr(args, option, None) == value, (name, option)
    if "--workers" in OPTIONS[name]:
        assert args.workers == 2
    if "--agent" in OPTIONS[name]:
        assert args.agent in (None, [])


def test_the_options_of_gap_table_and_traces_training_keep_their_defaults():
    ap = build_parser()
    gap = parse_args(ap, ["gap"])
    assert (gap.num_devices, gap.gamma_max, gap.ray) == (3, 20, None)
    assert parse_args(ap, ["table"]).env_id == "msenv/MultiSpin-v0"
    assert parse_args(ap, ["traces-training"]).runs == "runs/traces"
    c = parse_args(ap, ["cells"])
    assert (c.ks, c.kinds, c.mlp_agent, c.quick) == (None, None, None, False)
    s = parse_args(ap, ["sensitivity", "--readings", "a", "b", "--extended"])
    assert (s.readings, s.extended) == (["a", "b"], True)


@pytest.mark.parametrize("name", ["fig7", "cells", "traces-training", "paired", "main-job-seeds"])
def test_each_subcommand_has_its_own_help_listing_its_options(name, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith(f"usage: python -m experiments {name} ")
    listed = {w.rstrip(",") for w in out.split() if w.startswith("--")}
    assert {f for f in OPTIONS[name] | {"--out", "--no-progress"}} <= listed
    others = set().union(*OPTIONS.values()) - OPTIONS[name] - {"--agent"}
    assert not {w.strip("[]") for w in listed} & others, name


def _refused(argv, capsys, run=main) -> str:
    with pytest.raises(SystemExit) as e:
        run(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert e.value.code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("name", list(OPTIONS))
def test_an_option_of_other_subcommands_is_refused_naming_them(name, capsys):
    ap = build_parser()
    for flag in sorted(set().union(*OPTIONS.values()) - OPTIONS[name]):
        users = [n for n, o in OPTIONS.items() if flag in o]
        value = [] if flag in ("--quick", "--extended") else ["1"]
        line = _refused([name, flag, *value], capsys, ap.parse_args)
        assert line == f"python -m experiments {name}: error: {flag} is not used by {name}; allowed with: " \
                       + ", ".join(users), line


@pytest.mark.parametrize("argv, words", [
    (["fig7", "--drops", "0"], "--drops 0 is invalid; allowed: an integer in 1 … 100,000"),
    (["traces-tune", "--drops", "100001"], "--drops 100001 is invalid; allowed: an integer in 1 … 100,000"),
    (["main-job-seeds", "--workers", "257"], "--workers 257 is invalid; allowed: an integer in 1 … 256"),
    (["budget", "--seed", "-1"], "--seed -1 is invalid; allowed: an integer ≥ 0"),
    (["dynamics", "--rounds", "1"], "--rounds 1 is invalid (config field episode_length=1 is invalid"),
    (["gap", "--gamma-max", "0"], "--gamma-max 0 is invalid (config field gamma_max=0 is invalid"),
    (["cells", "--ks", "5", "0"], "--ks 0 is invalid; allowed: integers ≥ 1"),
    (["cells", "--kinds", "paper", "nowhere"], "argument --kinds: invalid choice: 'nowhere' (choose from 'paper'"),
    (["fig9", "--drops", "many"], "argument --drops: invalid int value: 'many'"),
    (["fig9", "--seed", "1000000"], "--seed 1000000 is invalid: "),
    (["traces-headroom", "--seed", "0"], ("--seed 0 is invalid for traces-headroom: its 8 episodes must draw seeds of "
     "the validation block")),
    (["fig7", "stray"], "unrecognized arguments: stray"),
    (["--drops", "3", "fig7"], ("--drops is given before the subcommand; allowed: python -m experiments SUBCOMMAND "
     "[options]")),
    (["fig12"], "argument SUBCOMMAND: invalid choice: 'fig12'"),
    ([], "the following arguments are required: SUBCOMMAND"),
])
def test_a_bad_value_is_one_line_naming_the_option_and_what_is_allowed(argv, words, capsys):
    assert words in _refused(argv, capsys)


@pytest.mark.slow
def test_the_command_line_refuses_before_writing_anything(tmp_path):
    r = subprocess.run([sys.executable, "-m", "experiments", "table", "--quick", "--out", str(tmp_path / "out")],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == ("python -m experiments table: error: --quick is not used by table; "
                                                 "allowed with: " + ", ".join(n for n, o in OPTIONS.items()
                                                                              if "--quick" in o))
    assert not (tmp_path / "out").exists()


def test_the_command_line_page_shows_every_subcommands_help():
    import importlib.util

    spec = importlib.util.spec_from_file_location("cli_page_docs", ROOT / "docs" / "_ext" / "msenv_docs.py")
    docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docs)
    page = docs.cli_page()
    for name in build_parser().subcommands:
        head = f"### `python -m experiments {name}`\n\n```text\n"
        assert head in page, name
        shown = page.split(head, 1)[1].split("```", 1)[0]
        assert shown.startswith(f"usage: python -m experiments {name} ")
        assert all(f in shown for f in OPTIONS[name]), name
