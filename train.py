"""Train PPO on msenv, then compare it with the baselines on held-out seeds.

    python train.py                      # default scenario (Qwen2.5 pair, K = 20), full budget
    python train.py --quick              # smoke run
    python train.py --set draft_scale_range=[1.0,2.0] p_dl_dbm=10   # any config field
    python train.py --env-id msenv/MultiSpin-DeepSeek-v0 --p-dl-dbm 20
    python train.py --p-dl-range 10 40   # one policy for a range of DL budgets
    python train.py --resume runs/ppo-MultiSpin-v0 [--timesteps 1000000]   # continue a stopped run
    python train.py --env-id msenv/MultiSpin-Dynamic-v0 --bc-init greedy-saa   # start PPO from the greedy (agents/bc.py)

Steps: (1) GreedySAA, OptimalUniform, ComputationOnly and Fixed(4) run on the held-out
evaluation seeds (their goodput/throughput become TensorBoard reference lines); (2) PPO trains
with EvalCallback, CheckpointCallback and the msenv metrics callback; (3) the trained agent is
saved (model + VecNormalize + config) and evaluated on the same seeds; (4) the paired table is
printed and written (CSV + JSON) with a PNG learning curve against the baseline lines.
Outputs go to ``--log-dir`` (TensorBoard: ``tensorboard --logdir <log-dir>/tb``).

Run safety: Ctrl-C (SIGINT) or SIGTERM stops training after the current step and saves the agent
(``<log-dir>/agent``) and a resumable checkpoint (``<log-dir>/resume``: model with optimiser
state, VecNormalize statistics, arguments, baseline results, metrics), then exits with 130 / 143.
The resumable checkpoint is also written every ``--checkpoint-minutes`` of wall-clock time
(default 2) or ``--checkpoint-steps`` (default 100000), whichever comes first, and at the end,
so a killed run loses at most that interval. An I/O error while writing a checkpoint
or the logs (disk full, read-only) stops training with one line naming the path, saves the
resumable checkpoint if it can, and exits with 74. ``--resume <log-dir>`` continues to
``--timesteps`` (default: the original run's) in the same TensorBoard run; a finished run can be
extended the same way.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from msenv import CELL_IDS, ENV_IDS, env_config
from msenv.config import MODE_POLICIES, DynamicsConfig, SystemConfig, parse_overrides
from msenv.envs.cells import config_label, layout_of

BASELINES = ("greedy-saa", "optimal-uniform", "computation-only", "fixed-4")
#: added on the model §11 ids (there greedy-saa is the plug-in greedy: posterior-mean α, gains as shown)
DYNAMIC_BASELINES = ("oracle-greedy", "bayes-saa")
DEFAULT_ENV_ID = "msenv/MultiSpin-v0"
#: exit code when training stops on an I/O error (sysexits' EX_IOERR)
EXIT_IO_ERROR = 74
QUICK = dict(timesteps=4096, n_envs=8, eval_episodes=2, eval_freq=2048, checkpoint_freq=4096, episode_length=50)
#: the largest value each count option accepts (beyond it a run would not fit this kind of machine)
UPPER = dict(timesteps=10**10, n_envs=1024, eval_episodes=100_000, eval_freq=10**9, checkpoint_freq=10**9,
             checkpoint_steps=10**9, workers=256, torch_threads=256, frame_stack=64, bc_episodes=100_000,
             bc_epochs=10_000)
#: the EvalCallback's four episodes during training start at --eval-seed + this (apart from the held-out ones)
EVAL_CALLBACK_OFFSET = 50_000


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python train.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    env = ap.add_argument_group("scenario")
    env.add_argument("--env-id", default=None, choices=[*ENV_IDS, *CELL_IDS], metavar="ID",
                     help=f"a registered id: its config (default {DEFAULT_ENV_ID}); one of: "
                          f"{', '.join([*ENV_IDS, *CELL_IDS])}")
    env.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                     help="any config field on top of the id's config; VALUE is JSON where it parses (numbers, "
                          "true/false, lists such as draft_scale_range=[1.0,2.0]), else a string")
    env.add_argument("--num-devices", type=int, help="K (default 20)")
    env.add_argument("--p-ul-dbm", type=float, help="per-device UL budget, dBm (default 15)")
    env.add_argument("--p-dl-dbm", type=float, help="server DL budget, dBm (default 30)")
    env.add_argument("--p-ul-range", type=float, nargs=2, metavar=("LO", "HI"), help="domain randomisation: P_ul ~ U[LO, HI] dBm per episode")
    env.add_argument("--p-dl-range", type=float, nargs=2, metavar=("LO", "HI"), help="domain randomisation: P_dl ~ U[LO, HI] dBm per episode")
    env.add_argument("--mode-policy", choices=MODE_POLICIES, help="reactive policy (default optimal)")
    env.add_argument("--episode-length", type=int, help="rounds per episode (default 100)")
    tr = ap.add_argument_group("training")
    tr.add_argument("--timesteps", type=int, default=None, help="PPO environment steps in all (default 500000; "
                    "with --resume: the original run's)")
    tr.add_argument("--n-envs", type=int, default=16, help="parallel environments (default 16)")
    tr.add_argument("--vec-env", default="batched", choices=("batched", "subproc", "dummy"),
                    help="batched: native batched env in-process (fastest); subproc: SubprocVecEnv (spawn)")
    tr.add_argument("--seed", type=int, default=0, help="training seed: PPO's, and the root of its envs' seeds (independent SeedSequence children)")
    tr.add_argument("--learning-rate", type=float, help="PPO learning rate (default 3e-4)")
    tr.add_argument("--n-steps", type=int, help="PPO rollout steps per env (default 64)")
    tr.add_argument("--batch-size", type=int, help="PPO minibatch (default 256)")
    tr.add_argument("--n-epochs", type=int, help="PPO epochs over each rollout (default 10)")
    tr.add_argument("--gamma", type=float, help="PPO discount (default 0: contextual bandit)")
    tr.add_argument("--frame-stack", type=int, default=1,
                    help="stack the last N observations (SB3 VecFrameStack; default 1 = none)")
    tr.add_argument("--action-prior", type=float, default=None, help="initial logits −λ·γ (default 0.3; 0 = uniform start)")
    tr.add_argument("--reward", choices=("goodput", "throughput", "per-device", "counterfactual"), default=None,
                    help="what PPO maximises: goodput, the env's per-round N/T; throughput, N − λT per round with λ "
                         "the greedy's throughput on the held-out episodes (aligned with the long-run Σ N / Σ T); "
                         "per-device, N/T divided by the cell's K (the same best lengths, every cell weighted alike); "
                         "counterfactual, the gain in the cell's throughput over the policy's own deterministic "
                         "action played on the same draws (agents.envs.CounterfactualReward). Default: the id's "
                         "(goodput unless agents.defaults says otherwise)")
    tr.add_argument("--policy", choices=("mlp", "set", "budget"), default=None,
                    help="mlp: an MLP over the flat observation; set: one network shared by every device with a "
                         "pooled cell summary (agents/setpolicy.py); budget: the same network deciding a drafting-time "
                         "budget per cell and which devices draft (agents/budget.py; the cell generator only). "
                         "Default: the id's (mlp unless agents.defaults says otherwise)")
    tr.add_argument("--policy-kwargs", metavar="JSON", default=None,
                    help="the policy's keyword arguments as a JSON object, e.g. '{\"hidden\": 32}' or "
                         "'{\"pooling\": \"meanmax\"}' for the set and budget policies (SB3's policy_kwargs)")
    tr.add_argument("--bc-init", metavar="CONTROLLER", default=None,
                    help="start PPO from this controller's decisions (behaviour cloning, agents/bc.py), e.g. greedy-saa")
    tr.add_argument("--bc-episodes", type=int, default=300, help="episodes the --bc-init controller plays (default 300)")
    tr.add_argument("--bc-epochs", type=int, default=40, help="behaviour-cloning epochs (default 40; best held-out kept)")
    tr.add_argument("--torch-threads", type=int, default=1, help="torch CPU threads (default 1: fastest for these small nets)")
    ev = ap.add_argument_group("evaluation and output")
    ev.add_argument("--eval-episodes", type=int, default=10, help="held-out episodes for the final comparison (default 10)")
    ev.add_argument("--eval-seed", type=int, default=10_000, help="first held-out seed (default 10000)")
    ev.add_argument("--eval-freq", type=int, default=50_000, help="EvalCallback period in env steps (default 50000)")
    ev.add_argument("--checkpoint-freq", type=int, default=250_000, help="CheckpointCallback period in env steps")
    ev.add_argument("--checkpoint-minutes", type=float, default=2.0,
                    help="write the resumable checkpoint every this many minutes of wall-clock time (default 2) "
                         "or every --checkpoint-steps, whichever comes first: a killed run loses at most that")
    ev.add_argument("--checkpoint-steps", type=int, default=100_000,
                    help="write the resumable checkpoint every this many environment steps too (default 100000)")
    ev.add_argument("--resume", metavar="LOG_DIR", default=None,
                    help="continue the run saved in LOG_DIR/resume (same settings) up to --timesteps")
    ev.add_argument("--baselines", nargs="+", metavar="NAME", default=None,
                    help="the controllers of the held-out comparison, greedy-saa among them (it is the reference); "
                         "default: %s, plus %s on a single cell with the model §11 dynamics (on a cell generator "
                         "they are left out: at K = 100 one decision of bayes-saa took 109 s), plus the id's own "
                         "(local-search on the Hetero ids)" % (" ".join(BASELINES), " ".join(DYNAMIC_BASELINES)))
    ev.add_argument("--workers", type=int, default=2, help="processes for the baseline evaluation (default 2)")
    ev.add_argument("--log-dir", default=None,
                    help="output directory (default runs/ppo-<id without 'msenv/'>[-quick], e.g. runs/ppo-MultiSpin-v0)")
    ev.add_argument("--quick", action="store_true", help="tiny budget for a smoke run (%s)" % ", ".join(f"{k}={v}" for k, v in QUICK.items()))
    ev.add_argument("--no-progress", action="store_true", help="no progress bars")
    return ap


#: arguments a resumed run may change; everything else comes from the checkpoint
RESUME_MUTABLE = ("timesteps", "resume", "no_progress", "workers", "checkpoint_minutes", "checkpoint_steps")


def parse(argv: list[str] | None = None) -> tuple[argparse.Namespace, SystemConfig]:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.resume is not None:
        return _parse_resume(ap, args)
    from_quick = set()
    if args.quick:
        for key, val in QUICK.items():
            if key in ("episode_length", "timesteps"):
                if getattr(args, key) is None:
                    setattr(args, key, val)
                    from_quick.add(key)
            elif getattr(args, key) == ap.get_default(key):
                setattr(args, key, val)
    if args.env_id is None:
        args.env_id = DEFAULT_ENV_ID
    from agents.defaults import id_defaults

    for key, val in id_defaults(args.env_id).items():  # the id's defaults, unless given
        if getattr(args, key) is None:
            setattr(args, key, val)
    if args.timesteps is None:
        args.timesteps = 500_000
    for name in ("timesteps", "n_envs", "eval_episodes", "eval_freq", "checkpoint_freq", "checkpoint_steps", "workers",
                 "torch_threads", "frame_stack", "bc_episodes", "bc_epochs"):
        val, top = getattr(args, name), UPPER[name]
        if not 1 <= val <= top:
            ap.error(f"--{name.replace('_', '-')} {val} is invalid; allowed: an integer in 1 … {top:,}")
    for name in ("seed", "eval_seed"):
        if getattr(args, name) < 0:
            ap.error(f"--{name.replace('_', '-')} {getattr(args, name)} is invalid; allowed: an integer ≥ 0")
    from evaluation.suites import seed_refusal

    for flag, value, seeds in (
            ("--seed", args.seed, range(args.seed, args.seed + 1)),
            ("--eval-seed", args.eval_seed, range(args.eval_seed, args.eval_seed + args.eval_episodes)),
            ("--eval-seed", args.eval_seed, range(args.eval_seed + EVAL_CALLBACK_OFFSET,
                                                  args.eval_seed + EVAL_CALLBACK_OFFSET + 4))):
        refusal = seed_refusal(flag, value, seeds)
        if refusal:
            ap.error(refusal)
    for name in ("n_steps", "batch_size", "n_epochs"):
        val = getattr(args, name)
        if val is not None and val < 1:
            ap.error(f"--{name.replace('_', '-')} {val} is invalid; allowed: an integer ≥ 1")
    if not (math.isfinite(args.checkpoint_minutes) and args.checkpoint_minutes > 0):
        ap.error(f"--checkpoint-minutes {args.checkpoint_minutes} is invalid; allowed: a finite number > 0")
    if args.learning_rate is not None and not (math.isfinite(args.learning_rate) and args.learning_rate > 0):
        ap.error(f"--learning-rate {args.learning_rate} is invalid; allowed: a finite number > 0")
    if args.gamma is not None and not 0.0 <= args.gamma <= 1.0:
        ap.error(f"--gamma {args.gamma} is invalid; allowed: a number in [0, 1]")
    if args.bc_init is not None:
        from baselines import make_controller

        try:
            make_controller(args.bc_init)
        except ValueError as e:
            ap.error(f"--bc-init: {e}")
        if args.frame_stack != 1:
            ap.error(f"--bc-init needs --frame-stack 1 (got {args.frame_stack})")
        if args.policy == "budget":
            ap.error("--bc-init needs --policy mlp or set (a controller's draft lengths are not budget actions)")
    if args.policy_kwargs is not None:
        import json

        try:
            kw = json.loads(args.policy_kwargs)
        except ValueError as e:
            ap.error(f"--policy-kwargs {args.policy_kwargs!r} is not JSON ({e})")
        if not isinstance(kw, dict):
            ap.error(f"--policy-kwargs {args.policy_kwargs!r} is invalid; allowed: a JSON object of keyword arguments")
    if args.action_prior is not None and not (math.isfinite(args.action_prior) and args.action_prior >= 0):
        ap.error(f"--action-prior {args.action_prior} is invalid; allowed: a finite number ≥ 0")
    overrides: dict[str, Any] = {}
    for arg, field in (("num_devices", "num_devices"), ("p_ul_dbm", "p_ul_dbm"), ("p_dl_dbm", "p_dl_dbm"),
                       ("mode_policy", "mode_policy"), ("episode_length", "episode_length")):
        if getattr(args, arg) is not None:
            overrides[field] = getattr(args, arg)
    if args.p_ul_range:
        overrides["p_ul_dbm_range"] = tuple(args.p_ul_range)
    if args.p_dl_range:
        overrides["p_dl_dbm_range"] = tuple(args.p_dl_range)
    try:
        from agents.defaults import id_config

        given = parse_overrides(args.set)
        for field, val in overrides.items():  # a flag and --set naming the same field: say which, not pick one
            if field in given:
                flags = {"p_ul_dbm_range": "--p-ul-range", "p_dl_dbm_range": "--p-dl-range"}
                flag = "--quick" if field in from_quick else flags.get(field, "--" + field.replace("_", "-"))
                raise ValueError(f"{field}={given[field]!r} conflicts with {flag} ({field}={val!r}); give the field once")
        overrides = {**given, **overrides}
        overrides = {**id_config(args.env_id, overrides), **overrides}
        cfg = env_config(args.env_id, **overrides)
    except (ValueError, TypeError) as e:
        ap.error(f"--set: {e}" if args.set else str(e))
    if args.bc_init is not None:  # e.g. fixed-<γ> beyond the config's gamma_max: refused before any work
        from evaluation.entries import check_entries
        from evaluation.harness import ControllerFactory, Entry

        try:
            check_entries([Entry(args.bc_init, ControllerFactory(args.bc_init))], cfg)
        except ValueError as e:
            ap.error(f"--bc-init: {e}")
    if args.baselines is not None:  # an unknown name or a fixed-<γ> beyond gamma_max: refused before any work
        from evaluation.entries import check_entries
        from evaluation.harness import parse_entry

        if "greedy-saa" not in args.baselines:
            ap.error(f"--baselines {' '.join(args.baselines)}: greedy-saa is missing; the comparison is relative to it")
        try:
            check_entries([parse_entry(n) for n in args.baselines], cfg)
        except (KeyError, ValueError) as e:
            ap.error(f"--baselines: {e.args[0] if e.args else e}")
    cells = layout_of(cfg).masked
    if args.policy_kwargs is not None:  # refused now, not after the baselines' minutes
        from agents.ppo import check_policy_kwargs

        try:
            check_policy_kwargs(cfg, args.policy or "mlp", ppo_overrides(args)["policy_kwargs"])
        except (TypeError, ValueError) as e:
            ap.error(f"--policy-kwargs {args.policy_kwargs}: {e}")
    if args.policy == "budget" and not cells:
        ap.error(f"--policy budget needs the cell generator's env (msenv/MultiSpin-Cells-v0), not {args.env_id}")
    if args.reward == "counterfactual" and args.frame_stack != 1:
        ap.error(f"--reward counterfactual needs --frame-stack 1 (got {args.frame_stack}): its reference is the "
                 "policy's action on the current observation")
    if args.log_dir is None:
        args.log_dir = default_log_dir(args.env_id, args.quick)
    _check_writable(ap, args.log_dir)
    _check_same_id(ap, args.log_dir, args.env_id)
    return args, cfg


def cell_label(cfg) -> str:
    """``qwen2.5, K=20, P_dl=30 dBm``, or for a cell generator its K range."""
    return config_label(cfg)


def default_log_dir(env_id: str, quick: bool = False) -> str:
    """``runs/ppo-<id without 'msenv/'>[-quick]``: each id has its own folder."""
    return f"runs/ppo-{env_id.split('/')[-1]}" + ("-quick" if quick else "")


def _saved_env_id(log_dir: str | Path) -> str | None:
    """The env id of the run saved in ``log_dir`` (None when it holds none)."""
    from agents.checkpoint import read_state

    try:
        return read_state(Path(log_dir) / "resume")["args"].get("env_id")
    except (FileNotFoundError, KeyError):
        return None


def _check_same_id(ap: argparse.ArgumentParser, log_dir: str, env_id: str) -> None:
    """A run never writes into a folder that holds a run of another id."""
    saved = _saved_env_id(log_dir)
    if saved is not None and saved != env_id:
        ap.error(f"--log-dir {log_dir} holds a run of {saved}, not {env_id}: choose another --log-dir "
                 f"(or --resume {log_dir} to continue that run)")


def _check_writable(ap: argparse.ArgumentParser, log_dir: str) -> None:
    """One clear line (argparse's usage error) when the output directory cannot be written."""
    try:
        path = Path(log_dir)
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        ap.error(f"--log-dir {log_dir}: cannot write there ({e.strerror or e})")


def _parse_resume(ap: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[argparse.Namespace, SystemConfig]:
    from agents.checkpoint import read_state

    try:
        state = read_state(Path(args.resume) / "resume")
    except FileNotFoundError as e:
        ap.error(f"--resume {args.resume}: {e}")
    saved = dict(state["args"])
    if args.env_id is not None and args.env_id != saved.get("env_id"):
        ap.error(f"--resume {args.resume} holds a run of {saved.get('env_id')}, not {args.env_id}: "
                 f"leave out --env-id to continue it, or start a new run in another --log-dir")
    saved.setdefault("frame_stack", 1)  # checkpoints written before --frame-stack existed
    saved.setdefault("set", [])  # checkpoints written before --set existed
    saved.setdefault("policy", None)  # … or --policy
    saved.setdefault("reward", "goodput")  # … or --reward
    saved.setdefault("policy_kwargs", None)  # … or --policy-kwargs
    for name in RESUME_MUTABLE:
        if name == "timesteps" and args.timesteps is None:
            continue
        saved[name] = getattr(args, name)
    saved["log_dir"] = args.resume
    new = argparse.Namespace(**saved)
    if new.timesteps < 1:
        ap.error(f"--timesteps {new.timesteps} is invalid; allowed: an integer ≥ 1")
    done = int(state.get("num_timesteps", 0))
    if new.timesteps < done:
        ap.error(f"--timesteps {new.timesteps} is below the {done} steps --resume {args.resume} has done; "
                 f"allowed: an integer ≥ {done}")
    if not new.checkpoint_minutes > 0:
        ap.error(f"--checkpoint-minutes {new.checkpoint_minutes} is invalid; allowed: a number > 0")
    if new.checkpoint_steps < 1:
        ap.error(f"--checkpoint-steps {new.checkpoint_steps} is invalid; allowed: an integer ≥ 1")
    _check_writable(ap, new.log_dir)
    from agents.controller import load_config

    return new, load_config(state["config"])


def ppo_overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "action_prior", "policy"):
        if getattr(args, name) is not None:
            out[name] = getattr(args, name)
    if getattr(args, "policy_kwargs", None):
        import json

        from agents.ppo import DEFAULT_PPO

        out["policy_kwargs"] = {**DEFAULT_PPO["policy_kwargs"], **json.loads(args.policy_kwargs)}
    if "gamma" in out:
        out.setdefault("gae_lambda", 0.95 if out["gamma"] > 0 else 0.0)
    return out


def plot_learning_curve(path: Path, eval_npz: Path, history: list[dict], rows: list[dict], cfg: SystemConfig) -> None:
    """PPO's per-round goodput over training (rollouts, and the EvalCallback's deterministic
    evaluations ± 1 sd) against the baselines' held-out goodput; written by evaluation.report's
    figure writer, in the docs figures' style."""
    import numpy as np

    from evaluation.report import FIGURE_WIDTH_IN, figure_legend, figure_style, save_figure

    with figure_style() as plt:
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 5.6))
        if history:
            ax.plot([h["timesteps"] for h in history], [h["goodput"] for h in history], color="tab:blue", alpha=0.35,
                    label="PPO, training rollouts")
        if eval_npz.exists():
            data = np.load(eval_npz)
            per_round = data["results"] / (cfg.episode_length * cfg.reward_scale)
            m, s = per_round.mean(axis=1), per_round.std(axis=1)
            ax.plot(data["timesteps"], m, "o-", color="tab:blue", label="PPO, evaluation (± 1 sd)")
            ax.fill_between(data["timesteps"], m - s, m + s, color="tab:blue", alpha=0.15)
        styles = {"greedy-saa": ("tab:red", "-"), "optimal-uniform": ("tab:green", "--"),
                  "computation-only": ("tab:purple", ":"), "fixed-4": ("tab:gray", "-.")}
        for r in rows:
            if r["controller"] in styles:
                c, ls = styles[r["controller"]]
                ax.axhline(r["goodput"], color=c, ls=ls, label=f"{r['controller']} ({r['goodput']:.0f})")
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0), useMathText=True)
        ax.set_xlabel("environment steps (rounds)")
        ax.set_ylabel("per-round goodput (tok/s)")
        ax.set_title(f"PPO vs baselines: {cell_label(cfg)}")
        figure_legend(fig, *ax.get_legend_handles_labels(), max_cols=2)
        save_figure(fig, path)
        plt.close(fig)


