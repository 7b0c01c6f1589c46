"""Acceptance from traces (model §12) inside msenv: the headroom of a controller that uses history,
and the rivals' tunables chosen on validation requests.

``python -m experiments traces-tune``: every rival's tunables swept on the validation requests of
each preset (validation seeds; the same episodes for every setting), the best kept per preset;
``python -m experiments traces-headroom``: every rival (at its tuned setting), the best fixed draft
length and the clairvoyant reference on each preset's validation requests — throughput relative
to the best fixed draft length, paired per episode, and the share of the clairvoyant's gain over it
that each takes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines import make_controller
from evaluation.harness import Entry, evaluate
from evaluation.report import ci95, read_csv, write_csv
from evaluation.suites import VALIDATION_SEEDS
from msenv import env_config
from msenv.atomic import write_text

TRACES_ID = "msenv/MultiSpin-Traces-v0"
#: the presets the experiments sweep (one EAGLE and one n-gram of each data set)
PRESETS = ("gsm8k-eagle", "gsm8k-ngram", "sharegpt-eagle", "sharegpt-ngram", "cnn-eagle", "cnn-ngram",
           "instructcoder-eagle", "instructcoder-ngram")
#: first validation seed of these experiments (inside the validation block, apart from the cells' ones)
SEED = VALIDATION_SEEDS.start + 60_000
#: each experiment's first validation seed (its episodes take the next ones): disjoint blocks of the
#: validation seeds, so no two experiments play the same episodes
SEEDS = {"traces-tune": SEED, "traces-headroom": SEED + 10_000, "traces-sensitivity": SEED + 20_000,
         "traces-choice": SEED + 30_000, "traces-training": SEED + 35_000, "traces-presets": SEED,
         "traces-shares": SEED + 38_000}
EPISODES, ROUNDS = 8, 100
#: each rival's tunables and the values swept (the first is the default before tuning)
GRIDS: dict[str, dict[str, tuple]] = {
    "hf-budget": {"budget": (1.0, 2.0, 3.0, 4.0, 6.0, 8.0)},
    "last-outcome": {"budget": (1.0, 2.0, 3.0, 4.0, 6.0, 8.0)},
    "ucb-lengths": {"exploration": (0.05, 0.2, 0.5, 2.0)},
    "ucb-budget": {"exploration": (0.05, 0.2, 0.5, 2.0)},
    "km-greedy": {"prior": (1.0, 4.0, 16.0)},
}


@dataclass(frozen=True)
class Rival:
    """A picklable controller factory: a registered name with keyword arguments."""

    name: str
    kwargs: tuple[tuple[str, Any], ...] = ()

    def __call__(self):
        return make_controller(self.name, **dict(self.kwargs))

    @property
    def label(self) -> str:
        return self.name + "".join(f"[{k}={v:g}]" for k, v in self.kwargs)


def preset_config(preset: str, rounds: int = ROUNDS, split: str = "validation", **overrides):
    """The Traces id's config with acceptance from ``preset``'s bank, on its ``split`` requests."""
    return env_config(TRACES_ID, trace_source=preset, trace_split=split, episode_length=rounds, **overrides)


def _throughputs(stats, labels) -> dict[str, np.ndarray]:
    """Each label's per-episode throughput, episodes in seed order."""
    out = {}
    for label in labels:
        rows = sorted((s for s in stats if s.label == label), key=lambda s: s.episode)
        out[label] = np.array([s.throughput for s in rows])
    return out


def sweep(config, rivals: list[Rival], episodes: int, seed: int, workers: int, progress: bool = False):
    """Every rival on the same ``episodes`` (seeds ``seed`` …): their per-episode throughputs."""
    entries = [Entry(r.label, r) for r in rivals]
    stats = evaluate(entries, config, episodes, seed, workers=workers, progress=progress)
    return _throughputs(stats, [r.label for r in rivals])


def fixed_rivals(gamma_max: int) -> list[Rival]:
    """``fixed-0`` … ``fixed-γ_max``."""
    return [Rival(f"fixed-{g}") for g in range(gamma_max + 1)]


#: the module of the tuned settings (:mod:`baselines.tuned`), which :func:`tune` writes
TUNED_MODULE = Path(__file__).resolve().parent.parent / "baselines" / "tuned.py"


