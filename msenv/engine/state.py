"""The environment's state, the layout of its random draws and the step kernels' constants.

Randomness enters the pure dynamics only as arrays of uniforms: each environment draws its
uniforms with one ``Generator.random`` call per reset and per step, so a batch of N environments
with N generators reproduces N single environments exactly. :func:`layout` names the slices of
those uniforms (all U[0, 1)):

- reset: distances K | tasks K | drafting scales K | P_ul 1 | P_dl 1 | fading (2K, or K when
  reciprocal);
- step: outcome K | next-round fading (2K / K; none when ``fading_redraw="episode"``) |
  mode coins K (used by ``mode_policy="random"``; drawn under every policy so that the same seed
  gives the same outcomes and fading whatever the reactive policy — paired comparisons).

The model §11 dynamics append their draws after the paper layout, which stays unchanged: reset —
the complex decision gains take 2 uniforms per complex number and link instead of the fading,
then speeds K, the innovations w₁ (complex, per link), request length K, request α K, chain
state K, and the uniforms of the next :data:`REQUEST_POOL` requests 3·K·POOL (so request j of a
device is the same for every controller); step — w₂ and the next w₁ (complex, per link; they
replace the i.i.d. redraw), the coins K, then chain switch K, new task K, new length K, new α K.
Acceptance from traces (model §12) appends: reset — each device's first request K, where in it the
device starts K, and its next :data:`TRACE_POOL` requests K·POOL; step — a request past that pool
K (the step's outcome uniforms are drawn but unused: the trace is the outcome).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from ..config.groups import ALPHA_DYNAMICS
from ..config.system import SystemConfig
from ..model.acceptance import BELIEF_CODES, grid_belief
from ..model.goodput import round_params
from ..model.slots import StepDraws, StepParams, pack
from .observation import device_features

#: requests per device whose uniforms (task, length, α) are drawn at reset: the j-th request of a
#: device is then the same whatever the controller (paired comparisons); later ones use step draws
REQUEST_POOL = 8
#: the same for a trace bank's requests (model §12): the next requests of each device, drawn at reset
TRACE_POOL = 16


@dataclass(frozen=True)
class State:
    """Per-episode and per-round state of B environments (leading axis B).

    The fields after ``static_obs`` belong to the model §11 dynamics and are None when off.
    """

    distance: np.ndarray  #: m [B, K]
    beta: np.ndarray  #: large-scale gain [B, K]
    task: np.ndarray  #: int [B, K] index into cfg.tasks
    alpha: np.ndarray  #: [B, K] the acceptance rate of the coming round
    t_draft: np.ndarray  #: s per token [B, K]
    p_ul_w: np.ndarray  #: W [B]
    p_dl_w: np.ndarray  #: W [B]
    g_ul: np.ndarray  #: decision-time UL power gain of the coming round [B, K]
    g_dl: np.ndarray  #: decision-time DL power gain [B, K]
    t: np.ndarray  #: rounds played [B]
    #: the observation's per-episode entries (α, speed, β, budgets; gain slots 0), cached at reset
    static_obs: np.ndarray  #: float32 [B, obs_size]
    # --- gauss_markov channel
    h: np.ndarray | None = None  #: complex decision-time gains [B, L, K], links L = (UL, DL) or 1 (reciprocal)
    w: np.ndarray | None = None  #: complex innovations decision → correction, drawn ahead [B, L, K]
    doppler: np.ndarray | None = None  #: f_D in Hz [B, K]
    # --- request / markov acceptance
    alpha_req: np.ndarray | None = None  #: the request's α [B, K]
    remaining: np.ndarray | None = None  #: int tokens left in the request [B, K]
    hard: np.ndarray | None = None  #: bool easy/hard chain state [B, K] (markov)
    req_index: np.ndarray | None = None  #: int index of the device's current request [B, K]
    #: (task, length, the uniform of α) of requests 1..POOL, drawn at reset [B, K, POOL, 3]
    req_pool: np.ndarray | None = None
    # --- hidden α: Beta posterior of the request's α (belief "beta")
    post_a: np.ndarray | None = None
    post_b: np.ndarray | None = None
    #: hidden α, belief "grid": joint probabilities of (request α bin, easy/hard) for the coming
    #: round [B, K, alpha_grid_size, 2] — the forward filter of the chain
    belief: np.ndarray | None = None
    # --- acceptance from traces (model §12)
    #: int [B, K] each device's request (its index in the bank) and position in it
    request: np.ndarray | None = None
    position: np.ndarray | None = None
    #: int [B, K] requests each device has started this episode (1 after the reset)
    started: np.ndarray | None = None
    #: int [B, K, TRACE_POOL] the next requests of each device, drawn at reset
    request_pool: np.ndarray | None = None
    #: int [B, K, H, 3] each device's last rounds in its request, newest first: (γ, accepted,
    #: rejected); rows past ``history_rounds`` are zero
    history: np.ndarray | None = None
    #: int [B, K] rounds of the request the history holds (at most H)
    history_rounds: np.ndarray | None = None
    #: int [B, K, 2] the request's accepted drafted tokens and rejections so far
    accept_counts: np.ndarray | None = None
    #: the observation of this state when the step kernel already wrote it, else None
    obs: np.ndarray | None = None

    def where(self, mask: np.ndarray, other: State) -> State:
        """Rows of ``other`` where ``mask`` [B] is true, else rows of self."""
        out = {}
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a is None or b is None:
                out[f.name] = None
                continue
            m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
            out[f.name] = np.where(m, b, a)
        return State(**out)

    def evolve(self, **changes) -> State:
        """A copy with ``changes`` (``dataclasses.replace`` without its per-call field
        introspection and validation: this is on the step's hot path)."""
        new = object.__new__(State)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new


# ---------------------------------------------------------------------- draw layout
def links(cfg: SystemConfig) -> int:
    """Radio links with their own fading: 2 (UL, DL) or 1 (reciprocal)."""
    return 2 if cfg.channel.fading == "independent" else 1


def fading_draws(cfg: SystemConfig) -> int:
    """Uniforms of one round's i.i.d. fading."""
    return cfg.num_devices * links(cfg)


@functools.lru_cache(maxsize=64)
def layout(cfg: SystemConfig) -> dict[str, dict[str, slice]]:
    """Named slices of the reset and step uniforms (see the module docstring); ``"_size"`` spans
    all of them."""
    k = cfg.num_devices
    gm = cfg.dynamics.channel_dynamics == "gauss_markov"
    dyn_alpha = cfg.dynamics.alpha_dynamics != "fixed"
    cplx = 2 * k * links(cfg)  # complex gains: 2 uniforms per link and device

    def build(parts):
        out, i = {}, 0
        for name, n in parts:
            out[name] = slice(i, i + n)
            i += n
        out["_size"] = slice(0, i)
        return out

    reset = [("distance", k), ("task", k), ("scale", k), ("p_ul", 1), ("p_dl", 1),
             ("fading", cplx if gm else fading_draws(cfg))]
    if gm:
        reset += [("speed", k), ("w", cplx)]
    if dyn_alpha:
        reset += [("length", k), ("alpha", k), ("chain", k), ("pool", 3 * k * REQUEST_POOL)]
    traced = cfg.traces.trace_source is not None
    if traced:  # the first request and where in it each device starts, then the next requests
        reset += [("trace_first", k), ("trace_start", k), ("trace_pool", k * TRACE_POOL)]
    step = [("outcome", k)]
    if gm:
        step += [("w_com", cplx), ("w_next", cplx)]
    elif cfg.channel.fading_redraw == "round":
        step += [("fading", fading_draws(cfg))]
    step += [("coins", k)]
    if dyn_alpha:
        step += [("switch", k), ("task", k), ("length", k), ("alpha", k)]
    if traced:  # a request past the reset's pool
        step += [("trace_next", k)]
    return {"reset": build(reset), "step": build(step)}


def reset_draws(cfg: SystemConfig) -> int:
    """Uniforms one reset takes per environment."""
    return layout(cfg)["reset"]["_size"].stop


def step_draws(cfg: SystemConfig) -> int:
    """Uniforms one step takes per environment."""
    return layout(cfg)["step"]["_size"].stop


# ---------------------------------------------------------------------- the step kernels' constants
@functools.lru_cache(maxsize=64)
def step_offsets(cfg: SystemConfig) -> np.ndarray:
    """Where each part of a step's uniforms starts (:class:`~msenv.model.slots.StepDraws`), int64."""
    lay = layout(cfg)["step"]
    return pack(StepDraws(*(lay[name].start if name in lay else 0 for name in StepDraws._fields)), np.int64)


@functools.lru_cache(maxsize=64)
def step_params(cfg: SystemConfig) -> np.ndarray:
    """The step kernels' constants for ``cfg`` (:class:`~msenv.model.slots.StepParams`)."""
    belief = BELIEF_CODES[cfg.belief]
    return pack(StepParams(
        gamma_cap=cfg.gamma_max + 1.0,
        fading_redraw=cfg.channel.fading_redraw == "round",
        independent_links=cfg.channel.fading == "independent",
        random_policy=cfg.radio.mode_policy == "random",
        device_features=device_features(cfg),
        statistical_csi=cfg.dynamics.csi == "statistical",
        gauss_markov=cfg.dynamics.channel_dynamics == "gauss_markov",
        belief=belief,
        alpha_mode=ALPHA_DYNAMICS.index(cfg.dynamics.alpha_dynamics),
        markov_stay=cfg.dynamics.markov_stay,
        markov_delta=cfg.dynamics.markov_delta,
        filter_stay=grid_belief(cfg)["stay"] if belief == 2 else 1.0,
        request_caps=cfg.dynamics.alpha_dynamics != "fixed",
    ))


@functools.lru_cache(maxsize=64)
def step_constants(cfg: SystemConfig) -> np.ndarray:
    """One block for a step kernel: the round kernel's parameters
    (:func:`msenv.model.goodput.round_params` under the config's policy) followed by
    :func:`step_params` — the kernel splits it at ``len(RoundParams)`` (one argument fewer to
    dispatch on every step)."""
    return np.concatenate([round_params(cfg, cfg.radio.mode_policy), step_params(cfg)])
