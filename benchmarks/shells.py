"""The environment shells' speed, this checkout beside another one (e.g. the release 0.5.0), in
one run. Run ``python -m benchmarks.shells --against DIR [DIR ...]`` (each DIR a checkout of
another version, e.g. ``git worktree add /tmp/msenv-0.5.0 240110e``), or without ``--against`` for
this checkout alone.

Each figure is measured in a fresh process per version, the versions alternating ``--rounds``
times (this machine's speed drifts within minutes), and printed as the best of its rounds:

- the single env's step at K = 20 (``gymnasium.make("msenv/MultiSpin-v0")``) beside CartPole-v1's,
  measured in the same process (their ratio);
- the batched vector env (``MultiSpinVectorEnv``), env-steps per second at N = 64 and 1024;
- the batched cell generator (``gymnasium.make_vec("msenv/MultiSpin-Cells-v0", N)``), env-steps per
  second at N = 64.

The measuring code imports only names that both versions have (the 0.5 import paths).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _per_step(env, actions, reset_every: int) -> float:
    t0 = time.perf_counter()
    for i, a in enumerate(actions):
        env.step(a)
        if (i + 1) % reset_every == 0:
            env.reset()
    return (time.perf_counter() - t0) / len(actions)


def measure() -> dict[str, float]:
    """This process's figures (of whichever msenv it imports)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import gymnasium as gym
    import numpy as np

    import msenv  # noqa: F401
    from msenv.envs.vector import MultiSpinVectorEnv

    out: dict[str, float] = {}
    env, cart = gym.make("msenv/MultiSpin-v0"), gym.make("CartPole-v1")
    env.reset(seed=0)
    cart.reset(seed=0)
    acts = [np.full(20, 4)] * 3000
    cart_acts = [0, 1] * 1500
    _per_step(env, acts[:200], 100)
    _per_step(cart, cart_acts[:200], 10)
    best_env = min(_per_step(env, acts, 100) for _ in range(3))
    best_cart = min(_per_step(cart, cart_acts, 10) for _ in range(3))
    out["env step, us"] = best_env * 1e6
    out["CartPole-v1 step, us"] = best_cart * 1e6
    out["env step / CartPole"] = best_env / best_cart
    for n in (64, 1024):
        venv = MultiSpinVectorEnv(n)
        venv.reset(seed=0)
        a = np.full((n, 20), 4)
        steps = max(20, 40_000 // n)
        venv.step(a)
        out[f"vector env N={n}, steps/s"] = n / min(_per_step(venv, [a] * steps, 10**9) for _ in range(3))
    cells = gym.make_vec("msenv/MultiSpin-Cells-v0", 64, vectorization_mode="vector_entry_point")
    cells.reset(seed=0)
    a = np.full((64, 50), 4)
    cells.step(a)
    out["cells vector env N=64, steps/s"] = 64 / min(_per_step(cells, [a] * 300, 10**9) for _ in range(3))
    return out


def _run(path: Path) -> dict[str, float]:
    """:func:`measure` in a fresh process whose msenv is the one of checkout ``path`` (this file is
    loaded by its path, so the measuring code is this checkout's)."""
    code = ("import sys, json, importlib.util; sys.path.insert(0, sys.argv[1]); "
            "spec = importlib.util.spec_from_file_location('shells', sys.argv[2]); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
            "import msenv; assert msenv.__file__.startswith(sys.argv[1]), msenv.__file__; "
            "print(json.dumps(m.measure()))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", code, str(path), __file__], env=env, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"python -m benchmarks.shells: the run with {path} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.shells``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.shells", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", type=Path, nargs="+", default=[], metavar="DIR",
                    help="checkouts of other versions to measure beside this one")
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the versions (default 3)")
    return ap


def main(argv=None) -> dict:
    args = build_parser().parse_args(argv)
    versions = {"this checkout": ROOT}
    for other in args.against:
        if not (other / "msenv" / "__init__.py").is_file():
            build_parser().error(f"--against {other}: not a checkout of msenv (no msenv/__init__.py)")
        versions[f"{other}"] = other.resolve()
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in versions}
    for _ in range(args.rounds):
        for name, path in versions.items():
            runs[name].append(_run(path))
    names = list(versions)
    keys = list(runs[names[0]][0])
    print(f"== the shells, best of {args.rounds} alternating runs ==")
    print(f"{'':<34}" + "".join(f"{n[-24:]:>26}" for n in names))
    best = {}
    for key in keys:
        if key.endswith("CartPole"):  # the best env step over the best CartPole step
            vals = [best["env step, us"][j] / best["CartPole-v1 step, us"][j] for j in range(len(names))]
        else:
            vals = [(min if key.endswith("us") else max)(r[key] for r in runs[n]) for n in names]
        best[key] = vals
        print(f"{key:<34}" + "".join(f"{v:>26,.2f}" for v in vals))
    return best


if __name__ == "__main__":
    main()
