"""The Bayes filter's share of trace-filter-saa's decision time. Run
``python -m benchmarks.trace_filter [--preset cnn-ngram] [--levels 24] [--episodes 3]``.

trace-filter-saa plays ``--episodes`` episodes of 100 rounds of ``msenv/MultiSpin-Traces-v0``
(K = 20, validation requests, seeds 260000 …) after one warm-up episode; per round it is timed
whole (``act`` + ``observe``) and in its filter parts — the predictive survival (``survival``,
inside ``act``) and the Bayes update (``observe``) — the rest being the greedy SAA (its samples
and search). Prints the mean µs per decision of each part and the filter's share. One thread.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from ._timing import row


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.trace_filter``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.trace_filter", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="cnn-ngram", help="the trace preset (default cnn-ngram)")
    ap.add_argument("--levels", type=int, default=24, help="points of the level grid (default 24)")
    ap.add_argument("--episodes", type=int, default=3, help="timed episodes of 100 rounds (default 3)")
    return ap


def _timed(fn, spent: list):
    """``fn`` wrapped to append each call's wall time (s) to ``spent``."""
    def call(*args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        spent.append(time.perf_counter() - t0)
        return out
    return call


def main(argv=None) -> dict:
    """Time the parts; returns their mean µs per decision and the filter's share."""
    args = build_parser().parse_args(argv)
    import gymnasium as gym

    import msenv  # noqa: F401  (registers the ids)
    from baselines import make_controller
    from baselines.base import controller_context

    env = gym.make("msenv/MultiSpin-Traces-v0", trace_source=args.preset, trace_split="validation",
                   episode_length=100)
    ctrl = make_controller("trace-filter-saa", levels=args.levels)
    survival, update, act = [], [], []
    ctrl.survival = _timed(ctrl.survival, survival)
    ctrl.observe = _timed(ctrl.observe, update)
    for episode in range(args.episodes + 1):  # the first one warms up
        if episode == 1:
            survival.clear(), update.clear(), act.clear()
        env.reset(seed=260000 + episode)
        ctrl.reset(260000 + episode)
        done = False
        while not done:
            ctx = controller_context(ctrl, env)
            t0 = time.perf_counter()
            gamma = ctrl.act(ctx)
            act.append(time.perf_counter() - t0)
            _, _, term, trunc, info = env.step(gamma)
            ctrl.observe(gamma, info)
            done = term or trunc
    s, u, a = (np.mean(x) * 1e6 for x in (survival, update, act))
    share = (s + u) / (a + u)
    k = env.unwrapped.config.num_devices
    print(f"trace-filter-saa on {args.preset}, K = {k}, {args.levels} levels, {len(act)} decisions, "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    row("decision (act + observe)", f"{a + u:9.1f} µs")
    row("  filter: predictive survival (in act)", f"{s:9.1f} µs")
    row("  filter: Bayes update (observe)", f"{u:9.1f} µs")
    row("  greedy SAA (samples and search)", f"{a - s:9.1f} µs")
    row("the filter's share", f"{100 * share:9.2f} %")
    return {"survival_us": s, "update_us": u, "act_us": a, "share": share}


if __name__ == "__main__":
    main()
