"""The settings of a training run (``train.py``, or :func:`agents.training.run` from Python): one
frozen, validated dataclass, :class:`TrainingConfig`. Each field's meaning is its ``#:`` comment;
a bad value raises :class:`~agents.training.errors.SettingError` (a ``ValueError`` naming the
field, the value and what is allowed), an unknown keyword Python's ``TypeError``."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from baselines import make_controller
from evaluation.entries import check_entries
from evaluation.harness import ControllerFactory, Entry, parse_entry
from evaluation.suites import seed_refusal
from msenv import ENV_IDS, env_config, layout_of
from msenv.config import CellConfig, SystemConfig

from ..defaults import QUICK, default_baselines, gae_lambda_for, id_config, id_settings, ppo_kwargs
from ..envs import REWARDS, VEC_KINDS
from ..ppo import POLICIES, check_policy_kwargs
from .errors import SettingError, SettingTypeError, invalid

#: the env id a run trains on unless told
DEFAULT_ENV_ID = "msenv/MultiSpin-v0"
#: the largest value each count accepts (beyond it a run would not fit this kind of machine)
UPPER = dict(timesteps=10**10, n_envs=1024, eval_episodes=100_000, eval_freq=10**9, checkpoint_freq=10**9,
             checkpoint_steps=10**9, workers=256, torch_threads=256, frame_stack=64, bc_episodes=100_000,
             bc_epochs=10_000)
#: the EvalCallback's four episodes during training start at ``eval_seed`` + this (apart from the held-out ones)
EVAL_CALLBACK_OFFSET = 50_000
#: positive real settings: field → (lowest allowed, whether the lowest itself is excluded, highest)
REALS = dict(learning_rate=(0.0, True, math.inf), gamma=(0.0, False, 1.0), gae_lambda=(0.0, False, 1.0),
             clip_range=(0.0, True, math.inf), ent_coef=(0.0, False, math.inf), vf_coef=(0.0, False, math.inf),
             max_grad_norm=(0.0, True, math.inf), action_prior=(0.0, False, math.inf),
             checkpoint_minutes=(0.0, True, math.inf))


@dataclass(frozen=True)
class TrainingConfig:
    """A training run's settings. A field left ``None`` takes, in this order, :data:`QUICK
    <agents.defaults.QUICK>`'s value on a smoke run (``quick``), the id's row of the one table of
    defaults (:data:`agents.defaults.PER_ID`), the main job's (:data:`agents.defaults.MAIN_JOB`);
    once built, every field holds its value (``env_config`` the env's config)."""

    # ------------------------------------------------------------------ the scenario
    #: the registered id trained on (``msenv.ENV_IDS``) — its env config, and
    #: its row of the defaults table
    env_id: str = DEFAULT_ENV_ID
    #: env config fields set on top of the id's config (any field, e.g. ``{"p_dl_dbm": 20}``) — a
    #: group of fields the id trains on (its row's ``config``) that these touch is left to them
    overrides: Mapping[str, Any] = field(default_factory=dict)
    #: the env config trained on; None gives the id's, with its training fields and ``overrides`` (a
    #: resumed run passes the saved one, and ``overrides`` is then only a record)
    env_config: SystemConfig | CellConfig | None = None
    # ------------------------------------------------------------------ training
    #: PPO's environment steps in all (a resumed run continues to it)
    timesteps: int | None = None
    #: parallel training environments
    n_envs: int | None = None
    #: how they run — "batched" (msenv's native batched env in-process, fastest), "subproc" (SB3's
    #: SubprocVecEnv, spawn) or "dummy" (SB3's DummyVecEnv)
    vec_env: str = "batched"
    #: the training seed — PPO's, and the root of its environments' seeds (independent SeedSequence children)
    seed: int = 0
    #: "mlp" (an MLP over the flat observation), "set" (one network shared by every device with a
    #: pooled cell summary, agents/setpolicy.py) or "budget" (the same network deciding a drafting-time
    #: budget per cell and which devices draft, agents/budget.py; the cell generator only)
    policy: str | None = None
    #: the policy's keyword arguments on top of ``net_arch`` (SB3's ``policy_kwargs``), e.g.
    #: ``{"hidden": 32}`` or ``{"pooling": "meanmax"}`` for the set and budget policies; None: none
    policy_kwargs: Mapping[str, Any] | None = None
    #: what PPO maximises — "goodput" (the env's per-round N/T), "throughput" (N − λT per round, λ the
    #: greedy's throughput on the held-out episodes), "per-device" (N/T over the cell's K) or
    #: "counterfactual" (the gain over the policy's own deterministic action on the same draws)
    reward: str | None = None
    #: λ of the initial logits −λ·γ (0 gives a uniform start)
    action_prior: float | None = None
    #: the policy sees the last this many observations (SB3's VecFrameStack; 1 for none)
    frame_stack: int = 1
    #: PPO's learning rate
    learning_rate: float | None = None
    #: PPO's rollout steps per environment
    n_steps: int | None = None
    #: PPO's minibatch size
    batch_size: int | None = None
    #: PPO's epochs over each rollout
    n_epochs: int | None = None
    #: PPO's discount (0 for the contextual bandit)
    gamma: float | None = None
    #: GAE's λ; None gives 0 when ``gamma`` is 0, else 0.95
    gae_lambda: float | None = None
    #: PPO's clipping range
    clip_range: float | None = None
    #: PPO's entropy coefficient
    ent_coef: float | None = None
    #: PPO's value-loss coefficient
    vf_coef: float | None = None
    #: PPO's gradient-norm clip
    max_grad_norm: float | None = None
    #: the MLP policy's hidden layers (actor and critic alike)
    net_arch: tuple[int, ...] | None = None
    #: start PPO from this controller's decisions (behaviour cloning, agents/bc.py), e.g. "greedy-saa";
    #: None starts from scratch
    bc_init: str | None = None
    #: episodes the ``bc_init`` controller plays
    bc_episodes: int = 300
    #: behaviour-cloning epochs (the best held-out one kept)
    bc_epochs: int = 40
    #: torch's CPU threads (1 is fastest for these small networks)
    torch_threads: int = 1
    # ------------------------------------------------------------------ evaluation
    #: held-out episodes of the final comparison
    eval_episodes: int | None = None
    #: the first held-out seed
    eval_seed: int = 10_000
    #: the EvalCallback's period, environment steps
    eval_freq: int | None = None
    #: the controllers of the held-out comparison, greedy-saa among them (the table is relative to
    #: it); None: :func:`agents.defaults.default_baselines`
    baselines: tuple[str, ...] | None = None
    #: processes for the baselines' episodes and the behaviour-cloning demonstrations
    workers: int = 2
    # ------------------------------------------------------------------ output and run safety
    #: the output folder; None gives ``runs/ppo-<id without "msenv/">[-quick]``
    log_dir: str | None = None
    #: SB3's CheckpointCallback period, environment steps
    checkpoint_freq: int | None = None
    #: the resumable checkpoint is written every this many minutes of wall-clock time …
    checkpoint_minutes: float = 2.0
    #: … or every this many environment steps, whichever comes first
    checkpoint_steps: int = 100_000
    #: progress bars
    progress: bool = True
    #: a smoke run, with :data:`agents.defaults.QUICK`'s settings wherever not given
    quick: bool = False
    #: continue the run saved in ``log_dir``/resume (build with :func:`agents.training.resume.resumed`)
    resume: bool = False
    #: replace the run already in ``log_dir`` (its agent, checkpoints, logs and comparison are removed
    #: when this run starts); without it a new run refuses a folder that holds one
    overwrite: bool = False

    def __post_init__(self) -> None:
        """Fill the fields left None (the table), then check every setting, the env config's first."""
        if self.env_id not in ENV_IDS:
            raise invalid("env_id", self.env_id, f"a registered id: {', '.join(ENV_IDS)}")
        table = {**id_settings(self.env_id), **(QUICK if self.quick else {})}
        for name, value in table.items():
            if name not in FIELDS and name not in QUICK:  # a slip in agents/defaults.py, said rather than dropped
                raise TypeError(f"agents.defaults' settings of {self.env_id} have an unexpected key {name!r}; "
                                f"allowed: the fields of TrainingConfig")
            if name in FIELDS and getattr(self, name) is None:
                self._set(name, value)
        if self.gae_lambda is None and isinstance(self.gamma, (int, float)):
            self._set("gae_lambda", table.get("gae_lambda", gae_lambda_for(self.gamma)))
        for name in ("overrides", "policy_kwargs"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Mapping):
                raise invalid(name, value, "a mapping of keyword arguments (on the command line: a JSON object)")
            frozen = _frozen if name == "overrides" else (lambda v: v)  # the policy's arguments go to it as given
            self._set(name, None if value is None else {k: frozen(v) for k, v in value.items()})
        for name in ("net_arch", "baselines"):
            if isinstance(getattr(self, name), list):
                self._set(name, tuple(getattr(self, name)))
        self._check_values()
        if self.env_config is None:
            given = {**({"episode_length": QUICK["episode_length"]} if self.quick else {}), **self.overrides}
            self._set("env_config", env_config(self.env_id, **{**id_config(self.env_id, given), **given}))
        self._check_with_env()
        if self.baselines is None:
            self._set("baselines", default_baselines(self.env_id, self.env_config))
        if self.log_dir is None:
            self._set("log_dir", default_log_dir(self.env_id, self.quick))

    def _set(self, name: str, value: Any) -> None:
        """Set a field of the frozen dataclass while it is being built."""
        object.__setattr__(self, name, value)

    def _check_values(self) -> None:
        """Each setting on its own, and those that go together without the env."""
        for name, top in UPPER.items():
            _integer(name, getattr(self, name), 1, top, f"an integer in 1 … {top:,}")
        for name in ("n_steps", "batch_size", "n_epochs"):
            _integer(name, getattr(self, name), 1, math.inf, "an integer ≥ 1")
        for name in ("seed", "eval_seed"):
            _integer(name, getattr(self, name), 0, math.inf, "an integer ≥ 0")
        for name, (lo, lo_open, hi) in REALS.items():
            _real(name, getattr(self, name), lo, lo_open, hi)
        for name, choices in (("vec_env", VEC_KINDS), ("policy", POLICIES), ("reward", REWARDS)):
            if getattr(self, name) not in choices:
                raise invalid(name, getattr(self, name), " | ".join(choices))
        if not (isinstance(self.net_arch, tuple) and all(_is_int(n) and n >= 1 for n in self.net_arch)):
            raise invalid("net_arch", self.net_arch, "a tuple of layer widths, each an integer ≥ 1")
        for name in ("progress", "quick", "resume", "overwrite"):
            if not isinstance(getattr(self, name), bool):
                raise invalid(name, getattr(self, name), "True | False")
        if self.resume and self.overwrite:
            raise SettingError(lambda say: f"{say('overwrite')} replaces the run in a folder and {say('resume')} "
                                           "continues it; allowed: one of them")
        held_out = range(self.eval_seed, self.eval_seed + self.eval_episodes)
        during = range(self.eval_seed + EVAL_CALLBACK_OFFSET, self.eval_seed + EVAL_CALLBACK_OFFSET + 4)
        for name, seeds in (("seed", range(self.seed, self.seed + 1)), ("eval_seed", held_out), ("eval_seed", during)):
            if seed_refusal("", getattr(self, name), seeds):
                value = getattr(self, name)
                raise SettingError(lambda say, n=name, v=value, s=seeds: seed_refusal(say(n), v, s))
        if self.bc_init is not None:
            try:
                make_controller(self.bc_init)
            except (TypeError, ValueError) as e:
                raise SettingError(lambda say, e=e: f"{say('bc_init')}: {e}") from None
            if self.frame_stack != 1:
                raise SettingError(lambda say: f"{say('bc_init')} needs {say('frame_stack')} 1 (got "
                                               f"{self.frame_stack})")
            if self.policy == "budget":
                raise SettingError(lambda say: f"{say('bc_init')} needs {say('policy')} mlp or set (a controller's "
                                               "draft lengths are not budget actions)")
        if self.baselines is not None:
            if not (isinstance(self.baselines, tuple) and all(isinstance(b, str) for b in self.baselines)):
                raise invalid("baselines", self.baselines, "a sequence of controller names, greedy-saa among them")
            if "greedy-saa" not in self.baselines:
                raise SettingError(lambda say: f"{say('baselines', self.baselines)}: greedy-saa is missing; the "
                                               "comparison is relative to it")
        if self.reward == "counterfactual" and self.frame_stack != 1:
            raise SettingError(lambda say: f"{say('reward')} counterfactual needs {say('frame_stack')} 1 (got "
                                           f"{self.frame_stack}): its reference is the policy's action on the current "
                                           "observation")

    def _check_with_env(self) -> None:
        """The settings that depend on the env config: every controller and the policy must fit it."""
        if self.bc_init is not None:  # e.g. fixed-<γ> beyond the config's gamma_max
            try:
                check_entries([Entry(self.bc_init, ControllerFactory(self.bc_init))], self.env_config)
            except ValueError as e:
                raise SettingError(lambda say, e=e: f"{say('bc_init')}: {e}") from None
        if self.baselines is not None:  # an unknown name, or a fixed-<γ> beyond gamma_max
            try:
                check_entries([parse_entry(n) for n in self.baselines], self.env_config)
            except (KeyError, ValueError) as e:
                raise SettingError(lambda say, e=e: f"{say('baselines')}: {e.args[0] if e.args else e}") from None
        if self.policy_kwargs is not None:  # a bad or unknown keyword: refused now, not after the baselines' minutes
            try:
                check_policy_kwargs(self.env_config, self.policy, self.ppo_kwargs()["policy_kwargs"])
            except (TypeError, ValueError) as e:
                kind = SettingTypeError if isinstance(e, TypeError) else SettingError
                raise kind(lambda say, e=e: f"{say('policy_kwargs', self.policy_kwargs)}: {e}") from None
        if self.policy == "budget" and not layout_of(self.env_config).masked:
            raise SettingError(lambda say: f"{say('policy')} budget needs the cell generator's env "
                                           f"(msenv/MultiSpin-Cells-v0), not {self.env_id}")

    # ------------------------------------------------------------------ what the run reads
    def ppo_kwargs(self) -> dict[str, Any]:
        """SB3 ``PPO``'s keyword arguments (:func:`agents.defaults.ppo_kwargs` of these settings)."""
        return ppo_kwargs({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain JSON values (every field but ``env_config``: the env config is
        saved as its own ``to_dict()``), as the checkpoint and ``comparison.json`` record them."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "env_config"}
        for name in ("net_arch", "baselines"):
            out[name] = list(out[name])
        out["overrides"] = {k: _listed(v) for k, v in self.overrides.items()}
        return out


#: the names of TrainingConfig's fields
FIELDS = frozenset(f.name for f in dataclasses.fields(TrainingConfig))


def _frozen(v: Any) -> Any:
    """A JSON value with its lists as tuples (a setting read back from its record equals itself)."""
    return tuple(_frozen(x) for x in v) if isinstance(v, (list, tuple)) else v


def _listed(v: Any) -> Any:
    """The inverse of :func:`_frozen`: tuples as lists (JSON's arrays)."""
    return [_listed(x) for x in v] if isinstance(v, tuple) else v


def _is_int(v: Any) -> bool:
    """An integer, not a bool."""
    return isinstance(v, int) and not isinstance(v, bool)


def _integer(name: str, v: Any, lo: float, hi: float, allowed: str) -> None:
    """Refuse ``v`` unless an integer in [lo, hi]."""
    if not (_is_int(v) and lo <= v <= hi):
        raise invalid(name, v, allowed)


def _real(name: str, v: Any, lo: float, lo_open: bool, hi: float) -> None:
    """Refuse ``v`` unless a number from ``lo`` (``lo_open``: excluded) to ``hi``, finite when ``hi`` is not."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and (v > lo if lo_open else v >= lo) and v <= hi
    if hi < math.inf:
        if not ok:
            raise invalid(name, v, f"a number in [{lo:g}, {hi:g}]")
    elif not (ok and math.isfinite(v)):
        raise invalid(name, v, f"a finite number {'>' if lo_open else '≥'} {lo:g}")


def default_log_dir(env_id: str, quick: bool = False) -> str:
    """``runs/ppo-<id without 'msenv/'>[-quick]``: each id has its own folder."""
    return f"runs/ppo-{env_id.split('/')[-1]}" + ("-quick" if quick else "")


__all__ = ["DEFAULT_ENV_ID", "EVAL_CALLBACK_OFFSET", "REALS", "UPPER", "TrainingConfig", "default_log_dir"]
