"""The model §11 dynamics' engine kind: a moving channel, back-to-back requests and the server's α belief.

``channel_dynamics="gauss_markov"`` keeps complex gains h per link; a round decided at t0 sees
h(t0), the correction uses h(t0 + T_cmp(γ)) = ρ₁h + √(1−ρ₁²)w₁ (w₁ drawn one round ahead, so an
oracle controller can know it), and the next decision sees h(t0 + T) = ρ₂h_corr + √(1−ρ₂²)w₂, with
ρ = J0(2π f_D Δt). ``alpha_dynamics="request"|"markov"`` replaces the per-episode α by
back-to-back requests (task, geometric length, α ~ Beta) and an easy/hard chain; tokens past a
request's end are not counted. With ``alpha_observed=False`` the server tracks its belief about α:
the Beta posterior of the request's α (``belief="beta"``), or, with the chain, the forward filter
of (request α on a grid, easy/hard state) — exact Bayes on the grid (``belief="grid"``).

The kind owns its state (:class:`DynamicState`), its context (:class:`DynamicContext`: what a
server can know, or with ``oracle`` the truth), its draws and, in :mod:`msenv.engine.kinds.dynamics_round`,
its observation table and its compiled step. Draws, after the paper scenario's parts: reset — the complex
decision gains take 2 uniforms per complex number and link instead of the fading, then speeds K,
the innovations w₁ (complex, per link), request length K, request α K, chain state K, and the
uniforms of the next :data:`REQUEST_POOL` requests 3·K·POOL (so request j of a device is the same
for every controller); step — w₂ and the next w₁ (complex, per link; they replace the i.i.d.
redraw), the coins K, then chain switch K, new task K, new length K, new α K.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...config.groups import ALPHA_DYNAMICS
from ...config.system import SystemConfig
from ...model import acceptance, channel
from ...model.acceptance import BELIEF_CODES
from ...model.goodput import kernel_outputs, kernel_result
from ...model.slots import COMPLEX_ROW, DYN_FLAG, DYN_REAL, INT_ROW, MOMENT, DynamicParams, StepDraws, pack
from ..base import REQUEST_INFO, Engine, InfoKey
from ..context import RoundContext
from ..state import links, paper_draws
from .dynamics_round import DEVICES, ROUND_ROWS, Inputs, RoundView, Tables, dynamic_rows, write_rows

#: requests per device whose uniforms (task, length, α) are drawn at reset: the j-th request of a
#: device is then the same whatever the controller (paired comparisons); later ones use step draws
REQUEST_POOL = 8
#: what only the oracle context holds when the config hides it (docs/_ext/msenv_docs.py writes each
#: id's "What a server can know" from this and the contexts' fields)
HIDDEN = {
    "alpha": "the true acceptance rate α of each device's request (the context holds the belief's mean)",
    "w_ul": "the uplink channel's innovation between decision and correction (the gains the correction will use)",
    "w_dl": "the downlink channel's innovation between decision and correction (the gains the correction will use)",
}
#: model §11: the truth of the round, for analysis (never in the observation)
DYNAMIC_INFO = (
    InfoKey("alpha", "float [K]: the true α of the round (dynamics only; never in the observation)"),
    InfoKey("g_ul_corr", "float [K]: the UL gain the correction used (dynamics only)"),
    InfoKey("g_dl_corr", "float [K]: the DL gain the correction used (dynamics only)"),
)


class DynamicState(NamedTuple):
    """The model §11 state of B environments (leading axis B); a part the config leaves off is None."""

    distance: np.ndarray  #: m [B, K]
    beta: np.ndarray  #: large-scale gain [B, K]
    task: np.ndarray  #: int [B, K] the current request's task (index into cfg.tasks)
    alpha: np.ndarray  #: [B, K] the true acceptance rate of the coming round
    t_draft: np.ndarray  #: s per token [B, K]
    p_ul_w: np.ndarray  #: W [B]
    p_dl_w: np.ndarray  #: W [B]
    g_ul: np.ndarray  #: decision-time UL power gain of the coming round [B, K]
    g_dl: np.ndarray  #: decision-time DL power gain [B, K]
    t: np.ndarray  #: rounds played [B]
    static_obs: np.ndarray  #: float32 [B, obs_size]: the observation's per-episode entries (speed, β, budgets)
    # --- gauss_markov channel
    h: np.ndarray | None = None  #: complex decision-time gains [B, L, K], links L = (UL, DL) or 1 (reciprocal)
    w: np.ndarray | None = None  #: complex innovations decision → correction, drawn ahead [B, L, K]
    doppler: np.ndarray | None = None  #: f_D in Hz [B, K]
    # --- requests / the easy-hard chain
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
    #: the observation of this state when the step kernel already wrote it, else None
    obs: np.ndarray | None = None


@dataclass(frozen=True)
class DynamicContext(RoundContext):
    """What a controller sees under model §11: ``alpha`` is the belief's mean when α is hidden
    (with ``alpha_a``/``alpha_b`` or the chain's predictive ``alpha_support``/``alpha_weights``),
    the gains are those the CSI mode shows, plus the complex CSI and the Doppler of a Gauss–Markov
    channel (with ``csi="oracle"`` also the innovations ``w_ul``/``w_dl`` that fix the
    correction-time gains for any T_cmp). The oracle context (``oracle=True``) holds the true α
    and those innovations whatever the CSI mode."""

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

    @property
    def gains_move(self) -> bool:
        return self.doppler_hz is not None

    @property
    def knows_correction_gains(self) -> bool:
        """True when the context fixes the correction-time gains for every T_cmp: i.i.d. block
        fading seen exactly, or Gauss–Markov with the innovations (oracle CSI); False under
        statistical CSI (only β shown) and Gauss–Markov decision-time CSI."""
        if not self.oracle and self.config.dynamics.csi == "statistical":
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
        if self.config.channel.fading == "reciprocal":
            return g_ul, g_ul
        return g_ul, channel.power_gain(channel.evolve_gain(self.h_dl, rho, self.w_dl), self.beta)

    def gain_samples(self, t_cmp, w_ul, w_dl):
        """Decision-time CSI of a Gauss–Markov channel: h_corr | h_seen ~ CN(ρ·h_seen, 1 − ρ²),
        ρ = J0(2π f_D T_cmp); statistical CSI: h_corr ~ CN(0, 1) (only β is known)."""
        if self.knows_correction_gains:
            return self.correction_gains(t_cmp)
        reciprocal = self.config.channel.fading == "reciprocal"
        if self.h_ul is not None:
            rho = channel.jakes_correlation(self.doppler_hz, t_cmp)
            h_ul = channel.evolve_gain(self.h_ul, rho, w_ul)
            h_dl = h_ul if reciprocal else channel.evolve_gain(self.h_dl, rho, w_dl)
        else:
            h_ul = w_ul
            h_dl = h_ul if reciprocal else w_dl
        return channel.power_gain(h_ul, self.beta), channel.power_gain(h_dl, self.beta)

    def sample_alpha(self, rng, samples):
        """α per sample [S, K]: a Beta posterior draw (belief "beta"), a draw from the chain's
        predictive (inverse CDF per device, belief "grid"), else the α shown."""
        k = len(self.alpha)
        if self.alpha_a is not None:
            return acceptance.beta_from_uniform(rng.random((samples, k)), self.alpha_a, self.alpha_b)
        if self.alpha_weights is not None:
            cdf = np.cumsum(self.alpha_weights, axis=-1)
            u = rng.random((samples, k)) * cdf[:, -1]
            idx = np.minimum((u[:, :, None] > cdf[None]).sum(axis=-1), cdf.shape[-1] - 1)
            return np.asarray(self.alpha_support)[idx]
        return np.asarray(self.alpha, dtype=float)


#: stand-ins for the state arrays of the §11 parts a config leaves off (the kernel takes arrays)
NO_COMPLEX = np.zeros((3, 1, 1, 1), complex)
NO_FLOATS = np.zeros((1, 1))
NO_INTS = np.zeros((1, 1), np.int64)
NO_BOOLS = np.zeros((1, 1), np.bool_)
NO_POOL = np.zeros((1, 1, 1, 3))
NO_BELIEF = np.zeros((1, 1, 1, 2))
NO_CELLS = np.zeros((1, 2))
_NO_LIK = np.zeros((1, 2, 1, 2))


class DynamicEngine(Engine):
    """The model §11 dynamics (module docstring); its ``info`` adds the round's truth."""

    name = "dynamics"
    devices = DEVICES
    round_rows = ROUND_ROWS

    def __init__(self, config: SystemConfig) -> None:
        super().__init__(config)
        cfg = config
        grid = cfg.belief == "grid"
        g = acceptance.grid_belief(cfg) if grid else {"alpha": NO_CELLS, "likelihoods": _NO_LIK, "prior": NO_BELIEF}
        tasks = np.column_stack([*acceptance.beta_prior(np.asarray(cfg.acceptance.acceptance_rates),
                                                        cfg.dynamics.alpha_concentration),
                                 cfg.dynamics.request_mean_tokens])
        lay = self.draws["step"]
        offsets = pack(StepDraws(*(lay[name].start if name in lay else 0 for name in StepDraws._fields)), np.int64)
        #: the config's constants of the compiled round (:class:`Tables`)
        self.tables = Tables(offsets, self.constants, self.observation.cols, g["alpha"], g["likelihoods"],
                             g["prior"], tasks)

    @property
    def extra_info(self):
        return DYNAMIC_INFO + (REQUEST_INFO if self.config.dynamics.alpha_dynamics != "fixed" else ())

    def draw_parts(self):
        cfg, k = self.config, self.config.num_devices
        gm = cfg.dynamics.channel_dynamics == "gauss_markov"
        cplx = 2 * k * links(cfg)  # complex gains: 2 uniforms per link and device
        reset, step, coins = paper_draws(cfg)
        if gm:  # complex decision gains instead of the fading, and innovations instead of the redraw
            reset = [(name, cplx if name == "fading" else n) for name, n in reset] + [("speed", k), ("w", cplx)]
            step = [("outcome", k), ("w_com", cplx), ("w_next", cplx)]
        if cfg.dynamics.alpha_dynamics != "fixed":
            reset += [("length", k), ("alpha", k), ("chain", k), ("pool", 3 * k * REQUEST_POOL)]
            coins = coins + [("switch", k), ("task", k), ("length", k), ("alpha", k)]
        return reset, step + coins

    def kind_params(self):
        cfg = self.config
        belief = BELIEF_CODES[cfg.belief]
        return pack(DynamicParams(
            statistical_csi=cfg.dynamics.csi == "statistical",
            gauss_markov=cfg.dynamics.channel_dynamics == "gauss_markov",
            belief=belief, alpha_mode=ALPHA_DYNAMICS.index(cfg.dynamics.alpha_dynamics),
            markov_stay=cfg.dynamics.markov_stay, markov_delta=cfg.dynamics.markov_delta,
            filter_stay=acceptance.grid_belief(cfg)["stay"] if belief == 2 else 1.0,
            request_caps=cfg.dynamics.alpha_dynamics != "fixed"))

    def start(self, u, fields):
        """The §11 part of new episodes: the Gauss–Markov channel, the first requests (and their
        pool), the chain's state and the belief's prior."""
        cfg, lay = self.config, self.draws["reset"]
        task, beta, alpha = fields["task"], fields["beta"], fields["alpha"]
        extra: dict[str, np.ndarray] = {}
        if cfg.dynamics.channel_dynamics == "gauss_markov":
            h = channel.complex_links(u[:, lay["fading"]], cfg.num_devices, links(cfg))
            lo, hi = cfg.dynamics.speed_range_mps
            speed = lo + (hi - lo) * u[:, lay["speed"]]
            extra.update(h=h, w=channel.complex_links(u[:, lay["w"]], cfg.num_devices, links(cfg)),
                         doppler=channel.doppler_hz(speed, cfg.dynamics.carrier_hz))
            g = channel.power_gain(h, beta[:, None])
            g_ul, g_dl = g[:, 0], g[:, -1]
        else:
            g_ul, g_dl = channel.fading_from_uniform(u[:, lay["fading"]], beta, cfg)
        n_tasks, means = len(cfg.acceptance.tasks), cfg.dynamics.request_mean_tokens
        if cfg.dynamics.alpha_dynamics != "fixed":
            length = acceptance.request_length(u[:, lay["length"]], task, means)
            a0, b0 = acceptance.beta_prior(acceptance.task_alpha(task, cfg.acceptance.acceptance_rates),
                                           cfg.dynamics.alpha_concentration)
            alpha_req = acceptance.beta_from_uniform(u[:, lay["alpha"]], a0, b0)
            pool_u = u[:, lay["pool"]].reshape(len(u), cfg.num_devices, REQUEST_POOL, 3)
            pool_task = acceptance.task_from_uniform(pool_u[..., 0], n_tasks)
            pool_len = acceptance.request_length(pool_u[..., 1], pool_task, means)
            # α by the step kernel when the request starts (an inverse Beta CDF costs ≈ 1 µs)
            pool = np.stack([pool_task, pool_len, pool_u[..., 2]], axis=-1).astype(float)  # exact: ints < 2^53
            extra.update(alpha_req=alpha_req, remaining=length, req_index=np.zeros_like(length), req_pool=pool)
            if cfg.dynamics.alpha_dynamics == "markov":
                hard = u[:, lay["chain"]] < 0.5  # the chain's stationary law (½, ½)
                extra["hard"] = hard
                alpha = acceptance.markov_alpha(alpha_req, hard, cfg.dynamics.markov_delta)
            else:
                alpha = alpha_req
            if cfg.belief == "beta":
                extra.update(post_a=a0, post_b=b0)
        elif cfg.belief == "beta":
            a0, b0 = acceptance.beta_prior(alpha, cfg.dynamics.alpha_concentration)
            extra.update(post_a=a0, post_b=b0)
        if cfg.belief == "grid":
            extra["belief"] = acceptance.grid_belief(cfg)["prior"][task]
        state = DynamicState(**{**fields, "alpha": alpha}, g_ul=g_ul, g_dl=g_dl, t=np.zeros(len(u), np.int64),
                             static_obs=None, **extra)
        return state._replace(static_obs=self.observation.episode(state))

    def step(self, u, state, gamma):
        """Play one model §11 round (draft lengths ``gamma`` [B, K]); the result's ``info`` holds
        the round's truth (α, correction-time gains, request ends)."""
        s = state
        gamma = self.rows(gamma)
        n, k = gamma.shape
        gm, grid, dyn_alpha = s.h is not None, s.belief is not None, s.alpha_req is not None
        ints, reals, rej, modes, per_round = outs = kernel_outputs(n, k, extra=4)
        flt, flags = np.empty((len(DYN_REAL), n, k)), np.empty((len(DYN_FLAG), n, k), np.bool_)
        hc = np.empty((len(COMPLEX_ROW),) + s.h.shape, complex) if gm else NO_COMPLEX
        belief_next = np.empty_like(s.belief) if grid else NO_BELIEF
        obs = np.empty_like(s.static_obs)
        no_h = NO_COMPLEX[0]
        inputs = Inputs(s.alpha, s.t_draft, s.beta, s.g_ul, s.g_dl, s.p_ul_w, s.p_dl_w,
                        s.h if gm else no_h, s.w if gm else no_h, s.doppler if gm else NO_FLOATS,
                        s.alpha_req if dyn_alpha else NO_FLOATS, s.remaining if dyn_alpha else NO_INTS,
                        s.hard if s.hard is not None else NO_BOOLS, s.task, s.req_index if dyn_alpha else NO_INTS,
                        s.req_pool if dyn_alpha else NO_POOL, s.post_a if s.post_a is not None else NO_FLOATS,
                        s.post_b if s.post_b is not None else NO_FLOATS, s.belief if grid else NO_BELIEF,
                        s.static_obs)
        dynamic_rows(u, gamma, *inputs, *self.tables, *outs, flt, flags, hc, belief_next, obs)
        new = {"g_ul": flt[DYN_REAL.g_ul_next], "g_dl": flt[DYN_REAL.g_dl_next], "alpha": flt[DYN_REAL.alpha_next],
               "t": s.t + 1, "obs": obs}
        if gm:
            new.update(h=hc[COMPLEX_ROW.h_next], w=hc[COMPLEX_ROW.w_next])
        info = {"alpha": s.alpha, "g_ul_corr": flt[DYN_REAL.g_ul_corr], "g_dl_corr": flt[DYN_REAL.g_dl_corr]}
        if dyn_alpha:
            info["request_done"] = flags[DYN_FLAG.request_done]
            new.update(task=ints[INT_ROW.task], alpha_req=flt[DYN_REAL.alpha_request_next],
                       remaining=ints[INT_ROW.tokens_left], req_index=ints[INT_ROW.request_index])
            if s.hard is not None:
                new["hard"] = flags[DYN_FLAG.hard]
        if s.post_a is not None:
            new.update(post_a=flt[DYN_REAL.post_a], post_b=flt[DYN_REAL.post_b])
        elif grid:
            new["belief"] = belief_next
        return s._replace(**new), kernel_result(ints, reals, rej, modes, per_round, info=info)

    def view(self, state):
        cfg = self.config
        mode = BELIEF_CODES[cfg.belief]
        b, k = state.alpha.shape
        moments = np.empty((len(MOMENT), b * k if mode == 2 else 0))
        if mode == 2:
            acceptance.moment_rows(state.belief.reshape(b * k, state.belief.shape[2], 2),
                                   self.tables.cells, moments)
        shown = (state.beta, state.beta) if cfg.dynamics.csi == "statistical" else (state.g_ul, state.g_dl)
        return RoundView(mode, state.alpha, state.post_a if mode == 1 else NO_FLOATS,
                         state.post_b if mode == 1 else NO_FLOATS, moments, *shown,
                         state.doppler if state.doppler is not None else NO_FLOATS)

    def write_round(self, out, view):
        write_rows(out, self.layout.row, self.observation.cols, view)

    def _context(self, state, index, oracle):
        """``oracle=False``: what the server can know; ``True``: the truth (true α, the innovations
        that fix the correction-time gains); ``"alpha"`` / ``"csi"``: the server's view plus only
        that part of the truth."""
        cfg = self.config
        i = slice(None) if index is None else index
        p_ul = state.p_ul_w[i] if index is None else float(state.p_ul_w[i])
        p_dl = state.p_dl_w[i] if index is None else float(state.p_dl_w[i])
        know_alpha, know_csi = oracle in (True, "alpha"), oracle in (True, "csi")
        gm = cfg.dynamics.channel_dynamics == "gauss_markov"
        show_csi = know_csi or cfg.dynamics.csi != "statistical"
        beta = state.beta[i]
        g_ul, g_dl = (state.g_ul[i], state.g_dl[i]) if show_csi else (beta, beta)
        extra = dict(beta=beta, doppler_hz=state.doppler[i] if gm else None)
        if gm and show_csi:
            extra.update(h_ul=state.h[i][..., 0, :], h_dl=state.h[i][..., -1, :])
        if gm and (know_csi or cfg.dynamics.csi == "oracle"):  # the gains the correction will use, for any T_cmp
            extra.update(w_ul=state.w[i][..., 0, :], w_dl=state.w[i][..., -1, :])
        if not know_alpha and cfg.belief == "beta":
            a, b = state.post_a[i], state.post_b[i]
            alpha = a / (a + b)
            extra.update(alpha_a=a, alpha_b=b)
        elif not know_alpha and cfg.belief == "grid":
            cells = self.tables.cells
            bel = state.belief[i]
            alpha = acceptance.filter_moments(bel, cells)[0]
            extra.update(alpha_support=cells.reshape(-1), alpha_weights=bel.reshape(bel.shape[:-2] + (-1,)))
        else:
            alpha = state.alpha[i]
        return DynamicContext(alpha, state.t_draft[i], g_ul, g_dl, p_ul, p_dl, cfg, oracle=know_csi, **extra)


__all__ = ["DYNAMIC_INFO", "DynamicContext", "DynamicEngine", "DynamicState", "REQUEST_POOL"]