class Run(NamedTuple):
    """Where a run writes and what it resumes from."""

    out: Path  #: the log directory
    resume_dir: Path  #: the resumable checkpoint
    state: dict  #: the checkpoint's saved state ({} for a new run)
    progress: bool
    t_start: float


class Baselines(NamedTuple):
    """The baselines' held-out episodes and the reference lines drawn from them."""

    results: list
    seconds: float
    refs: dict


class Trained(NamedTuple):
    """The outcome of the training phase."""

    agent_dir: Path
    metrics: list  #: the metrics callback's history
    seconds: float
    num_timesteps: int
    stop_signal: str | None  #: SIGINT / SIGTERM when the run was stopped, else None
    io_error: str | None = None  #: the OSError that stopped training, else None
    resumable: bool = True  #: the resumable checkpoint was written at the stop


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse → baselines on the held-out seeds → PPO training → the paired comparison."""
    args, cfg = parse(argv)
    import torch

    torch.set_num_threads(args.torch_threads)
    out = Path(args.log_dir)
    out.mkdir(parents=True, exist_ok=True)
    from agents.checkpoint import read_state

    run = Run(out, out / "resume", read_state(out / "resume") if args.resume else {}, not args.no_progress,
              time.perf_counter())
    from agents.checkpoint import Stopped

    try:
        base = run_baselines(args, cfg, run)
    except Stopped as e:
        print(f"train.py: stopped by {e.signal_name} during the baseline phase; nothing to resume yet",
              file=sys.stderr, flush=True)
        return {"exit_code": e.exit_code}
    try:
        trained = train(args, cfg, run, base)
    except Stopped as e:  # before PPO's first step (behaviour cloning)
        print(f"train.py: stopped by {e.signal_name} during {getattr(e, 'phase', 'the set-up')}; nothing to resume yet",
              file=sys.stderr, flush=True)
        return {"exit_code": e.exit_code}
    if trained.io_error is not None:
        return {"exit_code": EXIT_IO_ERROR, "log_dir": str(out), "num_timesteps": trained.num_timesteps,
                "resumable": trained.resumable}
    if trained.stop_signal is not None:
        print(f"stopped by {trained.stop_signal} at step {trained.num_timesteps} of {args.timesteps}: agent saved in "
              f"{trained.agent_dir}, resumable checkpoint in {run.resume_dir}\n"
              f"continue with: python train.py --resume {out}", flush=True)
        return {"exit_code": 130 if trained.stop_signal == "SIGINT" else 143, "log_dir": str(out),
                "num_timesteps": trained.num_timesteps}
    return compare(args, cfg, run, base, trained)


def default_baselines(env_id: str, cfg) -> tuple[str, ...]:
    """The controllers of the held-out comparison unless ``--baselines`` names them: :data:`BASELINES`,
    :data:`DYNAMIC_BASELINES` on a single cell with the model §11 dynamics (on a cell generator of
    up to 200 devices they would take hours: at K = 100 one decision of bayes-saa took 109 s, of
    oracle-greedy 40 s),
    and the id's own (:func:`agents.defaults.id_baselines`)."""
    from agents.defaults import id_baselines

    dynamic = not layout_of(cfg).masked and cfg.dynamics != DynamicsConfig()
    return BASELINES + (DYNAMIC_BASELINES if dynamic else ()) + id_baselines(env_id)