def tuned_module(best: dict[str, dict[str, dict[str, float]]]) -> str:
    """The text of :mod:`baselines.tuned` holding ``best`` (one preset's rule → its settings)."""
    lines = ['"""Each adaptive rule\'s tunables per trace preset, chosen on validation requests (the highest mean',
             f"throughput over {EPISODES} episodes × {ROUNDS} rounds of the preset's validation requests, seeds "
             f"{SEED} …, the same",
             "episodes for every setting): written by ``python -m experiments traces-tune --out docs/figures``, with",
             "every setting's figures in ``docs/figures/traces_tuning.csv``. A rule given its tunable explicitly",
             'uses that; on a source not listed here it uses its class default."""', "",
             "from __future__ import annotations", "", "#: trace preset → rule → its tuned keyword arguments",
             "TRACE_TUNED: dict[str, dict[str, dict[str, float]]] = {"]
    for preset, rules in best.items():
        lines.append(f'    "{preset}": {{')
        lines += [f'        "{rule}": {json.dumps(kw)},' for rule, kw in rules.items()]
        lines.append("    },")
    lines += ["}", "", "", "def tuned(source: str | None, rule: str) -> dict[str, float]:",
              '    """The tuned keyword arguments of ``rule`` on trace ``source`` ({} when none were tuned)."""',
              '    return dict(TRACE_TUNED.get(source or "", {}).get(rule, {}))', "", "",
              '__all__ = ["TRACE_TUNED", "tuned"]', ""]
    return "\n".join(lines)


def tune(out: str | Path, presets=PRESETS, episodes: int = EPISODES, rounds: int = ROUNDS, seed: int = SEEDS["traces-tune"],
         workers: int = 2, progress: bool = False, module: str | Path | None = TUNED_MODULE
         ) -> dict[str, dict[str, dict[str, float]]]:
    """Each rival's best setting per preset on the validation requests (highest mean throughput),
    written to ``out/traces_tuned.json`` with every setting's figures in ``traces_tuning.csv``, and
    (unless ``module`` is None) as the module :mod:`baselines.tuned` the rules read."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    best: dict[str, dict[str, dict[str, float]]] = {}
    rows = []
    for preset in presets:
        cfg = preset_config(preset, rounds)
        rivals = fixed_rivals(cfg.gamma_max) + [Rival(name, ((key, v),)) for name, grid in GRIDS.items()
                                                 for key, values in grid.items() for v in values]
        thr = sweep(cfg, rivals, episodes, seed, workers, progress)
        best[preset] = {}
        for name in ["fixed", *GRIDS]:
            mine = [r for r in rivals if (r.name.startswith("fixed-") if name == "fixed" else r.name == name)]
            means = {r.label: float(thr[r.label].mean()) for r in mine}
            top = max(mine, key=lambda r: means[r.label])
            best[preset][name] = {"gamma": int(top.name.split("-")[1])} if name == "fixed" else dict(top.kwargs)
            for r in mine:
                rows.append({"preset": preset, "rival": name, "setting": r.label, "throughput": means[r.label],
                             "chosen": r is top})
    write_csv(rows, out / "traces_tuning.csv")
    write_text(out / "traces_tuned.json", json.dumps(best, indent=2) + "\n")
    if module is not None:
        write_text(module, tuned_module(best))
    return best


def tuned_rivals(tuned: dict[str, dict[str, float]]) -> list[Rival]:
    """The rivals of the headroom table at their tuned settings (``tuned``: one preset's entry of
    :func:`tune`), the best fixed draft length and the untuned rules."""
    rivals = [Rival(f"fixed-{tuned['fixed']['gamma']}"), Rival("greedy-saa"), Rival("trace-filter-saa"),
              Rival("hf-heuristic")]
    rivals += [Rival(name, tuple(sorted(tuned[name].items()))) for name in GRIDS]
    return rivals + [Rival("clairvoyant")]


def headroom(out: str | Path, tuned: dict, presets=PRESETS, episodes: int = EPISODES, rounds: int = ROUNDS,
             seed: int = SEEDS["traces-headroom"], workers: int = 2, progress: bool = False) -> list[dict]:
    """Throughput of each rival relative to the best fixed draft length (paired per episode, mean
    and 95% interval over episodes), and the share of the clairvoyant's gain it takes, per preset;
    written to ``out/traces_headroom.csv``."""
    rows = []
    for preset in presets:
        cfg = preset_config(preset, rounds)
        rivals = tuned_rivals(tuned[preset])
        thr = sweep(cfg, rivals, episodes, seed, workers, progress)
        ref, top = thr[rivals[0].label], thr["clairvoyant"]
        gain = float(top.mean() / ref.mean() - 1.0)
        for r in rivals:
            ratio = thr[r.label] / ref
            half = ci95(ratio)
            share = float((thr[r.label].mean() / ref.mean() - 1.0) / gain) if gain > 0 else float("nan")
            rows.append({"preset": preset, "controller": r.label, "throughput": float(thr[r.label].mean()),
                         "ratio_vs_best_fixed": float(ratio.mean()), "ratio_ci95": half,
                         "share_of_clairvoyant_gain": share})
    write_csv(rows, Path(out) / "traces_headroom.csv")
    return rows


#: the presets a trace agent is chosen on (the cells of the traces-v1 suite of the fitted model)
AGENT_PRESETS = ("cnn-ngram", "sharegpt-ngram", "gsm8k-eagle", "sharegpt-eagle")


def choose_agent(out: str | Path, agents: dict[str, str], presets=AGENT_PRESETS, episodes: int = EPISODES,
                 rounds: int = ROUNDS, seed: int = SEEDS["traces-choice"], workers: int = 2, progress: bool = False) -> str:
    """The trained agent to commit, chosen on validation requests: every agent of ``agents`` (label →
    directory) and the plug-in greedy on each preset's validation requests (validation seeds); the
    agent with the best mean throughput relative to the greedy (paired per episode) over the presets.
    Writes each agent's ratio per preset to ``out/traces_choice.csv``; returns the chosen label."""
    from evaluation.entries import agent_loader

    load = agent_loader()
    rows, score = [], {label: [] for label in agents}
    for preset in presets:
        cfg = preset_config(preset, rounds)
        entries = [Entry("greedy-saa", Rival("greedy-saa"))] + [Entry(lbl, load(path, lbl)) for lbl, path in agents.items()]
        stats = evaluate(entries, cfg, episodes, seed, workers=workers, progress=progress)
        thr = _throughputs(stats, [e.label for e in entries])
        for label in agents:
            ratio = thr[label] / thr["greedy-saa"]
            score[label].append(float(ratio.mean()))
            rows.append({"preset": preset, "agent": label, "ratio_vs_greedy": float(ratio.mean()),
                         "ratio_ci95": ci95(ratio)})
    best = max(score, key=lambda label: np.mean(score[label]))
    for r in rows:
        r["chosen"] = r["agent"] == best
    write_csv(rows, Path(out) / "traces_choice.csv")
    return best


