"""The phases of a training run before the comparison: the baselines on the held-out seeds
(:func:`run_baselines`), then PPO — started new, from a cloned controller, or continued from the
resumable checkpoint — until its steps or a stop signal, saved with its record (:func:`train`).
:func:`agents.training.runner.run` runs them in order."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback, EvalCallback

from evaluation.harness import EpisodeStats, evaluate, parse_entry
from evaluation.provenance import TRAINING_FILE, training_record
from evaluation.report import json_bytes, summarize

from ..bc import clone, collect
from ..callbacks import MetricsCallback
from ..checkpoint import (
    GracefulStop,
    RunSafetyCallback,
    StopNow,
    Stopped,
    ThreadIOErrors,
    load_resumable,
    save_resumable,
)
from ..controller import save_agent
from ..envs import attach_reference, normalize, seed_next_reset, stack_frames, training_env, training_seeds
from ..ppo import make_ppo
from ..setpolicy import set_layout
from .config import EVAL_CALLBACK_OFFSET, TrainingConfig


class Run(NamedTuple):
    """Where a run writes and what it resumes from."""

    out: Path  #: the log directory
    resume_dir: Path  #: the resumable checkpoint
    state: dict  #: the checkpoint's saved state ({} for a new run)
    progress: bool  #: progress bars
    t_start: float  #: when the run started (``time.perf_counter``)
    command: str  #: the command line recorded in the agent's ``training.json``


class Baselines(NamedTuple):
    """The baselines' held-out episodes and the reference lines drawn from them."""

    results: list  #: their :class:`~evaluation.harness.EpisodeStats`
    seconds: float  #: the phase's wall time
    refs: dict  #: greedy-saa's and optimal-uniform's goodput and throughput (TensorBoard's lines)


class Trained(NamedTuple):
    """The outcome of the training phase."""

    agent_dir: Path  #: the saved agent (the resumable checkpoint's folder after an I/O error)
    metrics: list  #: the metrics callback's history
    seconds: float  #: the training's wall time
    num_timesteps: int  #: PPO's steps done
    stop_signal: str | None  #: SIGINT / SIGTERM when the run was stopped, else None
    io_error: str | None = None  #: the OSError that stopped training, else None
    resumable: bool = True  #: the resumable checkpoint was written at the stop


def run_baselines(config: TrainingConfig, run: Run) -> Baselines:
    """Phase 1: the baselines on the held-out seeds (kept in the checkpoint: a resumed run reuses
    them) → the reference lines of TensorBoard and the plot. SIGINT/SIGTERM raise
    :class:`agents.checkpoint.Stopped` (the worker processes are ended on the way out)."""
    t0 = time.perf_counter()
    if run.state.get("baselines"):
        results = [EpisodeStats(**r) for r in run.state["baselines"]]
    else:
        with StopNow():
            results = evaluate([parse_entry(n) for n in config.baselines], config.env_config, config.eval_episodes,
                               config.eval_seed, workers=config.workers, progress=run.progress)
    refs = {r["controller"].replace("-", "_"): {"goodput": r["goodput"], "throughput": r["throughput"]}
            for r in summarize(results) if r["controller"] in ("greedy-saa", "optimal-uniform")}
    return Baselines(results, time.perf_counter() - t0, refs)


