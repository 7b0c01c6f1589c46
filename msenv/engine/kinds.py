"""The engine: built once from a config, it owns everything a config's rounds need.

:func:`msenv.engine.functional.engine_for` reads the config once and returns its engine — the paper
scenario's (:class:`PaperEngine`), the model §11 dynamics' (:class:`DynamicEngine`) or the traces'
(:class:`msenv.engine.traces.TraceEngine`) — built once per config and cached. An engine owns the
:class:`~msenv.engine.observation.Layout` (spaces, observation width and the meaning of each entry),
reset, step, observation, the controllers' context, the ``info`` of a round (its keys and their
meanings in one list, :attr:`Engine.info`) and the rows of a cell
generator (:meth:`Engine.cells`). The shells call these methods and never ask which kind they hold;
adding a kind is adding a class (here or in a module of its own) and a case to ``engine_for``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..config.system import SystemConfig
from ..model import channel
from ..model._numeric import compile_notice
from ..model.goodput import RoundResult
from . import dynamics
from .cells import CellRows, PaddedPaperRows, SeparateRows
from .context import ORACLE_MODES, RoundContext, dynamic_context, paper_context
from .observation import Layout, device_feature_names, global_feature_names, observe_dynamic, observe_paper, static_obs
from .paper import step_paper
from .state import State, reset_draws, step_draws
from .state import layout as draw_layout


class InfoKey(NamedTuple):
    """One key of a round's ``info`` and what it holds (arrays [K] are per device)."""

    name: str
    doc: str


#: the keys of every round's ``info``, with what each holds
ROUND_INFO = (
    InfoKey("tokens", "int [K]: tokens each device gained this round, N_k = A_k + 1 (capped at a request's end)"),
    InfoKey("accepted", "int [K]: drafted tokens the target model accepted, A_k"),
    InfoKey("rejected", "bool [K]: the device's draft had a rejection (it needed a correction)"),
    InfoKey("modes", "int8 [K]: how the correction crossed the link: 0 none, 1 UL, 2 DL"),
    InfoKey("dl_power", "float [K]: DL power given to the device, W (0 unless DL)"),
    InfoKey("ul_delay", "float [K]: the device's UL transfer time, s (0 unless rejected)"),
    InfoKey("t_draft", "float: drafting time max_k γ_k T_k^dft, s"),
    InfoKey("t_verify", "float: the verification pass, s"),
    InfoKey("t_com", "float: the correction exchange T_com, s"),
    InfoKey("latency", "float: the round's time T = t_draft + t_verify + t_com, s"),
    InfoKey("goodput", "float: the round's goodput Σ_k N_k / T, tokens/s (the reward before reward_scale)"),
    InfoKey("episode_tokens", "float: tokens so far in the episode"),
    InfoKey("episode_time", "float: time so far in the episode, s"),
    InfoKey("episode_throughput", "float: episode_tokens / episode_time, tokens/s (the long-run throughput)"),
)
#: model §11: the truth of the round, for analysis (never in the observation)
DYNAMIC_INFO = (
    InfoKey("alpha", "float [K]: the true α of the round (dynamics only; never in the observation)"),
    InfoKey("g_ul_corr", "float [K]: the UL gain the correction used (dynamics only)"),
    InfoKey("g_dl_corr", "float [K]: the DL gain the correction used (dynamics only)"),
)
#: back-to-back requests: which requests ended
REQUEST_INFO = (InfoKey("request_done", "bool [K]: the device's request ended this round (requests only)"),)
#: a cell generator's rows add the cell's size
CELL_INFO = (InfoKey("num_devices", "int: K, the cell's devices (slots 0 … K − 1)"),)
#: the round's fields each ``info`` copies from its :class:`~msenv.model.goodput.RoundResult`
RESULT_KEYS = tuple(key.name for key in ROUND_INFO[:11])

#: keys of the paper scenario's ``info`` (0.5's name)
INFO_KEYS = tuple(key.name for key in ROUND_INFO)
#: what every ``info`` key of every engine holds
INFO_DOCS = {key.name: key.doc for key in ROUND_INFO + DYNAMIC_INFO + REQUEST_INFO + CELL_INFO}

_WARM: set[str] = set()


