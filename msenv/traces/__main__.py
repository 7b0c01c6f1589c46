"""``python -m msenv.traces``: statistics of a trace bank, fitting the model to one, drawing banks.

    python -m msenv.traces stats FILE [--drafter eagle|ngram] [--gammas 1 2 …] [--drop-limit N] [--boot B]
    python -m msenv.traces stats --preset NAME [--requests N] [--seed S]
    python -m msenv.traces fit FILE [--drafter …] [--drop-limit N] [--split train] --out PARAMS.json
    python -m msenv.traces fit --published NAME --out PARAMS.json     (a preset's published figures)
    python -m msenv.traces generate --preset NAME --requests N --seed S --out FILE(.npz | .jsonl)
    python -m msenv.traces generate --params PARAMS.json --requests N --seed S --out FILE

A bad argument or file is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .bank import DRAFTERS
from .files import load_bank, save_bank
from .fit import fit
from .model import ModelParams, generate_bank
from .presets import PRESETS, preset_bank
from .published import PUBLISHED
from .split import PARTS, split_indices
from .stats import TARGET_GAMMAS, bootstrap, measure, tables

#: the γ's of the per-round table unless --gammas says otherwise
DEFAULT_GAMMAS = tuple(range(1, 13))


def _integer_from(low: int):
    """An argparse type: an integer ≥ ``low``."""
    def parse(text: str) -> int:
        """``text`` as an integer ≥ low, or an argparse error."""
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is invalid; allowed: an integer ≥ {low}")
        return value

    return parse


_positive, _nonnegative = _integer_from(1), _integer_from(0)


def build_parser() -> argparse.ArgumentParser:
    """The CLI's parser (sub-commands stats, fit, generate)."""
    parser = argparse.ArgumentParser(prog="python -m msenv.traces", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def source_args(p, preset: bool):
        """The arguments naming a bank: FILE, --drafter, --drop-limit, --cap (and --preset …)."""
        p.add_argument("file", nargs="?", type=Path, help="a bank file: SpecDecode-Bench's .jsonl or msenv's .npz")
        p.add_argument("--drafter", choices=DRAFTERS, help="which drafter's acc_len to read (required for .jsonl)")
        p.add_argument("--drop-limit", type=_positive, metavar="N",
                       help="leave out requests whose prompt + generated length reaches N (.jsonl; e.g. 8192)")
        p.add_argument("--cap", type=_positive, help="the bank's cap (.jsonl; default: the largest value read)")
        if preset:
            p.add_argument("--preset", choices=sorted(PRESETS), help="draw the bank from this preset instead")
            p.add_argument("--requests", type=_positive, help="requests of the preset's bank (default: its source's)")
            p.add_argument("--seed", type=_nonnegative, default=0, help="seed of the preset's bank (default 0)")

    s = sub.add_parser("stats", help="print a bank's three tables")
    source_args(s, preset=True)
    s.add_argument("--gammas", type=_positive, nargs="+", default=list(DEFAULT_GAMMAS), help="γ's of the round table")
    s.add_argument("--boot", type=_nonnegative, default=0, metavar="B",
                   help="add 95%% bootstrap intervals over requests from B resamples (default 0: none)")

    f = sub.add_parser("fit", help="fit the generative model to a bank's (or a preset's published) figures")
    source_args(f, preset=False)
    f.add_argument("--published", choices=sorted(PUBLISHED), help="fit to this preset's published figures")
    f.add_argument("--split", choices=PARTS, help="fit to this part of the bank's request split only (default: all)")
    f.add_argument("--out", type=Path, required=True, help="where to write the fitted parameters (JSON)")
    f.add_argument("--scale", type=_positive, default=8, help="fit banks have scale × the source's requests (8)")
    f.add_argument("--evals", type=_positive, default=3000, help="objective evaluations per starting point (3000)")
    f.add_argument("--seed", type=_nonnegative, default=2026, help="seed of the fit's common draws (2026)")

    g = sub.add_parser("generate", help="write a bank drawn from a preset or from fitted parameters")
    g.add_argument("--preset", choices=sorted(PRESETS))
    g.add_argument("--params", type=Path, help="a PARAMS.json written by fit")
    g.add_argument("--requests", type=_positive, help="requests (default: the preset's / the fitted source's)")
    g.add_argument("--seed", type=_nonnegative, default=0)
    g.add_argument("--out", type=Path, required=True, help="the bank file: .npz (msenv) or .jsonl (published layout)")
    return parser


def _bank(args, parser):
    """The bank of ``stats``: drawn from --preset, or read from FILE."""
    if getattr(args, "preset", None) is not None:
        if args.file is not None:
            parser.error("give a FILE or --preset, not both")
        return preset_bank(args.preset, requests=args.requests, seed=args.seed)
    if args.file is None:
        parser.error("a FILE (or --preset) is required")
    return load_bank(args.file, drafter=args.drafter, cap=args.cap, drop_limit=args.drop_limit)


def _stats(args, parser) -> str:
    """``stats``: the three tables (with bootstrap intervals if --boot B)."""
    if args.boot == 1:
        parser.error("--boot: 1 is invalid; allowed: 0 (none) or an integer ≥ 2")
    bank = _bank(args, parser)
    gammas = tuple(dict.fromkeys(args.gammas))
    figures = measure(bank, gammas)
    intervals = bootstrap(bank, gammas, n=args.boot) if args.boot else None
    head = f"{bank.source} · drafter {bank.drafter} · sha256 {bank.sha256[:16]}…"
    return head + "\n\n" + tables(figures, gammas, intervals)


def _fit(args, parser) -> str:
    """``fit``: fit the model to a bank's figures or a preset's published ones; write PARAMS.json."""
    if args.published is not None:
        if args.file is not None or args.split is not None:
            parser.error("give a FILE (with --split, if any) or --published, not both")
        targets = dict(PUBLISHED[args.published])
        drafter, source = args.published.split("-")[1], f"published figures of {args.published}"
    else:
        if args.file is None:
            parser.error("a FILE (or --published) is required")
        bank = load_bank(args.file, drafter=args.drafter, cap=args.cap, drop_limit=args.drop_limit)
        source = f"{bank.source} (sha256 {bank.sha256})"
        if args.split is not None:
            bank = bank.subset(split_indices(bank)[args.split])
            source += f", its {args.split} requests"
        targets, drafter = measure(bank, TARGET_GAMMAS), bank.drafter
    cap, requests = int(targets["cap"]), int(targets["requests"])
    params, objective = fit(targets, cap, drafter, args.scale * requests, seed=args.seed, max_evals=args.evals)
    fitted = measure(generate_bank(params, args.scale * requests, seed=args.seed, cap=cap, drafter=drafter))
    out = {"params": params.as_dict(), "drafter": drafter, "cap": cap, "requests": requests, "objective": objective,
           "source": source, "targets": targets, "fitted": fitted}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return f"{args.out}: objective {objective:.3f}; " + ", ".join(f"{k}={v:.4g}" for k, v in params.as_dict().items())


def _generate(args, parser) -> str:
    """``generate``: draw a bank from a preset or a PARAMS.json and write it."""
    if (args.preset is None) == (args.params is None):
        parser.error("give exactly one of --preset and --params")
    if args.preset is not None:
        bank = preset_bank(args.preset, requests=args.requests, seed=args.seed)
    else:
        try:
            spec = json.loads(args.params.read_text())
            params = ModelParams(**spec["params"])
            cap, drafter, requests = int(spec["cap"]), spec["drafter"], int(spec["requests"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{args.params}: not a PARAMS.json written by fit ({e})") from None
        bank = generate_bank(params, args.requests or requests, seed=args.seed, cap=cap, drafter=drafter,
                             source=f"{args.params} ({args.requests or requests} requests, seed {args.seed})")
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
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
