"""``python -m msenv.traces``: statistics of a trace bank, fitting the model to one, drawing banks.

    python -m msenv.traces stats FILE [--drafter eagle|ngram] [--gammas 1 2 …] [--drop-limit N] [--boot B]
    python -m msenv.traces stats --preset NAME [--requests N] [--seed S]
    python -m msenv.traces fit FILE [--drafter …] [--drop-limit N] [--split train] --out PARAMS.json
    python -m msenv.traces fit --published NAME --out PARAMS.json     (a preset's published figures)
    python -m msenv.traces generate --preset NAME --requests N --seed S --out FILE(.npz | .jsonl)
    python -m msenv.traces generate --params PARAMS.json --requests N --seed S --out FILE

A bad argument or file is one line on stderr and exit status 2, before any work: every number has
its bounds (``--requests`` at most 10,000, ``--boot`` B with B × requests at most 2^24, ``--scale``
× the bank's requests at most 10,000, …), an option that does not apply to the source is refused,
and ``--out`` is checked (its folder made and written to, the suffix known) before the fit or the
draw starts. The output is written atomically (:mod:`msenv.atomic`): a write that fails — a full
disk, exit status 74 with one line — or a signal leaves the earlier file whole.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from ..atomic import write_text
from ..config.groups import MAX_TRACE_REQUESTS
from .bank import DRAFTERS, MAX_CAP
from .files import load_bank, save_bank
from .fit import fit
from .model import generate_bank
from .presets import PRESETS, preset_bank, read_fit_file
from .published import PUBLISHED
from .split import PARTS, split_indices
from .stats import MAX_BOOT_CELLS, TARGET_GAMMAS, bootstrap, measure, tables

#: the γ's of the per-round table unless --gammas says otherwise
DEFAULT_GAMMAS = tuple(range(1, 13))
#: bounds of the options (each refused beyond them in one line)
MAX_GAMMA, MAX_GAMMAS, MAX_SCALE, MAX_EVALS, MAX_SEED, MAX_DROP_LIMIT = 1000, 64, 64, 100_000, 2**63 - 1, 10**9
#: bootstrap resamples at most (and B × requests ≤ stats.MAX_BOOT_CELLS)
MAX_BOOT = 10_000
#: the exit status of a write that failed (sysexits' EX_IOERR, as train.py's and the benchmark's)
EXIT_IO_ERROR = 74


def _integer_in(low: int, high: int):
    """An argparse type: an integer in ``low`` … ``high``."""
    def parse(text: str) -> int:
        """``text`` as an integer in low … high, or an argparse error."""
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is invalid; allowed: an integer in [{low}, {high}]")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    """The CLI's parser (sub-commands stats, fit, generate)."""
    parser = argparse.ArgumentParser(prog="python -m msenv.traces", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def source_args(p, preset: bool):
        """The arguments naming a bank: FILE, --drafter, --drop-limit, --cap (and --preset …)."""
        p.add_argument("file", nargs="?", type=Path, help="a bank file: SpecDecode-Bench's .jsonl or msenv's .npz")
        p.add_argument("--drafter", choices=DRAFTERS, help="which drafter's acc_len to read (required for .jsonl)")
        p.add_argument("--drop-limit", type=_integer_in(1, MAX_DROP_LIMIT), metavar="N",
                       help="leave out requests whose prompt + generated length reaches N (.jsonl; e.g. 8192)")
        p.add_argument("--cap", type=_integer_in(1, MAX_CAP),
                       help="the bank's cap (.jsonl; default: the largest value read)")
        if preset:
            p.add_argument("--preset", choices=sorted(PRESETS), help="draw the bank from this preset instead")
            p.add_argument("--requests", type=_integer_in(1, MAX_TRACE_REQUESTS),
                           help=f"requests of the preset's bank (default: its source's; at most {MAX_TRACE_REQUESTS})")
            p.add_argument("--seed", type=_integer_in(0, MAX_SEED), default=0,
                           help="seed of the preset's bank (default 0)")

    s = sub.add_parser("stats", help="print a bank's three tables")
    source_args(s, preset=True)
    s.add_argument("--gammas", type=_integer_in(1, MAX_GAMMA), nargs="+", default=list(DEFAULT_GAMMAS),
                   help=f"γ's of the round table (at most {MAX_GAMMAS}, each at most {MAX_GAMMA})")
    s.add_argument("--boot", type=_integer_in(0, MAX_BOOT), default=0, metavar="B",
                   help="add 95%% bootstrap intervals over requests from B resamples (default 0: none; at most "
                        f"{MAX_BOOT}, and B × requests at most {MAX_BOOT_CELLS})")

    f = sub.add_parser("fit", help="fit the generative model to a bank's (or a preset's published) figures")
    source_args(f, preset=False)
    f.add_argument("--published", choices=sorted(PUBLISHED), help="fit to this preset's published figures")
    f.add_argument("--split", choices=PARTS, help="fit to this part of the bank's request split only (default: all)")
    f.add_argument("--out", type=Path, required=True, help="where to write the fitted parameters (JSON)")
    f.add_argument("--scale", type=_integer_in(1, MAX_SCALE), default=8,
                   help=f"fit banks have scale × the source's requests (8; at most {MAX_TRACE_REQUESTS} requests)")
    f.add_argument("--evals", type=_integer_in(1, MAX_EVALS), default=3000,
                   help="objective evaluations per starting point (3000)")
    f.add_argument("--seed", type=_integer_in(0, MAX_SEED), default=2026, help="seed of the fit's common draws (2026)")

    g = sub.add_parser("generate", help="write a bank drawn from a preset or from fitted parameters")
    g.add_argument("--preset", choices=sorted(PRESETS))
    g.add_argument("--params", type=Path, help="a PARAMS.json written by fit")
    g.add_argument("--requests", type=_integer_in(1, MAX_TRACE_REQUESTS),
                   help=f"requests (default: the preset's / the fitted source's; at most {MAX_TRACE_REQUESTS})")
    g.add_argument("--seed", type=_integer_in(0, MAX_SEED), default=0)
    g.add_argument("--out", type=Path, required=True, help="the bank file: .npz (msenv) or .jsonl (published layout)")
    return parser


def _check_out(parser, path: Path, suffixes: tuple[str, ...] | None = None) -> None:
    """Refuse ``--out`` before any work (argparse's one-line error): a folder, an unknown suffix, a
    folder that cannot be made or written to."""
    if path.is_dir():
        parser.error(f"--out {path}: a folder; allowed: a file's path")
    if suffixes is not None and path.suffix not in suffixes:
        parser.error(f"--out {path}: suffix {path.suffix!r} is unknown; allowed: {' | '.join(suffixes)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".write-test-"):
            pass
    except OSError as e:
        parser.error(f"--out {path}: its folder {path.parent} cannot be written ({e.strerror or e})")


def _not_with(parser, args, given: str, options: tuple[str, ...]) -> None:
    """Refuse ``options`` given beside ``given`` (they would be ignored)."""
    for name in options:
        if getattr(args, name.lstrip("-").replace("-", "_"), None) is not None:
            parser.error(f"{name} does not apply with {given}; allowed: leave it out")


def _bank(args, parser):
    """The bank of ``stats``: drawn from --preset, or read from FILE."""
    if getattr(args, "preset", None) is not None:
        if args.file is not None:
            parser.error("give a FILE or --preset, not both")
        _not_with(parser, args, "--preset", ("--drafter", "--cap", "--drop-limit"))
        return preset_bank(args.preset, requests=args.requests, seed=args.seed)
    if args.file is None:
        parser.error("a FILE (or --preset) is required")
    if getattr(args, "requests", None) is not None:
        parser.error("--requests does not apply to a FILE (only to --preset); allowed: leave it out")
    return load_bank(args.file, drafter=args.drafter, cap=args.cap, drop_limit=args.drop_limit)


def _stats(args, parser) -> str:
    """``stats``: the three tables (with bootstrap intervals if --boot B)."""
    if args.boot == 1:
        parser.error("--boot: 1 is invalid; allowed: 0 (none) or an integer ≥ 2")
    gammas = tuple(dict.fromkeys(args.gammas))
    if len(gammas) > MAX_GAMMAS:
        parser.error(f"--gammas: {len(gammas)} values; allowed: at most {MAX_GAMMAS}")
    bank = _bank(args, parser)
    if args.boot * len(bank) > MAX_BOOT_CELLS:
        parser.error(f"--boot {args.boot} is invalid for a bank of {len(bank)} requests; allowed: B × requests at most "
                     f"{MAX_BOOT_CELLS} (B ≤ {MAX_BOOT_CELLS // len(bank)})")
    figures = measure(bank, gammas)
    intervals = bootstrap(bank, gammas, n=args.boot) if args.boot else None
    head = f"{bank.source} · drafter {bank.drafter} · sha256 {bank.sha256[:16]}…"
    return head + "\n\n" + tables(figures, gammas, intervals)


def _fit(args, parser) -> str:
    """``fit``: fit the model to a bank's figures or a preset's published ones; write PARAMS.json."""
    _check_out(parser, args.out)
    if args.published is not None:
        if args.file is not None or args.split is not None:
            parser.error("give a FILE (with --split, if any) or --published, not both")
        _not_with(parser, args, "--published", ("--drafter", "--cap", "--drop-limit"))
        targets = dict(PUBLISHED[args.published])
        drafter, source = args.published.split("-")[1], f"published figures of {args.published}"
    else:
        if args.file is None:
            parser.error("a FILE (or --published) is required")
        bank = load_bank(args.file, drafter=args.drafter, cap=args.cap, drop_limit=args.drop_limit)
        source = f"{bank.source} (sha256 {bank.sha256})"
        if args.split is not None:
            part = split_indices(bank)[args.split]
            if part.size == 0:
                sizes = ", ".join(f"{k} {v.size}" for k, v in split_indices(bank).items())
                parser.error(f"--split {args.split}: the bank's {args.split} part holds no request (its {len(bank)} "
                             f"requests split as {sizes}); allowed: a part with requests, or leave --split out")
            bank = bank.subset(part)
            source += f", its {args.split} requests"
        targets, drafter = measure(bank, TARGET_GAMMAS), bank.drafter
    cap, requests = int(targets["cap"]), int(targets["requests"])
    if cap < 2:
        parser.error(f"the bank's cap is {cap} (every acc_len is 1: nothing is ever accepted); allowed: a bank whose "
                     "cap is at least 2, to fit a model to")
    if args.scale * requests > MAX_TRACE_REQUESTS:
        parser.error(f"--scale {args.scale} is invalid for {requests} requests: the fit's banks would hold "
                     f"{args.scale * requests}; allowed: scale × requests at most {MAX_TRACE_REQUESTS} (--scale ≤ "
                     f"{max(MAX_TRACE_REQUESTS // requests, 1)})")
    params, objective = fit(targets, cap, drafter, args.scale * requests, seed=args.seed, max_evals=args.evals)
    fitted = measure(generate_bank(params, args.scale * requests, seed=args.seed, cap=cap, drafter=drafter))
    out = {"params": params.as_dict(), "drafter": drafter, "cap": cap, "requests": requests, "objective": objective,
           "source": source, "targets": targets, "fitted": fitted}
    write_text(args.out, json.dumps(out, indent=1) + "\n")
    return f"{args.out}: objective {objective:.3f}; " + ", ".join(f"{k}={v:.4g}" for k, v in params.as_dict().items())


def _generate(args, parser) -> str:
    """``generate``: draw a bank from a preset or a PARAMS.json and write it."""
    if (args.preset is None) == (args.params is None):
        parser.error("give exactly one of --preset and --params")
    _check_out(parser, args.out, (".npz", ".jsonl"))
    if args.preset is not None:
        bank = preset_bank(args.preset, requests=args.requests, seed=args.seed)
    else:
        fitted = read_fit_file(args.params)
        if fitted.drafter is None:
            raise ValueError(f"{args.params}: field drafter is missing; allowed: a PARAMS.json written by fit")
        requests = args.requests or fitted.requests
        if requests is None:
            parser.error(f"--requests is required: {args.params} records no request count")
        if requests > MAX_TRACE_REQUESTS:
            parser.error(f"{args.params}: its requests={requests} is above {MAX_TRACE_REQUESTS}; allowed: give "
                         f"--requests N with N ≤ {MAX_TRACE_REQUESTS}")
        bank = generate_bank(fitted.params, requests, seed=args.seed, cap=fitted.cap, drafter=fitted.drafter,
                             source=f"{args.params} ({requests} requests, seed {args.seed})")
    save_bank(args.out, bank)
    return f"{args.out}: {bank!r}"


def main(argv=None) -> int:
    """Run the CLI; returns the exit status (0, or 2 after a one-line error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        text = {"stats": _stats, "fit": _fit, "generate": _generate}[args.command](args, parser)
    except ValueError as e:
        print(f"{parser.prog} {args.command}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the output could not be written (a full disk, a file-size limit)
        where = f" {e.filename}" if e.filename else f" {args.out}" if getattr(args, "out", None) else ""
        print(f"{parser.prog} {args.command}: error: could not write{where}: {e.strerror or e} (an earlier file there "
              "is unchanged)", file=sys.stderr)
        return EXIT_IO_ERROR
    except KeyboardInterrupt:
        print(f"{parser.prog} {args.command}: stopped by SIGINT; nothing written", file=sys.stderr)
        return 130
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