#: how each trace agent is trained (model §12's learned control): on the cell generator with a trace base
#: of K = 20 devices — the paper's cell — serving the training requests of every preset of the suite;
#: the policy is the device-set budget policy (a drafting-time budget for the cell and which devices
#: draft) or the device-set policy (each device's own draft length, one network shared by the devices)
TRAINING_SOURCE = "mix:" + ",".join(AGENT_PRESETS)
HISTORIES, TRAINING_SEEDS, TRAINING_STEPS = (1, 4, 16), (0, 1, 2, 3, 4), 200_000
#: the agents of the ablation, (policy, history, rounds of training) each trained with every seed of
#: TRAINING_SEEDS: the budget policy at each history window, the per-device policy at H = 4, and the
#: budget policy at H = 4 with three times the rounds
TRAINING_RUNS = (*(("budget", h, TRAINING_STEPS) for h in HISTORIES), ("set", 4, TRAINING_STEPS),
                 ("budget", 4, 3 * TRAINING_STEPS))


def run_name(policy: str, history: int, seed: int, steps: int = TRAINING_STEPS) -> str:
    """The folder of a trained trace agent under --runs (the first agents keep their first names)."""
    return (("" if policy == "budget" else f"{policy}-") + f"h{history}-"
            + ("" if steps == TRAINING_STEPS else f"{steps // 1000}k-") + f"s{seed}")


def training_command(history: int, seed: int, log_dir: str | Path, steps: int = TRAINING_STEPS,
                     policy: str = "budget") -> list[str]:
    """train.py's arguments for the trace agent with ``history`` rounds of history, ``policy`` and
    training seed ``seed`` (no counterfactual reward on traces: actions move the trace position)."""
    cell = [f"trace_source={TRAINING_SOURCE}", f"trace_history={history}", "gamma_max=12", "k_range=[20,20]",
            "k_max=20", "draft_scale_max_range=null", "episode_length=100", "distance_range_m=[100,500]",
            "p_ul_dbm_range=null", "p_dl_dbm_range=null"]
    return ["train.py", "--env-id", "msenv/MultiSpin-Cells-v0", "--set", *cell, "--policy", policy, "--reward",
            "goodput", "--timesteps", str(steps), "--seed", str(seed), "--log-dir", str(log_dir), "--no-progress"]


