"""Pure, batched environment dynamics (SPEC §8), in the style of gymnax / Gymnasium FuncEnv.

Randomness enters only as arrays of uniforms, so the dynamics are pure functions::

    state = reset_state(u_reset, cfg)                 # u_reset [B, reset_draws(cfg)]
    state, result = step_state(u_step, state, gamma, cfg)   # u_step [B, step_draws(cfg)]
    obs = observe(state, cfg)                         # float32 [B, obs_size(cfg)]

Each environment draws its uniforms with one ``Generator.random`` call per reset/step, so a
batch of N environments with N generators reproduces N single environments exactly.

Draw layout (all U[0, 1)):
- reset: distances K | tasks K | drafting scales K | P_ul 1 | P_dl 1 | fading (2K, or K when
  reciprocal);
- step: outcome K | next-round fading (2K / K; none when ``fading_redraw="episode"``) |
  mode coins K (used by ``mode_policy="random"``; drawn under every policy so that the same
  seed gives the same outcomes and fading whatever the reactive policy — paired comparisons).

Dynamics (SPEC §11, off in the paper scenario, whose draws and outputs are unchanged):
``channel_dynamics="gauss_markov"`` keeps complex gains h per link; a round decided at t0 sees
h(t0), the correction uses h(t0 + T_cmp(γ)) = ρ₁h + √(1−ρ₁²)w₁ (w₁ drawn one round ahead, so an
oracle controller can know it), and the next decision sees h(t0 + T) = ρ₂h_corr + √(1−ρ₂²)w₂, with
ρ = J0(2π f_D Δt). ``alpha_dynamics="request"|"markov"`` replaces the per-episode α by
back-to-back requests (task, geometric length, α ~ Beta) and an easy/hard chain; tokens past a
request's end are not counted. With ``alpha_observed=False`` the server tracks its belief about α:
the Beta posterior of the request's α (``belief="beta"``), or, with the chain, the forward filter
of (request α on a grid, easy/hard state) — exact Bayes on the grid (``belief="grid"``). Extra draws (appended after the paper layout): reset — speeds K, complex
decision gains and w₁ (2 uniforms per complex number, per link), request length K, request α K,
chain state K, the uniforms of the next ``REQUEST_POOL`` requests 3·K·POOL (so request j of a
device is the same for every controller); step — w₂ and next w₁ (complex, per link; they replace the i.i.d. redraw), then
the coins K, then chain switch K, new task K, new length K, new α K.

Observation layout (float32, every entry in [−1, 1]): ``K`` rows of per-device features,
flattened device-major, then 2 global features. The paper scenario has 5 features per device:

=====  ===========================================================
index  feature
=====  ===========================================================
5k+0   α_k (acceptance rate of device k's task)
5k+1   drafting-speed scale: (T_k^dft/T_dft,ref − lo)/(hi − lo) ∈ [0, 1]
5k+2   tanh((g_k^ul [dB] + 115) / 15)   current UL gain
5k+3   tanh((g_k^dl [dB] + 115) / 15)   current DL gain
5k+4   tanh((β_k [dB] + 115) / 15)      large-scale gain
5K+0   tanh((P_ul [dBm] − 15) / 20)
5K+1   tanh((P_dl [dBm] − 30) / 20)
=====  ===========================================================

Under SPEC §11 the layout keeps these slots, with: slot 0 = the posterior mean of α when
``alpha_observed=False`` (the current α otherwise); slots 2–3 = the decision-time gains
(``csi="oracle"|"decision"``) or β (``"statistical"``, the mean gain); and appends per device
(``device_features(cfg)`` in all) ``2·sd`` of the α belief (hidden α), ``2·P(hard) − 1`` (the
"grid" belief: the filter's probability that the chain is in its hard state) and
``tanh(f_D / 10 Hz)`` (``gauss_markov``). Under the "grid" belief slot 0 is the predictive mean of
the coming round's α (request α and chain state together).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import math

import numpy as np
from numba import njit

from . import acceptance, channel, latency
from ._numeric import ufunc
from .config import SystemConfig
from .goodput import RoundResult, kernel_outputs, kernel_params, kernel_result, round_rows

DEVICE_FEATURES = 5
GLOBAL_FEATURES = 2
GAIN_DB_CENTER, GAIN_DB_SCALE = -115.0, 15.0
P_UL_CENTER, P_DL_CENTER, P_SCALE = 15.0, 30.0, 20.0
DOPPLER_SCALE_HZ = 10.0
#: requests per device whose uniforms (task, length, α) are drawn at reset: the j-th request of a
#: device is then the same whatever the controller (paired comparisons); later ones use step draws
REQUEST_POOL = 8


@dataclass(frozen=True)
class State:
    """Per-episode and per-round state of B environments (leading axis B).

    The fields after ``static_obs`` belong to the SPEC §11 dynamics and are None when off.
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
    #: the observation of this state when the step kernel already wrote it (paper scenario), else None
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


