"""Which engine plays a config: the paper scenario's or the model §11 dynamics'.

:func:`engine_of` decides it, once per config, and returns an :class:`Engine`: what it is
(``dynamic``), what it can do (``pads_cells``: cells of different sizes in one padded batch) and
what its ``info`` holds. No other code reads the config for it; :mod:`msenv.engine.functional`
hands each step, observation and context to the engine's own.
"""

from __future__ import annotations

from ..config.system import SystemConfig

#: keys of the per-step ``info`` dict.
INFO_KEYS = (
    "tokens", "accepted", "rejected", "modes", "dl_power", "ul_delay",
    "t_draft", "t_verify", "t_com", "latency", "goodput",
    "episode_tokens", "episode_time", "episode_throughput",
)
#: extra ``info`` keys under model §11 dynamics: the truth of the round, for analysis (never in
#: the observation): the true α, the correction-time gains, and (requests) which requests ended.
DYNAMIC_INFO_KEYS = ("alpha", "g_ul_corr", "g_dl_corr")
REQUEST_INFO_KEYS = ("request_done",)
#: what each ``info`` key holds (arrays are [K], per device)
INFO_DOCS = {
    "tokens": "int [K]: tokens each device gained this round, N_k = A_k + 1 (capped at a request's end)",
    "accepted": "int [K]: drafted tokens the target model accepted, A_k",
    "rejected": "bool [K]: the device's draft had a rejection (it needed a correction)",
    "modes": "int8 [K]: how the correction crossed the link: 0 none, 1 UL, 2 DL",
    "dl_power": "float [K]: DL power given to the device, W (0 unless DL)",
    "ul_delay": "float [K]: the device's UL transfer time, s (0 unless rejected)",
    "t_draft": "float: drafting time max_k γ_k T_k^dft, s",
    "t_verify": "float: the verification pass, s",
    "t_com": "float: the correction exchange T_com, s",
    "latency": "float: the round's time T = t_draft + t_verify + t_com, s",
    "goodput": "float: the round's goodput Σ_k N_k / T, tokens/s (the reward before reward_scale)",
    "episode_tokens": "float: tokens so far in the episode",
    "episode_time": "float: time so far in the episode, s",
    "episode_throughput": "float: episode_tokens / episode_time, tokens/s (the long-run throughput)",
    "alpha": "float [K]: the true α of the round (dynamics only; never in the observation)",
    "g_ul_corr": "float [K]: the UL gain the correction used (dynamics only)",
    "g_dl_corr": "float [K]: the DL gain the correction used (dynamics only)",
    "request_done": "bool [K]: the device's request ended this round (requests only)",
}


class Engine:
    """One kind of engine (see the module docstring); :func:`engine_of` gives a config's. The
    entry points of :mod:`msenv.engine.functional` hand each call to the engine's own step,
    observation and context."""

    #: its name: "paper" or "dynamics"
    name: str = ""
    #: True for the model §11 dynamics (moving devices, hidden or changing α)
    dynamic: bool = False
    #: True when cells of different sizes can play in one padded batch (the batched cell generator)
    pads_cells: bool = False

    def info_keys(self, cfg: SystemConfig) -> tuple[str, ...]:
        """The per-step ``info`` keys of ``cfg``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<msenv engine {self.name!r}>"


class PaperEngine(Engine):
    """The paper's assumptions: i.i.d. block fading seen exactly, each device's α fixed and known
    (its step: :func:`msenv.engine.paper.step_paper`)."""

    name, dynamic, pads_cells = "paper", False, True

    def info_keys(self, cfg):
        return INFO_KEYS


class DynamicEngine(Engine):
    """The model §11 dynamics: Gauss–Markov channels, requests, the easy/hard chain, hidden α (its
    step: :func:`msenv.engine.dynamics.step`)."""

    name, dynamic, pads_cells = "dynamics", True, False

    def info_keys(self, cfg):
        return INFO_KEYS + DYNAMIC_INFO_KEYS + (REQUEST_INFO_KEYS if cfg.alpha_dynamics != "fixed" else ())


PAPER = PaperEngine()
DYNAMICS = DynamicEngine()


def engine_of(cfg: SystemConfig) -> Engine:
    """The engine that plays ``cfg``: :data:`PAPER` in the paper scenario
    (:attr:`~msenv.config.SystemConfig.is_paper_scenario`), else :data:`DYNAMICS`."""
    return PAPER if cfg.is_paper_scenario else DYNAMICS


def info_keys(cfg: SystemConfig) -> tuple[str, ...]:
    """The per-step ``info`` keys for ``cfg`` (the paper scenario: :data:`INFO_KEYS`)."""
    return engine_of(cfg).info_keys(cfg)


__all__ = ["DYNAMICS", "DYNAMIC_INFO_KEYS", "Engine", "INFO_DOCS", "INFO_KEYS", "PAPER", "REQUEST_INFO_KEYS",
           "engine_of", "info_keys"]
