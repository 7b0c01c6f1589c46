"""The main job's learner (``python train.py`` on msenv/MultiSpin-v0): its five training seeds
against the best rule, and the candidates its defaults were chosen from.

    python -m experiments main-job-seeds --out docs/figures             # train.py's defaults, seeds 0–4
    python -m experiments.main_job candidates --out results/main-job    # every candidate, seeds 0–4

Each training is ``python train.py`` itself, run as a subprocess one at a time (torch on one
thread, its default), so the agents and training walls are the main job's. The saved agent then
plays, beside the four rules of train.py's table (:data:`RULES`), two blocks of episodes:

- the held-out episodes of train.py's table (seeds 10000 …, 10 × 100 rounds);
- validation episodes (:data:`VALIDATION_SEED` …, 20 × 100 rounds): seeds of
  ``evaluation.suites``' validation block that none of its suites uses. The defaults were chosen
  on these, never on the held-out or the benchmark's test episodes.

The score of an agent is the paired ratio of its long-run throughput to the best rule's, episode
by episode (the best of the four rules on that episode), with its 95% t-interval over the
episodes. A candidate meets the criterion when, over the five training seeds, the median score is
≥ 0.999 and none is below 0.995 (:data:`CRITERION`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.harness import Entry, EpisodeStats, evaluate, parse_entry
from evaluation.report import ci95, read_csv, write_csv
from evaluation.suites import CELL_STRIDE, VALIDATION_SEEDS, VALIDATION_SUITES
from msenv.atomic import write_text

ROOT = Path(__file__).resolve().parent.parent
ENV_ID = "msenv/MultiSpin-v0"
#: the rules of train.py's table; an agent's score is relative to the best of them, episode by episode
RULES = ("greedy-saa", "optimal-uniform", "computation-only", "fixed-4")
#: the training seeds of the table
SEEDS = (0, 1, 2, 3, 4)
#: train.py's held-out episodes (its --eval-seed and --eval-episodes defaults)
HELD_OUT_SEED, HELD_OUT_EPISODES = 10_000, 10
#: the validation episodes: a block of the validation seeds after every validation suite's cells
VALIDATION_SEED, VALIDATION_EPISODES = VALIDATION_SEEDS.start + 50 * CELL_STRIDE, 20
#: (median score at least, every seed's score at least) over the five training seeds
CRITERION = (0.999, 0.995)
#: the seeds table's file (in --out): per training seed the held-out score (ratio, its ci95 and
#: interval lo … hi), the score against the greedy alone, the validation score, the training's wall
#: time, the whole train.py command's wall and CPU time, the steps, and the 1-minute load average
#: of the machine as the run ended (walls stretch under other work; the scores do not change)
SEEDS_FILE = "main_job_seeds.csv"
#: the candidates' file (in the candidates' --out): one row per candidate and training seed
CANDIDATES_FILE = "main_job_candidates.csv"
#: its columns
CANDIDATE_COLUMNS = ("candidate", "options", "seed", "steps", "train_wall_s", "command_cpu_s", "validation_ratio",
                     "validation_ci95", "worst_episode", "vs_greedy", "mean_gamma", "load")


def _set(steps: int, *extra: str, epochs: int = 4, lr: str = "1e-3") -> list[str]:
    """train.py options of a device-set candidate: ``steps`` steps, ``epochs`` PPO epochs at
    learning rate ``lr``, then ``extra`` (each option given, so a candidate does not change with
    train.py's defaults)."""
    return ["--policy", "set", "--n-epochs", str(epochs), "--learning-rate", lr, *extra, "--timesteps", str(steps)]


#: SB3's epochs and learning rate (train.py's defaults before the main job's were chosen)
SB3 = dict(epochs=10, lr="3e-4")
CF = ("--reward", "counterfactual")
#: candidate → train.py options ([] = train.py's defaults themselves); each keeps train.py's 16
#: batched environments unless it says otherwise
CANDIDATES: dict[str, list[str]] = {
    "mlp-500k": ["--policy", "mlp", "--n-epochs", "10", "--learning-rate", "3e-4", "--timesteps", "500000"],
    "set-100k": _set(100_000, **SB3),
    "set-60k": _set(60_000, **SB3),
    "set-cf-100k": _set(100_000, *CF, **SB3),
    "set-tp-100k": _set(100_000, "--reward", "throughput", **SB3),
    "set-e4-lr1e-3-100k": _set(100_000),
    "set-e4-lr1e-3-75k": _set(75_000),
    "set-e4-lr1e-3-60k": _set(60_000),
    "set-e4-lr1e-3-50k": _set(50_000),
    "set-e4-lr1e-3-25k": _set(25_000),
    "set-cf-e4-lr1e-3-75k": _set(75_000, *CF),
    "set-cf-e4-lr1e-3-50k": _set(50_000, *CF),
    "set-h32-e4-lr1e-3-100k": _set(100_000, "--policy-kwargs", '{"hidden": 32}'),
    "set-h32-e4-lr1e-3-50k": _set(50_000, "--policy-kwargs", '{"hidden": 32}'),
    "set-e4-lr1e-3-prior0.15-50k": _set(50_000, "--action-prior", "0.15"),
    "set-e4-lr1e-3-prior0.5-50k": _set(50_000, "--action-prior", "0.5"),
    "set-e4-lr2e-3-50k": _set(50_000, lr="2e-3"),
    "set-e4-lr1e-3-32envs-50k": _set(50_000, "--n-envs", "32", "--n-steps", "32"),
    "set-e2-lr1e-3-100k": _set(100_000, epochs=2),
    "set-e4-lr1e-3-b512-100k": _set(100_000, "--batch-size", "512"),
    "defaults": [],
}


def validation_clash() -> str | None:
    """The validation suite whose seeds meet :data:`VALIDATION_SEED`'s block, if any (None: none)."""
    block = range(VALIDATION_SEED, VALIDATION_SEED + VALIDATION_EPISODES)
    for suite in VALIDATION_SUITES.values():
        for cell in suite.cells:
            if set(cell.seeds) & set(block):
                return suite.name
    return None


def rule_results(out: Path, seed: int, episodes: int, workers: int) -> list[EpisodeStats]:
    """The four rules on episodes ``seed …`` of the main job's config (read from ``out`` when a
    run wrote them there: the rules' episodes depend on nothing else)."""
    from msenv import env_config

    path = out / f"rules_{seed}_{episodes}.json"
    if path.exists():
        return [EpisodeStats(**r) for r in json.loads(path.read_text())]
    res = evaluate([parse_entry(n) for n in RULES], env_config(ENV_ID), episodes, seed, workers=workers)
    out.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps([r.__dict__ for r in res]))
    return res


