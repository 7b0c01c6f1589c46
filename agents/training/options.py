"""``train.py``'s command line: its options (:func:`add_options`), each mapped to a field of
:class:`~agents.training.config.TrainingConfig` of the same name (``--n-envs`` → ``n_envs``), but:

- the scenario options ``--set FIELD=VALUE …``, ``--num-devices``, ``--p-ul-dbm``, ``--p-dl-dbm``,
  ``--p-ul-range``, ``--p-dl-range``, ``--mode-policy`` and ``--episode-length`` → ``overrides``
  (a field named twice, by ``--set`` and an option, is refused: say it once);
- ``--policy-kwargs JSON`` → ``policy_kwargs`` (a dict); ``--no-progress`` → ``progress=False``;
- ``--resume LOG_DIR`` → :func:`~agents.training.resume.resumed` (the saved settings; of the
  other options only ``--timesteps``, ``--workers``, ``--checkpoint-minutes``,
  ``--checkpoint-steps`` and ``--no-progress`` may change them; ``--log-dir``, if given, must be
  LOG_DIR itself);
- ``--overwrite`` → ``overwrite=True``: a new run replaces the run already in ``--log-dir``
  (without it, that folder is refused in one line naming ``--resume`` and ``--overwrite``).

An option left out is ``None`` here, so the config takes the id's default (:mod:`agents.defaults`).
:func:`parse_config` turns every refusal — the config's, the env config's, the run folder's — into
argparse's one-line usage error (exit code 2), naming the options as they were typed
(:func:`cli_names`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from msenv import ENV_IDS
from msenv.config import MODE_POLICIES, parse_overrides

from ..defaults import BASELINES, DYNAMIC_BASELINES, MAIN_JOB, QUICK
from ..envs import REWARDS, VEC_KINDS
from ..ppo import POLICIES
from .config import DEFAULT_ENV_ID, TrainingConfig
from .errors import NO_VALUE, SettingMessage
from .resume import RESUME_MUTABLE, check_log_dir, resumed

#: scenario option (argparse destination) → the config field it sets
SCENARIO = {"num_devices": "num_devices", "p_ul_dbm": "p_ul_dbm", "p_dl_dbm": "p_dl_dbm", "mode_policy": "mode_policy",
            "episode_length": "episode_length", "p_ul_range": "p_ul_dbm_range", "p_dl_range": "p_dl_dbm_range"}
#: setting → its option, where that is not ``--`` + the setting's name with dashes
FLAGS = {"overrides": "--set", "env_config": "--set", "progress": "--no-progress", "p_ul_dbm_range": "--p-ul-range",
         "p_dl_dbm_range": "--p-dl-range"}


def _default(name: str) -> Any:
    """The default of the TrainingConfig field ``name`` (one source for the help and the config)."""
    return next(f.default for f in dataclasses.fields(TrainingConfig) if f.name == name)


def cli_names(field: str, value: Any = NO_VALUE) -> str:
    """How ``train.py`` names a setting in a message: its option, followed by the value as typed."""
    flag = FLAGS.get(field, "--" + field.replace("_", "-"))
    if value is NO_VALUE:
        return flag
    if field == "policy_kwargs" or isinstance(value, dict):
        value = json.dumps(value)
    elif isinstance(value, (list, tuple)):
        value = " ".join(map(str, value))
    return f"{flag} {value}"


def add_options(ap: argparse.ArgumentParser) -> None:
    """``train.py``'s options, in three groups, on ``ap``."""
    m = MAIN_JOB
    env = ap.add_argument_group("scenario")
    env.add_argument("--env-id", default=None, choices=list(ENV_IDS), metavar="ID",
                     help=f"a registered id: its config (default {DEFAULT_ENV_ID}); one of: "
                          f"{', '.join(list(ENV_IDS))}")
    env.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                     help="any config field on top of the id's config; VALUE is JSON where it parses (numbers, "
                          "true/false, lists such as draft_scale_range=[1.0,2.0]), else a string")
    env.add_argument("--num-devices", type=int, help="K (default 20)")
    env.add_argument("--p-ul-dbm", type=float, help="per-device UL budget, dBm (default 15)")
    env.add_argument("--p-dl-dbm", type=float, help="server DL budget, dBm (default 30)")
    env.add_argument("--p-ul-range", type=float, nargs=2, metavar=("LO", "HI"),
                     help="domain randomisation: P_ul ~ U[LO, HI] dBm per episode")
    env.add_argument("--p-dl-range", type=float, nargs=2, metavar=("LO", "HI"),
                     help="domain randomisation: P_dl ~ U[LO, HI] dBm per episode")
    env.add_argument("--mode-policy", choices=MODE_POLICIES, help="reactive policy (default optimal)")
    env.add_argument("--episode-length", type=int, help="rounds per episode (default 100)")
    tr = ap.add_argument_group("training (a default named 'the id's' is agents.defaults' row of the id, else the "
                               "main job's, given here)")
    tr.add_argument("--timesteps", type=int, help=f"PPO environment steps in all (default: the id's, {m['timesteps']}; "
                                                  "with --resume: the original run's)")
    tr.add_argument("--n-envs", type=int, help=f"parallel environments (default: the id's, {m['n_envs']})")
    tr.add_argument("--vec-env", default=_default("vec_env"), choices=VEC_KINDS,
                    help="batched: native batched env in-process (fastest); subproc: SubprocVecEnv (spawn)")
    tr.add_argument("--seed", type=int, default=_default("seed"),
                    help="training seed: PPO's, and the root of its envs' seeds (independent SeedSequence children)")
    tr.add_argument("--learning-rate", type=float,
                    help=f"PPO learning rate (default: the id's, {m['learning_rate']:g})")
    tr.add_argument("--n-steps", type=int, help=f"PPO rollout steps per env (default: the id's, {m['n_steps']})")
    tr.add_argument("--batch-size", type=int, help=f"PPO minibatch (default: the id's, {m['batch_size']})")
    tr.add_argument("--n-epochs", type=int, help=f"PPO epochs over each rollout (default: the id's, {m['n_epochs']})")
    tr.add_argument("--gamma", type=float, help=f"PPO discount (default: the id's, {m['gamma']:g}: contextual bandit)")
    tr.add_argument("--frame-stack", type=int, default=_default("frame_stack"),
                    help="stack the last N observations (SB3 VecFrameStack; default 1 = none)")
    tr.add_argument("--action-prior", type=float,
                    help=f"initial logits −λ·γ (default: the id's, {m['action_prior']:g}; 0 = uniform start)")
    tr.add_argument("--reward", choices=REWARDS,
                    help="what PPO maximises: goodput, the env's per-round N/T; throughput, N − λT per round with λ "
                         "the greedy's throughput on the held-out episodes (aligned with the long-run Σ N / Σ T); "
                         "per-device, N/T divided by the cell's K (the same best lengths, every cell weighted alike); "
                         "counterfactual, the gain in the cell's throughput over the policy's own deterministic "
                         "action played on the same draws (agents.envs.CounterfactualReward). Default: the id's "
                         f"({m['reward']} unless agents.defaults says otherwise)")
    tr.add_argument("--policy", choices=POLICIES,
                    help="mlp: an MLP over the flat observation; set: one network shared by every device with a "
                         "pooled cell summary (agents/setpolicy.py); budget: the same network deciding a drafting-time "
                         "budget per cell and which devices draft (agents/budget.py; the cell generator only). "
                         f"Default: the id's ({m['policy']} unless agents.defaults says otherwise)")
    tr.add_argument("--policy-kwargs", metavar="JSON",
                    help="the policy's keyword arguments as a JSON object, e.g. '{\"hidden\": 32}' or "
                         "'{\"pooling\": \"meanmax\"}' for the set and budget policies (SB3's policy_kwargs)")
    tr.add_argument("--bc-init", metavar="CONTROLLER",
                    help="start PPO from this controller's decisions (behaviour cloning, agents/bc.py), e.g. "
                         "greedy-saa")
    tr.add_argument("--bc-episodes", type=int, default=_default("bc_episodes"),
                    help=f"episodes the --bc-init controller plays (default {_default('bc_episodes')})")
    tr.add_argument("--bc-epochs", type=int, default=_default("bc_epochs"),
                    help=f"behaviour-cloning epochs (default {_default('bc_epochs')}; best held-out kept)")
    tr.add_argument("--torch-threads", type=int, default=_default("torch_threads"),
                    help="torch CPU threads (default 1: fastest for these small nets)")
    ev = ap.add_argument_group("evaluation and output")
    ev.add_argument("--eval-episodes", type=int,
                    help=f"held-out episodes for the final comparison (default {m['eval_episodes']})")
    ev.add_argument("--eval-seed", type=int, default=_default("eval_seed"),
                    help=f"first held-out seed (default {_default('eval_seed')})")
    ev.add_argument("--eval-freq", type=int, help=f"EvalCallback period in env steps (default {m['eval_freq']})")
    ev.add_argument("--checkpoint-freq", type=int,
                    help=f"CheckpointCallback period in env steps (default {m['checkpoint_freq']})")
    ev.add_argument("--checkpoint-minutes", type=float, default=_default("checkpoint_minutes"),
                    help="write the resumable checkpoint every this many minutes of wall-clock time (default "
                         f"{_default('checkpoint_minutes'):g}) or every --checkpoint-steps, whichever comes first: a "
                         "killed run loses at most that")
    ev.add_argument("--checkpoint-steps", type=int, default=_default("checkpoint_steps"),
                    help=f"write the resumable checkpoint every this many environment steps too (default "
                         f"{_default('checkpoint_steps')})")
    ev.add_argument("--resume", metavar="LOG_DIR",
                    help="continue the run saved in LOG_DIR/resume (same settings) up to --timesteps")
    ev.add_argument("--overwrite", action="store_true",
                    help="replace the run already in --log-dir (its agent, checkpoints, logs and comparison are "
                         "removed when this run starts); without it, a folder that holds a run is refused")
    ev.add_argument("--baselines", nargs="+", metavar="NAME",
                    help="the controllers of the held-out comparison, greedy-saa among them (it is the reference); "
                         f"default: {' '.join(BASELINES)}, plus {' '.join(DYNAMIC_BASELINES)} on a single cell with "
                         "the model §11 dynamics (on a cell generator they are left out: at K = 100 one decision of "
                         "bayes-saa took 109 s), plus the id's own (local-search on the Hetero ids)")
    ev.add_argument("--workers", type=int, default=_default("workers"),
                    help=f"processes for the baseline evaluation (default {_default('workers')})")
    ev.add_argument("--log-dir",
                    help="output directory (default runs/ppo-<id without 'msenv/'>[-quick], e.g. "
                         "runs/ppo-MultiSpin-v0)")
    ev.add_argument("--quick", action="store_true",
                    help=f"tiny budget for a smoke run ({', '.join(f'{k}={v}' for k, v in QUICK.items())})")
    ev.add_argument("--no-progress", action="store_true", help="no progress bars")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """``--set`` and the scenario options as config overrides (``--quick``'s episode length among
    them); a field named by both is refused (``ValueError``) rather than one picked."""
    given = parse_overrides(args.set)
    options = {field: getattr(args, dest) for dest, field in SCENARIO.items() if getattr(args, dest) is not None}
    options = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}
    from_quick = args.quick and "episode_length" not in options
    if from_quick:
        options["episode_length"] = QUICK["episode_length"]
    for field, val in options.items():
        if field in given:
            flag = "--quick" if from_quick and field == "episode_length" else cli_names(field)
            raise ValueError(f"{field}={given[field]!r} conflicts with {flag} ({field}={val!r}); give the field once")
    return {**given, **options}


