"""The system configuration: every parameter of the model in one validated, frozen dataclass.

Each field's meaning is its ``#:`` comment below (:func:`field_docs` reads them back); fields
marked [R] select a reconstructed choice of the model. :func:`preset` gives the two model pairs,
:meth:`SystemConfig.replace` overrides fields; a bad value raises ``ValueError`` naming the
field, the value and what is allowed, an unknown field Python's ``TypeError``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

from .validation import check_choice, check_float, check_int, check_range, fail

MODE_POLICIES = ("optimal", "all_ul", "all_dl", "random")
FADING_MODELS = ("independent", "reciprocal")
FADING_REDRAW = ("round", "episode")
VERIFY_BATCH = ("all", "drafting")
SAA_OBJECTIVES = ("ratio", "mean_of_ratios")
CHANNEL_DYNAMICS = ("iid", "gauss_markov")
CSI_MODES = ("oracle", "decision", "statistical")
ALPHA_DYNAMICS = ("fixed", "request", "markov")
ALPHA_BELIEFS = ("auto", "beta", "grid")
SPEED_OF_LIGHT = 299_792_458.0
TASKS = ("humaneval", "gsm8k", "mt-bench", "ifeval")


def dbm_to_watt(dbm: float) -> float:
    """dBm → W: 10^((x − 30)/10) (model §2, units)."""
    return 10.0 ** ((dbm - 30.0) / 10.0)


@dataclass(frozen=True)
class SystemConfig:
    """Every parameter of the model, validated and frozen. Units: s, Hz, bits, m; power budgets and
    noise densities in dBm (dBm/Hz), converted to W by the derived properties. Fields marked [R]
    are reconstructed choices (see the model page); the defaults are the paper's scenario."""

    #: the model pair whose defaults this config started from: "qwen2.5" (Qwen2.5-0.5B drafting for
    #: Qwen2.5-14B) or "deepseek-r1" (R1-Distill-Qwen-1.5B for R1-Distill-Qwen-32B); a label, set by
    #: :func:`preset` (changing it alone changes no other field)
    preset: str = "qwen2.5"
    # --- system size and action space
    #: K, the number of edge devices (each drafts for its own request); 1 to 10,000
    num_devices: int = 20
    #: γ_max, the longest draft length the server may choose; actions are integers in [0, γ_max]
    gamma_max: int = 20
    # --- radio (model: radio and latency)
    #: B, the bandwidth of each direction (uplink and downlink), Hz; shared equally by the
    #: devices that need a correction in a round (OFDMA)
    bandwidth_hz: float = 10e6
    #: V, the vocabulary size (valid token ids) of the model pair
    vocab_size: int = 151_665
    #: V_eff, the tokens of a distribution that cross the link (the effective support sent);
    #: at most ``vocab_size``
    vocab_eff: int = 1024
    #: Q, the bits sent per probability; a correction carries L = V_eff·(⌈log2 V⌉ + Q) bits
    bits_per_prob: int = 16
    #: P_ul, each device's uplink power budget, dBm (a device always sends at its budget)
    p_ul_dbm: float = 15.0
    #: P_dl, the server's downlink power budget shared by all DL corrections, dBm
    p_dl_dbm: float = 30.0
    #: per-episode domain randomisation of P_ul: (low, high) in dBm, drawn uniformly at each
    #: reset, or None (fixed at ``p_ul_dbm``)
    p_ul_dbm_range: tuple[float, float] | None = None
    #: the same for P_dl: (low, high) in dBm, or None (fixed at ``p_dl_dbm``)
    p_dl_dbm_range: tuple[float, float] | None = None
    #: N0 at the server (uplink receiver), dBm/Hz
    n0_server_dbm_hz: float = -169.0
    #: N0 at a device (downlink receiver), dBm/Hz
    n0_device_dbm_hz: float = -167.0
    #: large-scale gain at 1 m, dB: β_k = 10^(ref_gain_db/10) · d_k^(−pathloss_exponent)
    ref_gain_db: float = -30.0
    #: path-loss exponent of β_k
    pathloss_exponent: float = 3.5
    #: (low, high) of the device distances d_k, m, drawn uniformly per episode
    distance_range_m: tuple[float, float] = (100.0, 500.0)
    #: [R] small-scale fading of the two directions: "independent" (UL and DL fade independently)
    #: or "reciprocal" (one fading gain for both directions)
    fading: str = "independent"
    #: [R] when i.i.d. Rayleigh fading is redrawn: "round" (block fading, every round) or
    #: "episode" (static for the episode)
    fading_redraw: str = "round"
    # --- computation (model: latency)
    #: T0, the verification pass's fixed time, s (> 0: every round takes time)
    t_verify_base_s: float = 0.0428
    #: [R] T1, the verification time per device in the batch, s (T_ver = T0 + T1·K_batch)
    t_verify_per_device_s: float = 0.0076
    #: [R] T2, an optional verification time per drafted token, s (0: off)
    t_verify_per_token_s: float = 0.0
    #: [R] T3, an optional padded-batch term T3·K_batch·(max_k γ_k + 1), s (every sequence padded
    #: to the longest draft; 0: off)
    t_verify_per_padded_token_s: float = 0.0
    #: [R] which devices the verification batch holds: "all" (a device with γ_k = 0 still gets the
    #: target model's next token) or "drafting" (only devices with γ_k > 0; the others get nothing)
    verify_batch: str = "all"
    #: T_dft,ref, the draft model's time per token on a reference device, s
    t_draft_ref_s: float = 0.0152
    #: (low, high) of a device's drafting-time scale: T_k^dft = T_dft,ref · U[low, high], drawn per
    #: episode (heterogeneous devices: a wider range)
    draft_scale_range: tuple[float, float] = (1.0, 1.15)
    # --- acceptance (model: verification outcome)
    #: the tasks a device's request may come from, each drawn uniformly
    tasks: tuple[str, ...] = TASKS
    #: [R] α per task (same order as ``tasks``): the probability that the target model accepts a
    #: drafted token; each in (0, 1]. The paper's measured values were lost: these are estimates
    acceptance_rates: tuple[float, ...] = (0.85, 0.82, 0.68, 0.72)
    # --- decisions (model: reactive stage, draft-length control)
    #: the reactive stage's mode selection: "optimal" (exact: UL/DL modes and DL powers that
    #: minimise T_com), "all_ul", "all_dl", or "random" (each rejected device UL or DL with ½)
    mode_policy: str = "optimal"
    #: N_SAA, the sampled outcomes the SAA controllers average over per decision
    n_saa: int = 1000
    #: [R] the SAA controllers' objective: "ratio" (Σ E[N] / (T_cmp + E[T_com]), the paper's
    #: long-run throughput) or "mean_of_ratios" (E[Σ N / T], the expected reward)
    saa_objective: str = "ratio"
    # --- episode
    #: rounds per episode; the episode is then truncated (never terminated)
    episode_length: int = 100
    #: the reward is the round's goodput (tokens/s) times this factor
    reward_scale: float = 1.0
    # --- beyond the paper: dynamics and partial observability (model: dynamics; all [R]); the
    # defaults are the paper's scenario, bit for bit
    #: [R] "iid": block fading per round (``fading`` / ``fading_redraw``); "gauss_markov": complex
    #: Clarke/Jakes gains evolving over the real elapsed times, ρ = J0(2π f_D Δt)
    channel_dynamics: str = "iid"
    #: f_c, the carrier frequency, Hz; a device's Doppler is f_D = v·f_c/c
    carrier_hz: float = 3.5e9
    #: (low, high) of the device speeds v_k, m/s, drawn uniformly per episode (Gauss–Markov channel)
    speed_range_mps: tuple[float, float] = (0.0, 0.0)
    #: [R] the channel a controller is shown at the decision: "oracle" (the gains the correction
    #: will use), "decision" (the gains at decision time), "statistical" (large-scale β only)
    csi: str = "oracle"
    #: [R] "fixed" (α = the task's mean, per episode), "request" (back-to-back requests, each with
    #: a geometric length and α ~ Beta), "markov" (requests + an easy/hard chain modulating α)
    alpha_dynamics: str = "fixed"
    #: False: observations and contexts carry the server's belief about α (never α itself)
    alpha_observed: bool = True
    #: κ of a request's α ~ Beta(κ·m, κ·(1 − m)), m = the task's mean (smaller: more diverse prompts)
    alpha_concentration: float = 20.0
    #: the mean request length in tokens per task (same order as ``tasks``), geometric, each ≥ 1
    request_mean_tokens: tuple[float, ...] = (200.0, 250.0, 400.0, 300.0)
    #: P(the easy/hard state stays) per round ("markov")
    markov_stay: float = 0.9
    #: δ of α_easy/hard = α ± δ·min(α, 1 − α) ("markov"), in [0, 1]
    markov_delta: float = 0.5
    #: the server's belief about a hidden α: "beta" (the conjugate Beta posterior of the request's
    #: α, exact without the chain), "grid" (the forward filter of the request's α on a grid × the
    #: easy/hard state), "auto" ("grid" with ``alpha_dynamics="markov"``, else "beta")
    alpha_belief: str = "auto"
    #: grid points (equal bins of (0, 1)) of the "grid" belief; 32 and 128 give the same predictive
    #: error to 1e-4 on the Dynamic-Small model, and the filter costs O(grid) per device
    alpha_grid_size: int = 32

    # ------------------------------------------------------------------ validation
    def __post_init__(self) -> None:
        check_int(self, "num_devices", 1, 10_000)
        check_int(self, "gamma_max", 1, 1_000)
        check_float(self, "bandwidth_hz", lo=0.0, lo_open=True)
        check_int(self, "vocab_size", 2, 10**9)
        check_int(self, "vocab_eff", 1, 10**9)
        if self.vocab_eff > self.vocab_size:
            fail("vocab_eff", self.vocab_eff, f"an integer ≤ vocab_size ({self.vocab_size})")
        check_int(self, "bits_per_prob", 1, 64)
        for name in ("p_ul_dbm", "p_dl_dbm"):
            check_float(self, name, lo=-100.0, hi=100.0)
        for name in ("p_ul_dbm_range", "p_dl_dbm_range"):
            if getattr(self, name) is not None:
                check_range(self, name, lo=-100.0, hi=100.0)
        for name in ("n0_server_dbm_hz", "n0_device_dbm_hz"):
            check_float(self, name, lo=-250.0, hi=0.0)
        check_float(self, "ref_gain_db", lo=-200.0, hi=0.0)
        check_float(self, "pathloss_exponent", lo=0.0, hi=10.0)
        check_range(self, "distance_range_m", lo=0.0, hi=1e6, lo_open=True)
        check_choice(self, "fading", FADING_MODELS)
        check_choice(self, "fading_redraw", FADING_REDRAW)
        # T0 > 0: a verification pass always takes time, so a round (even with every γ_k = 0)
        # has a positive latency and the goodput Σ N / T is finite.
        check_float(self, "t_verify_base_s", lo=0.0, hi=1e3, lo_open=True)
        check_float(self, "t_verify_per_device_s", lo=0.0, hi=1e3)
        check_float(self, "t_verify_per_token_s", lo=0.0, hi=1e3)
        check_float(self, "t_verify_per_padded_token_s", lo=0.0, hi=1e3)
        check_choice(self, "verify_batch", VERIFY_BATCH)
        check_float(self, "t_draft_ref_s", lo=0.0, hi=1e3, lo_open=True)
        check_range(self, "draft_scale_range", lo=0.0, hi=1e3, lo_open=True)
        if not isinstance(self.tasks, tuple) or not self.tasks or not all(
            isinstance(t, str) and t for t in self.tasks
        ):
            fail("tasks", self.tasks, "a non-empty tuple of task names")
        if not isinstance(self.acceptance_rates, tuple) or len(self.acceptance_rates) != len(
            self.tasks
        ):
            fail(
                "acceptance_rates",
                self.acceptance_rates,
                f"a tuple of {len(self.tasks)} rates, one per task {self.tasks}",
            )
        for i, a in enumerate(self.acceptance_rates):
            if (
                isinstance(a, bool)
                or not isinstance(a, (int, float))
                or not math.isfinite(a)
                or not 0.0 < a <= 1.0
            ):
                fail(f"acceptance_rates[{i}]", a, "a number in (0, 1]")
        check_choice(self, "mode_policy", MODE_POLICIES)
        check_int(self, "n_saa", 1, 10**7)
        check_choice(self, "saa_objective", SAA_OBJECTIVES)
        check_int(self, "episode_length", 2, 10**9)
        check_float(self, "reward_scale", lo=0.0, hi=1e12, lo_open=True)
        check_choice(self, "channel_dynamics", CHANNEL_DYNAMICS)
        if self.channel_dynamics == "gauss_markov" and self.fading_redraw != "round":
            fail("fading_redraw", self.fading_redraw,
                  "'round' with channel_dynamics='gauss_markov' (the AR(1) process sets the time evolution)")
        check_float(self, "carrier_hz", lo=0.0, hi=1e12, lo_open=True)
        check_range(self, "speed_range_mps", lo=0.0, hi=1e3)
        check_choice(self, "csi", CSI_MODES)
        check_choice(self, "alpha_dynamics", ALPHA_DYNAMICS)
        if not isinstance(self.alpha_observed, bool):
            fail("alpha_observed", self.alpha_observed, "True or False")
        check_float(self, "alpha_concentration", lo=0.0, hi=1e6, lo_open=True)
        if not isinstance(self.request_mean_tokens, tuple) or len(self.request_mean_tokens) != len(self.tasks):
            fail("request_mean_tokens", self.request_mean_tokens,
                  f"a tuple of {len(self.tasks)} mean lengths ≥ 1, one per task {self.tasks}")
        for i, m in enumerate(self.request_mean_tokens):
            if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m) or not 1.0 <= m <= 1e9:
                fail(f"request_mean_tokens[{i}]", m, "a number in [1, 1e9]")
        check_float(self, "markov_stay", lo=0.0, hi=1.0)
        check_float(self, "markov_delta", lo=0.0, hi=1.0)
        check_choice(self, "alpha_belief", ALPHA_BELIEFS)
        check_int(self, "alpha_grid_size", 4, 4096)
        if not isinstance(self.preset, str):
            fail("preset", self.preset, "a string")

    # ------------------------------------------------------------------ derived
    @functools.cached_property
    def payload_bits(self) -> float:
        """L = V_eff·(⌈log2 V⌉ + Q) bits per correction (model §2)."""
        return float(self.vocab_eff * (math.ceil(math.log2(self.vocab_size)) + self.bits_per_prob))

    @functools.cached_property
    def p_ul_w(self) -> float:
        return dbm_to_watt(self.p_ul_dbm)

    @functools.cached_property
    def p_dl_w(self) -> float:
        return dbm_to_watt(self.p_dl_dbm)

    @functools.cached_property
    def n0_server_w_hz(self) -> float:
        return dbm_to_watt(self.n0_server_dbm_hz)

    @functools.cached_property
    def n0_device_w_hz(self) -> float:
        return dbm_to_watt(self.n0_device_dbm_hz)

    @functools.cached_property
    def ref_gain(self) -> float:
        return 10.0 ** (self.ref_gain_db / 10.0)

    @functools.cached_property
    def alpha_hidden(self) -> bool:
        """True when the controller sees a posterior instead of α (model §11)."""
        return not self.alpha_observed

    @functools.cached_property
    def belief(self) -> str | None:
        """The server's belief about a hidden α: "beta", "grid" (``alpha_belief`` resolved), or
        None when α is observed."""
        if self.alpha_observed:
            return None
        if self.alpha_belief == "auto":
            return "grid" if self.alpha_dynamics == "markov" else "beta"
        return self.alpha_belief

    @functools.cached_property
    def is_paper_scenario(self) -> bool:
        """The paper's assumptions: i.i.d. block fading seen exactly, fixed observed α."""
        return (self.channel_dynamics == "iid" and self.csi == "oracle" and self.alpha_dynamics == "fixed"
                and self.alpha_observed)

    def __hash__(self) -> int:
        """The dataclass hash (of every field), computed once: configs key the per-config caches
        of the step's hot path."""
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self)))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict[str, Any]:
        # the cached hash is per process (string hashes are salted): never pickled
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # ------------------------------------------------------------------ helpers
    def replace(self, **changes: Any) -> SystemConfig:
        """A validated copy with ``changes`` applied.

        An unknown name raises ``TypeError`` in Python's wording (as any function given an
        unexpected keyword); a bad value raises ``ValueError``.
        """
        check_fields("SystemConfig.replace()", changes)
        changes = {k: _tupled(v) for k, v in changes.items()}
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SystemConfig:
        return cls().replace(**data)