class Engine:
    """The engine of one config (see the module docstring); :func:`engine_for` builds it.

    The functional core, batched over a leading axis B: ``reset(u)`` → :class:`State` from the
    reset's uniforms ``u`` [B, reset_draws]; ``step(u, state, gamma)`` → (next state, the round's
    :class:`~msenv.model.goodput.RoundResult`) from the step's uniforms [B, step_draws] and draft
    lengths [B, K]; ``observe(state)`` → float32 [B, obs_size]; ``context(state, index, oracle)``
    → what a controller sees."""

    #: the kind's name
    name: str = ""

    def __init__(self, config: SystemConfig) -> None:
        self.config = config
        #: the shapes the config fixes
        self.layout = Layout(config.num_devices, device_feature_names(config), global_feature_names(config),
                             config.gamma_max)
        #: uniforms one reset / one step takes per row
        self.reset_draws, self.step_draws = reset_draws(config), step_draws(config)
        #: the keys of a round's ``info`` and what each holds
        self.info: tuple[InfoKey, ...] = ROUND_INFO + self._extra_info()
        #: the names of :attr:`info`
        self.info_keys = tuple(key.name for key in self.info)

    def _extra_info(self) -> tuple[InfoKey, ...]:
        return ()

    # ------------------------------------------------------------------ the functional core
    def reset(self, u: np.ndarray) -> State:
        """New episodes, one per row of the reset uniforms ``u`` [B, reset_draws]: geometry, tasks,
        drafting speeds, budgets and the first round's fading (and the model §11 state when
        configured)."""
        cfg = self.config
        lay = draw_layout(cfg)["reset"]
        distance = channel.distances_from_uniform(u[:, lay["distance"]], cfg)
        beta = channel.large_scale_gain(distance, cfg.ref_gain, cfg.channel.pathloss_exponent)
        task = dynamics.task_from_uniform(u[:, lay["task"]], cfg)
        alpha = dynamics.task_alpha(task, cfg)
        s_lo, s_hi = cfg.compute.draft_scale_range
        t_draft = cfg.compute.t_draft_ref_s * (s_lo + (s_hi - s_lo) * u[:, lay["scale"]])
        p_ul = _budget(u[:, lay["p_ul"].start], cfg.radio.p_ul_dbm, cfg.radio.p_ul_dbm_range)
        p_dl = _budget(u[:, lay["p_dl"].start], cfg.radio.p_dl_dbm, cfg.radio.p_dl_dbm_range)
        alpha, g_ul, g_dl, extra = dynamics.reset_fields(u, lay, task, alpha, beta, cfg)
        if g_ul is None:
            g_ul, g_dl = channel.fading_from_uniform(u[:, lay["fading"]], beta, cfg)
        obs = static_obs(alpha, t_draft, beta, p_ul, p_dl, cfg)
        return State(distance, beta, task, alpha, t_draft, p_ul, p_dl, g_ul, g_dl, np.zeros(len(u), np.int64), obs,
                     **extra)

    def step(self, u: np.ndarray, state: State, gamma: np.ndarray) -> tuple[State, RoundResult]:
        """One round of every row (``gamma`` [B, K] draft lengths, ``u`` [B, step_draws] uniforms)."""
        raise NotImplementedError

    def observe(self, state: State) -> np.ndarray:
        """The observation [B, obs_size] of ``state``."""
        raise NotImplementedError

    def context(self, state: State, index: int | None = None, oracle: bool | str = False) -> RoundContext:
        """What a controller sees before the round of row ``index`` (arrays [K]) or of every row
        (``None``): the server's knowledge, or with ``oracle`` the truth
        (:data:`~msenv.engine.context.ORACLE_MODES`)."""
        if oracle not in ORACLE_MODES:
            raise ValueError(f"oracle={oracle!r} is invalid; allowed: {', '.join(map(repr, ORACLE_MODES))}")
        return self._context(state, index, oracle)

    def _context(self, state: State, index: int | None, oracle: bool | str) -> RoundContext:
        raise NotImplementedError

    # ------------------------------------------------------------------ info
    def row_info(self, res: RoundResult, i: int, ep_tokens: float, ep_time: float) -> dict[str, Any]:
        """The ``info`` of row ``i`` of a round's result (a single env's); ``ep_tokens`` /
        ``ep_time`` are the episode's totals before this round (the dict holds them after it).
        Written key by key: this is on the single env's step, where a loop costs a microsecond."""
        latency = float(res.latency[i])
        ep_tokens += float(res.total_tokens[i])
        ep_time += latency
        out = {
            "tokens": res.tokens[i],
            "accepted": res.accepted[i],
            "rejected": res.rejected[i],
            "modes": res.modes[i],
            "dl_power": res.dl_power[i],
            "ul_delay": res.ul_delay[i],
            "t_draft": float(res.t_draft[i]),
            "t_verify": float(res.t_verify[i]),
            "t_com": float(res.t_com[i]),
            "latency": latency,
            "goodput": float(res.goodput[i]),
            "episode_tokens": ep_tokens,
            "episode_time": ep_time,
            "episode_throughput": ep_tokens / ep_time,
        }
        if res.info:
            for key, val in res.info.items():
                out[key] = val[i]
        return out

    def batch_info(self, res: RoundResult, live: np.ndarray, tokens: np.ndarray, time: np.ndarray) -> dict[str, Any]:
        """The ``info`` of a vector env's round: every key of :attr:`info_keys` as an array over the
        rows, zero in the rows that did not play (``live`` false), each with Gymnasium's ``_key``
        mask; ``tokens`` / ``time`` are the episodes' totals after the round."""
        info: dict[str, Any] = {key: getattr(res, key) for key in RESULT_KEYS}
        if res.info:
            info.update(res.info)
        info["episode_tokens"] = np.where(live, tokens, 0.0)
        info["episode_time"] = np.where(live, time, 0.0)
        info["episode_throughput"] = np.where(live, tokens / np.where(live, time, 1.0), 0.0)
        all_live = bool(live.all())
        for key in self.info_keys:
            if key not in info:
                continue
            if not all_live:
                val = info[key]
                m = live.reshape(live.shape + (1,) * (val.ndim - 1))
                info[key] = np.where(m, val, np.zeros_like(val))
            info[f"_{key}"] = live.copy()
        return info

    # ------------------------------------------------------------------ cells
    def cells(self, rows: int, slots: int) -> CellRows:
        """Rows of cells of this engine's model (each its own K ≤ ``slots``), padded to ``slots``
        device slots (:mod:`msenv.engine.cells`): each row's round is the single-cell round of its
        cell, bit for bit."""
        return SeparateRows(rows, slots, self.layout)

    # ------------------------------------------------------------------ compiling
    def warm_up(self) -> None:
        """Compile (or load from numba's cache) this kind's kernels once per process, with a
        one-line notice on stderr when that takes long (the first use on a machine); draws nothing
        from any environment's generator."""
        if self.name in _WARM:
            return
        with compile_notice("the kernels of the environment's step"):
            state = self.reset(np.full((1, self.reset_draws), 0.5))
            self.observe(state)
            self.context(state, 0)
            self.step(np.full((1, self.step_draws), 0.5), state, np.zeros((1, self.config.num_devices), np.int64))
        _WARM.add(self.name)

    def __repr__(self) -> str:
        return f"<msenv engine {self.name!r} for K = {self.config.num_devices}>"