@dataclass(frozen=True)
class RoundContext:
    """What a controller sees before acting (SPEC §7, §11): the upcoming round's inputs.

    Arrays are [K] for one environment (or [B, K] for a batch); ``p_ul_w``/``p_dl_w`` are the
    episode's power budgets (fixed unless the config randomises them). In the paper scenario
    only the first seven fields are set. Under SPEC §11 the *observable* context
    (``env.context``) holds ``alpha`` = the posterior mean when α is hidden (with ``alpha_a``,
    ``alpha_b``), the gains the CSI mode shows, and the complex CSI / Doppler when the channel
    is Gauss–Markov (with ``csi="oracle"`` also the innovations ``w_ul``/``w_dl`` that fix the
    correction-time gains for any T_cmp); the *oracle* context (``env.oracle_context``,
    ``oracle=True``) holds the true α and those innovations whatever the CSI mode.
    """

    alpha: np.ndarray
    t_draft: np.ndarray
    g_ul: np.ndarray
    g_dl: np.ndarray
    p_ul_w: float | np.ndarray
    p_dl_w: float | np.ndarray
    config: SystemConfig
    beta: np.ndarray | None = None
    h_ul: np.ndarray | None = None  #: complex decision-time CSI (gauss_markov, not "statistical")
    h_dl: np.ndarray | None = None
    doppler_hz: np.ndarray | None = None
    alpha_a: np.ndarray | None = None  #: Beta posterior of α (hidden α, belief "beta")
    alpha_b: np.ndarray | None = None
    #: hidden α, belief "grid": the predictive law of the coming round's α — values [M] and
    #: probabilities [K, M] (or [B, K, M]), M = 2·alpha_grid_size
    alpha_support: np.ndarray | None = None
    alpha_weights: np.ndarray | None = None
    w_ul: np.ndarray | None = None  #: oracle CSI only: decision → correction innovations
    w_dl: np.ndarray | None = None
    oracle: bool = False  #: the context knows the correction-time channel (whatever the CSI mode)

    @property
    def gains_move(self) -> bool:
        """True when the correction-time gains differ from the gains shown (Gauss–Markov)."""
        return self.doppler_hz is not None

    @property
    def knows_correction_gains(self) -> bool:
        """True when the context fixes the correction-time gains for every T_cmp: i.i.d. block
        fading seen exactly, or Gauss–Markov with the innovations (oracle CSI); False under
        statistical CSI (only β shown) and Gauss–Markov decision-time CSI."""
        if not self.oracle and self.config.csi == "statistical":
            return False
        return not self.gains_move or self.w_ul is not None

    def correction_gains(self, t_cmp) -> tuple[np.ndarray, np.ndarray]:
        """The gains the correction uses if the round's computation lasts ``t_cmp`` (scalar or
        [C] → [C, K]) when :attr:`knows_correction_gains`; otherwise the gains shown."""
        if not self.gains_move or self.w_ul is None:
            return self.g_ul, self.g_dl
        t = np.asarray(t_cmp, dtype=float)[..., None]
        rho = channel.jakes_correlation(self.doppler_hz, t)
        g_ul = channel.power_gain(channel.evolve_gain(self.h_ul, rho, self.w_ul), self.beta)
        if self.config.fading == "reciprocal":
            return g_ul, g_ul
        return g_ul, channel.power_gain(channel.evolve_gain(self.h_dl, rho, self.w_dl), self.beta)


# ---------------------------------------------------------------------- draw layout
def fading_draws(cfg: SystemConfig) -> int:
    return cfg.num_devices * (2 if cfg.fading == "independent" else 1)


def _links(cfg: SystemConfig) -> int:
    return 2 if cfg.fading == "independent" else 1


@functools.lru_cache(maxsize=64)
def _layout(cfg: SystemConfig) -> dict[str, dict[str, slice]]:
    """Named slices of the reset and step uniforms (see the module docstring)."""
    k = cfg.num_devices
    gm = cfg.channel_dynamics == "gauss_markov"
    dyn_alpha = cfg.alpha_dynamics != "fixed"
    cplx = 2 * k * _links(cfg)  # complex gains: 2 uniforms per link and device

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
    step = [("outcome", k)]
    if gm:
        step += [("w_com", cplx), ("w_next", cplx)]
    elif cfg.fading_redraw == "round":
        step += [("fading", fading_draws(cfg))]
    step += [("coins", k)]
    if dyn_alpha:
        step += [("switch", k), ("task", k), ("length", k), ("alpha", k)]
    return {"reset": build(reset), "step": build(step)}


def reset_draws(cfg: SystemConfig) -> int:
    return _layout(cfg)["reset"]["_size"].stop


def step_draws(cfg: SystemConfig) -> int:
    return _layout(cfg)["step"]["_size"].stop


@functools.lru_cache(maxsize=64)
def device_features(cfg: SystemConfig) -> int:
    """Observation entries per device: 5, plus the α-belief spread (hidden α), P(hard) (the
    "grid" belief) and the Doppler (Gauss–Markov channel)."""
    return (DEVICE_FEATURES + int(cfg.alpha_hidden) + int(cfg.belief == "grid")
            + int(cfg.channel_dynamics == "gauss_markov"))


@functools.lru_cache(maxsize=64)
def _grid(cfg: SystemConfig) -> dict[str, np.ndarray | float]:
    """The "grid" belief's constants: α of each cell [n, 2], the per-task prior [tasks, n, 2]
    (request α ~ Beta, chain state at its stationary law ½, ½) and the chain's stay probability."""
    n = cfg.alpha_grid_size
    markov = cfg.alpha_dynamics == "markov"
    prior = acceptance.grid_prior(np.asarray(cfg.acceptance_rates), cfg.alpha_concentration, n)
    cells = acceptance.grid_alpha(n, cfg.markov_delta if markov else 0.0)
    return {
        "alpha": cells,
        "likelihoods": acceptance.filter_likelihoods(cells, cfg.gamma_max),
        "prior": np.repeat(0.5 * prior[..., None], 2, axis=-1),
        "stay": cfg.markov_stay if markov else 1.0,
    }