# ---------------------------------------------------------------------- presets
#: model §2 / §9 values of the two model pairs.
PRESETS: dict[str, dict[str, Any]] = {
    "qwen2.5": dict(
        preset="qwen2.5",
        t_verify_base_s=0.0428,
        t_verify_per_device_s=0.0076,
        t_draft_ref_s=0.0152,
        acceptance_rates=(0.85, 0.82, 0.68, 0.72),
    ),
    "deepseek-r1": dict(
        preset="deepseek-r1",
        t_verify_base_s=0.0693,
        t_verify_per_device_s=0.0091,
        t_draft_ref_s=0.0196,
        acceptance_rates=(0.80, 0.84, 0.62, 0.66),
    ),
}


def preset(name: str = "qwen2.5", **overrides: Any) -> SystemConfig:
    """Named preset (``"qwen2.5"`` or ``"deepseek-r1"``) with optional field overrides."""
    if name not in PRESETS:
        raise ValueError(f"preset={name!r} is not known; allowed: {', '.join(PRESETS)}")
    return SystemConfig().replace(**{**PRESETS[name], **overrides})


def resolve_config(config: SystemConfig | dict[str, Any] | str | None, **overrides: Any) -> SystemConfig:
    """Accept a SystemConfig, a dict of fields, a preset name or None, plus overrides."""
    if config is None:
        base = SystemConfig()
    elif isinstance(config, SystemConfig):
        base = config
    elif isinstance(config, str):
        base = preset(config)
    elif isinstance(config, dict):
        data = dict(config)
        name = data.pop("preset", None)
        base = preset(name) if name is not None else SystemConfig()
        base = base.replace(**data)
    else:
        raise ValueError(
            f"config={config!r} is not allowed; give a SystemConfig, a dict of fields, "
            f"a preset name ({', '.join(PRESETS)}) or None"
        )
    return base.replace(**overrides) if overrides else base


