"""The configuration's concerns, one validated, frozen dataclass each (:class:`SystemConfig
<msenv.config.system.SystemConfig>` gathers them): each field's meaning is its ``#:`` comment, and
each class checks its own fields."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .validation import check_choice, check_float, check_int, check_numbers, check_range, fail

MODE_POLICIES = ("optimal", "all_ul", "all_dl", "random")
FADING_MODELS = ("independent", "reciprocal")
FADING_REDRAW = ("round", "episode")
VERIFY_BATCH = ("all", "drafting")
CHANNEL_DYNAMICS = ("iid", "gauss_markov")
CSI_MODES = ("oracle", "decision", "statistical")
ALPHA_DYNAMICS = ("fixed", "request", "markov")
ALPHA_BELIEFS = ("auto", "beta", "grid")
SPEED_OF_LIGHT = 299_792_458.0
TASKS = ("humaneval", "gsm8k", "mt-bench", "ifeval")
TRACE_SPLITS = ("train", "validation", "test", "all")
TRACE_DRAFTERS = ("eagle", "ngram")
#: the most requests of a bank drawn from a preset (``trace_requests``): drawing one takes ≈ 47 KB
#: of memory per request at the longest preset's lengths (sharegpt), so 10,000 need ≈ 0.5 GB
MAX_TRACE_REQUESTS = 10_000


def dbm_to_watt(dbm: float) -> float:
    """dBm → W: 10^((x − 30)/10) (model §2, units)."""
    return 10.0 ** ((dbm - 30.0) / 10.0)


@dataclass(frozen=True)
class RadioConfig:
    """The radio link a correction crosses and how the reactive stage uses it (model §2, §4, §5)."""

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
    #: the reactive stage's mode selection: "optimal" (exact: UL/DL modes and DL powers that
    #: minimise T_com), "all_ul", "all_dl", or "random" (each rejected device UL or DL with ½)
    mode_policy: str = "optimal"

    def __post_init__(self) -> None:
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
        check_choice(self, "mode_policy", MODE_POLICIES)


@dataclass(frozen=True)
class ChannelConfig:
    """Where the devices are and how their links fade (model §2, §4)."""

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

    def __post_init__(self) -> None:
        check_float(self, "ref_gain_db", lo=-200.0, hi=0.0)
        check_float(self, "pathloss_exponent", lo=0.0, hi=10.0)
        check_range(self, "distance_range_m", lo=0.0, hi=1e6, lo_open=True)
        check_choice(self, "fading", FADING_MODELS)
        check_choice(self, "fading_redraw", FADING_REDRAW)


@dataclass(frozen=True)
class ComputeConfig:
    """How long drafting and verification take (model §4)."""

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

    def __post_init__(self) -> None:
        # T0 > 0: a verification pass always takes time, so a round (even with every γ_k = 0)
        # has a positive latency and the goodput Σ N / T is finite.
        check_float(self, "t_verify_base_s", lo=0.0, hi=1e3, lo_open=True)
        check_float(self, "t_verify_per_device_s", lo=0.0, hi=1e3)
        check_float(self, "t_verify_per_token_s", lo=0.0, hi=1e3)
        check_float(self, "t_verify_per_padded_token_s", lo=0.0, hi=1e3)
        check_choice(self, "verify_batch", VERIFY_BATCH)
        check_float(self, "t_draft_ref_s", lo=0.0, hi=1e3, lo_open=True)
        check_range(self, "draft_scale_range", lo=0.0, hi=1e3, lo_open=True)


@dataclass(frozen=True)
class AcceptanceConfig:
    """The requests' tasks and how often the target model accepts a drafted token (model §3)."""

    #: the tasks a device's request may come from, each drawn uniformly
    tasks: tuple[str, ...] = TASKS
    #: [R] α per task (same order as ``tasks``): the probability that the target model accepts a
    #: drafted token; each in (0, 1]. The paper's measured values were lost: these are estimates
    acceptance_rates: tuple[float, ...] = (0.85, 0.82, 0.68, 0.72)

    def __post_init__(self) -> None:
        if not isinstance(self.tasks, tuple) or not self.tasks or not all(
            isinstance(t, str) and t for t in self.tasks
        ):
            fail("tasks", self.tasks, "a non-empty tuple of task names")
        check_numbers(self, "acceptance_rates", len(self.tasks), self.tasks, 0.0, 1.0, True, "rates", "(0, 1]")


@dataclass(frozen=True)
class EpisodeConfig:
    """How long an episode lasts and what its reward is (model §8)."""

    #: rounds per episode; the episode is then truncated (never terminated)
    episode_length: int = 100
    #: the reward is the round's goodput (tokens/s) times this factor
    reward_scale: float = 1.0

    def __post_init__(self) -> None:
        check_int(self, "episode_length", 2, 10**9)
        check_float(self, "reward_scale", lo=0.0, hi=1e12, lo_open=True)


