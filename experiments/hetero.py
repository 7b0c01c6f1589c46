"""Why the paper's greedy falls short with heterogeneous devices in a weak cell.

Two parts, both on the Hetero cell (drafting U[1, 2]× the reference, P_dl = 10 dBm unless said):

1. **Decisions** (``hetero_decisions.csv``): on the contexts of held-out episodes, the greedy and
   the local search decide on the same SAA samples (and a trained agent, if given, on the same
   observation); per device: its drafting-speed scale, its UL/DL gains, each controller's γ. The
   summary bins the devices by drafting speed and by downlink gain: who gets shortened, who is
   silenced (γ = 0), and what that saves in T_com.
2. **The gap** (``hetero_gap.csv``): the local search's throughput relative to the greedy, paired
   per episode (16 episodes × 10 rounds per cell), over a grid of K and P_dl — how it grows with K
   and falls with P_dl.

``python -m experiments hetero --out docs/figures/hetero [--agent DIR]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from baselines import best_uniform, greedy_search, local_search
from baselines.saa import SAAEstimator
from evaluation.harness import evaluate, parse_entry
from evaluation.parallel import parallel_map
from evaluation.report import summarize, write_csv
from msenv import ENV_IDS, MultiSpinEnv, resolve_config
from msenv.model.latency import compute_latency

HETERO = "msenv/MultiSpin-Hetero-v0"
#: the decisions part's episodes, rounds and first seed (held out from training and the tables)
EPISODES, ROUNDS, SEED = 20, 20, 30_000


def _decision_episode(args: tuple) -> list[dict[str, Any]]:
    """One episode played by the greedy; at every round the local search (and the agent) decide too,
    on the same context and SAA samples. Rows: one per device and round."""
    seed, rounds, agent_dir, overrides = args
    cfg = resolve_config(ENV_IDS[HETERO], episode_length=rounds, **overrides)
    env = MultiSpinEnv(cfg)
    obs, _ = env.reset(seed=seed)
    agent = None
    if agent_dir:
        from agents.controller import load_agent

        agent = load_agent(agent_dir)
        agent.reset(seed)
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(rounds):
        ctx = env.unwrapped.context
        est = SAAEstimator(ctx, rng)
        g, vg = greedy_search(est)
        u, vu = best_uniform(est)
        ls, _ = local_search(est, *((g, vg) if vg >= vu else (u, vu)))
        a = agent.act(ctx, obs) if agent is not None else None
        # each decision's expected T_com (over the SAA samples both were chosen on) and its T_cmp
        cost = {name: (1e3 * float(est.t_com(gam).mean()), 1e3 * float(compute_latency(gam, ctx.t_draft, cfg)))
                for name, gam in (("greedy", g), ("local_search", ls))}
        scale = ctx.t_draft / cfg.compute.t_draft_ref_s
        for k in range(cfg.num_devices):
            row = {"seed": seed, "round": t, "device": k, "draft_scale": float(scale[k]),
                   "g_ul_db": float(10 * np.log10(ctx.g_ul[k])), "g_dl_db": float(10 * np.log10(ctx.g_dl[k])),
                   "alpha": float(ctx.alpha[k]), "gamma_greedy": int(g[k]), "gamma_local_search": int(ls[k])}
            if a is not None:
                row["gamma_agent"] = int(a[k])
            for name, (t_com, t_cmp) in cost.items():
                row[f"t_com_ms_{name}"], row[f"t_cmp_ms_{name}"] = t_com, t_cmp
            rows.append(row)
        obs, *_ = env.step(g)
    return rows


def _bins(rows: list[dict], key: str, edges: list[float], labels: list[str]) -> list[dict[str, Any]]:
    out = []
    x = np.array([r[key] for r in rows])
    for lo, hi, label in zip(edges[:-1], edges[1:], labels):
        sel = [r for r, v in zip(rows, x) if lo <= v < hi]
        if not sel:
            continue
        row = {"by": key, "bin": label, "devices": len(sel)}
        for name in ("greedy", "local_search", "agent"):
            if f"gamma_{name}" in sel[0]:
                gam = np.array([r[f"gamma_{name}"] for r in sel])
                row[f"mean_gamma_{name}"] = float(gam.mean())
                row[f"share_silenced_{name}"] = float(np.mean(gam == 0))
        out.append(row)
    return out


def _gap_job(args: tuple) -> list[dict[str, Any]]:
    k, p_dl, episodes, rounds, seed = args
    cfg = resolve_config(ENV_IDS[HETERO], num_devices=k, p_dl_dbm=p_dl, episode_length=rounds)
    res = evaluate([parse_entry("greedy-saa"), parse_entry("local-search")], cfg, episodes, seed)
    rows = summarize(res)
    ls = rows[1]
    return [{"num_devices": k, "p_dl_dbm": p_dl, "episodes": episodes, "rounds": rounds,
             "greedy_throughput": rows[0]["throughput"], "local_search_throughput": ls["throughput"],
             "local_search_vs_greedy": ls["rel_throughput"], "local_search_vs_greedy_ci95": ls["rel_throughput_ci95"],
             "t_com_ms_greedy": rows[0]["t_com_ms"], "t_com_ms_local_search": ls["t_com_ms"],
             "decision_ms_greedy": rows[0]["decision_ms"], "decision_ms_local_search": ls["decision_ms"]}]


def run_hetero(out: str | Path, episodes: int = EPISODES, rounds: int = ROUNDS, seed: int = SEED, workers: int = 2,
               agent: str | None = None, quick: bool = False, progress: bool = True,
               ray_address: str | None = None) -> dict[str, list]:
    """Both parts; writes the CSVs into ``out`` and prints the summaries."""
    out = Path(out)
    ks, p_dls, gap_eps = ((4, 8), (10.0, 30.0), 2) if quick else ((5, 10, 20, 40), (10.0, 15.0, 20.0, 30.0), 16)
    jobs = [(seed + e, rounds, agent, {}) for e in range(episodes)]
    rows = [r for ep in parallel_map(_decision_episode, jobs, workers, progress, "decisions", ray_address) for r in ep]
    write_csv(rows, out / "hetero_decisions.csv")
    summary = (_bins(rows, "draft_scale", [1.0, 1.25, 1.5, 1.75, 2.01], ["1–1.25", "1.25–1.5", "1.5–1.75", "1.75–2"])
               + _bins(rows, "g_ul_db", [-999, -130, -120, -110, 999], ["< −130 dB", "−130…−120", "−120…−110",
                                                                          "> −110 dB"])
               + _bins(rows, "g_dl_db", [-999, -130, -120, -110, 999], ["< −130 dB", "−130…−120", "−120…−110",
                                                                          "> −110 dB"]))
    write_csv(summary, out / "hetero_decisions_summary.csv")
    t_com = {n: np.array([r[f"t_com_ms_{n}"] for r in rows if r["device"] == 0]) for n in ("greedy", "local_search")}
    t_cmp = {n: np.array([r[f"t_cmp_ms_{n}"] for r in rows if r["device"] == 0]) for n in ("greedy", "local_search")}
    print(f"decisions on {len(t_com['greedy'])} Hetero rounds (expected over the same SAA samples): T_com greedy "
          f"{t_com['greedy'].mean():.1f} ms, local search {t_com['local_search'].mean():.1f} ms; T_cmp "
          f"{t_cmp['greedy'].mean():.1f} vs {t_cmp['local_search'].mean():.1f} ms")
    for s in summary:
        extra = "".join(f", {n} γ̄ {s[f'mean_gamma_{n}']:.2f} (silenced {100 * s[f'share_silenced_{n}']:.0f}%)"
                        for n in ("greedy", "local_search", "agent") if f"mean_gamma_{n}" in s)
        print(f"  {s['by']} {s['bin']}: {s['devices']} device-rounds{extra}")
    grid = [(k, p, gap_eps, 3 if quick else 10, seed) for k in ks for p in p_dls]
    gap = [r for g in parallel_map(_gap_job, grid, workers, progress, "gap", ray_address) for r in g]
    write_csv(gap, out / "hetero_gap.csv")
    for r in gap:
        print(f"  K={r['num_devices']:>3}, P_dl={r['p_dl_dbm']:g} dBm: local search / greedy "
              f"{r['local_search_vs_greedy']:.3f} ± {r['local_search_vs_greedy_ci95']:.3f}; T_com "
              f"{r['t_com_ms_greedy']:.0f} → {r['t_com_ms_local_search']:.0f} ms")
    return {"decisions": rows, "summary": summary, "gap": gap}