def training(out: str | Path, runs: str | Path, agents=TRAINING_RUNS, seeds=TRAINING_SEEDS, episodes: int = EPISODES,
             rounds: int = ROUNDS, seed: int = SEEDS["traces-training"], workers: int = 2, progress: bool = False) -> list[dict]:
    """Train (unless ``runs/<run_name>/agent`` exists) every agent of the ablation (``agents``:
    (policy, history, rounds) triples, each with every seed of ``seeds``) and score each on the
    validation requests of every preset of :data:`AGENT_PRESETS`, relative to the plug-in greedy
    (paired per episode); written to ``out/traces_training.csv``. A row already in that file (same
    policy, history, rounds and seed; a row without a policy is the budget policy's) is kept, not
    scored again."""
    import re
    import subprocess
    import sys

    from evaluation.entries import agent_loader

    root, path = Path(runs), Path(out) / "traces_training.csv"
    old = {}
    for r in (read_csv(path) if path.exists() else []):
        policy = r.get("policy") or "budget"
        old[(policy, int(r["history"]), int(r["steps"]), int(r["seed"]))] = {
            "policy": policy, **{k: v for k, v in r.items() if k != "policy"}}
    rows = []
    load = agent_loader()
    for policy, h, n in agents:
        for s in seeds:
            if (policy, h, n, s) in old:
                rows.append(old[(policy, h, n, s)])
                continue
            run = (root / run_name(policy, h, s, n)).resolve()
            if not (run / "agent" / "agent.json").exists():
                cmd = [sys.executable, *training_command(h, s, run, steps=n, policy=policy)]
                subprocess.run(cmd, check=True, cwd=Path(__file__).resolve().parent.parent)
            log = (run / "comparison.json").read_text() if (run / "comparison.json").exists() else ""
            wall = re.search(r"training (\d+) s", (run.parent / f"{run.name}.log").read_text()) if (
                run.parent / f"{run.name}.log").exists() else None
            ratios = []
            for preset in AGENT_PRESETS:
                entries = [Entry("greedy-saa", Rival("greedy-saa")), Entry("ppo", load(str(run / "agent"), "ppo"))]
                cfg = preset_config(preset, rounds, trace_history=h)  # the rows the agent reads
                stats = evaluate(entries, cfg, episodes, seed, workers=workers,
                                 progress=progress)
                thr = _throughputs(stats, ["greedy-saa", "ppo"])
                ratios.append(thr["ppo"] / thr["greedy-saa"])
            ratio = np.concatenate(ratios)
            steps = json.loads(log)["args"]["timesteps"] if log else n
            rows.append({"policy": policy, "history": h, "seed": s, "ratio_vs_greedy": float(ratio.mean()),
                         "ratio_ci95": ci95(ratio), **{f"ratio_{p}": float(r.mean()) for p, r in zip(AGENT_PRESETS, ratios)},
                         "train_wall_s": float(wall.group(1)) if wall else float("nan"), "steps": steps})
    write_csv(rows, path)
    return rows


# ---------------------------------------------------------------------- the capped agent (learned control)
#: the capped agent's recipe, chosen on validation requests in the research phase (docs/results/traces.md):
#: behaviour cloning from trace-filter-ls on the training requests, then PPO at discount 0.9
AGENT_RECIPE = dict(n_per=16, bc_rounds=200, bc_epochs=60, bc_batch=1024, bc_lr=1e-3, timesteps=600_000,
                    n_steps=64, batch_size=512, n_epochs=4, learning_rate=1e-4, gamma=0.9, gae_lambda=0.95,
                    clip_range=0.1, target_kl=0.02, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, hidden=64,
                    reward_scale=0.2)
#: the root of the capped agents' random streams: training seed s draws everything from SeedSequence([root, s])
AGENT_ENTROPY = 20261207
#: the entropy word of the demonstrations' streams (apart from every training seed's [AGENT_ENTROPY, s]); an
#: entropy word of a SeedSequence, not an env seed: the envs' seeds are drawn from its children
DEMO_WORD = 1_000_000
#: the committed capped agents' folder names (agents/pretrained/leaderboard/<name>)
AGENT_NAME = "traces-capped-s{seed}"