@dataclass(frozen=True)
class DynamicsConfig:
    """Beyond the paper: moving devices, requests and partial observability (model §11; all [R]).
    The defaults are the paper's scenario, bit for bit."""

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

    def __post_init__(self) -> None:
        check_choice(self, "channel_dynamics", CHANNEL_DYNAMICS)
        check_float(self, "carrier_hz", lo=0.0, hi=1e12, lo_open=True)
        check_range(self, "speed_range_mps", lo=0.0, hi=1e3)
        check_choice(self, "csi", CSI_MODES)
        check_choice(self, "alpha_dynamics", ALPHA_DYNAMICS)
        if not isinstance(self.alpha_observed, bool):
            fail("alpha_observed", self.alpha_observed, "True or False")
        check_float(self, "alpha_concentration", lo=0.0, hi=1e6, lo_open=True)
        check_float(self, "markov_stay", lo=0.0, hi=1.0)
        check_float(self, "markov_delta", lo=0.0, hi=1.0)
        check_choice(self, "alpha_belief", ALPHA_BELIEFS)
        check_int(self, "alpha_grid_size", 4, 4096)


@dataclass(frozen=True)
class TraceConfig:
    """Beyond the paper: acceptance replayed from traces of real drafters (model §12; all [R]).
    The default (no trace) is the i.i.d. model of model §3 and §11, bit for bit."""

    #: where each round's acceptance comes from: None (the i.i.d. model, α per task), the name of a
    #: preset of the fitted trace model (a bank drawn from it, e.g. "gsm8k-eagle"), or the path of a
    #: bank file (SpecDecode-Bench's JSONL, or msenv's .npz); a trace needs channel_dynamics="iid",
    #: csi="oracle" and alpha_dynamics="fixed" (the trace is the acceptance process)
    trace_source: str | None = None
    #: the drafter whose ``acc_len`` a published JSONL file's requests hold: "eagle" or "ngram"
    #: (a preset, and an .npz bank, name their own)
    trace_drafter: str = "eagle"
    #: which requests of the bank the devices serve: "train", "validation", "test" (a split of the
    #: bank by request, fixed by its sha256) or "all"
    trace_split: str = "train"
    #: H, the rounds of each device's history the observation shows (draft length, accepted count,
    #: rejection), cleared when its request ends
    trace_history: int = 4
    #: requests of a preset's bank (each drawn from the fitted model; at most 10,000, ≈ 47 KB of
    #: memory each while drawn; a mix of presets: 10,000 in all)
    trace_requests: int = 2000
    #: the seed of a preset's bank (another seed: another bank from the same model)
    trace_seed: int = 0
    #: leave out a file's requests whose prompt plus output reached this many tokens (the
    #: published profiling's generation limit was 8192; its few requests there look like
    #: repetition loops), or None (keep every request)
    trace_drop_limit: int | None = None
    #: the observation adds, per device, the exact Bayes filter's summaries of its hidden state under
    #: the source's fitted model (P(first drafted token accepted), the expected accepted tokens of the
    #: longest draft, P(high state)); the source must have a fitted model (a preset, a shipped bank
    #: with its fit, a published file)
    trace_posterior: bool = False

    def __post_init__(self) -> None:
        if self.trace_source is not None and (not isinstance(self.trace_source, str) or not self.trace_source):
            fail("trace_source", self.trace_source, "None, a preset name or a bank file's path")
        check_choice(self, "trace_drafter", TRACE_DRAFTERS)
        check_choice(self, "trace_split", TRACE_SPLITS)
        check_int(self, "trace_history", 1, 64)
        check_int(self, "trace_requests", 3, MAX_TRACE_REQUESTS)
        check_int(self, "trace_seed", 0, 2**63 - 1)
        if self.trace_drop_limit is not None:
            check_int(self, "trace_drop_limit", 2, 10**9)
        if not isinstance(self.trace_posterior, bool):
            fail("trace_posterior", self.trace_posterior, "True or False")


#: SystemConfig's groups: attribute → class, in declaration order
GROUPS: dict[str, type] = {
    "radio": RadioConfig, "channel": ChannelConfig, "compute": ComputeConfig, "acceptance": AcceptanceConfig,
    "episode": EpisodeConfig, "dynamics": DynamicsConfig, "traces": TraceConfig,
}
#: each grouped field's group
GROUP_OF: dict[str, str] = {f.name: g for g, cls in GROUPS.items() for f in dataclasses.fields(cls)}
