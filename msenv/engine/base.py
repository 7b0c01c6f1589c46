"""The engine: built once from a config, it owns everything a config's rounds need.

:func:`msenv.engine.functional.engine_for` reads the config once and returns its engine — one
:class:`Engine` subclass per *kind*, each in a module of its own: the paper scenario's
(:mod:`msenv.engine.kinds.paper`), the model §11 dynamics' (:mod:`msenv.engine.kinds.dynamics`), the traces'
(:mod:`msenv.engine.kinds.traces`). A kind owns its state type, its observation table (device rows of
:class:`~msenv.engine.observation.Feature`), the parts of its random draws, its step, its context
type and its ``info`` keys. This base writes once what every kind shares: the reset of the paper
scenario's part of the state (geometry, tasks, drafting speeds, budgets), the observation from the
table, the ``info`` of a round, the kernels' constants and the padded rows of a cell generator. The
shells call these methods and never ask which kind they hold; adding a kind is adding a module and
a case to ``engine_for``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..config.system import SystemConfig
from ..model import channel
from ..model.acceptance import task_alpha, task_from_uniform
from ..model.goodput import RoundResult, round_params
from ..model.numeric import compile_notice
from ..model.slots import StepParams, pack
from .cells import CellRows, SeparateRows
from .context import ORACLE_MODES, RoundContext
from .observation import GLOBALS, Feature, Observation
from .state import Parts, draw_layout, links, paper_draws


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
#: back-to-back requests: which requests ended
REQUEST_INFO = (InfoKey("request_done", "bool [K]: the device's request ended this round (requests only)"),)
#: a cell generator's rows add the cell's size
CELL_INFO = (InfoKey("num_devices", "int: K, the cell's devices (slots 0 … K − 1)"),)
#: the round's fields each ``info`` copies from its :class:`~msenv.model.goodput.RoundResult`
RESULT_KEYS = tuple(key.name for key in ROUND_INFO[:11])
#: keys of the paper scenario's ``info``
INFO_KEYS = tuple(key.name for key in ROUND_INFO)

_WARM: set[str] = set()


class Engine:
    """The engine of one config (see the module docstring); :func:`engine_for
    <msenv.engine.functional.engine_for>` builds it.

    The functional core, batched over a leading axis B: ``reset(u)`` → the kind's state from the
    reset's uniforms ``u`` [B, reset_draws]; ``step(u, state, gamma)`` → (next state, the round's
    :class:`~msenv.model.goodput.RoundResult`) from the step's uniforms [B, step_draws] and draft
    lengths [B, K]; ``observe(state)`` → float32 [B, obs_size]; ``context(state, index, oracle)``
    → what a controller sees.

    A kind sets :attr:`devices` and :attr:`globals` (its observation table), :attr:`round_rows` (the rows its
    compiled
    step writes) and :attr:`extra_info`, and implements :meth:`start`, :meth:`step`, :meth:`view`
    and :meth:`write_round` (and, when it has more to show a controller, :meth:`_context`)."""

    #: the kind's name
    name: str = ""
    #: the kind's observation table: its device rows and its global rows, in order
    devices: tuple[Feature, ...] = ()
    globals: tuple[Feature, ...] = GLOBALS
    #: its per-round rows, in the order of its compiled driver
    round_rows: tuple[Feature, ...] = ()
    #: the ``info`` keys the kind adds to :data:`ROUND_INFO`
    extra_info: tuple[InfoKey, ...] = ()

    def __init__(self, config: SystemConfig) -> None:
        self.config = config
        #: the observation: its layout, the meaning of each entry and its per-episode part
        self.observation = Observation(config, config.num_devices, self.devices, self.globals, self.round_rows)
        #: the shapes the config fixes
        self.layout = self.observation.layout
        #: named slices of a reset's and a step's uniforms (:func:`~msenv.engine.state.draw_layout`)
        self.draws = draw_layout(*self.draw_parts())
        #: uniforms one reset / one step takes per row
        self.reset_draws = self.draws["reset"]["_size"].stop
        self.step_draws = self.draws["step"]["_size"].stop
        #: the keys of a round's ``info`` and what each holds
        self.info: tuple[InfoKey, ...] = ROUND_INFO + self.extra_info
        #: the names of :attr:`info`
        self.info_keys = tuple(key.name for key in self.info)
        #: the step kernel's constants: the round kernel's (:class:`~msenv.model.slots.RoundParams`),
        #: then the step's (:class:`~msenv.model.slots.StepParams`), then the kind's own
        self.constants = np.concatenate([round_params(config, config.radio.mode_policy), pack(self.step_params()),
                                         self.kind_params()])

    # ------------------------------------------------------------------ what a kind declares
    def draw_parts(self) -> tuple[Parts, Parts]:
        """The parts of a reset's and a step's uniforms: the paper scenario's."""
        reset, step, coins = paper_draws(self.config)
        return reset, step + coins

    def step_params(self) -> StepParams:
        """The constants every step kernel reads."""
        cfg = self.config
        return StepParams(gamma_cap=cfg.gamma_max + 1.0, fading_redraw=cfg.channel.fading_redraw == "round",
                          independent_links=links(cfg) == 2, random_policy=cfg.radio.mode_policy == "random",
                          device_features=self.layout.row)

    def kind_params(self) -> np.ndarray:
        """The kind's own constants after :meth:`step_params` (none)."""
        return np.zeros(0)

    # ------------------------------------------------------------------ the functional core
    def reset(self, u: np.ndarray):
        """New episodes, one per row of the reset uniforms ``u`` [B, reset_draws]: geometry, tasks,
        drafting speeds and budgets here, the rest (fading, the kind's own state) by :meth:`start`."""
        cfg = self.config
        lay = self.draws["reset"]
        distance = channel.distances_from_uniform(u[:, lay["distance"]], cfg)
        task = task_from_uniform(u[:, lay["task"]], len(cfg.acceptance.tasks))
        s_lo, s_hi = cfg.compute.draft_scale_range
        fields = dict(
            distance=distance, beta=channel.large_scale_gain(distance, cfg.ref_gain, cfg.channel.pathloss_exponent),
            task=task, alpha=task_alpha(task, cfg.acceptance.acceptance_rates),
            t_draft=cfg.compute.t_draft_ref_s * (s_lo + (s_hi - s_lo) * u[:, lay["scale"]]),
            p_ul_w=_budget(u[:, lay["p_ul"].start], cfg.radio.p_ul_dbm, cfg.radio.p_ul_dbm_range),
            p_dl_w=_budget(u[:, lay["p_dl"].start], cfg.radio.p_dl_dbm, cfg.radio.p_dl_dbm_range))
        return self.start(u, fields)

    def start(self, u: np.ndarray, fields: dict[str, np.ndarray]):
        """The kind's state of new episodes from the reset uniforms ``u`` and the shared ``fields``
        (distance, beta, task, alpha, t_draft, p_ul_w, p_dl_w)."""
        raise NotImplementedError

    def step(self, u: np.ndarray, state, gamma: np.ndarray) -> tuple[Any, RoundResult]:
        """One round of every row (``gamma`` [B, K] draft lengths, ``u`` [B, step_draws] uniforms)."""
        raise NotImplementedError

    def observe(self, state) -> np.ndarray:
        """The observation [B, obs_size] of ``state``: the one the step wrote, or its per-episode
        entries with the per-round rows written now."""
        if state.obs is not None:
            return state.obs
        out = state.static_obs.copy()
        self.write_round(out, self.view(state))
        return out

    def view(self, state):
        """What the kind's per-round rows read, from ``state``."""
        raise NotImplementedError

    def write_round(self, out: np.ndarray, view) -> None:
        """Write the per-round rows of :attr:`observation` into ``out`` [B, obs_size] (the kind's
        compiled driver)."""
        raise NotImplementedError

    def context(self, state, index: int | None = None, oracle: bool | str = False) -> RoundContext:
        """What a controller sees before the round of row ``index`` (arrays [K]) or of every row
        (``None``): the server's knowledge, or with ``oracle`` the truth
        (:data:`~msenv.engine.context.ORACLE_MODES`)."""
        if oracle not in ORACLE_MODES:
            raise ValueError(f"oracle={oracle!r} is invalid; allowed: {', '.join(map(repr, ORACLE_MODES))}")
        return self._context(state, index, oracle)

    def _context(self, state, index: int | None, oracle: bool | str) -> RoundContext:
        """The paper scenario's context: what the server sees is the truth, so ``oracle`` changes
        nothing."""
        i = slice(None) if index is None else index
        p_ul = state.p_ul_w[i] if index is None else float(state.p_ul_w[i])
        p_dl = state.p_dl_w[i] if index is None else float(state.p_dl_w[i])
        return RoundContext(state.alpha[i], state.t_draft[i], state.g_ul[i], state.g_dl[i], p_ul, p_dl, self.config)

    @staticmethod
    def rows(gamma: np.ndarray) -> np.ndarray:
        """Draft lengths as the compiled kernels take them: int64, C-contiguous."""
        if gamma.dtype != np.int64 or not gamma.flags.c_contiguous:
            gamma = np.ascontiguousarray(gamma, dtype=np.int64)
        return gamma

    # ------------------------------------------------------------------ info
    def row_info(self, res: RoundResult, i: int, ep_tokens: float, ep_time: float) -> dict[str, Any]:
        """The ``info`` of row ``i`` of a round's result (a single env's); ``ep_tokens`` /
        ``ep_time`` are the episode's totals after this round. Written key by key: this is on the
        single env's step, where a loop costs a microsecond."""
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
            "latency": float(res.latency[i]),
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


__all__ = ["CELL_INFO", "Engine", "INFO_KEYS", "InfoKey", "REQUEST_INFO", "RESULT_KEYS", "ROUND_INFO"]