def agent_config(preset: str, split: str = "train", rounds: int = ROUNDS):
    """The config a capped agent trains on (``split="train"``) or is scored on: the Traces id on
    ``preset``'s requests with the filter's rows in the observation (``trace_posterior``)."""
    return preset_config(preset, rounds, split=split, trace_posterior=True)


def demonstrations(presets=AGENT_PRESETS, rounds: int = AGENT_RECIPE["bc_rounds"], n_per: int = AGENT_RECIPE["n_per"],
                   seed: int = 0):
    """The teacher's (trace-filter-ls) rounds on the training requests: ``rounds`` rounds in each of
    ``n_per`` envs per preset (``(env, Demonstrations, λ_p per preset)``); streams from
    SeedSequence([AGENT_ENTROPY, DEMO_WORD + seed])."""
    from agents.traces import PresetsVecEnv, collect

    root = np.random.SeedSequence([AGENT_ENTROPY, DEMO_WORD + seed])
    env_seq, rng_seq = root.spawn(2)
    env = PresetsVecEnv([agent_config(p) for p in presets], n_per, env_seq)
    demos = collect(env, rounds, np.random.default_rng(rng_seq))
    return demos, demos.throughput(env)


def train_agent(out: str | Path, seed: int, demos=None, presets=AGENT_PRESETS, command: str = "",
                progress: bool = False, **recipe) -> dict[str, Any]:
    """One capped agent (training seed ``seed``): behaviour cloning from ``demos`` (the teacher's
    demonstrations with each preset's λ_p, from :func:`demonstrations`; collected here when None),
    then PPO on the training requests of ``presets``; written atomically to ``out`` with its
    training record (``training.json``: settings, BC metrics, walls). Every stream (the envs' seeds,
    the network's initialisation, the fit's shuffles, PPO's sampling) comes from
    SeedSequence([AGENT_ENTROPY, seed])."""
    import time

    import torch as th
    from stable_baselines3 import PPO

    from agents.capped import CappedSetPolicy
    from agents.controller import save_agent
    from agents.traces import PresetsVecEnv, fit, returns
    from evaluation.provenance import TRAINING_FILE, training_record
    from evaluation.report import json_bytes
    from msenv import layout_of

    unknown = sorted(set(recipe) - set(AGENT_RECIPE))
    if unknown:
        raise TypeError(f"train_agent() got an unexpected keyword argument {unknown[0]!r}")
    r = {**AGENT_RECIPE, **recipe}
    t0 = time.perf_counter()
    if demos is None:
        demos = demonstrations(presets, r["bc_rounds"], r["n_per"], seed)
    demos, lam_ref = demos
    t_demos = time.perf_counter() - t0
    env_seq, torch_seq, fit_seq, ppo_seq = np.random.SeedSequence([AGENT_ENTROPY, seed]).spawn(4)
    th.set_num_threads(1)
    th.manual_seed(int(torch_seq.generate_state(1)[0]))
    env = PresetsVecEnv([agent_config(p) for p in presets], r["n_per"], env_seq, lam_ref, r["reward_scale"])
    model = PPO(CappedSetPolicy, env, n_steps=r["n_steps"], batch_size=r["batch_size"], n_epochs=r["n_epochs"],
                learning_rate=r["learning_rate"], gamma=r["gamma"], gae_lambda=r["gae_lambda"],
                clip_range=r["clip_range"], target_kl=r["target_kl"], ent_coef=r["ent_coef"], vf_coef=r["vf_coef"],
                max_grad_norm=r["max_grad_norm"], seed=int(ppo_seq.generate_state(1)[0] % 2**31),
                policy_kwargs=dict(n_devices=env.k, n_globals=layout_of(agent_config(presets[0])).n_globals,
                                   hidden=r["hidden"]),
                device="cpu", verbose=0)
    t1 = time.perf_counter()
    values = returns(demos, np.repeat(np.asarray(lam_ref), r["n_per"]), r["reward_scale"], r["gamma"])
    bc = fit(model, demos, values, r["bc_epochs"], r["bc_batch"], r["bc_lr"], rng=np.random.default_rng(fit_seq))
    t_bc = time.perf_counter() - t1
    print(f"seed {seed}: cloned trace-filter-ls in {t_bc:.0f} s: {bc}", flush=True)
    t2 = time.perf_counter()
    if r["timesteps"] > 0:
        model.learn(r["timesteps"], progress_bar=progress)
    t_ppo = time.perf_counter() - t2
    wall = time.perf_counter() - t0
    settings = {k: v for k, v in r.items()}
    extra = {"ppo": settings, "presets": list(presets), "lambda_ref": lam_ref, "timesteps": int(model.num_timesteps),
             "frame_stack": 1, "reward": "scale·(N − λ_p·T)", "action": "capped", "teacher": "trace-filter-ls",
             "bc": bc, "walls_s": {"demonstrations": t_demos, "bc": t_bc, "ppo": t_ppo, "total": wall}}
    rec = training_record(seed=seed, timesteps=int(model.num_timesteps), wall_s=wall, torch_threads=1,
                          command=command, env_id=TRACES_ID)
    rec["capped"] = {k: extra[k] for k in ("presets", "lambda_ref", "bc", "walls_s", "teacher")}
    save_agent(out, model, None, agent_config(presets[0]), extra=extra, files={TRAINING_FILE: json_bytes(rec)})
    print(f"seed {seed}: wrote {out} (wall {wall:.0f} s: demonstrations {t_demos:.0f}, BC {t_bc:.0f}, "
          f"PPO {t_ppo:.0f})", flush=True)
    return extra