def paired_vs_best(agent: list[EpisodeStats], rules: list[EpisodeStats]) -> dict[str, float]:
    """The agent's long-run throughput over the best rule's on each episode: mean, 95% half-width,
    lowest episode; and the same against the greedy alone."""
    best: dict[int, float] = {}
    greedy: dict[int, float] = {}
    for r in rules:
        best[r.episode] = max(best.get(r.episode, 0.0), r.throughput)
        if r.label == "greedy-saa":
            greedy[r.episode] = r.throughput
    mine = sorted(agent, key=lambda r: r.episode)
    ratio = np.array([a.throughput / best[a.episode] for a in mine])
    vs_greedy = np.array([a.throughput / greedy[a.episode] for a in mine])
    return {"ratio": float(ratio.mean()), "ci95": ci95(ratio), "worst_episode": float(ratio.min()),
            "vs_greedy": float(vs_greedy.mean()), "mean_gamma": float(np.mean([a.mean_gamma for a in mine]))}


def train(options: list[str], seed: int, log_dir: Path, quick: bool = False, lean: bool = False) -> dict[str, Any]:
    """``python train.py <options> --seed <seed>`` into ``log_dir``; its training record (steps,
    training wall), the whole command's wall and CPU time. ``lean``: its held-out table keeps
    only the greedy on one episode (``--baselines greedy-saa --eval-episodes 1``): the agent is
    the same (the baselines' results only draw reference lines), the run shorter."""
    log_dir = Path(log_dir).resolve()
    cmd = [sys.executable, str(ROOT / "train.py"), *options, "--seed", str(seed), "--log-dir", str(log_dir),
           "--no-progress", "--overwrite"] + (["--quick"] if quick else [])  # a re-run trains the seed anew
    if lean:
        cmd += ["--baselines", "greedy-saa", "--eval-episodes", "1", "--workers", "1"]
    log_dir.mkdir(parents=True, exist_ok=True)
    t0, cpu0 = time.perf_counter(), _children_cpu()
    with open(log_dir / "train.log", "w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT,
                       env={**os.environ,
                            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    rec = json.loads((log_dir / "agent" / "training.json").read_text())
    return {"steps": int(rec["timesteps"]), "train_wall_s": float(rec["wall_s"]), "command_wall_s": wall,
            "command_cpu_s": cpu, "command": "python train.py " + " ".join(cmd[2:])}


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def score(agent_dir: Path, rules: list[EpisodeStats], seed: int, episodes: int) -> dict[str, float]:
    """The agent in ``agent_dir`` on episodes ``seed …``, paired against ``rules`` on them."""
    from agents.controller import AgentFactory
    from msenv import env_config

    res = evaluate([Entry("ppo", AgentFactory(agent_dir))], env_config(ENV_ID), episodes, seed)
    return paired_vs_best(res, rules)


def summary(rows: list[dict[str, Any]], column: str = "validation_ratio") -> dict[str, float]:
    """Median and minimum of ``column`` over ``rows`` (one per training seed), and whether they
    meet :data:`CRITERION`."""
    vals = [float(r[column]) for r in rows]
    med, low = statistics.median(vals), min(vals)
    return {"seeds": len(vals), "median": med, "min": low, "meets": med >= CRITERION[0] and low >= CRITERION[1]}


def run_seeds(out: str | Path, workers: int = 2, quick: bool = False, runs: str | Path | None = None) -> list[dict]:
    """Train train.py's defaults on :data:`SEEDS` (``quick``: seed 0, ``--quick``) into ``runs``
    (default ``runs/main-job[-quick]``), score each agent on the held-out and validation episodes,
    write :data:`SEEDS_FILE` to ``out`` and print the median and minimum."""
    out, runs = Path(out), Path(runs or ("runs/main-job-quick" if quick else "runs/main-job"))
    episodes = (2, 2) if quick else (HELD_OUT_EPISODES, VALIDATION_EPISODES)
    held = rule_results(runs, HELD_OUT_SEED, episodes[0], workers)
    val = rule_results(runs, VALIDATION_SEED, episodes[1], workers)
    rows = []
    for seed in SEEDS[:1] if quick else SEEDS:
        run = train([], seed, runs / f"s{seed}", quick=quick)
        h = score(runs / f"s{seed}" / "agent", held, HELD_OUT_SEED, episodes[0])
        v = score(runs / f"s{seed}" / "agent", val, VALIDATION_SEED, episodes[1])
        rows.append({"seed": seed, "ratio": h["ratio"], "ci95": h["ci95"], "lo": h["ratio"] - h["ci95"],
                     "hi": h["ratio"] + h["ci95"], "vs_greedy": h["vs_greedy"], "validation_ratio": v["ratio"],
                     "validation_ci95": v["ci95"], "train_wall_s": round(run["train_wall_s"], 1),
                     "command_wall_s": round(run["command_wall_s"], 1), "command_cpu_s": round(run["command_cpu_s"], 1),
                     "steps": run["steps"], "load": round(os.getloadavg()[0], 2)})
        print(f"seed {seed}: {h['ratio']:.4f} ± {h['ci95']:.4f} of the best rule on the held-out episodes "
              f"(validation {v['ratio']:.4f} ± {v['ci95']:.4f}); training {run['train_wall_s']:.0f} s, "
              f"{run['steps']} steps", flush=True)
    write_csv(rows, out / SEEDS_FILE)
    for column, what in (("ratio", f"held-out episodes (seeds {HELD_OUT_SEED}..)"),
                         ("validation_ratio", f"validation episodes (seeds {VALIDATION_SEED}..)")):
        s = summary(rows, column)
        print(f"{what}: median {s['median']:.4f}, minimum {s['min']:.4f} over {s['seeds']} training seeds "
              f"({'meets' if s['meets'] else 'misses'} median ≥ {CRITERION[0]}, every seed ≥ {CRITERION[1]})")
    print(f"wrote {out / SEEDS_FILE}")
    return rows


def run_candidates(out: str | Path, names: list[str], seeds: list[int], workers: int = 2) -> list[dict]:
    """Train each candidate of ``names`` on ``seeds`` (lean train.py runs), score it on the
    validation episodes, append each row to :data:`CANDIDATES_FILE` in ``out`` as it finishes
    (rows already there are kept, not re-run) and print each candidate's median and minimum."""
    out = Path(out)
    path = out / CANDIDATES_FILE
    rows = [{c: r.get(c, "") for c in CANDIDATE_COLUMNS} for r in read_csv(path)] if path.exists() else []
    done = {(r["candidate"], int(r["seed"])) for r in rows}
    val = rule_results(out, VALIDATION_SEED, VALIDATION_EPISODES, workers)
    for name in names:
        for seed in seeds:
            if (name, seed) in done:
                continue
            log_dir = out / f"{name}-s{seed}"
            run = train(CANDIDATES[name], seed, log_dir, lean=True)
            v = score(log_dir / "agent", val, VALIDATION_SEED, VALIDATION_EPISODES)
            rows.append({"candidate": name, "options": " ".join(CANDIDATES[name]), "seed": seed, "steps": run["steps"],
                         "train_wall_s": round(run["train_wall_s"], 1),
                         "command_cpu_s": round(run["command_cpu_s"], 1), "validation_ratio": v["ratio"],
                         "validation_ci95": v["ci95"], "worst_episode": v["worst_episode"],
                         "vs_greedy": v["vs_greedy"], "mean_gamma": v["mean_gamma"], "load": os.getloadavg()[0]})
            print(f"{name} seed {seed}: {v['ratio']:.4f} ± {v['ci95']:.4f} of the best rule (validation), "
                  f"training {run['train_wall_s']:.0f} s", flush=True)
            write_csv(rows, path)
    for name in dict.fromkeys(r["candidate"] for r in rows):
        mine = [r for r in rows if r["candidate"] == name]
        s = summary(mine)
        print(f"{name}: median {s['median']:.4f}, minimum {s['min']:.4f} over {s['seeds']} seeds, training "
              f"{statistics.median(float(r['train_wall_s']) for r in mine):.0f} s (median)"
              + (" — meets the criterion" if s["meets"] else ""))
    return rows


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m experiments.main_job``."""
    ap = argparse.ArgumentParser(prog="python -m experiments.main_job", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("seeds", "candidates"))
    ap.add_argument("--names", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES),
                    help="candidates: which (default all)")
    ap.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS),
                    help="candidates: training seeds (default 0–4)")
    ap.add_argument("--out", default="results/main-job", help="output directory (default %(default)s)")
    ap.add_argument("--workers", type=int, default=2, help="processes for the rules' episodes (default 2)")
    ap.add_argument("--quick", action="store_true", help="seeds: one seed of train.py --quick, two episodes per block")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m experiments.main_job``."""
    args = build_parser().parse_args(argv)
    if args.what == "seeds":
        run_seeds(args.out, args.workers, args.quick)
    else:
        run_candidates(args.out, args.names, args.seeds, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
