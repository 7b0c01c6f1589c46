"""Greedy SAA decision time (issue: controllers). Run ``python -m benchmarks.greedy``.

Compares, in one run and on the same samples, the vectorised :class:`baselines.GreedySAA`
(K = 20, N_SAA = 1000) against a straightforward implementation that loops over the samples
and solves each reactive problem with scalar Python (sort + prefix scan, Proposition 1).
Both must pick the same draft lengths.
"""

from __future__ import annotations

import argparse
import math
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from baselines.greedy import greedy_search
from baselines.saa import SAAEstimator
from msenv.envs.env import MultiSpinEnv

from ._timing import row


def naive_value(gamma, samples, ctx) -> float:
    """SAA ratio objective with a per-sample Python loop (the straightforward way)."""
    cfg = ctx.config
    k = len(gamma)
    L, B = cfg.payload_bits, cfg.radio.bandwidth_hz
    t_cmp = (max(gamma[i] * ctx.t_draft[i] for i in range(k)) + cfg.compute.t_verify_base_s
             + cfg.compute.t_verify_per_device_s * k)
    total = 0.0
    for f in samples:
        rej = [i for i in range(k) if f[i] <= gamma[i]]
        m = len(rej)
        if m == 0:
            continue
        b = B / m
        tau = sorted((L / (b * math.log1p(ctx.p_ul_w * ctx.g_ul[i] / (cfg.n0_server_w_hz * b)) / math.log(2)), i)
                     for i in rej)
        best = math.inf
        for n in range(m + 1):
            t_ul = tau[n - 1][0] if n else 0.0
            s = sum(1 / ctx.g_dl[i] for _, i in tau[n:])
            t_dl = L / (b * math.log1p(ctx.p_dl_w / (cfg.n0_device_w_hz * b * s)) / math.log(2)) if s else 0.0
            best = min(best, max(t_ul, t_dl))
        total += best
    tokens = sum((1 - ctx.alpha[i] ** (gamma[i] + 1)) / (1 - ctx.alpha[i]) for i in range(k))
    return tokens / (t_cmp + total / len(samples))


def naive_greedy(samples, ctx) -> list[int]:
    k, gmax = len(ctx.alpha), ctx.config.gamma_max
    g = [0] * k
    v = naive_value(g, samples, ctx)
    while min(g) < gmax:
        c = [min(x + 1, gmax) for x in g]
        vc = naive_value(c, samples, ctx)
        if vc <= v:
            break
        g, v = c, vc
    while True:
        best, bv = None, v
        for i in range(k):
            if g[i] < gmax:
                c = list(g)
                c[i] += 1
                vc = naive_value(c, samples, ctx)
                if vc > bv:
                    best, bv = c, vc
        if best is None:
            return g
        g, v = best, bv


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.greedy``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.greedy", description=__doc__)
    ap.add_argument("--decisions", type=int, default=20)
    ap.add_argument("--naive-decisions", type=int, default=2)
    return ap


def main(argv=None) -> dict:
    ap = build_parser()
    args = ap.parse_args(argv)
    env = MultiSpinEnv()
    env.reset(seed=0)
    fast, naive, agree = [], [], 0
    for d in range(args.decisions):
        ctx = env.context
        t0 = time.perf_counter()
        est = SAAEstimator(ctx, np.random.default_rng(d))
        g, _ = greedy_search(est)
        fast.append(time.perf_counter() - t0)
        if d < args.naive_decisions:
            samples = est.samples.tolist()
            t0 = time.perf_counter()
            gn = naive_greedy(samples, ctx)
            naive.append(time.perf_counter() - t0)
            agree += gn == g.tolist()
        env.step(g)
    f_ms, n_ms = 1e3 * np.median(fast), 1e3 * np.median(naive)
    print("== greedy SAA decision time (K = 20, N_SAA = 1000) ==")
    row("GreedySAA (vectorised, incremental), median", f"{f_ms:.1f} ms", "(target <= 20 ms)")
    row("per-sample loop implementation, median", f"{n_ms:.0f} ms")
    row("speed-up", f"{n_ms / f_ms:.0f} x", "(target >= 100x)")
    row("same decisions", f"{agree}/{len(naive)}")
    return {"greedy_ms": f_ms, "naive_ms": n_ms, "speedup": n_ms / f_ms, "agree": agree}


if __name__ == "__main__":
    main()