def train_agents(out: str | Path, seeds=TRAINING_SEEDS, command: str = "", progress: bool = False,
                 **recipe) -> list[dict]:
    """The capped agents of ``seeds``, one after the other, each into ``out/traces-capped-s<seed>``.
    The teacher's demonstrations are collected once (they depend on no training seed: the
    teacher's decisions on the training requests) and shared by the seeds; each seed's network,
    fit and PPO streams are its own."""
    import time

    r = {**AGENT_RECIPE, **recipe}
    t0 = time.perf_counter()
    demos = demonstrations(AGENT_PRESETS, r["bc_rounds"], r["n_per"], 0)
    print(f"demonstrations: {r['bc_rounds']} rounds × {len(AGENT_PRESETS) * r['n_per']} envs of trace-filter-ls in "
          f"{time.perf_counter() - t0:.0f} s; λ_ref {demos[1]}", flush=True)
    logs = []
    for s in seeds:
        logs.append(train_agent(Path(out) / AGENT_NAME.format(seed=s), s, demos, command=command, progress=progress,
                                **recipe))
    return logs


# ---------------------------------------------------------------------- shares of the clairvoyant's gain
#: the controllers of the shares table (label → registered name), in the page's order
SHARE_RULES = {"filter + LS": "trace-filter-ls", "KM + LS": "km-ls", "state oracle": "state-oracle"}
#: bootstrap replicates of the shares' intervals
SHARE_REPS = 2000


def share_intervals(thr: np.ndarray, ref: np.ndarray, top: np.ndarray, rng: np.random.Generator,
                    reps: int = SHARE_REPS) -> tuple[float, float, float]:
    """(share, low, high): the share of the clairvoyant's gain over the reference that ``thr`` takes,
    (mean thr − mean ref) / (mean top − mean ref), and its 95 % percentile bootstrap interval over
    episodes (paired: one resample of the episodes for all three). ``thr`` [E] or, for a learned
    method, [S, E] (seeds × episodes: the seeds are resampled too)."""
    thr = np.atleast_2d(thr)
    s, e = thr.shape

    def share(t, r, c):
        return (t.mean() - r.mean()) / (c.mean() - r.mean())

    point = float(share(thr, ref, top))
    reps_out = np.empty(reps)
    for i in range(reps):
        ep = rng.integers(0, e, e)
        sd = rng.integers(0, s, s) if s > 1 else np.zeros(1, np.int64)
        reps_out[i] = share(thr[np.ix_(sd, ep)], ref[ep], top[ep])
    low, high = np.percentile(reps_out, [2.5, 97.5])
    return point, float(low), float(high)


def _result_throughputs(path: str | Path) -> tuple[dict, list[str]]:
    """A traces-v1 result file's per-episode throughputs, (cell, method, run) → [episodes] in episode
    order, and its learned methods' labels."""
    doc = json.loads(Path(path).read_text())
    if doc.get("suite", {}).get("name") != "traces-v1":
        raise ValueError(f"--result {path}: not a traces-v1 result file; allowed: the file of python -m "
                         "evaluation.benchmark --suite traces-v1")
    rows: dict[tuple, list] = {}
    for r in doc["episodes"]:
        rows.setdefault((r["cell"], r["method"], r["run"]), []).append((r["episode"], r["throughput"]))
    thr = {key: np.array([t for _, t in sorted(v)]) for key, v in rows.items()}
    return thr, [m for m, info in doc["methods"].items() if info["kind"] == "agent"]