def run_baselines(args: argparse.Namespace, cfg: SystemConfig, run: Run) -> Baselines:
    """Phase 1: the baselines on the held-out seeds (kept in the checkpoint: a resumed run reuses
    them) → the reference lines of TensorBoard and the plot. SIGINT/SIGTERM raise
    :class:`agents.checkpoint.Stopped` (the worker processes are ended on the way out)."""
    from agents.checkpoint import StopNow
    from evaluation.harness import EpisodeStats, evaluate, parse_entry
    from evaluation.report import summarize

    t0 = time.perf_counter()
    if run.state.get("baselines"):
        results = [EpisodeStats(**r) for r in run.state["baselines"]]
    else:
        names = getattr(args, "baselines", None) or default_baselines(args.env_id, cfg)
        with StopNow():
            results = evaluate([parse_entry(n) for n in names], cfg, args.eval_episodes, args.eval_seed,
                               workers=args.workers, progress=run.progress)
    refs = {r["controller"].replace("-", "_"): {"goodput": r["goodput"], "throughput": r["throughput"]}
            for r in summarize(results) if r["controller"] in ("greedy-saa", "optimal-uniform")}
    return Baselines(results, time.perf_counter() - t0, refs)


def train(args: argparse.Namespace, cfg: SystemConfig, run: Run, base: Baselines) -> Trained:
    """Phase 2: PPO (new, started from a cloned controller with ``--bc-init``, or continued from
    the resumable checkpoint) until ``--timesteps`` or a stop signal; saves the agent and the
    resumable checkpoint."""
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback, EvalCallback

    from agents.callbacks import MetricsCallback
    from agents.checkpoint import GracefulStop, RunSafetyCallback, ThreadIOErrors, load_resumable, save_resumable
    from agents.controller import save_agent
    from agents.envs import (attach_reference, normalize, seed_next_reset, stack_frames, training_env,
                             training_seeds)
    from agents.ppo import DEFAULT_PPO, make_ppo

    out = run.out
    params = ppo_overrides(args)
    gamma = params.get("gamma", DEFAULT_PPO["gamma"])
    done_steps = int(run.state.get("num_timesteps", 0))
    # independent streams per training seed; a resumed run takes fresh children of the same tree
    reward = getattr(args, "reward", None)
    set_like = params.get("policy") in ("set", "budget")  # reads raw observations (no per-entry statistics)
    lam = base.refs["greedy_saa"]["throughput"] * cfg.reward_scale if reward == "throughput" else None
    policy = params.get("policy", "mlp")
    if set_like:
        from agents.setpolicy import set_layout

        params["policy_kwargs"] = {**set_layout(cfg), **(params.get("policy_kwargs") or {})}
    env_seeds = training_seeds(args.seed, args.n_envs, done_steps)
    raw_venv = training_env(cfg, args.n_envs, env_seeds, args.vec_env, policy, reward, lam)
    if args.resume:
        model, venv = load_resumable(run.resume_dir, raw_venv, args.frame_stack, tensorboard_log=str(out / "tb"))
    else:
        venv = normalize(raw_venv, gamma, norm_obs=not set_like)
        model = make_ppo(stack_frames(venv, args.frame_stack), seed=args.seed, tensorboard_log=str(out / "tb"), **params)
        if args.bc_init:
            from agents.bc import clone, collect
            from agents.checkpoint import StopNow, Stopped

            t0 = time.perf_counter()
            print(f"behaviour cloning: {args.bc_init} plays {args.bc_episodes} demonstration episodes, then "
                  f"{args.bc_epochs} epochs of fitting", flush=True)
            try:  # SIGINT/SIGTERM: nothing to save yet; the demonstration workers are ended on the way out
                with StopNow():
                    demos = collect(args.bc_init, cfg, args.bc_episodes, workers=args.workers, progress=run.progress)
                    fit = clone(model, venv, demos, epochs=args.bc_epochs, seed=args.seed)
                    # the cloned policy before any PPO update, compared in the final table
                    save_agent(out / "cloned", model, venv, cfg,
                               extra={"bc_init": args.bc_init, "bc_fit": fit, "frame_stack": 1})
            except Stopped as e:
                venv.close()
                e.phase = f"behaviour cloning (--bc-init {args.bc_init})"
                raise
            print(f"behaviour cloning of {args.bc_init}: {fit['samples']} decisions, epoch {fit['epoch']}, "
                  f"held-out accuracy per device {fit['val_accuracy']:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    seed_next_reset(raw_venv, env_seeds)  # building the model seeded the envs with seed + i
    attach_reference(raw_venv, model)  # a counterfactual reward's reference: the policy's own action
    eval_env = stack_frames(normalize(training_env(cfg, 4, args.eval_seed + EVAL_CALLBACK_OFFSET, "batched", policy, reward, lam,
                                                   evaluation=True), gamma, training=False, norm_obs=not set_like),
                            args.frame_stack)
    metrics = MetricsCallback(base.refs)
    metrics.history = list(run.state.get("metrics", []))
    eval_cb = EvalCallback(eval_env, eval_freq=max(args.eval_freq // args.n_envs, 1), n_eval_episodes=4,
                           log_path=str(out / "eval"), best_model_save_path=str(out / "best"), deterministic=True,
                           verbose=0)
    _restore_eval_history(eval_cb, out / "eval" / "evaluations.npz", done_steps)
    base_dump = [r.__dict__ for r in base.results]

    def checkpoint() -> Path:
        return save_resumable(run.resume_dir, model, venv, {"args": vars(args), "config": cfg.to_dict(),
                                                             "baselines": base_dump, "metrics": metrics.history})

    remaining = args.timesteps - model.num_timesteps
    with GracefulStop() as stop, ThreadIOErrors() as thread_errors:
        safety = RunSafetyCallback(stop, checkpoint, 60.0 * args.checkpoint_minutes,
                                   interval_steps=args.checkpoint_steps)
        callbacks = CallbackList([
            safety, metrics, eval_cb,
            CheckpointCallback(save_freq=max(args.checkpoint_freq // args.n_envs, 1), save_path=str(out / "checkpoints"),
                               name_prefix="ppo", save_vecnormalize=True),
        ])
        print(f"training PPO: steps {model.num_timesteps} → {args.timesteps}, log dir {out}", flush=True)
        t0 = time.perf_counter()
        if remaining > 0:
            try:
                model.learn(remaining, callback=callbacks, progress_bar=run.progress, tb_log_name="ppo",
                            reset_num_timesteps=not args.resume)
            except OSError as e:  # a checkpoint or the logs could not be written (disk full, read-only, …)
                return _stop_on_io_error(e, model, checkpoint, run)
        if thread_errors.errors:  # TensorBoard's writer thread failed after the last log was written
            return _stop_on_io_error(thread_errors.errors[0], model, checkpoint, run)
        seconds = time.perf_counter() - t0
    extra = {"ppo": {**DEFAULT_PPO, **params}, "timesteps": int(model.num_timesteps), "frame_stack": args.frame_stack,
             "reward": getattr(args, "reward", None) or "goodput"}
    agent_dir = save_agent(out / "agent", model, venv, cfg, extra=extra)
    _write_training_record(agent_dir, args, int(model.num_timesteps), None if args.resume else seconds)
    checkpoint()
    model.get_env().close()
    return Trained(agent_dir, metrics.history, seconds, int(model.num_timesteps),
                   stop.signal_name if stop.requested else None)


def _write_training_record(agent_dir, args: argparse.Namespace, timesteps: int, wall_s: float | None) -> None:
    """``training.json`` beside the agent: seed, steps, wall time (``None`` for a resumed run, whose
    earlier sessions' time is not kept), threads, machine, the code's commit and the command."""
    from evaluation.provenance import TRAINING_FILE, training_record
    from evaluation.report import write_json

    rec = training_record(seed=args.seed, timesteps=timesteps, wall_s=wall_s, torch_threads=args.torch_threads,
                          command="python " + " ".join(sys.argv) if sys.argv and sys.argv[0].endswith("train.py")
                          else "python train.py", env_id=args.env_id)
    write_json(rec, Path(agent_dir) / TRAINING_FILE)


def _stop_on_io_error(e: OSError, model, checkpoint, run: Run) -> Trained:
    """Training stopped by an I/O error: one line naming the path, then the resumable state is
    saved if it can be (one more line if it cannot)."""
    where = f" {os.fsdecode(e.filename)}" if e.filename else ""  # TensorBoard's paths are bytes
    print(f"train.py: could not write{where}: {e.strerror or e}; training stopped at step {model.num_timesteps}",
          file=sys.stderr, flush=True)
    try:
        checkpoint()
    except OSError as e2:
        print(f"train.py: could not save the resumable state to {run.resume_dir}: {e2.strerror or e2}"
              + (f" ({os.fsdecode(e2.filename)})" if e2.filename else ""), file=sys.stderr, flush=True)
        saved = False
    else:
        print(f"resumable checkpoint in {run.resume_dir}; continue with: python train.py --resume {run.out}",
              file=sys.stderr, flush=True)
        saved = True
    try:
        model.get_env().close()
    except Exception:  # noqa: BLE001 - already stopping on an error
        pass
    return Trained(run.resume_dir, [], 0.0, int(model.num_timesteps), None, io_error=str(e), resumable=saved)


def compare(args: argparse.Namespace, cfg: SystemConfig, run: Run, base: Baselines, trained: Trained) -> dict[str, Any]:
    """Phases 3–4: the trained agent (and the cloned one) on the same held-out seeds, then the
    paired table, ``comparison.csv/json`` and the learning curve."""
    from agents.controller import AgentFactory
    from evaluation.harness import Entry, evaluate
    from evaluation.report import print_table, summarize, write_csv, write_json

    out = run.out
    agents = [Entry("ppo", AgentFactory(trained.agent_dir))]
    if getattr(args, "bc_init", None) and (out / "cloned").exists():
        agents.append(Entry(f"cloned:{args.bc_init}", AgentFactory(out / "cloned")))
    ppo_results = evaluate(agents, cfg, args.eval_episodes, args.eval_seed, progress=run.progress)
    rows = summarize(base.results[: args.eval_episodes] + ppo_results + base.results[args.eval_episodes :])
    title = (f"{cell_label(cfg)}, {args.eval_episodes} held-out episodes × {cfg.episode_length} rounds "
             f"(seeds {args.eval_seed}..), PPO {args.timesteps} steps")
    print_table(rows, title)
    greedy = next(r for r in rows if r["controller"] == "greedy-saa")
    ppo = next(r for r in rows if r["controller"] == "ppo")
    summary = {
        "ppo_vs_greedy_throughput": ppo["throughput"] / greedy["throughput"],
        "ppo_vs_greedy_paired": ppo["rel_throughput"],
        "decision_speedup_vs_greedy": greedy["decision_ms"] / max(ppo["decision_ms"], 1e-12),
        "train_seconds": trained.seconds,
        "baseline_eval_seconds": base.seconds,
        "total_seconds": time.perf_counter() - run.t_start,
    }
    print(f"PPO / GreedySAA long-run throughput: {summary['ppo_vs_greedy_throughput']:.4f} "
          f"(paired per episode {ppo['rel_throughput']:.4f} ± {ppo['rel_throughput_ci95']:.4f}); "
          f"decision time {ppo['decision_ms']:.3f} ms vs {greedy['decision_ms']:.2f} ms "
          f"({summary['decision_speedup_vs_greedy']:.0f}× faster); training {trained.seconds:.0f} s")
    write_csv(rows, out / "comparison.csv")
    write_json({"args": vars(args), "config": cfg.to_dict(), "summary": summary, "table": rows,
                "training_metrics": trained.metrics}, out / "comparison.json")
    plot_learning_curve(out / "learning_curve.png", out / "eval" / "evaluations.npz", trained.metrics, rows, cfg)
    print(f"wrote {out / 'comparison.csv'}, {out / 'comparison.json'}, {out / 'learning_curve.png'}; "
          f"agent in {trained.agent_dir}")
    return {"exit_code": 0, "rows": rows, "summary": summary, "log_dir": str(out)}


def _restore_eval_history(eval_cb, npz: Path, done_steps: int) -> None:
    """A resumed run keeps the EvalCallback points logged before the stop."""
    if done_steps == 0 or not npz.exists():
        return
    import numpy as np

    data = np.load(npz)
    keep = data["timesteps"] <= done_steps
    eval_cb.evaluations_timesteps = [int(t) for t in data["timesteps"][keep]]
    eval_cb.evaluations_results = [list(r) for r in data["results"][keep]]
    eval_cb.evaluations_length = [list(r) for r in data["ep_lengths"][keep]]


if __name__ == "__main__":
    sys.exit(main().get("exit_code", 0))