def obs_size(cfg: SystemConfig) -> int:
    return device_features(cfg) * cfg.num_devices + GLOBAL_FEATURES


def _budget(u: np.ndarray, fixed_dbm: float, rng_dbm: tuple[float, float] | None) -> np.ndarray:
    if rng_dbm is None:
        dbm = np.full(u.shape, fixed_dbm)
    else:
        dbm = rng_dbm[0] + (rng_dbm[1] - rng_dbm[0]) * u
    return 10.0 ** ((dbm - 30.0) / 10.0)


def _complex_links(u: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    """Complex gains [B, L, K] from 2·K·L uniforms (magnitudes first, then phases; UL before DL;
    L = 1, one shared gain, when reciprocal)."""
    n = cfg.num_devices * _links(cfg)
    h = channel.complex_gain_from_uniform(u[:, :n], u[:, n : 2 * n])
    return h.reshape(len(u), _links(cfg), cfg.num_devices)


def _with(obj, **changes):
    """A copy of a frozen dataclass with ``changes`` (dataclasses.replace without its per-call
    field introspection: this is on the step's hot path)."""
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new


def _task_alpha(task: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    return np.asarray(cfg.acceptance_rates)[task]


def _task_scalar(u, n_tasks):
    return min(int(u * n_tasks), n_tasks - 1)


#: a request's task, uniform over the config's tasks, from one uniform: compiled and numpy ufunc
task_scalar = njit(cache=True)(_task_scalar)
_task_ufunc = ufunc(["i8(f8, i8)"], _task_scalar)


def _task_from_uniform(u: np.ndarray, cfg: SystemConfig) -> np.ndarray:
    return _task_ufunc(u, len(cfg.tasks))


def _request_length(u_len, task, cfg: SystemConfig):
    """A request's length in tokens, geometric with its task's mean."""
    return acceptance.geometric_from_uniform(u_len, np.asarray(cfg.request_mean_tokens)[task])


def _new_request(u_len, u_alpha, task, cfg: SystemConfig):
    """A request's length, α (Beta around the task's mean) and the posterior prior."""
    mean_alpha = _task_alpha(task, cfg)
    a0, b0 = acceptance.beta_prior(mean_alpha, cfg.alpha_concentration)
    return _request_length(u_len, task, cfg), acceptance.beta_from_uniform(u_alpha, a0, b0), a0, b0


def reset_state(u: np.ndarray, cfg: SystemConfig) -> State:
    """Draw a new episode per row of ``u`` [B, reset_draws(cfg)]: geometry, tasks, drafting
    speeds, budgets and the first round's fading (and the SPEC §11 state when configured)."""
    lay = _layout(cfg)["reset"]
    distance = channel.distances_from_uniform(u[:, lay["distance"]], cfg)
    beta = channel.large_scale_gain(distance, cfg.ref_gain, cfg.pathloss_exponent)
    task = _task_from_uniform(u[:, lay["task"]], cfg)
    alpha = _task_alpha(task, cfg)
    s_lo, s_hi = cfg.draft_scale_range
    t_draft = cfg.t_draft_ref_s * (s_lo + (s_hi - s_lo) * u[:, lay["scale"]])
    p_ul = _budget(u[:, lay["p_ul"].start], cfg.p_ul_dbm, cfg.p_ul_dbm_range)
    p_dl = _budget(u[:, lay["p_dl"].start], cfg.p_dl_dbm, cfg.p_dl_dbm_range)
    dyn: dict[str, np.ndarray | None] = {}
    if cfg.channel_dynamics == "gauss_markov":
        h = _complex_links(u[:, lay["fading"]], cfg)
        lo, hi = cfg.speed_range_mps
        speed = lo + (hi - lo) * u[:, lay["speed"]]
        dyn.update(h=h, w=_complex_links(u[:, lay["w"]], cfg), doppler=channel.doppler_hz(speed, cfg.carrier_hz))
        g = channel.power_gain(h, beta[:, None])
        g_ul, g_dl = g[:, 0], g[:, -1]
    else:
        g_ul, g_dl = channel.fading_from_uniform(u[:, lay["fading"]], beta, cfg)
    if cfg.alpha_dynamics != "fixed":
        length, alpha_req, a0, b0 = _new_request(u[:, lay["length"]], u[:, lay["alpha"]], task, cfg)
        pool_u = u[:, lay["pool"]].reshape(len(u), cfg.num_devices, REQUEST_POOL, 3)
        pool_task = _task_from_uniform(pool_u[..., 0], cfg)
        pool_len = _request_length(pool_u[..., 1], pool_task, cfg)
        # α by the step kernel when the request starts (an inverse Beta CDF costs ≈ 1 µs)
        pool = np.stack([pool_task, pool_len, pool_u[..., 2]], axis=-1).astype(float)  # exact: ints < 2^53
        dyn.update(alpha_req=alpha_req, remaining=length, req_index=np.zeros_like(length), req_pool=pool)
        if cfg.alpha_dynamics == "markov":
            hard = u[:, lay["chain"]] < 0.5  # the chain's stationary law (½, ½)
            dyn["hard"] = hard
            alpha = acceptance.markov_alpha(alpha_req, hard, cfg.markov_delta)
        else:
            alpha = alpha_req
        if cfg.belief == "beta":
            dyn.update(post_a=a0, post_b=b0)
    elif cfg.belief == "beta":
        a0, b0 = acceptance.beta_prior(alpha, cfg.alpha_concentration)
        dyn.update(post_a=a0, post_b=b0)
    if cfg.belief == "grid":
        dyn["belief"] = _grid(cfg)["prior"][task]
    static = _static_obs(alpha, t_draft, beta, p_ul, p_dl, cfg)
    return State(distance, beta, task, alpha, t_draft, p_ul, p_dl, g_ul, g_dl, np.zeros(len(u), np.int64),
                 static, **dyn)


def step_state(u: np.ndarray, state: State, gamma: np.ndarray, cfg: SystemConfig) -> tuple[State, RoundResult]:
    """Play one round with draft lengths ``gamma`` [B, K]; returns the next state and the
    round's :class:`~msenv.goodput.RoundResult` (via the shared round kernel). Under SPEC §11 the
    result's ``info`` holds the truth of the round (α, correction-time gains, request ends)."""
    if cfg.is_paper_scenario:
        return _step_paper(u, state, gamma, cfg)
    return _step_dynamic(u, state, gamma, cfg)


@njit(cache=True, error_model="numpy")
def _paper_rows(u, alpha, t_draft, beta, g_ul, g_dl, p_ul, p_dl, gamma, params, static_obs, ints, reals, rejected,
                modes, per_round, obs):
    """The paper scenario's round over rows (compiled): verification outcomes from the step's
    uniforms, the round kernel, the next round's fading and its observation (SPEC §3–§6, §8).
    ``params`` = :func:`_paper_params`; ``ints[3]`` receives F, ``reals[2:4]`` the next round's
    gains, ``obs`` the next observation (``static_obs`` with its gain slots)."""
    n, k = gamma.shape
    cap, redraw, independent, random_policy = int(params[10]), params[11] != 0, params[12] != 0, params[13] != 0
    first_rej, g_ul_next, g_dl_next = ints[3], reals[2], reals[3]
    acceptance.outcome_rows(u, 0, alpha, cap, first_rej)
    # contiguous arguments: the same compiled round kernel as evaluate_round's (one compilation)
    coins = np.ascontiguousarray(u[:, u.shape[1] - k:]) if random_policy else np.zeros((1, 1))
    round_rows(gamma, first_rej, t_draft, g_ul, g_dl, p_ul, p_dl, coins, np.zeros((0, 0), np.int64), False, params,
               ints, reals, rejected, modes, per_round)
    for r in range(n):
        for i in range(k):
            if not redraw:
                g_ul_next[r, i], g_dl_next[r, i] = g_ul[r, i], g_dl[r, i]
            else:
                g_ul_next[r, i], g_dl_next[r, i] = channel.block_fading_scalar(u[r], k, i, k, beta[r, i], independent)
    obs[:] = static_obs
    _gain_slots(obs, g_ul_next, g_dl_next, int(params[14]), params[15] != 0)


@functools.lru_cache(maxsize=64)
def _paper_params(cfg: SystemConfig) -> np.ndarray:
    """:func:`~msenv.goodput.kernel_params`, then γ_max + 1 and the fading / policy flags."""
    flags = [cfg.gamma_max + 1, cfg.fading_redraw == "round", cfg.fading == "independent", cfg.mode_policy == "random",
             device_features(cfg), cfg.csi == "statistical"]
    return np.concatenate([kernel_params(cfg, cfg.mode_policy), np.array(flags, dtype=float)])


def _step_paper(u, state, gamma, cfg):
    n, k = gamma.shape
    ints, reals, rej, modes, per_round = outs = kernel_outputs(n, k, extra=2)
    s = state
    if gamma.dtype != np.int64 or not gamma.flags.c_contiguous:
        gamma = np.ascontiguousarray(gamma, dtype=np.int64)
    obs = np.empty_like(s.static_obs)
    _paper_rows(u, s.alpha, s.t_draft, s.beta, s.g_ul, s.g_dl, s.p_ul_w, s.p_dl_w, gamma, _paper_params(cfg),
                s.static_obs, *outs, obs)
    new = object.__new__(State)  # frozen-dataclass construction without its per-field cost
    new.__dict__.update(s.__dict__)
    new.__dict__.update(g_ul=reals[2], g_dl=reals[3], t=s.t + 1, obs=obs)
    return new, kernel_result(ints, reals, rej, modes, per_round)


@njit(cache=True, error_model="numpy")
def _dynamic_rows(u, lay, alpha, t_draft, beta, g_ul, g_dl, p_ul, p_dl, h, w, doppler, alpha_req, remaining, hard,
                  task, req_index, req_pool, post_a, post_b, belief, static_obs, gamma, params, dyn, cells, likelihoods,
                  prior, task_table, ints, reals, rejected, modes, per_round, flt, flags, hc, belief_next, obs):
    """A SPEC §11 round over rows (compiled), the whole step:

    1. outcomes; with the Gauss–Markov channel the correction-time gains
       h(t0 + T_cmp(γ)) = ρ₁h + √(1 − ρ₁²)w, ρ₁ = J0(2π f_D T_cmp(γ));
    2. the round kernel, tokens capped at the request's end;
    3. the next decision's gains h(t0 + T) = ρ₂h_corr + √(1 − ρ₂²)w₂ (ρ₂ over T_com) and the
       innovations drawn ahead; the belief's update (Beta posterior or the chain filter); the
       requests' progress and the easy/hard chain; a request that ends is followed by the next one
       of the reset pool (past the pool: from the step's draws);
    4. the next observation.

    ``lay`` = step-draw offsets (outcome, w_com, w_next, coins, switch, fading, task, length, α); ``dyn`` =
    :func:`_dynamic_params`' flags. Writes ``ints[3:7]`` = F, tokens left, task, request index,
    ``flt`` = correction-time g_ul, g_dl, next g_ul, g_dl, post a, post b, next α, request α,
    ``flags`` = (request done, hard), ``hc`` = (h_corr, h_next, w_next), ``belief_next``, ``obs``."""
    n, k = gamma.shape
    links = h.shape[1]
    gm, redraw, independent, random_policy = dyn[0] != 0, dyn[1] != 0, dyn[2] != 0, dyn[3] != 0
    belief_mode, alpha_mode, capped = int(dyn[4]), int(dyn[5]), dyn[9] != 0
    cap, nf, statistical = int(params[10]), int(dyn[10]), dyn[11] != 0
    first_rej, left, task_next, index_next = ints[3], ints[4], ints[5], ints[6]
    gc_ul, gc_dl, gn_ul, gn_dl = flt[0], flt[1], flt[2], flt[3]
    pa, pb, alpha_next, req_next = flt[4], flt[5], flt[6], flt[7]
    done, hard_next = flags[0], flags[1]
    h_corr, h_next, w_next = hc[0], hc[1], hc[2]
    acceptance.outcome_rows(u, lay[0], alpha, cap, first_rej)
    if gm:  # T_cmp(γ) of each row (the round kernel computes the same again)
        latency._latency_rows(gamma, t_draft, params[5], params[6], params[7], params[8], params[9] != 0, per_round[0],
                              per_round[1])
    for r in range(n):
        t_cmp = per_round[0, r] + per_round[1, r]
        for i in range(k):
            if gm:
                rho = channel.jakes_scalar(doppler[r, i], t_cmp)
                for li in range(links):
                    h_corr[r, li, i] = channel.evolve_scalar(h[r, li, i], rho, w[r, li, i])
                gc_ul[r, i] = channel.power_gain_scalar(h_corr[r, 0, i], beta[r, i])
                gc_dl[r, i] = channel.power_gain_scalar(h_corr[r, links - 1, i], beta[r, i])
            else:
                gc_ul[r, i], gc_dl[r, i] = g_ul[r, i], g_dl[r, i]
    coins = np.ascontiguousarray(u[:, lay[3]:lay[3] + k]) if random_policy else np.zeros((1, 1))
    caps = remaining if capped else np.zeros((0, 0), np.int64)
    round_rows(gamma, first_rej, t_draft, gc_ul, gc_dl, p_ul, p_dl, coins, caps, capped, params,
               ints, reals, rejected, modes, per_round)
    served, accepted = ints[1], ints[2]
    m = k * links
    for r in range(n):
        for i in range(k):
            if gm:
                rho = channel.jakes_scalar(doppler[r, i], per_round[2, r])
                for li in range(links):
                    j = li * k + i
                    wc = channel.complex_gain_scalar(u[r, lay[1] + j], u[r, lay[1] + m + j])
                    h_next[r, li, i] = channel.evolve_scalar(h_corr[r, li, i], rho, wc)
                    w_next[r, li, i] = channel.complex_gain_scalar(u[r, lay[2] + j], u[r, lay[2] + m + j])
                gn_ul[r, i] = channel.power_gain_scalar(h_next[r, 0, i], beta[r, i])
                gn_dl[r, i] = channel.power_gain_scalar(h_next[r, links - 1, i], beta[r, i])
            elif redraw:
                gn_ul[r, i], gn_dl[r, i] = channel.block_fading_scalar(u[r], lay[5], i, k, beta[r, i], independent)
            else:
                gn_ul[r, i], gn_dl[r, i] = g_ul[r, i], g_dl[r, i]
            if belief_mode == 1:  # Beta posterior: a += accepted, b += rejected
                pa[r, i] = post_a[r, i] + accepted[r, i]
                pb[r, i] = post_b[r, i] + rejected[r, i]
            if alpha_mode > 0:
                left[r, i] = remaining[r, i] - served[r, i]  # tokens generated, counted or not
                done[r, i] = left[r, i] <= 0
            else:
                done[r, i] = False
            if alpha_mode == 2:  # the chain; a new request starts from its stationary law
                u_sw = u[r, lay[4] + i]
                hard_next[r, i] = (u_sw < 0.5) if done[r, i] else (hard[r, i] != (u_sw >= dyn[6]))
                alpha_next[r, i] = acceptance.markov_alpha_scalar(alpha_req[r, i], hard_next[r, i], dyn[7])
            elif alpha_mode == 1:
                alpha_next[r, i] = alpha_req[r, i]
            else:
                alpha_next[r, i] = alpha[r, i]
    if belief_mode == 2:
        g = belief.shape[2]
        acceptance._filter_rows(belief.reshape(n * k, g, 2), accepted.reshape(n * k), rejected.reshape(n * k),
                                likelihoods, dyn[8], belief_next.reshape(n * k, g, 2))
    if alpha_mode > 0:
        pool, n_tasks = req_pool.shape[2], task_table.shape[0]
        for r in range(n):
            for i in range(k):
                task_next[r, i], req_next[r, i], index_next[r, i] = task[r, i], alpha_req[r, i], req_index[r, i]
                if not done[r, i]:
                    continue
                nxt = req_index[r, i] + 1
                index_next[r, i] = nxt
                if nxt <= pool:  # the reset pool's next request
                    t_new, left[r, i], u_alpha = int(req_pool[r, i, nxt - 1, 0]), int(req_pool[r, i, nxt - 1, 1]), \
                        req_pool[r, i, nxt - 1, 2]
                else:  # past the pool: from this step's draws
                    t_new = task_scalar(u[r, lay[6] + i], n_tasks)
                    left[r, i] = acceptance.geometric_from_uniform_scalar(u[r, lay[7] + i], task_table[t_new, 2])
                    u_alpha = u[r, lay[8] + i]
                a_new = acceptance.beta_from_uniform_scalar(u_alpha, task_table[t_new, 0], task_table[t_new, 1])
                task_next[r, i], req_next[r, i] = t_new, a_new
                alpha_next[r, i] = acceptance.markov_alpha_scalar(a_new, hard_next[r, i], dyn[7]) if alpha_mode == 2 \
                    else a_new
                if belief_mode == 1:
                    pa[r, i], pb[r, i] = task_table[t_new, 0], task_table[t_new, 1]
                elif belief_mode == 2:  # a new request: its prior, the chain at its stationary law
                    belief_next[r, i] = prior[t_new]
    obs[:] = static_obs
    _gain_slots(obs, gn_ul, gn_dl, nf, statistical)
    _belief_slots(obs, nf, belief_mode, alpha_next, pa, pb, belief_next, cells, doppler, gm)


@functools.lru_cache(maxsize=64)
def _dynamic_params(cfg: SystemConfig) -> tuple[np.ndarray, ...]:
    """The constant arguments of :func:`_dynamic_rows` for ``cfg``: step-draw offsets, kernel
    params, flags = (Gauss–Markov, fading redraw, independent links, random policy, belief
    0/1/2 = none/Beta/grid, α dynamics 0/1/2 = fixed/request/markov, chain stay, chain δ, filter
    stay, request caps, observation entries per device, statistical CSI), then the grid belief's
    cells, likelihoods and per-task prior, and per task the Beta prior (a, b) of a request's α and
    its mean length."""
    lay = _layout(cfg)["step"]
    offsets = np.array([lay[name].start if name in lay else 0
                        for name in ("outcome", "w_com", "w_next", "coins", "switch", "fading", "task", "length",
                                     "alpha")], dtype=np.int64)
    params = np.concatenate([kernel_params(cfg, cfg.mode_policy), [cfg.gamma_max + 1.0]])
    belief = BELIEF_CODES[cfg.belief]
    dyn = np.array([cfg.channel_dynamics == "gauss_markov", cfg.fading_redraw == "round", cfg.fading == "independent",
                    cfg.mode_policy == "random", belief, ALPHA_MODES.index(cfg.alpha_dynamics), cfg.markov_stay,
                    cfg.markov_delta, _grid(cfg)["stay"] if belief == 2 else 1.0, cfg.alpha_dynamics != "fixed",
                    device_features(cfg), cfg.csi == "statistical"], dtype=float)
    g = _grid(cfg) if belief == 2 else {"alpha": _NONE_CELLS, "likelihoods": _NONE_LIK, "prior": _NONE_BELIEF}
    tasks = np.column_stack([*acceptance.beta_prior(np.asarray(cfg.acceptance_rates), cfg.alpha_concentration),
                             cfg.request_mean_tokens])
    return offsets, params, dyn, g["alpha"], g["likelihoods"], g["prior"], tasks


ALPHA_MODES = ("fixed", "request", "markov")
#: codes of ``cfg.belief`` in the compiled kernels: none (α observed), Beta posterior, chain filter
BELIEF_CODES = {None: 0, "beta": 1, "grid": 2}
_NONE_C = np.zeros((3, 1, 1, 1), complex)
_NONE_I = np.zeros((1, 1), np.int64)
_NONE_B = np.zeros((1, 1), np.bool_)
_NONE_F = np.zeros((1, 1))
_NONE_POOL = np.zeros((1, 1, 1, 3))
_NONE_BELIEF = np.zeros((1, 1, 1, 2))
_NONE_CELLS = np.zeros((1, 2))
_NONE_LIK = np.zeros((1, 2, 1, 2))


def _step_dynamic(u, state, gamma, cfg):
    s = state
    n, k = gamma.shape
    consts = _dynamic_params(cfg)
    gm, grid, dyn_alpha = s.h is not None, s.belief is not None, s.alpha_req is not None
    ints, reals, rej, modes, per_round = outs = kernel_outputs(n, k, extra=4)
    flt, flags = np.empty((8, n, k)), np.empty((2, n, k), np.bool_)
    hc = np.empty((3,) + s.h.shape, complex) if gm else _NONE_C
    belief_next = np.empty_like(s.belief) if grid else _NONE_BELIEF
    obs = np.empty_like(s.static_obs)
    if gamma.dtype != np.int64 or not gamma.flags.c_contiguous:
        gamma = np.ascontiguousarray(gamma, dtype=np.int64)
    _dynamic_rows(u, consts[0], s.alpha, s.t_draft, s.beta, s.g_ul, s.g_dl, s.p_ul_w, s.p_dl_w,
                  s.h if gm else _NONE_C[0], s.w if gm else _NONE_C[0], s.doppler if gm else _NONE_F,
                  s.alpha_req if dyn_alpha else _NONE_F, s.remaining if dyn_alpha else _NONE_I,
                  s.hard if s.hard is not None else _NONE_B, s.task, s.req_index if dyn_alpha else _NONE_I,
                  s.req_pool if dyn_alpha else _NONE_POOL, s.post_a if s.post_a is not None else _NONE_F,
                  s.post_b if s.post_b is not None else _NONE_F, s.belief if grid else _NONE_BELIEF,
                  s.static_obs, gamma, *consts[1:], *outs, flt, flags, hc, belief_next, obs)
    res = kernel_result(ints, reals, rej, modes, per_round)
    new = {"g_ul": flt[2], "g_dl": flt[3], "alpha": flt[6], "t": s.t + 1, "obs": obs}
    if gm:
        new.update(h=hc[1], w=hc[2])
    info = {"alpha": s.alpha, "g_ul_corr": flt[0], "g_dl_corr": flt[1]}
    if dyn_alpha:
        info["request_done"] = flags[0]
        new.update(task=ints[5], alpha_req=flt[7], remaining=ints[4], req_index=ints[6])
        if s.hard is not None:
            new["hard"] = flags[1]
    if s.post_a is not None:
        new.update(post_a=flt[4], post_b=flt[5])
    elif grid:
        new["belief"] = belief_next
    res.__dict__["info"] = info
    return _with(s, **new), res


def _squash(g):
    return math.tanh((10.0 * math.log10(g) - GAIN_DB_CENTER) * (1.0 / GAIN_DB_SCALE))


#: a gain's observation entry tanh((g [dB] + 115) / 15): compiled scalar and numpy ufunc, one source
squash_scalar = njit(cache=True)(_squash)
_squash_db = ufunc(["f8(f8)"], _squash)


@njit(cache=True)
def _gain_slots(out, g_ul, g_dl, nf, statistical):
    """Fill the gain slots 2–3 of every device row of the observation ``out`` (compiled)."""
    b, k = g_ul.shape
    for r in range(b):
        for i in range(k):
            j = nf * i
            if statistical:
                out[r, j + 2] = out[r, j + 3] = out[r, j + 4]
            else:
                out[r, j + 2] = squash_scalar(g_ul[r, i])
                out[r, j + 3] = squash_scalar(g_dl[r, i])


def _static_obs(alpha, t_draft, beta, p_ul_w, p_dl_w, cfg: SystemConfig) -> np.ndarray:
    """The per-episode observation entries (gain slots left at 0)."""
    b, k = alpha.shape
    nf = device_features(cfg)
    s_lo, s_hi = cfg.draft_scale_range
    scale = t_draft / cfg.t_draft_ref_s
    speed = (scale - s_lo) / (s_hi - s_lo) if s_hi > s_lo else np.zeros_like(scale)
    out = np.zeros((b, nf * k + GLOBAL_FEATURES), dtype=np.float32)
    dev = out[:, : nf * k].reshape(b, k, nf)
    dev[:, :, 0] = alpha
    dev[:, :, 1] = speed
    dev[:, :, 4] = _squash_db(beta)
    p_dbm = 10.0 * np.log10(np.stack([p_ul_w, p_dl_w], axis=-1)) + 30.0
    out[:, -2:] = np.tanh((p_dbm - (P_UL_CENTER, P_DL_CENTER)) * (1.0 / P_SCALE))
    return out


def observe(state: State, cfg: SystemConfig) -> np.ndarray:
    """Normalised observation [B, obs_size(cfg)] (layout in the module docstring): the cached
    per-episode entries plus this round's entries."""
    if state.obs is not None:
        return state.obs
    out = state.static_obs.copy()
    nf = device_features(cfg)
    _gain_slots(out, state.g_ul, state.g_dl, nf, cfg.csi == "statistical")
    if cfg.is_paper_scenario:
        return out
    grid, gm = cfg.belief == "grid", cfg.channel_dynamics == "gauss_markov"
    _belief_slots(out, nf, BELIEF_CODES[cfg.belief], state.alpha,
                  state.post_a if cfg.belief == "beta" else _NONE_F, state.post_b if cfg.belief == "beta" else _NONE_F,
                  state.belief if grid else _NONE_BELIEF, _grid(cfg)["alpha"] if grid else _NONE_CELLS,
                  state.doppler if gm else _NONE_F, gm)
    return out


@njit(cache=True, error_model="numpy")
def _belief_slots(out, nf, mode, alpha, post_a, post_b, belief, cells, doppler, gm):
    """The SPEC §11 observation entries of every device row (compiled): slot 0 = the belief's mean
    α (or α itself when observed), then 2·sd of the belief, 2·P(hard) − 1 (grid belief) and
    tanh(f_D / 10 Hz) (Gauss–Markov)."""
    b, k = alpha.shape
    moments = np.empty((3, b * k))
    if mode == 2:
        acceptance._moment_rows(belief.reshape(b * k, belief.shape[2], 2), cells, moments)
    for r in range(b):
        for i in range(k):
            j, col = nf * i, nf * i + DEVICE_FEATURES
            if mode == 1:
                a, bb = post_a[r, i], post_b[r, i]
                n = a + bb
                out[r, j] = a / n
                out[r, col] = min(2.0 * math.sqrt(a * bb / (n * n * (n + 1.0))), 1.0)
                col += 1
            elif mode == 2:
                d = r * k + i
                out[r, j] = moments[0, d]
                out[r, col] = min(2.0 * moments[1, d], 1.0)
                out[r, col + 1] = 2.0 * moments[2, d] - 1.0
                col += 2
            else:
                out[r, j] = alpha[r, i]
            if gm:
                out[r, col] = math.tanh(doppler[r, i] * (1.0 / DOPPLER_SCALE_HZ))


#: what a context may know beyond the server's observations: nothing (False), everything (True),
#: only the true α ("alpha"), or only the correction-time channel ("csi") — the last two split the
#: value of exact information into its parts
ORACLE_MODES = (False, True, "alpha", "csi")


def context(state: State, cfg: SystemConfig, index: int | None = None, oracle: bool | str = False) -> RoundContext:
    """The round context of row ``index`` (arrays [K]) or of the whole batch (``None``).

    ``oracle=False``: what the server can know (SPEC §11); ``True``: the truth (true α, the
    innovations that fix the correction-time gains); ``"alpha"`` / ``"csi"``: the server's view
    plus only that part of the truth. All equal in the paper scenario.
    """
    if oracle not in ORACLE_MODES:
        raise ValueError(f"oracle={oracle!r} is invalid; allowed: {', '.join(map(repr, ORACLE_MODES))}")
    i = slice(None) if index is None else index
    p_ul = state.p_ul_w[i] if index is None else float(state.p_ul_w[i])
    p_dl = state.p_dl_w[i] if index is None else float(state.p_dl_w[i])
    if cfg.is_paper_scenario:
        return RoundContext(state.alpha[i], state.t_draft[i], state.g_ul[i], state.g_dl[i], p_ul, p_dl, cfg)
    know_alpha, know_csi = oracle in (True, "alpha"), oracle in (True, "csi")
    gm = cfg.channel_dynamics == "gauss_markov"
    show_csi = know_csi or cfg.csi != "statistical"
    beta = state.beta[i]
    g_ul, g_dl = (state.g_ul[i], state.g_dl[i]) if show_csi else (beta, beta)
    extra = dict(beta=beta, doppler_hz=state.doppler[i] if gm else None)
    if gm and show_csi:
        extra.update(h_ul=state.h[i][..., 0, :], h_dl=state.h[i][..., -1, :])
    if gm and (know_csi or cfg.csi == "oracle"):  # the gains the correction will use, for any T_cmp
        extra.update(w_ul=state.w[i][..., 0, :], w_dl=state.w[i][..., -1, :])
    if not know_alpha and cfg.belief == "beta":
        a, b = state.post_a[i], state.post_b[i]
        alpha = a / (a + b)
        extra.update(alpha_a=a, alpha_b=b)
    elif not know_alpha and cfg.belief == "grid":
        cells = _grid(cfg)["alpha"]
        bel = state.belief[i]
        alpha = acceptance.filter_moments(bel, cells)[0]
        extra.update(alpha_support=cells.reshape(-1), alpha_weights=bel.reshape(bel.shape[:-2] + (-1,)))
    else:
        alpha = state.alpha[i]
    return RoundContext(alpha, state.t_draft[i], g_ul, g_dl, p_ul, p_dl, cfg, oracle=know_csi, **extra)


def validate_action(action, cfg: SystemConfig, batch: int | None = None) -> np.ndarray:
    """Check draft lengths: shape (K,) (or (B, K)), integer values in [0, γ_max].

    Raises ValueError naming the device (and env row) and what is allowed.
    """
    k, gmax = cfg.num_devices, cfg.gamma_max
    shape = (k,) if batch is None else (batch, k)
    a = action if isinstance(action, np.ndarray) else np.asarray(action)
    if a.shape != shape:
        raise ValueError(f"action shape {a.shape} is invalid; expected {shape}: one draft length per device")
    kind = a.dtype.kind
    if kind in "iu":
        if a.size and _out_of_range(a.reshape(-1), gmax):
            bad = np.argwhere((a < 0) | (a > gmax))[0]
            raise ValueError(
                f"action for device {_where(bad, batch)} is {a[tuple(bad)]!r}; allowed: integers in [0, {gmax}]"
            )
        return a
    if kind == "f":
        bad_mask = ~np.isfinite(a) | (a != np.round(a)) | (a < 0) | (a > gmax)
        if bad_mask.any():
            bad = np.argwhere(bad_mask)[0]
            raise ValueError(
                f"action for device {_where(bad, batch)} is {a[tuple(bad)]!r}; allowed: integers in [0, {gmax}]"
            )
        return a.astype(np.int64)
    raise ValueError(f"action dtype {a.dtype} is invalid; allowed: integer draft lengths in [0, {gmax}]")


@njit(cache=True)
def _out_of_range(a, gmax):
    """True if an integer draft length lies outside [0, γ_max] (one compiled pass)."""
    for x in a:
        if x < 0 or x > gmax:
            return True
    return False


def _where(idx: np.ndarray, batch: int | None) -> str:
    return str(int(idx[0])) if batch is None else f"{int(idx[1])} of env {int(idx[0])}"