def shares(out: str | Path, agents: dict[str, list[str]], split: str = "test", presets=AGENT_PRESETS,
           episodes: int = 10, rounds: int = ROUNDS, seed: int = SEEDS["traces-shares"], workers: int = 2,
           progress: bool = False, result: str | Path | None = None) -> list[dict]:
    """Per preset, each controller's share of the clairvoyant's gain over the best fixed draft length
    (with 95 % bootstrap intervals over episodes; a learned method over seeds × episodes): the rules of
    :data:`SHARE_RULES` and each learned method of ``agents`` (label → its seeds' directories), all on
    the same episodes. ``split="test"``: traces-v1's cells and test seeds (for the page);
    ``"validation"``: the presets' validation requests from ``seed`` (for choosing). Written to
    ``out/traces_shares_<split>.csv``; returns the rows."""
    from evaluation.entries import agent_loader
    from evaluation.suites import get_suite

    if split not in ("test", "validation"):
        raise ValueError(f"split={split!r} is invalid; allowed: 'test', 'validation'")
    if result is not None and split != "test":
        raise ValueError(f"result={str(result)!r} is invalid with split={split!r}; allowed: a traces-v1 result file "
                         "with split='test' (its episodes are the test cells')")
    played, learned = _result_throughputs(result) if result is not None else ({}, [])
    load = agent_loader()
    cells = {c.name: c for c in get_suite("traces-v1").cells}
    rows = []
    rng = np.random.default_rng(np.random.SeedSequence([AGENT_ENTROPY, 7]))
    for preset in presets:
        if split == "test":
            cell = cells[preset]
            cfg, first, n = cell.config(), cell.seed, cell.episodes
        else:
            cfg, first, n = agent_config(preset, "validation", rounds), seed, episodes
        names = ("best-fixed", "clairvoyant", *SHARE_RULES.values())
        thr = {}
        if result is not None:  # the file's episodes; only what it lacks is played (the state oracle)
            thr = {name: played[(preset, name, 0)] for name in names if (preset, name, 0) in played}
            for label in learned:
                runs = sorted(r for (c, m, r) in played if c == preset and m == label)
                thr |= {f"{label}#{r}": played[(preset, label, r)] for r in runs}
            agents = {label: [None] * len([k for k in thr if k.startswith(label + "#")]) for label in learned}
        entries = [Entry(name, Rival(name)) for name in names if name not in thr]
        for label, dirs in agents.items():
            entries += [Entry(f"{label}#{i}", load(d, f"{label}#{i}")) for i, d in enumerate(dirs)
                        if f"{label}#{i}" not in thr]
        if entries:
            stats = evaluate(entries, cfg, n, first, workers=workers, progress=progress)
            thr |= _throughputs(stats, [e.label for e in entries])
        ref, top = thr["best-fixed"], thr["clairvoyant"]
        methods = {label: thr[name] for label, name in SHARE_RULES.items()}
        methods |= {label: np.stack([thr[f"{label}#{i}"] for i in range(len(dirs))]) for label, dirs in agents.items()}
        for label, t in methods.items():
            point, low, high = share_intervals(t, ref, top, rng)
            rows.append({"preset": preset, "split": split, "controller": label, "runs": int(np.atleast_2d(t).shape[0]),
                         "episodes": n, "throughput": float(t.mean()), "share": point, "share_low": low,
                         "share_high": high})
        rows.append({"preset": preset, "split": split, "controller": "clairvoyant / best-fixed", "runs": 1,
                     "episodes": n, "throughput": float(top.mean()), "share": float(top.mean() / ref.mean()),
                     "share_low": float("nan"), "share_high": float("nan")})
    write_csv(rows, Path(out) / f"traces_shares_{split}.csv")
    return rows


