"""The shape of the best action: a drafting-time budget per cell and a device set.

For each cell type and K, on the first round of held-out episodes, the best model-based action
— the local search (K ≤ 50; it starts from the better of the greedy and the best uniform
vector) or the paper's greedy (above: the local search takes seconds) — against the best
*budget action* (:mod:`agents.budget`: every device on drafts ⌊τ / T_k^dft⌋ tokens, τ on the grid
of quarter tokens of the fastest drafter): with the model-based action's own devices on, and with
every device on; and the generalist's own decision (its draft lengths and its level). All are
scored on the same SAA samples (N_SAA = the config's, 1000), so a ratio ≥ 1 says the budget shape
loses nothing. Per point it also finds the one level best on average over the point's episodes
(every device on), against each episode's own best level.

``python -m experiments budget --out docs/figures/budget`` writes ``budget.csv``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.budget import budget_layout, budget_lengths
from baselines import make_controller
from baselines.saa import SAAEstimator
from evaluation.parallel import parallel_map
from evaluation.report import write_csv
from msenv.envs.cells import MultiSpinCellsEnv

from .cells import DEFAULT_AGENT, cell_config

KINDS = ("paper", "strong", "weak-hetero", "far")
KS = (5, 20, 50, 200)
#: episodes per point and their first seed (held out from training and the other tables)
EPISODES, SEED = 8, 45_000
LOCAL_SEARCH_MAX_K = 50


def _point(args: tuple) -> dict[str, Any]:
    from agents.controller import load_agent

    kind, k, seed, agent_dir = args
    cells = cell_config(kind, k, 2)
    env = MultiSpinCellsEnv(cells)
    obs, _ = env.reset(seed=seed)
    ctx = env.context
    name = "local-search" if k <= LOCAL_SEARCH_MAX_K else "greedy-saa"
    model = make_controller(name)
    model.reset(seed)
    best = np.asarray(model.act(ctx, obs))
    est = SAAEstimator(ctx, np.random.default_rng(seed))
    layout = budget_layout(cells)
    levels = np.arange(layout.n_levels)
    rows = np.repeat(obs[None], len(levels), axis=0)
    times = np.repeat(env.draft_times[None, :k], len(levels), axis=0)  # the exact drafting times
    same = budget_lengths(levels, np.repeat((best > 0)[None], len(levels), axis=0), rows, layout, times)
    every = budget_lengths(levels, np.ones((len(levels), k), np.int64), rows, layout, times)
    ref = float(est.evaluate(best))
    v_same, v_every = est.evaluate(same), est.evaluate(every)
    agent = load_agent(agent_dir)
    level = int(agent.policy.decide(obs[None])[0][0]) if hasattr(agent.policy, "decide") else -1
    return {"cell": kind, "k": k, "seed": seed, "model": name, "model_goodput": ref,
            "budget_same_devices": float(v_same.max()) / ref, "budget_every_device": float(v_every.max()) / ref,
            "devices_off": int((best == 0).sum()), "best_level": int(levels[np.argmax(v_same)]),
            "agent": float(est.evaluate(agent.act(ctx, obs))) / ref, "agent_level": level,
            "levels": (v_every / v_every.max()).tolist()}


def run_budget(out: str | Path, episodes: int = EPISODES, seed: int = SEED, workers: int = 2, quick: bool = False,
               progress: bool = False, agent: str = DEFAULT_AGENT) -> list[dict[str, Any]]:
    """Every point (``quick``: K ∈ {5, 20}, two types, 1 episode); writes ``budget.csv`` (a row per
    episode, without the per-level scores) into ``out`` and prints per point: the mean ratios, the
    levels, and the best common level with its mean share of each episode's best level."""
    kinds, ks = (KINDS[:2], KS[:2]) if quick else (KINDS, KS)
    episodes = 1 if quick else episodes
    jobs = [(kind, k, seed + i, str(agent)) for kind in kinds for k in ks for i in range(episodes)]
    rows = parallel_map(_point, jobs, workers=workers, progress=progress)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv([{key: v for key, v in r.items() if key != "levels"} for r in rows], out / "budget.csv")
    for kind in kinds:
        for k in ks:
            pts = [r for r in rows if r["cell"] == kind and r["k"] == k]
            common = np.mean([r["levels"] for r in pts], axis=0)

            def span(key):  # (called in this iteration only)
                vals = [r[key] for r in pts]  # noqa: B023
                return f"{np.mean(vals):.4f} (min {np.min(vals):.4f})"

            print(f"{kind:<12} K={k:<4} best budget / {pts[0]['model']}: same devices {span('budget_same_devices')}, "
                  f"every device on {span('budget_every_device')}; generalist {span('agent')}; devices off "
                  f"{np.mean([r['devices_off'] for r in pts]):.1f}; best levels "
                  f"{'/'.join(str(r['best_level']) for r in pts)}, the generalist's "
                  f"{'/'.join(str(r['agent_level']) for r in pts)}; best common level {int(np.argmax(common))}: "
                  f"{common.max():.4f} of each episode's best", flush=True)
    print(f"wrote {out / 'budget.csv'}")
    return rows