def settings_of(args: argparse.Namespace, ap: argparse.ArgumentParser) -> dict[str, Any]:
    """The TrainingConfig keywords the options give: those typed (an option left at its default is
    not given, so the config's own default applies)."""
    names = {f.name for f in dataclasses.fields(TrainingConfig)}
    out = {name: getattr(args, name) for name in names & set(vars(args))
           if getattr(args, name) is not None and getattr(args, name) != ap.get_default(name)}
    if args.policy_kwargs is not None:
        try:
            out["policy_kwargs"] = json.loads(args.policy_kwargs)
        except ValueError as e:
            ap.error(f"--policy-kwargs {args.policy_kwargs!r} is not JSON ({e})")
    if args.no_progress:
        out["progress"] = False
    if not args.overwrite:
        out.pop("overwrite", None)
    out.pop("resume", None)
    return out


def parse_config(ap: argparse.ArgumentParser, argv: list[str] | None = None) -> TrainingConfig:
    """The TrainingConfig of the command line ``argv`` (``ap``: a parser with :func:`add_options`);
    any refusal is argparse's one-line usage error (exit code 2)."""
    args = ap.parse_args(argv)
    settings = settings_of(args, ap)
    try:
        if args.resume is not None:
            if args.overwrite:
                ap.error("--overwrite replaces the run in a folder and --resume continues it; allowed: one of them")
            if args.set or any(getattr(args, dest) is not None for dest in SCENARIO):
                settings["overrides"] = _overrides(args)  # refused unless the run's own
            try:
                config = resumed(args.resume, **settings)
            except FileNotFoundError as e:
                ap.error(f"--resume {args.resume}: {e}")
        else:
            config = TrainingConfig(**settings, overrides=_overrides(args))
        check_log_dir(config)
    except SettingMessage as e:
        ap.error(e.spelled(cli_names))
    except (ValueError, TypeError) as e:  # the env config's, or --set's own
        ap.error(f"--set: {e}" if args.set else str(e))
    return config


__all__ = ["FLAGS", "RESUME_MUTABLE", "SCENARIO", "add_options", "cli_names", "parse_config", "settings_of"]