def shares_table(rows: list[dict]) -> str:
    """The rows of :func:`shares` as the page's markdown table (one line per preset)."""
    presets = list(dict.fromkeys(r["preset"] for r in rows))
    labels = list(dict.fromkeys(r["controller"] for r in rows))
    lines = ["| preset | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for p in presets:
        cells = []
        for label in labels:
            r = next(r for r in rows if r["preset"] == p and r["controller"] == label)
            if label.startswith("clairvoyant"):
                cells.append(f"{float(r['share']):.3f}")
            else:
                cells.append(f"{100 * float(r['share']):.0f} % [{100 * float(r['share_low']):.0f}, "
                             f"{100 * float(r['share_high']):.0f}]")
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: the statistics of the presets' table (key, label): the published figures beside a bank's
PRESET_STATS = (("alpha_0", "α_0"), ("alpha_1", "α_1"), ("alpha_5", "α_5"), ("tokens@2", "tokens/round γ=2"),
                ("tokens@4", "tokens/round γ=4"), ("tokens@8", "tokens/round γ=8"), ("p_nothing@4", "P(none) γ=4"),
                ("after_full@4", "after full γ=4"), ("after_rejected@4", "after rejected γ=4"), ("lag1@2", "lag-1 γ=2"),
                ("lag1@8", "lag-1 γ=8"), ("length_median", "length median"), ("alpha0_median", "request α_0 median"))


def presets_table(out: str | Path, scale: int = 4, seed: int = 0) -> list[dict]:
    """Each preset's bank (``scale`` × its source's requests, ``seed``) measured beside the
    published figures it was fitted to, and the i.i.d. model's tokens per round at the published
    α_0 beside the published ones (its misprediction); written to ``out/traces_presets.csv``."""
    from msenv.traces import PRESETS, PUBLISHED, measure, preset_bank

    rows = []
    for name, preset in PRESETS.items():
        figures = measure(preset_bank(name, requests=scale * preset.requests, seed=seed))
        target = PUBLISHED[name]
        for k, label in PRESET_STATS:
            rows.append({"preset": name, "statistic": label, "published": target[k], "fitted_bank": figures[k]})
        for g in (2, 4, 8):
            rows.append({"preset": name, "statistic": f"i.i.d. tokens/round γ={g} over published",
                         "published": target[f"iid_tokens@{g}"] / target[f"tokens@{g}"] - 1.0, "fitted_bank": float("nan")})
    write_csv(rows, Path(out) / "traces_presets.csv")
    return rows


#: the sensitivity sweep: the drafting cost per token as a share of the cell's (T_dft,ref = 15.2 ms; the
#: published drafters ran beside the target, where an n-gram lookup costs almost nothing) and the DL budget
DRAFT_SHARES = (0.01, 0.25, 0.5, 1.0)
DL_BUDGETS_DBM = (10.0, 20.0, 30.0, 40.0)
SENSITIVITY_PRESETS = ("cnn-ngram", "gsm8k-eagle")


def sensitivity(out: str | Path, presets=SENSITIVITY_PRESETS, episodes: int = 4, rounds: int = ROUNDS,
                seed: int = SEEDS["traces-sensitivity"], workers: int = 2, progress: bool = False) -> list[dict]:
    """The headroom under other costs: for each preset, the drafting cost per token at each share
    of the cell's (:data:`DRAFT_SHARES`) and the DL budget at each of :data:`DL_BUDGETS_DBM` (one
    changed at a time), the best fixed draft length (swept), the model-based rules and the
    clairvoyant reference on the validation requests; written to ``out/traces_sensitivity.csv``."""
    rows = []
    base_t = env_config(TRACES_ID).compute.t_draft_ref_s
    points = [("draft cost share", x, {"t_draft_ref_s": base_t * x}) for x in DRAFT_SHARES]
    points += [("P_dl dBm", x, {"p_dl_dbm": x}) for x in DL_BUDGETS_DBM]
    for preset in presets:
        for what, value, over in points:
            cfg = preset_config(preset, rounds, **over)
            rivals = fixed_rivals(8) + [Rival("km-greedy"), Rival("trace-filter-saa"), Rival("clairvoyant")]
            thr = sweep(cfg, rivals, episodes, seed, workers, progress)
            fixed = max((r for r in rivals[:9]), key=lambda r: thr[r.label].mean())
            ref = thr[fixed.label]
            for r in [fixed, *rivals[9:]]:
                rows.append({"preset": preset, "varied": what, "value": value, "controller": r.label,
                             "best_fixed": fixed.label, "ratio_vs_best_fixed": float((thr[r.label] / ref).mean()),
                             "ratio_ci95": ci95(thr[r.label] / ref), "throughput": float(thr[r.label].mean())})
    write_csv(rows, Path(out) / "traces_sensitivity.csv")
    return rows


__all__ = ["SHARE_RULES", "share_intervals", "shares", "shares_table", "AGENT_RECIPE", "agent_config", "demonstrations", "train_agent", "train_agents", "DL_BUDGETS_DBM", "DRAFT_SHARES", "GRIDS", "PRESETS", "Rival", "TRACES_ID", "headroom", "preset_config",
           "choose_agent", "presets_table", "sensitivity", "training", "training_command", "sweep", "tune", "tuned_rivals"]