def _budget(u: np.ndarray, fixed_dbm: float, rng_dbm: tuple[float, float] | None) -> np.ndarray:
    """Power budgets in W: ``fixed_dbm``, or uniform over ``rng_dbm`` (dBm) by ``u``."""
    if rng_dbm is None:
        dbm = np.full(u.shape, fixed_dbm)
    else:
        dbm = rng_dbm[0] + (rng_dbm[1] - rng_dbm[0]) * u
    return 10.0 ** ((dbm - 30.0) / 10.0)


def _rows(gamma: np.ndarray) -> np.ndarray:
    """Draft lengths as the compiled kernels take them: int64, C-contiguous."""
    if gamma.dtype != np.int64 or not gamma.flags.c_contiguous:
        gamma = np.ascontiguousarray(gamma, dtype=np.int64)
    return gamma


class PaperEngine(Engine):
    """The paper's assumptions: i.i.d. block fading seen exactly, each device's α fixed and known
    (the step: :func:`msenv.engine.paper.step_paper`; cells of different sizes in one compiled,
    padded batch)."""

    name = "paper"

    def step(self, u, state, gamma):
        return step_paper(u, state, _rows(gamma), self.config)

    def observe(self, state):
        return observe_paper(state, self.config)

    def _context(self, state, index, oracle):
        return paper_context(state, self.config, index)

    def cells(self, rows, slots):
        return PaddedPaperRows(rows, slots, self.layout)


class DynamicEngine(Engine):
    """The model §11 dynamics: Gauss–Markov channels, requests, the easy/hard chain, hidden α (the
    step: :func:`msenv.engine.dynamics.step`); its ``info`` adds the round's truth."""

    name = "dynamics"

    def _extra_info(self):
        return DYNAMIC_INFO + (REQUEST_INFO if self.config.dynamics.alpha_dynamics != "fixed" else ())

    def step(self, u, state, gamma):
        return dynamics.step(u, state, _rows(gamma), self.config)

    def observe(self, state):
        return observe_dynamic(state, self.config)

    def _context(self, state, index, oracle):
        return dynamic_context(state, self.config, index, oracle)


__all__ = ["CELL_INFO", "DYNAMIC_INFO", "DynamicEngine", "Engine", "INFO_DOCS", "INFO_KEYS", "InfoKey", "PaperEngine",
           "REQUEST_INFO", "RESULT_KEYS", "ROUND_INFO"]
