"""The long-replay soak: a bank file of the published files' size replayed for 20,000 rounds of
``msenv/MultiSpin-Traces-v0``, every observation checked against the observation space and memory
measured along the way. Prints figures; run ``python -m benchmarks.soak [--rounds 20000]
[--requests 307] [--every 2000]``.

The bank: the ``sharegpt-eagle`` preset drawn at its source's size (307 requests of median 574 and
p90 1,217 tokens: the longest published set), written in SpecDecode-Bench's JSONL layout with
placeholder token ids and prompts of 200 tokens (a file of the published ones' size, a few MB) to
a temporary folder, and replayed from that file (``trace_source=<file>``, ``trace_split="all"``),
K = 20, γ_max = 12. The actions: draft lengths drawn uniformly in 0 … γ_max (seeded), so every
length is played; episodes of 100 rounds, reset as they end. Every observation must lie in the
space (``observation_space.contains``). Memory, after each block of ``--every`` rounds (and a
garbage collection): the Python heap (``tracemalloc``'s current size) and the process's resident
set (``/proc/self/statm``);
the soak is flat when neither grows from the first block to the last by more than noise.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

from msenv.traces import preset_bank, write_jsonl

ID = "msenv/MultiSpin-Traces-v0"
#: the preset whose source set is the longest (sharegpt: median 574, p90 1,217 tokens)
PRESET = "sharegpt-eagle"


def rss_bytes() -> int:
    """The process's resident set size now (Linux ``/proc/self/statm``), or 0 where there is none."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def write_bank(folder: Path, requests: int, seed: int = 0) -> Path:
    """A real-sized bank file in the published layout (placeholder prompts of 200 tokens)."""
    bank = preset_bank(PRESET, requests=requests, seed=seed)
    return write_jsonl(folder / f"soak_{PRESET}_{requests}.jsonl", bank, prompt_lens=np.full(requests, 200))


def soak(path: Path, rounds: int = 20_000, every: int = 2_000, seed: int = 0) -> dict:
    """Replay the bank file ``path`` for ``rounds`` rounds (module docstring) → the figures: rounds,
    episodes, observations outside the space, wall time per round, and per block of ``every``
    rounds the Python heap and the resident set."""
    env = gym.make(ID, trace_source=str(path), trace_split="all")
    space, gamma_max = env.observation_space, env.unwrapped.config.gamma_max
    rng = np.random.default_rng(seed)
    k = env.unwrapped.config.num_devices
    obs, _ = env.reset(seed=seed)
    outside = 0 if space.contains(obs) else 1
    episodes = 0
    heap, rss = np.zeros(rounds // every, np.int64), np.zeros(rounds // every, np.int64)  # (no allocation later)
    tracemalloc.start()
    t0 = time.perf_counter()
    for r in range(1, rounds + 1):
        obs, reward, term, trunc, _ = env.step(rng.integers(0, gamma_max + 1, size=k))
        if not space.contains(obs) or not np.isfinite(reward):
            outside += 1
        if term or trunc:
            episodes += 1
            obs, _ = env.reset()
            outside += 0 if space.contains(obs) else 1
        if r % every == 0:
            gc.collect()  # what is still referenced, not garbage awaiting the collector
            heap[r // every - 1] = tracemalloc.get_traced_memory()[0]
            rss[r // every - 1] = rss_bytes()
    wall = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    env.close()
    return {"rounds": rounds, "episodes": episodes, "outside": outside, "us_per_round": 1e6 * wall / rounds,
            "heap": heap.tolist(), "rss": rss.tolist(), "heap_peak": peak, "every": every}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20_000, help="rounds replayed (default 20000)")
    ap.add_argument("--requests", type=int, default=307, help="requests of the bank file (default 307, the "
                                                              "published sharegpt set's)")
    ap.add_argument("--every", type=int, default=2_000, help="rounds between memory readings (default 2000)")
    ap.add_argument("--seed", type=int, default=0)
    return ap


def main(argv=None) -> dict:
    args = build_parser().parse_args(argv)
    if not 1 <= args.every <= args.rounds:
        build_parser().error(f"--every {args.every} is invalid; allowed: an integer in [1, --rounds]")
    with tempfile.TemporaryDirectory() as folder:
        path = write_bank(Path(folder), args.requests, args.seed)
        size = path.stat().st_size
        res = soak(path, args.rounds, args.every, args.seed)
    kib = lambda b: f"{b / 1024:,.1f} KiB"  # noqa: E731
    mib = lambda b: f"{b / 2**20:,.1f} MiB"  # noqa: E731
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"bank file: {args.requests} requests of {PRESET}, {size / 1e6:.2f} MB (JSONL, published layout)")
    print(f"{res['rounds']} rounds, {res['episodes']} episodes, K = 20: {res['outside']} observations outside the "
          f"space; {res['us_per_round']:.1f} µs per round (tracemalloc on)")
    marks = [f"{(i + 1) * res['every']}" for i in range(len(res["heap"]))]
    print("rounds:      " + "  ".join(f"{m:>9}" for m in marks))
    print("python heap: " + "  ".join(f"{kib(h):>9}" for h in res["heap"]))
    print("RSS:         " + "  ".join(f"{mib(r):>9}" for r in res["rss"]))
    print(f"heap: {kib(res['heap'][-1] - res['heap'][0])} from the first reading to the last "
          f"(peak {kib(res['heap_peak'])}); RSS: {mib(res['rss'][-1] - res['rss'][0])}")
    return res


if __name__ == "__main__":
    main()
