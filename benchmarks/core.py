"""Core benchmarks (issue: msenv core). Prints figures; run ``python -m benchmarks.core``.

1. env step at K = 20 through ``gymnasium.make`` vs CartPole-v1: runs of each alternate (median
   and range of the per-run ratio); the model §11 id ``msenv/MultiSpin-Dynamic-v0`` vs the paper id
   the same way, with the floor of that ratio measured in the same alternation: the paper id's
   step plus K × the extra arithmetic per device-round of the batched steps (the ratio if the
   dynamic step had no overhead at all beyond its arithmetic);
2. batched round kernel (``evaluate_round``), device-rounds per second on one core; the batched
   step with dynamics (``functional.step_state`` on the Dynamic id's config, all of §11 on, the
   observation included), then with one part of §11 off at a time (Beta belief, α fixed and
   observed, i.i.d. fading, all off): what each part costs per device-round;
3. reactive solve of 1000 outcomes × 20 devices.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

import msenv  # noqa: F401
from msenv import SystemConfig
from msenv.model.acceptance import sample_first_rejection
from msenv.model.goodput import communication_time, evaluate_round

from ._timing import best_of, env_stepper, interleaved, row


def random_batch(n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    alpha = rng.choice([0.85, 0.82, 0.68, 0.72], (n, k))
    beta = 1e-3 * rng.uniform(100, 500, (n, k)) ** -3.5
    g_ul = beta * rng.exponential(size=(n, k))
    g_dl = beta * rng.exponential(size=(n, k))
    t_draft = 0.0152 * rng.uniform(1, 1.15, (n, k))
    gamma = rng.integers(0, 8, (n, k))
    f = sample_first_rejection(rng, alpha, 21)
    return gamma, f, t_draft, g_ul, g_dl


def batched_stepper(config: SystemConfig, gamma: np.ndarray):
    """A function that times one ``functional.step_state`` over len(gamma) rounds of ``config``
    (state from ``reset_state``) and returns the wall time per device-round (s)."""
    from msenv.engine import functional as F

    rng = np.random.default_rng(2)
    state = F.reset_state(rng.random((len(gamma), F.reset_draws(config))), config)
    u_step = rng.random((len(gamma), F.step_draws(config)))

    def run() -> float:
        t0 = time.perf_counter()
        F.step_state(u_step, state, gamma, config)
        return (time.perf_counter() - t0) / gamma.size

    run()  # warm-up (compiled kernels)
    return run


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.core``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.core", description=__doc__)
    ap.add_argument("--steps", type=int, default=5_000, help="env steps per timed run")
    ap.add_argument("--rounds", type=int, default=10, help="interleaved timed runs (msenv, CartPole-v1)")
    ap.add_argument("--batch", type=int, default=50_000)
    return ap


def main(argv=None) -> dict:
    ap = build_parser()
    args = ap.parse_args(argv)
    cfg = SystemConfig()
    out = {}
    print("== msenv core benchmarks ==")
    paper = env_stepper("msenv/MultiSpin-v0", args.steps, lambda env, i: np.full(20, 1 + i % 8))
    cartpole = env_stepper("CartPole-v1", args.steps, lambda env, i: i % 2)
    t_ms, t_cp = interleaved(paper, cartpole, args.rounds)
    ratio = t_ms / t_cp
    out.update(step_us=np.median(t_ms) * 1e6, cartpole_us=np.median(t_cp) * 1e6, step_ratio=float(np.median(ratio)))
    row("env step, msenv/MultiSpin-v0 (K=20), gymnasium.make", f"{np.median(t_ms) * 1e6:.1f} us", "(median)")
    row("env step, CartPole-v1, gymnasium.make", f"{np.median(t_cp) * 1e6:.1f} us", "(median)")
    row(f"ratio msenv / CartPole, {args.rounds} interleaved runs", f"{np.median(ratio):.2f} x",
        f"(median; range {ratio.min():.2f}-{ratio.max():.2f}; target <= 3x)")
    from msenv import ENV_IDS, resolve_config

    dyn_cfg = resolve_config(ENV_IDS["msenv/MultiSpin-Dynamic-v0"])
    dynamic = env_stepper("msenv/MultiSpin-Dynamic-v0", args.steps, lambda env, i: np.full(20, 1 + i % 8))
    # the floor of the ratio, measured in the same alternation: the paper id's step plus K × the
    # extra arithmetic of model §11 per device-round (batched steps, where per-call overhead vanishes)
    n = args.batch // 5
    g = random_batch(n, 20)[0]
    dyn_batch, paper_batch = batched_stepper(dyn_cfg, g), batched_stepper(cfg, g)
    n_runs = max(args.rounds // 2, 1)
    t_dyn, t_ms, c_dyn, c_paper = (np.empty(n_runs) for _ in range(4))
    for i in range(n_runs):
        t_dyn[i], t_ms[i], c_dyn[i], c_paper[i] = dynamic(), paper(), dyn_batch(), paper_batch()
    ratio = t_dyn / t_ms
    floor = (t_ms + 20 * (c_dyn - c_paper)) / t_ms
    out.update(dynamic_step_us=np.median(t_dyn) * 1e6, dynamic_ratio=float(np.median(ratio)),
               dynamic_ratio_floor=float(np.median(floor)))
    row("env step, msenv/MultiSpin-Dynamic-v0 (K=20)", f"{np.median(t_dyn) * 1e6:.1f} us", "(median)")
    row("ratio Dynamic / paper id", f"{np.median(ratio):.2f} x",
        f"(median; range {ratio.min():.2f}-{ratio.max():.2f}; target <= 1.5x)")
    row("  floor of that ratio: paper step + 20 x extra cost", f"{np.median(floor):.2f} x",
        f"(median; range {floor.min():.2f}-{floor.max():.2f}; the ratio with no overhead at all)")
    row("  batched step, Dynamic id / paper id, per dev-round",
        f"{np.median(c_dyn) * 1e9:.0f} / {np.median(c_paper) * 1e9:.0f} ns", "(median)")

    gamma, f, t_draft, g_ul, g_dl = random_batch(args.batch, 20)
    t = best_of(lambda: evaluate_round(gamma, f, t_draft, g_ul, g_dl, cfg), repeat=5)
    rate = args.batch * 20 / t
    out["kernel_device_rounds_per_s"] = rate
    row(f"round kernel, {args.batch} rounds x 20 devices", f"{rate / 1e6:.2f} M dev-rounds/s", "(target >= 3 M)")

    # the Dynamic id's step, then with one part of model §11 off at a time: what each part costs
    observed = {"alpha_dynamics": "fixed", "alpha_observed": True}
    static = {"channel_dynamics": "iid", "csi": "oracle"}
    variants = (("", "", {}), ("_beta", ", Beta belief (no chain filter)", {"alpha_belief": "beta"}),
                ("_alpha_observed", ", alpha fixed and observed", observed),
                ("_iid_channel", ", i.i.d. fading seen exactly", static),
                ("_none", ", all of model §11 off (same kernel)", {**observed, **static}))
    cost = {}
    for key, label, over in variants:
        t = batched_stepper(resolve_config(dyn_cfg, **over), g)
        rate = 1.0 / min(t() for _ in range(5))
        cost[key] = 1e9 / rate
        out["dynamic_kernel_device_rounds_per_s" + key] = rate
        row(f"batched step with dynamics{label}, {n} rounds x 20 devices", f"{rate / 1e6:.2f} M dev-rounds/s",
            "(target >= 5 M)" if not key else f"({cost[key]:.0f} ns per device-round)")
    for key, part in (("_alpha_observed", "hidden, drifting alpha + its filter"),
                      ("_iid_channel", "Gauss-Markov channel (2 J0, 2 complex draws per link)")):
        row(f"  cost of the {part}", f"{cost[''] - cost[key]:.0f} ns per device-round", "(all on minus it off)")

    gamma, f, _, g_ul, g_dl = random_batch(1000, 20, seed=1)
    rej = f <= gamma
    t = best_of(lambda: communication_time(rej, g_ul, g_dl, cfg), repeat=20)
    out["reactive_1000x20_ms"] = t * 1e3
    row("reactive solve, 1000 outcomes x 20 devices (own gains)", f"{t * 1e3:.2f} ms")
    t = best_of(lambda: communication_time(rej, g_ul[0], g_dl[0], cfg), repeat=20)
    row("reactive solve, 1000 outcomes x 20 devices (shared gains)", f"{t * 1e3:.2f} ms")
    return out


if __name__ == "__main__":
    main()