def _model(config: TrainingConfig, run: Run, raw_venv, params: dict):
    """PPO and its VecNormalize: continued from the resumable checkpoint, or new (from the
    ``bc_init`` controller's decisions when it names one)."""
    cfg, out = config.env_config, run.out
    set_like = config.policy in ("set", "budget")  # reads raw observations (no per-entry statistics)
    if config.resume:
        return load_resumable(run.resume_dir, raw_venv, config.frame_stack, tensorboard_log=str(out / "tb"))
    venv = normalize(raw_venv, config.gamma, norm_obs=not set_like)
    model = make_ppo(stack_frames(venv, config.frame_stack), seed=config.seed, tensorboard_log=str(out / "tb"),
                     action_prior=config.action_prior, policy=config.policy, **params)
    if config.bc_init:
        t0 = time.perf_counter()
        print(f"behaviour cloning: {config.bc_init} plays {config.bc_episodes} demonstration episodes, then "
              f"{config.bc_epochs} epochs of fitting", flush=True)
        try:  # SIGINT/SIGTERM: nothing to save yet; the demonstration workers are ended on the way out
            with StopNow():
                demos = collect(config.bc_init, cfg, config.bc_episodes, workers=config.workers, progress=run.progress)
                fit = clone(model, venv, demos, epochs=config.bc_epochs, seed=config.seed)
                # the cloned policy before any PPO update, compared in the final table
                save_agent(out / "cloned", model, venv, cfg,
                           extra={"bc_init": config.bc_init, "bc_fit": fit, "frame_stack": 1})
        except Stopped as e:
            venv.close()
            e.phase = f"behaviour cloning (--bc-init {config.bc_init})"
            raise
        print(f"behaviour cloning of {config.bc_init}: {fit['samples']} decisions, epoch {fit['epoch']}, "
              f"held-out accuracy per device {fit['val_accuracy']:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return model, venv


def train(config: TrainingConfig, run: Run, base: Baselines) -> Trained:
    """Phase 2: PPO until ``config.timesteps`` or a stop signal; saves the agent (with its
    ``training.json``) and the resumable checkpoint. Its environments take independent
    streams (:func:`agents.envs.training_seeds`; a resumed run fresh children of the same tree)."""
    cfg, out = config.env_config, run.out
    params = config.ppo_kwargs()
    done_steps = int(run.state.get("num_timesteps", 0))
    set_like = config.policy in ("set", "budget")
    lam = base.refs["greedy_saa"]["throughput"] * cfg.reward_scale if config.reward == "throughput" else None
    if set_like:
        params["policy_kwargs"] = {**set_layout(cfg), **params["policy_kwargs"]}
    env_seeds = training_seeds(config.seed, config.n_envs, done_steps)
    raw_venv = training_env(cfg, config.n_envs, env_seeds, config.vec_env, config.policy, config.reward, lam)
    model, venv = _model(config, run, raw_venv, params)
    seed_next_reset(raw_venv, env_seeds)  # building the model seeded the envs with seed + i
    attach_reference(raw_venv, model)  # a counterfactual reward's reference: the policy's own action
    eval_env = stack_frames(normalize(training_env(cfg, 4, config.eval_seed + EVAL_CALLBACK_OFFSET, "batched",
                                                   config.policy, config.reward, lam, evaluation=True),
                                      config.gamma, training=False, norm_obs=not set_like), config.frame_stack)
    metrics = MetricsCallback(base.refs)
    metrics.history = list(run.state.get("metrics", []))
    eval_cb = EvalCallback(eval_env, eval_freq=max(config.eval_freq // config.n_envs, 1), n_eval_episodes=4,
                           log_path=str(out / "eval"), best_model_save_path=str(out / "best"), deterministic=True,
                           verbose=0)
    _restore_eval_history(eval_cb, out / "eval" / "evaluations.npz", done_steps)
    base_dump = [r.__dict__ for r in base.results]

    def checkpoint() -> Path:
        """Write the resumable checkpoint: model, statistics, settings, baselines, metrics."""
        return save_resumable(run.resume_dir, model, venv, {"args": config.to_dict(), "config": cfg.to_dict(),
                                                             "baselines": base_dump, "metrics": metrics.history})

    remaining = config.timesteps - model.num_timesteps
    with GracefulStop() as stop, ThreadIOErrors() as thread_errors:
        safety = RunSafetyCallback(stop, checkpoint, 60.0 * config.checkpoint_minutes,
                                   interval_steps=config.checkpoint_steps)
        callbacks = CallbackList([
            safety, metrics, eval_cb,
            CheckpointCallback(save_freq=max(config.checkpoint_freq // config.n_envs, 1),
                               save_path=str(out / "checkpoints"), name_prefix="ppo", save_vecnormalize=True),
        ])
        print(f"training PPO: steps {model.num_timesteps} → {config.timesteps}, log dir {out}", flush=True)
        t0 = time.perf_counter()
        if remaining > 0:
            try:
                model.learn(remaining, callback=callbacks, progress_bar=run.progress, tb_log_name="ppo",
                            reset_num_timesteps=not config.resume)
            except OSError as e:  # a checkpoint or the logs could not be written (disk full, read-only, …)
                return _stop_on_io_error(e, model, checkpoint, run)
        if thread_errors.errors:  # TensorBoard's writer thread failed after the last log was written
            return _stop_on_io_error(thread_errors.errors[0], model, checkpoint, run)
        seconds = time.perf_counter() - t0
    extra = {"ppo": {**params, "policy": config.policy, "action_prior": config.action_prior},
             "timesteps": int(model.num_timesteps), "frame_stack": config.frame_stack, "reward": config.reward}
    rec = training_record(seed=config.seed, timesteps=int(model.num_timesteps),
                          wall_s=None if config.resume else seconds,  # earlier sessions' time is not kept
                          torch_threads=config.torch_threads, command=run.command, env_id=config.env_id)
    agent_dir = save_agent(out / "agent", model, venv, cfg, extra=extra, files={TRAINING_FILE: json_bytes(rec)})
    checkpoint()
    model.get_env().close()
    return Trained(agent_dir, metrics.history, seconds, int(model.num_timesteps),
                   stop.signal_name if stop.requested else None)


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
    except Exception:  # already stopping on an error
        pass
    return Trained(run.resume_dir, [], 0.0, int(model.num_timesteps), None, io_error=str(e), resumable=saved)


def _restore_eval_history(eval_cb: EvalCallback, npz: Path, done_steps: int) -> None:
    """A resumed run keeps the EvalCallback points logged before the stop."""
    if done_steps == 0 or not npz.exists():
        return
    data = np.load(npz)
    keep = data["timesteps"] <= done_steps
    eval_cb.evaluations_timesteps = [int(t) for t in data["timesteps"][keep]]
    eval_cb.evaluations_results = [list(r) for r in data["results"][keep]]
    eval_cb.evaluations_length = [list(r) for r in data["ep_lengths"][keep]]


__all__ = ["Baselines", "Run", "Trained", "run_baselines", "train"]
