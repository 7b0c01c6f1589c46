"""Trace banks: drawing a bank from each preset, and measuring it. Prints figures; run
``python -m benchmarks.traces [--requests 500]``.

Per preset: the best wall time (of 5) to draw a bank of ``--requests`` requests with
``preset_bank`` (per-request streams, the compiled generator, the canonical digest), its positions,
and the time of ``measure`` (acceptance by depth and the replay at γ = 2, 4, 8). The compiled
kernels are warmed first.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from msenv.traces import PRESETS, measure, preset_bank  # noqa: E402

from ._timing import best_of, row  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.traces``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.traces", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=500, help="requests per bank (default 500)")
    return ap


def main(argv=None) -> dict:
    """Time every preset; returns {name: (draw seconds, measure seconds, positions)}."""
    args = build_parser().parse_args(argv)
    measure(preset_bank("gsm8k-eagle", requests=5))  # compile / load the kernels
    out = {}
    for name in PRESETS:
        bank = preset_bank(name, requests=args.requests)
        draw = best_of(lambda: preset_bank(name, requests=args.requests))
        stats = best_of(lambda: measure(bank))
        out[name] = (draw, stats, bank.acc_len.size)
        row(f"{name}: draw {args.requests} requests ({bank.acc_len.size} positions)", f"{draw * 1e3:.1f} ms",
            f"measure {stats * 1e3:.1f} ms")
    return out


if __name__ == "__main__":
    main()