def parse_overrides(items) -> dict[str, Any]:
    """Command-line ``FIELD=VALUE`` strings → config overrides: VALUE is parsed as JSON where it
    parses (numbers, true/false, null, lists such as ``[1.0, 2.0]``), else kept as a string.
    Fields and values are checked when the overrides are applied (:func:`resolve_config`)."""
    import json

    out: dict[str, Any] = {}
    for item in items:
        key, sep, val = item.partition("=")
        if not sep or not key:
            raise ValueError(f"override {item!r} is invalid; expected FIELD=VALUE, e.g. p_dl_dbm=20")
        try:
            out[key] = json.loads(val)
        except json.JSONDecodeError:
            out[key] = val
    return out


# ---------------------------------------------------------------------- field documentation
@functools.lru_cache(maxsize=4)
def field_docs(cls: type | None = None) -> dict[str, str]:
    """Each field's meaning, as written once where it is declared (its ``#:`` comment), in
    declaration order — the source of the configuration reference and of command-line help.
    ``cls``: a dataclass declared that way (default :class:`SystemConfig`)."""
    import inspect
    import re

    cls = SystemConfig if cls is None else cls
    names = [f.name for f in dataclasses.fields(cls)]
    docs, pending = {}, []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        m = re.match(r"(\w+): [^=]+=", stripped)
        if m and m.group(1) in names:
            docs[m.group(1)] = " ".join(pending)
        if not stripped.startswith("#"):
            pending = []
    return {name: docs.get(name, "") for name in names}


# ---------------------------------------------------------------------- checks
FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(SystemConfig))


def check_fields(owner: str, names) -> None:
    """Raise Python's ``TypeError`` for the first name that is not a config field.

    ``owner`` is the callable as Python would name it (``"MultiSpinEnv.__init__()"``), so the
    message reads ``MultiSpinEnv.__init__() got an unexpected keyword argument 'x'`` — the text
    libraries probe for (SB3's ``make_vec_env`` retries without ``render_mode`` on TypeError,
    TorchRL's ``GymEnv`` without ``frameskip``).
    """
    for key in names:
        if key not in FIELD_NAMES:
            raise TypeError(
                f"{owner} got an unexpected keyword argument {key!r} "
                f"(allowed: the config fields {', '.join(sorted(FIELD_NAMES))})"
            )


def _tupled(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


__all__ = [
    "SystemConfig",
    "PRESETS",
    "preset",
    "resolve_config",
    "dbm_to_watt",
    "check_fields",
    "field_docs",
    "parse_overrides",
    "MODE_POLICIES",
    "TASKS",
]
