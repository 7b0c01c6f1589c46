"""The tables of the traces results page (model §12), rendered from the CSVs the experiments wrote
(``docs/figures/traces_*.csv``, one source) into ``docs/generated/traces-*.inc`` when the build
starts (not a page of their own); ``docs/results/traces.md`` includes them. A CSV not written yet
renders as one line saying which command writes it."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from msenv_docs import md_table

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"
OUT = ROOT / "docs" / "generated"
#: each table: (its generated file, its CSV, the command that writes the CSV)
TABLES = {
    "traces-presets": ("traces_presets.csv", "python -m experiments traces-presets --out docs/figures"),
    "traces-headroom": ("traces_headroom.csv", "python -m experiments traces-headroom --out docs/figures"),
    "traces-tuning": ("traces_tuning.csv", "python -m experiments traces-tune --out docs/figures"),
    "traces-sensitivity": ("traces_sensitivity.csv", "python -m experiments traces-sensitivity --out docs/figures"),
    "traces-training": ("traces_training.csv", "python -m experiments traces-training --out docs/figures"),
}


def _read(name: str) -> list[dict] | None:
    path = FIGURES / TABLES[name][0]
    if not path.exists():
        return None
    with path.open() as fh:
        return list(csv.DictReader(fh))


#: the statistics' labels as the page shows them (formulas in MathJax)
LABELS = {"α_0": "$\\alpha_0$", "α_1": "$\\alpha_1$", "α_5": "$\\alpha_5$",
          "request α_0 median": "request $\\alpha_0$, median"}


def _label(stat: str) -> str:
    """A statistic's label with its formula in MathJax (γ = 2 → $\\gamma = 2$)."""
    out = LABELS.get(stat, stat)
    return out.replace(" γ=", ", $\\gamma$ = ")


def presets(rows: list[dict]) -> str:
    """Published figures beside a fitted bank's: one table per drafter, a column per data set."""
    by = defaultdict(dict)
    for r in rows:
        by[r["statistic"]][r["preset"]] = (float(r["published"]), r["fitted_bank"])
    names = list(dict.fromkeys(r["preset"] for r in rows))
    out = []
    for drafter in ("eagle", "ngram"):
        mine = [n for n in names if n.endswith(drafter)]
        body = [[_label(stat)] + [f"{cells[n][0]:.2f} / {float(cells[n][1]):.2f}" for n in mine]
                for stat, cells in by.items() if not stat.startswith("i.i.d.")]
        head = [f"{'EAGLE' if drafter == 'eagle' else 'n-gram'}: published / fitted",
                *[n.rsplit("-", 1)[0] for n in mine]]
        out.append(md_table(head, body))
    return "\n".join(out)


def misprediction(rows: list[dict]) -> str:
    """The i.i.d. model's tokens per round at the published α_0, over the published ones."""
    by = defaultdict(dict)
    for r in rows:
        if r["statistic"].startswith("i.i.d."):
            by[r["preset"]][r["statistic"].rsplit("=", 1)[1].split()[0]] = float(r["published"])
    body = [[f"`{p}`", *[f"{100 * v[g]:+.0f} %" for g in ("2", "4", "8")]] for p, v in by.items()]
    return md_table(["preset", "$\\gamma = 2$", "$\\gamma = 4$", "$\\gamma = 8$"], body)


def headroom(rows: list[dict]) -> str:
    """Each rule relative to the best fixed draft length, per preset, and its share of the
    clairvoyant's gain."""
    body = [[f"`{r['preset']}`", f"`{r['controller']}`",
             f"{float(r['ratio_vs_best_fixed']):.3f} ± {float(r['ratio_ci95']):.3f}",
             f"{float(r['share_of_clairvoyant_gain']):+.2f}"] for r in rows]
    return md_table(["preset", "controller", "throughput / best fixed (95 % CI)", "share of the clairvoyant's gain"],
                  body)


def tuning(rows: list[dict]) -> str:
    """The chosen setting of each rule, per preset."""
    body = [[f"`{r['preset']}`", f"`{r['rival']}`", f"`{r['setting']}`", f"{float(r['throughput']):.1f}"]
            for r in rows if r["chosen"] == "True"]
    return md_table(["preset", "rule", "chosen setting", "throughput, tokens/s (validation)"], body)


#: the sensitivity CSV's names of what varies, as the page writes them
VARIED = {"P_dl dBm": r"$P_\mathrm{dl}$ (dBm)"}


def sensitivity(rows: list[dict]) -> str:
    body = [[f"`{r['preset']}`", VARIED.get(r["varied"], r["varied"]), f"{float(r['value']):g}", f"`{r['controller']}`",
             f"{float(r['ratio_vs_best_fixed']):.3f} ± {float(r['ratio_ci95']):.3f}", f"`{r['best_fixed']}`"]
            for r in rows]
    return md_table(["preset", "varied", "value", "controller", "throughput / best fixed", "best fixed"], body)


#: the trace agents' policies as the page names them
POLICIES = {"budget": "budget", "set": "per-device"}


def training(rows: list[dict]) -> str:
    """Per policy, history window and training rounds: the distribution over training seeds (median,
    range) overall and per preset; then every seed's run (a row without a policy is the budget
    policy's)."""
    overall = ("ratio_ci95", "ratio_vs_greedy")
    presets = [k[len("ratio_"):] for k in rows[0] if k.startswith("ratio_") and k not in overall] if rows else []
    by = defaultdict(list)
    for r in rows:
        by[(POLICIES[r.get("policy") or "budget"], r["history"], f"{int(r['steps']) // 1000}k")].append(r)

    def spread(runs: list[dict], key: str) -> str:
        v = sorted(float(r[key]) for r in runs)
        return f"{v[len(v) // 2]:.3f} ({v[0]:.3f}–{v[-1]:.3f})"

    summary = [[policy, h, rounds, str(len(runs)), spread(runs, "ratio_vs_greedy"),
                *[spread(runs, f"ratio_{p}") for p in presets]] for (policy, h, rounds), runs in by.items()]
    head = ["policy", "$H$", "rounds", "seeds", "all presets", *[f"`{p}`" for p in presets]]
    body = [[POLICIES[r.get("policy") or "budget"], r["history"], r["seed"],
             f"{float(r['ratio_vs_greedy']):.3f} ± {float(r['ratio_ci95']):.3f}", f"{float(r['train_wall_s']):.0f}",
             r["steps"]] for r in rows]
    return ("Throughput over the plug-in greedy's on validation requests: median over the training seeds "
            "(range):\n\n" + md_table(head, summary) + "\nEach run (95 % interval over the validation episodes "
            "of the four presets):\n\n" + md_table(["policy", "history $H$", "seed", "throughput / plug-in greedy",
                                                     "training wall, s", "steps"], body))


RENDER = {"traces-presets": lambda rows: presets(rows) + "\nThe i.i.d. model's tokens per round at the published "
          "$\\alpha_0$, over the published ones:\n\n" + misprediction(rows),
          "traces-headroom": headroom, "traces-tuning": tuning, "traces-sensitivity": sensitivity,
          "traces-training": training}


def write_all() -> list[Path]:
    """Render every table into docs/generated/."""
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (csv_name, command) in TABLES.items():
        rows = _read(name)
        text = (RENDER[name](rows) + f"\nFrom `docs/figures/{csv_name}`, written by `{command}`.\n" if rows else
                f"Not measured yet: `{command}` writes `docs/figures/{csv_name}`.\n")
        path = OUT / f"{name}.inc"
        path.write_text(text)
        written.append(path)
    return written


def setup(app):
    app.connect("builder-inited", lambda app: write_all())
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
