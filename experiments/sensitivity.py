"""How the paper's conclusions depend on the reconstructed choices (the model's [R] fields).

``python -m experiments sensitivity [--drops 14] [--extended] [--quick] [--ray [ADDRESS]]``

For every *reading* — the default reconstruction or one [R] choice replaced by a plausible
alternative — it replays reduced versions of Figs 7, 9 and 11 (Qwen2.5 pair, the figures' own
job builders, the same drop seeds for every reading) and evaluates each paper claim:

======  ==================================================================================
claim   test (paired over drops; "≥" means the 95% CI of the difference excludes 0)
======  ==================================================================================
C1      Fig 7: goodput rises with P_dl: G(P_hi) − G(P_lo) > 0
C2      Fig 7: and saturates: the second increment is smaller than the first
C3      Fig 7: mean draft length rises with P_dl: γ̄(P_hi) − γ̄(P_lo) > 0
C4      Fig 7: mean draft length at the lowest P_dl is ≈ 2–3 (its CI meets [2, 3])
C5      Fig 7: the UL share falls with P_dl (UL(P_lo) − UL(P_hi) > 0) but stays > 0 at P_hi
C6      Fig 9: optimal mode selection is best at every K and ratio (every other scheme's paired
        ratio to optimal < 1 at every point)
C7      Fig 9: all-DL loses ground to optimal as K grows at P_dl/P_ul = 4:
        ratio(K_lo) − ratio(K_hi) > 0
C8      Fig 11: greedy beats optimal uniform (paper: by 8–15%): greedy / uniform > 1 at some ratio
C9      Fig 11: greedy beats computation-only: greedy / computation-only > 1 at some ratio
======  ==================================================================================

Outputs: ``sensitivity.csv`` (claims × readings: holds, value, CI and the numbers behind it),
``sensitivity_drops.csv`` (every drop), ``sensitivity.png`` (heat map). The verification-latency
alternatives are calibrated to equal the default T_ver when every device drafts γ_ref = 6 tokens
(the default's typical length), so they change the *shape* of T_ver, not its level.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.parallel import parallel_map
from evaluation.report import ci95, write_csv
from msenv.config import PRESETS

from .figures import Job, fig7_jobs, fig9_jobs, fig11_jobs, run_job

PAIR = "qwen2.5"
GAMMA_REF = 6


def readings(pair: str = PAIR) -> dict[str, dict[str, Any]]:
    """name → config overrides (``"p_ul_dbm"`` only reaches Fig 7, the figure it is [R] for); under
    ``"settings"``, the controllers' keyword arguments instead (the SAA objective is the SAA
    controllers' own, :class:`baselines.saa.SAAConfig`)."""
    p = PRESETS[pair]
    t1 = p["t_verify_per_device_s"]
    rates = np.asarray(p["acceptance_rates"])
    return {
        "default": {},
        "T_ver per drafted token": dict(t_verify_per_device_s=0.0, t_verify_per_token_s=t1 / GAMMA_REF),
        "T_ver drafting devices only": dict(verify_batch="drafting"),
        "T_ver padded length": dict(t_verify_per_device_s=0.0, t_verify_per_padded_token_s=t1 / (GAMMA_REF + 1)),
        "fading reciprocal": dict(fading="reciprocal"),
        "fading per episode": dict(fading_redraw="episode"),
        "alpha +0.05": dict(acceptance_rates=tuple(float(x) for x in np.minimum(rates + 0.05, 1.0))),
        "alpha -0.05": dict(acceptance_rates=tuple(float(x) for x in rates - 0.05)),
        "drafting U[1, 1.5]": dict(draft_scale_range=(1.0, 1.5)),
        "drafting U[1, 2]": dict(draft_scale_range=(1.0, 2.0)),
        "SAA mean of ratios": dict(settings=dict(objective="mean_of_ratios")),
        "Fig 7 P_ul 15 dBm": dict(p_ul_dbm=15.0),
    }


