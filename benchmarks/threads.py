"""A learned agent's decision time at large K with the default BLAS threads, on an idle and on a
busy machine. Run ``python -m benchmarks.threads [--k 400] [--busy 2] [--agent DIR]``.

The same decisions (one cell of ``--k`` devices, seed 0) are timed alternately through the
decision path (``NumpySetPolicy.act``: one BLAS thread per decision, ``agents.threads``) and
through the same arithmetic with BLAS left at its default threads (one per core), first on the
machine as it is, then with ``--busy`` processes spinning on the CPU beside it (another
training, say). Prints the median and the 90th percentile per decision, in ms.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import numpy as np


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(10_000):
            x += 1


def _time(fn, obs, n: int) -> np.ndarray:
    out = np.empty(n)
    for i in range(n):
        t0 = time.perf_counter()
        fn(obs)
        out[i] = time.perf_counter() - t0
    return out * 1e3


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.threads``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.threads", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=400, help="devices of the cell (default 400)")
    ap.add_argument("--busy", type=int, default=2, help="processes spinning beside it in the second part (default 2)")
    ap.add_argument("--decisions", type=int, default=300, help="timed decisions per path and part (default 300)")
    ap.add_argument("--agent", default=None, metavar="DIR", help="a cell agent (default: the committed generalist)")
    return ap


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    from pathlib import Path

    import agents
    from agents.controller import load_agent
    from agents.threads import blas_libraries
    from msenv.envs.cells import MultiSpinCellsEnv

    agent = load_agent(args.agent or Path(agents.__file__).parent / "pretrained" / "cells")
    env = MultiSpinCellsEnv(k_range=(args.k, args.k), k_max=args.k)
    obs = agent.normalize(env.reset(seed=0)[0])
    policy = agent.policy
    threads = [lib.get_num_threads() for lib in blas_libraries()]
    paths = {"one BLAS thread (the decision path)": policy.act, f"default BLAS threads {threads}": policy._act}
    for fn in paths.values():
        _time(fn, obs, 20)  # warm-up
    print(f"decision time of {agent.name!r} at K = {args.k}, {args.decisions} decisions per path, alternated (ms):")
    for part in ("idle", "busy"):
        stop, procs = mp.Event(), []
        if part == "busy":
            procs = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
            for p in procs:
                p.start()
            time.sleep(0.5)
        times: dict[str, list[np.ndarray]] = {name: [] for name in paths}
        for _ in range(5):
            for name, fn in paths.items():
                times[name].append(_time(fn, obs, args.decisions // 5))
        stop.set()
        for p in procs:
            p.join()
        label = "as it is" if part == "idle" else f"with {args.busy} busy processes beside"
        print(f"  the machine {label}:")
        for name, ts in times.items():
            t = np.concatenate(ts)
            print(f"    {name:<40} median {np.median(t):7.3f}  p90 {np.percentile(t, 90):8.3f}")


if __name__ == "__main__":
    main()
