"""Decision time vs K for every controller. Run ``python -m benchmarks.decisions``.

For each K and cell (the paper's cell; heterogeneous drafting U[1, 2]× in a weak cell, P_dl
10 dBm), the first ``--decisions`` rounds of one episode (seed 0): each controller decides on the
same contexts, and the mean wall time per decision is printed (ms). One thread
(``OMP_NUM_THREADS=1`` unless set). ``--agent DIR`` adds a saved agent (e.g. the committed
generalist ``agents/pretrained/cells``). The script uses the public API only, so it also runs
against another checkout: ``PYTHONPATH=<checkout> python benchmarks/decisions.py`` (a before /
after comparison of the same controllers).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

CELLS = {"paper": {}, "weak-hetero": {"draft_scale_range": (1.0, 2.0), "p_dl_dbm": 10.0}}


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.decisions``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.decisions", description=__doc__)
    ap.add_argument("--ks", type=int, nargs="+", default=[5, 20, 50, 100, 200])
    ap.add_argument("--cells", nargs="+", choices=list(CELLS), default=list(CELLS))
    ap.add_argument("--controllers", nargs="+", default=["greedy-saa", "budgeted-greedy", "computation-only",
                                                          "optimal-uniform", "local-search"])
    ap.add_argument("--decisions", type=int, default=3, help="timed decisions per K and cell (default 3)")
    ap.add_argument("--agent", default=None, metavar="DIR", help="a saved agent's directory to time as well")
    return ap


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    import msenv
    from baselines import make_controller

    agent = None
    if args.agent:
        from agents.controller import load_agent

        agent = load_agent(args.agent)
    names = list(args.controllers) + (["agent"] if agent else [])
    out: dict = {}
    print(f"ms per decision (mean of {args.decisions}), OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    print(f"{'cell':<12} {'K':>4} " + " ".join(f"{n:>17}" for n in names))
    for cell, over in ((c, CELLS[c]) for c in args.cells):
        for k in args.ks:
            env = msenv.MultiSpinEnv(msenv.preset("qwen2.5", num_devices=k, **over))
            obs, _ = env.reset(seed=0)
            rounds = []
            for _ in range(args.decisions):
                rounds.append((env.context, obs))
                obs, *_ = env.step(np.full(k, 3))
            times = {}
            for name in names:
                ctl = agent if name == "agent" else make_controller(name)
                ctl.reset(0)
                ctl.act(*rounds[0])  # first call: caches, compiled code
                ctl.reset(0)
                t0 = time.perf_counter()
                for ctx, o in rounds:
                    ctl.act(ctx, o)
                times[name] = 1e3 * (time.perf_counter() - t0) / len(rounds)
            out[(cell, k)] = times
            print(f"{cell:<12} {k:>4} " + " ".join(f"{times[n]:>17.3f}" for n in names), flush=True)
    return out


if __name__ == "__main__":
    main()