SIZES = {
    "full": dict(p_dl=(10.0, 25.0, 40.0), ks=(5, 40), ratios9=(4.0, 16.0), ratios11=(1.0, 16.0), num_devices=20),
    # --extended: Fig 9 also at K = 20 and Fig 11 at every ratio of the paper's figure (≈ 1.6× the work)
    "extended": dict(p_dl=(10.0, 25.0, 40.0), ks=(5, 20, 40), ratios9=(4.0, 16.0), ratios11=(1.0, 4.0, 16.0, 64.0),
                     num_devices=20),
    "quick": dict(p_dl=(10.0, 25.0, 40.0), ks=(4, 8), ratios9=(4.0,), ratios11=(4.0,), num_devices=6),
}


def build_jobs(name: str, overrides: dict[str, Any], drops: int, seed: int, rounds: int, size: str) -> list[Job]:
    """The drops one reading plays: Fig 7 at three budgets, Fig 9 at a few K, Fig 11 at the ratios."""
    z = SIZES[size]
    overrides = dict(overrides)
    settings = overrides.pop("settings", None)
    fig7_over = dict(overrides)
    p_ul = fig7_over.pop("p_ul_dbm", 10.0)
    common = dict(pair=PAIR, drops=drops, seed=seed, rounds=rounds, settings=settings)
    if "p_ul_dbm" in overrides:  # a Fig 7/8 reading: the other figures are the default's
        jobs = fig7_jobs(p_dl_dbm=z["p_dl"], p_ul_dbm=p_ul, num_devices=z["num_devices"], overrides=fig7_over,
                         **common)
    else:
        jobs = (fig7_jobs(p_dl_dbm=z["p_dl"], num_devices=z["num_devices"], overrides=overrides, **common)
                + fig9_jobs(ks=z["ks"], ratios=z["ratios9"], overrides=overrides, **common)
                + fig11_jobs(ratios=z["ratios11"], num_devices=z["num_devices"],
                             controllers=("greedy-saa", "optimal-uniform", "computation-only"), overrides=overrides,
                             **common))
    return [replace(j, panel=f"{name}|{j.panel}") for j in jobs]


# ---------------------------------------------------------------------- claims
def _paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = np.asarray(a, float) - np.asarray(b, float)
    return float(d.mean()), ci95(d)


def _by(raw: list[dict], figure: str) -> dict[tuple, np.ndarray]:
    """(panel, x, scheme) → per-drop records sorted by drop."""
    out: dict[tuple, list] = defaultdict(list)
    for r in raw:
        if r["figure"] == figure:
            out[(r["panel"].split("|", 1)[1], r["x"], r["scheme"])].append(r)
    return {k: sorted(v, key=lambda r: r["drop"]) for k, v in out.items()}


def _col(rs: list[dict], key: str) -> np.ndarray:
    return np.array([r[key] for r in rs], dtype=float)


def claims(raw: list[dict]) -> list[dict[str, Any]]:
    """Evaluate C1–C9 on one reading's drops (claims whose figure was not played are skipped)."""
    rows: list[dict[str, Any]] = []

    def add(claim, holds, value, ci, detail):
        rows.append({"claim": claim, "holds": bool(holds), "value": float(value), "ci95": float(ci), "detail": detail})

    f7 = _by(raw, "fig7")
    if f7:
        xs = sorted({x for (_, x, _) in f7})
        lo, mid, hi = (f7[(PAIR, x, "greedy-saa")] for x in (xs[0], xs[len(xs) // 2], xs[-1]))
        g_lo, g_mid, g_hi = (_col(r, "throughput") for r in (lo, mid, hi))
        m, c = _paired(g_hi, g_lo)
        add("C1", m - c > 0, m, c, f"G {g_lo.mean():.1f} → {g_mid.mean():.1f} → {g_hi.mean():.1f} tok/s")
        m, c = _paired(g_mid - g_lo, g_hi - g_mid)
        add("C2", m - c > 0, m, c, f"increments {np.mean(g_mid - g_lo):.1f} then {np.mean(g_hi - g_mid):.1f} tok/s")
        y_lo, y_hi = _col(lo, "mean_gamma"), _col(hi, "mean_gamma")
        m, c = _paired(y_hi, y_lo)
        add("C3", m - c > 0, m, c, f"mean γ {y_lo.mean():.2f} → {y_hi.mean():.2f}")
        z_lo = _col(lo, "share_no_draft")
        add("C4", y_lo.mean() - ci95(y_lo) <= 3.0 and y_lo.mean() + ci95(y_lo) >= 2.0, y_lo.mean(), ci95(y_lo),
            f"mean γ at {xs[0]:g} dBm; rounds with γ = 0 everywhere: {100 * z_lo.mean():.0f}%")
        u_lo, u_hi = _col(lo, "share_ul"), _col(hi, "share_ul")
        m, c = _paired(u_lo, u_hi)
        add("C5", m - c > 0 and u_hi.mean() > 0, m, c, f"UL share {u_lo.mean():.2f} → {u_hi.mean():.2f}")
    f9 = _by(raw, "fig9")
    if f9:
        worst, where = -np.inf, ""
        for (panel, x, scheme), rs in f9.items():
            if scheme == "optimal":
                continue
            ratio = _col(rs, "throughput") / _col(f9[(panel, x, "optimal")], "throughput")
            if ratio.mean() > worst:
                worst, where, wc = ratio.mean(), f"{scheme} at K={x:g}, {panel}", ci95(ratio)
        add("C6", worst < 1.0, worst, wc, f"best other / optimal, largest: {where}")
        ks = sorted({x for (_, x, _) in f9})
        panel4 = "ratio=4"

        def dl_ratio(k):
            return _col(f9[(panel4, k, "all_dl")], "throughput") / _col(f9[(panel4, k, "optimal")], "throughput")

        r_lo, r_hi = dl_ratio(ks[0]), dl_ratio(ks[-1])
        m, c = _paired(r_lo, r_hi)
        add("C7", m - c > 0, m, c,
            f"all-DL / optimal {r_lo.mean():.3f} (K={ks[0]:g}) → {r_hi.mean():.3f} (K={ks[-1]:g})")
    f11 = _by(raw, "fig11")
    if f11:
        for claim, other in (("C8", "optimal-uniform"), ("C9", "computation-only")):
            best, bc, texts = -np.inf, 0.0, []
            for x in sorted({x for (_, x, _) in f11}):
                r = _col(f11[(PAIR, x, "greedy-saa")], "throughput") / _col(f11[(PAIR, x, other)], "throughput")
                texts.append(f"{r.mean():.4f}")
                if r.mean() - ci95(r) > best - bc:
                    best, bc = r.mean(), ci95(r)
            add(claim, best - bc > 1.0, best, bc, f"greedy / {other} at ratios: {', '.join(texts)}")
    return rows


# ---------------------------------------------------------------------- run
def run_sensitivity(out: str | Path, drops: int = 20, seed: int = 0, rounds: int = 10, workers: int = 2,
                    quick: bool = False, progress: bool = True, ray_address: str | None = None,
                    only: Sequence[str] | None = None, extended: bool = False) -> list[dict[str, Any]]:
    """Play every reading's drops in one parallel map, write the CSVs and the heat map
    (``sensitivity*`` files; ``sensitivity_extended*`` for the extended size)."""
    t0 = time.perf_counter()
    size = "quick" if quick else ("extended" if extended else "full")
    table = readings()
    names = list(table) if not only else list(only)
    for n in names:
        if n not in table:
            raise ValueError(f"reading {n!r} is not known; allowed: {', '.join(table)}")
    jobs = [j for n in names for j in build_jobs(n, table[n], drops, seed, rounds, size)]
    raw = parallel_map(run_job, jobs, workers, progress, desc="sensitivity", ray_address=ray_address)
    rows = []
    for n in names:
        mine = [r for r in raw if r["panel"].split("|", 1)[0] == n]
        rows += [{"reading": n, **c} for c in claims(mine)]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "sensitivity_extended" if extended else "sensitivity"
    write_csv(rows, out / f"{stem}.csv")
    write_csv(raw, out / f"{stem}_drops.csv")
    plot(rows, out / f"{stem}.png")
    wall = time.perf_counter() - t0
    print(f"sensitivity: {len(names)} readings, {len(jobs)} episodes, wall time {wall:.0f} s → {out}/{stem}.csv")
    return rows


CLAIM_LABELS = {
    "C1": "C1 goodput rises with P_dl", "C2": "C2 … and saturates", "C3": "C3 mean γ rises with P_dl",
    "C4": "C4 mean γ ≈ 2–3 at low P_dl", "C5": "C5 UL share falls, stays > 0", "C6": "C6 optimal modes best (Fig 9)",
    "C7": "C7 all-DL falls behind with K", "C8": "C8 greedy > uniform (Fig 11)", "C9": "C9 greedy > comp.-only",
}
#: the heat map's column heads: Fig 7's claims in the upper map, Figs 9 and 11's in the lower
CLAIM_HEADS = ({"C1": "C1\nG rises", "C2": "C2\nG\nsaturates", "C3": "C3\nγ̄ rises", "C4": "C4\nγ̄ ≈ 2–3",
                "C5": "C5\nUL share\nfalls"},
               {"C6": "C6\noptimal\nbest", "C7": "C7\nall-DL\nbehind", "C8": "C8\ngreedy >\nuniform",
                "C9": "C9\ngreedy >\ncomp.-only"})
#: the heat map's row labels (a reading not named here shows its own name)
READING_LABELS = {"T_ver per drafted token": r"$T_\mathrm{ver}$ per token",
                  "T_ver drafting devices only": r"$T_\mathrm{ver}$ drafting only",
                  "T_ver padded length": r"$T_\mathrm{ver}$ padded", "alpha +0.05": r"$\alpha$ + 0.05",
                  "alpha -0.05": r"$\alpha$ − 0.05", "Fig 7 P_ul 15 dBm": r"Fig 7, $P_\mathrm{ul}$ 15 dBm"}


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """The claims × readings heat map (green: the claim holds, red: it fails; each cell the
    tested value), Fig 7's claims above, Figs 9 and 11's below."""
    import matplotlib

    from evaluation.report import FIGURE_WIDTH_IN, figure_style, save_figure

    names = list(dict.fromkeys(r["reading"] for r in rows))
    values = {(r["reading"], r["claim"]): r for r in rows}
    cmap = matplotlib.colors.ListedColormap(["#e6857a", "#8cc78c"])
    with figure_style() as plt:
        fig, axes = plt.subplots(2, 1, figsize=(FIGURE_WIDTH_IN, 2.2 + 0.62 * len(names)))
        for ax, heads in zip(axes, CLAIM_HEADS):
            claims_ = list(heads)
            grid = np.full((len(names), len(claims_)), np.nan)
            for i, n in enumerate(names):
                for j, c in enumerate(claims_):
                    r = values.get((n, c))
                    if r is not None:
                        grid[i, j] = 1.0 if r["holds"] else 0.0
                    text = ("—" if r is None else f"{r['value']:.3f}" if c in ("C6", "C7", "C8", "C9")
                            else f"{r['value']:.2f}")
                    ax.text(j, i, text, ha="center", va="center")
            ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto")
            ax.set_xticks(range(len(claims_)), [heads[c] for c in claims_])
            ax.xaxis.tick_top()
            ax.set_yticks(range(len(names)), [READING_LABELS.get(n, n) for n in names])
            ax.tick_params(length=0)
            ax.grid(False)
        fig.suptitle("Paper claims under each reading\ngreen: holds, red: fails; cell: the tested value")
        save_figure(fig, path)
        plt.close(fig)


__all__ = ["claims", "readings", "run_sensitivity", "build_jobs"]
