"""The system configuration: every parameter of the model, in validated, frozen dataclasses — one
per concern — gathered by :class:`SystemConfig`.

Each field's meaning is its ``#:`` comment below (:func:`field_docs` reads them back); fields
marked [R] select a reconstructed choice of the model. The concerns are :class:`RadioConfig` (the
link a correction crosses), :class:`ChannelConfig` (geometry and fading), :class:`ComputeConfig`
(drafting and verification times), :class:`AcceptanceConfig` (tasks and α), :class:`EpisodeConfig`
(length and reward), :class:`DynamicsConfig` (model §11) and :class:`TraceConfig` (model §12).
Every field keeps its flat name for users: ``SystemConfig(p_dl_dbm=20)``, ``cfg.p_dl_dbm``,
``cfg.replace(p_dl_dbm=20)``, ``--set p_dl_dbm=20`` and ``gym.make(id, p_dl_dbm=20)`` all work, and
:meth:`SystemConfig.to_dict` is the flat dict of 0.5 (msenv's own code reads a field through its
group: ``cfg.radio.p_dl_dbm``). The SAA controllers' settings ``n_saa`` and ``saa_objective`` are
the controllers' own since 0.6 (``baselines.saa.SAAConfig``): a config still takes them, with a
``DeprecationWarning``, until msenv 0.7 (:mod:`~msenv.config.deprecation`). :func:`preset` gives
the two model pairs; a bad value raises ``ValueError`` naming the field, the value and what is
allowed, an unknown field Python's ``TypeError``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
from dataclasses import dataclass
from typing import Any, ClassVar

from .deprecation import SAA_FIELDS, check_saa_settings, warn_saa
from .groups import (
    GROUP_OF,
    GROUPS,
    MODE_POLICIES,
    TASKS,
    AcceptanceConfig,
    ChannelConfig,
    ComputeConfig,
    DynamicsConfig,
    EpisodeConfig,
    RadioConfig,
    TraceConfig,
    dbm_to_watt,
)
from .validation import check_int, check_numbers, fail

#: the fields SystemConfig holds itself (the others are its groups')
TOP_FIELDS = ("preset", "num_devices", "gamma_max")


@dataclass(frozen=True, init=False)
class SystemConfig:
    """Every parameter of the model, validated and frozen, gathered by concern. Units: s, Hz, bits,
    m; power budgets and noise densities in dBm (dBm/Hz), converted to W by the derived
    properties. Fields marked [R] are reconstructed choices (see the model page); the defaults are
    the paper's scenario.

    Give any field by its flat name — ``SystemConfig(p_dl_dbm=20)``, ``cfg.p_dl_dbm`` — or a whole
    group (``SystemConfig(radio=RadioConfig(p_dl_dbm=20))``, ``cfg.radio``); a flat field given
    beside its group changes that group."""

    #: the model pair whose defaults this config started from: "qwen2.5" (Qwen2.5-0.5B drafting for
    #: Qwen2.5-14B) or "deepseek-r1" (R1-Distill-Qwen-1.5B for R1-Distill-Qwen-32B); a label, set by
    #: :func:`preset` (changing it alone changes no other field)
    preset: str = "qwen2.5"
    #: K, the number of edge devices (each drafts for its own request); 1 to 10,000
    num_devices: int = 20
    #: γ_max, the longest draft length the server may choose; actions are integers in [0, γ_max]
    gamma_max: int = 20
    #: the radio link (:class:`RadioConfig`)
    radio: RadioConfig = RadioConfig()
    #: geometry and fading (:class:`ChannelConfig`)
    channel: ChannelConfig = ChannelConfig()
    #: drafting and verification times (:class:`ComputeConfig`)
    compute: ComputeConfig = ComputeConfig()
    #: tasks and acceptance rates (:class:`AcceptanceConfig`)
    acceptance: AcceptanceConfig = AcceptanceConfig()
    #: episode length and reward (:class:`EpisodeConfig`)
    episode: EpisodeConfig = EpisodeConfig()
    #: model §11 dynamics (:class:`DynamicsConfig`)
    dynamics: DynamicsConfig = DynamicsConfig()
    #: acceptance from traces, model §12 (:class:`TraceConfig`)
    traces: TraceConfig = TraceConfig()
    #: deprecated until msenv 0.7: the SAA controllers' settings this config was given by their old
    #: flat names ``n_saa`` / ``saa_objective`` (those that differ from the default), as sorted
    #: (name, value) pairs; they are ``baselines.saa.SAAConfig``'s since msenv 0.6
    saa_settings: tuple[tuple[str, Any], ...] = ()

    def __init__(self, preset: str = "qwen2.5", num_devices: int = 20, gamma_max: int = 20, *,
                 radio: RadioConfig | None = None, channel: ChannelConfig | None = None,
                 compute: ComputeConfig | None = None, acceptance: AcceptanceConfig | None = None,
                 episode: EpisodeConfig | None = None, dynamics: DynamicsConfig | None = None,
                 traces: TraceConfig | None = None, saa_settings: tuple[tuple[str, Any], ...] = (),
                 **fields: Any) -> None:
        check_fields("SystemConfig.__init__()", fields)
        given = dict(radio=radio, channel=channel, compute=compute, acceptance=acceptance, episode=episode,
                     dynamics=dynamics, traces=traces)
        set_ = object.__setattr__
        set_(self, "preset", preset)
        set_(self, "num_devices", num_devices)
        set_(self, "gamma_max", gamma_max)
        old = {k: fields.pop(k) for k in list(fields) if k in SAA_FIELDS}
        set_(self, "saa_settings", check_saa_settings({**dict(saa_settings), **old}))
        if any(v != SAA_FIELDS[k] for k, v in old.items()):
            warn_saa([k for k, v in old.items() if v != SAA_FIELDS[k]])
        for name, cls in GROUPS.items():
            group = given[name]
            if group is None:
                group = _DEFAULTS[name]
            elif isinstance(group, dict):
                group = cls(**group)
            elif not isinstance(group, cls):
                fail(name, group, f"a {cls.__name__} (or a dict of its fields)")
            own = {k: v for k, v in fields.items() if GROUP_OF[k] == name}
            set_(self, name, dataclasses.replace(group, **own) if own else group)
        self.__post_init__()

    # ------------------------------------------------------------------ validation
    def __post_init__(self) -> None:
        check_int(self, "num_devices", 1, 10_000)
        check_int(self, "gamma_max", 1, 1_000)
        if not isinstance(self.preset, str):
            fail("preset", self.preset, "a string")
        # the checks across groups (each group checks its own fields)
        if self.channel_dynamics == "gauss_markov" and self.fading_redraw != "round":
            fail("fading_redraw", self.fading_redraw,
                 "'round' with channel_dynamics='gauss_markov' (the AR(1) process sets the time evolution)")
        check_numbers(self, "request_mean_tokens", len(self.tasks), self.tasks, 1.0, 1e9, False, "mean lengths ≥ 1",
                 "[1, 1e9]")
        if self.trace_source is not None:  # the trace is the acceptance process, over the paper's channel
            for name, allowed in (("channel_dynamics", "iid"), ("csi", "oracle"), ("alpha_dynamics", "fixed")):
                if getattr(self, name) != allowed:
                    fail(name, getattr(self, name), f"{allowed!r} with trace_source={self.trace_source!r} (traces "
                                                    "replay acceptance over the paper's channel)")

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

    @property
    def n_saa(self) -> int:
        """Deprecated (``baselines.saa.SAAConfig.n_saa``, removed in msenv 0.7): the N_SAA this config
        was given, else the default."""
        return dict(self.saa_settings).get("n_saa", SAA_FIELDS["n_saa"])

    @property
    def saa_objective(self) -> str:
        """Deprecated (``baselines.saa.SAAConfig.saa_objective``, removed in msenv 0.7): the SAA
        objective this config was given, else the default."""
        return dict(self.saa_settings).get("saa_objective", SAA_FIELDS["saa_objective"])

    @functools.cached_property
    def alpha_hidden(self) -> bool:
        """True when the controller sees a posterior instead of α (model §11)."""
        return not self.alpha_observed

    @functools.cached_property
    def belief(self) -> str | None:
        """The server's belief about a hidden α: "beta", "grid" (``alpha_belief`` resolved), or
        None when α is observed."""
        if self.alpha_observed or self.trace_source is not None:
            return None
        if self.alpha_belief == "auto":
            return "grid" if self.alpha_dynamics == "markov" else "beta"
        return self.alpha_belief

    @functools.cached_property
    def is_paper_scenario(self) -> bool:
        """The paper's assumptions: i.i.d. block fading seen exactly, fixed observed α
        (:func:`msenv.engine.functional.engine_for` reads it, once, to choose the engine)."""
        return (self.channel_dynamics == "iid" and self.csi == "oracle" and self.alpha_dynamics == "fixed"
                and self.alpha_observed and self.trace_source is None)

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
        if "radio" not in state:  # a config pickled by 0.5 (one flat dataclass)
            state = SystemConfig(**{k: v for k, v in state.items() if k in FIELD_NAMES}).__dict__
        state = {**{name: _DEFAULTS[name] for name in GROUPS}, "saa_settings": (), **state}  # added since: defaults
        self.__dict__.update(state)

    # ------------------------------------------------------------------ the env spec
    #: the shells that play a single cell (:class:`~msenv.config.spec.EnvSpec`)
    entry: ClassVar[str] = "msenv.envs.env:MultiSpinEnv"
    vector_entry: ClassVar[str] = "msenv.envs.vector:MultiSpinVectorEnv"

    @property
    def base(self) -> SystemConfig:
        """The model of its cell: itself."""
        return self

    @property
    def slots(self) -> int:
        """Device slots: K."""
        return self.num_devices

    @property
    def label(self) -> str:
        """``qwen2.5, K=20, P_dl=30 dBm``."""
        return f"{self.preset}, K={self.num_devices}, P_dl={self.radio.p_dl_dbm:g} dBm"

    def fields(self) -> dict[str, Any]:
        """Every field by its flat name (:meth:`to_dict`)."""
        return self.to_dict()

    def pad(self, layout):
        """One cell: its engine's layout as it is."""
        return layout

    # ------------------------------------------------------------------ helpers
    def replace(self, **changes: Any) -> SystemConfig:
        """A validated copy with ``changes`` applied (flat field names, or whole groups).

        An unknown name raises ``TypeError`` in Python's wording (as any function given an
        unexpected keyword); a bad value raises ``ValueError``.
        """
        check_fields("SystemConfig.replace()", changes)
        changes = {k: _tupled(v) for k, v in changes.items()}
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Every field by its flat name, in declaration order, then the deprecated ``n_saa`` and
        ``saa_objective`` (until msenv 0.7): the format of 0.5's saved configs."""
        return {name: getattr(self, name) for name in (*FIELD_ORDER, *SAA_FIELDS)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SystemConfig:
        """The config of a dict of flat fields (:meth:`to_dict`) and/or groups (dicts of their fields)."""
        return cls().replace(**data)


_DEFAULTS = {name: cls() for name, cls in GROUPS.items()}
#: every field's flat name, in declaration order: SystemConfig's own, then each group's
FIELD_ORDER: tuple[str, ...] = TOP_FIELDS + tuple(GROUP_OF)
#: the flat field names (what ``--set``, ``gym.make`` and :meth:`SystemConfig.replace` take; the
#: deprecated ``n_saa`` and ``saa_objective`` too, until msenv 0.7)
FIELD_NAMES = frozenset(FIELD_ORDER) | frozenset(SAA_FIELDS)
for _name, _group in GROUP_OF.items():  # cfg.p_dl_dbm reads cfg.radio.p_dl_dbm
    setattr(SystemConfig, _name, property(operator.attrgetter(f"{_group}.{_name}"),
                                          doc=f"``{_group}.{_name}`` (:class:`{GROUPS[_group].__name__}`)"))
del _name, _group



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
@functools.lru_cache(maxsize=16)
def _declared_docs(cls: type) -> dict[str, str]:
    """The ``#:`` comment above each field of dataclass ``cls``, in declaration order."""
    import inspect
    import re

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


def field_docs(cls: type | None = None) -> dict[str, str]:
    """Each field's meaning, as written once where it is declared (its ``#:`` comment), in
    declaration order — the source of the configuration reference and of command-line help.
    ``cls``: a dataclass declared that way; default :class:`SystemConfig`, whose fields are listed
    by their flat names (:data:`FIELD_ORDER`: its own, then each group's)."""
    if cls is not None and cls is not SystemConfig:
        return dict(_declared_docs(cls))
    own = _declared_docs(SystemConfig)
    out = {name: own[name] for name in TOP_FIELDS}
    for cls_ in GROUPS.values():
        out.update(_declared_docs(cls_))
    return out


def config_fields() -> list[tuple[str, str | None, dataclasses.Field]]:
    """``(flat name, group or None, dataclass field)`` of every config field, in :data:`FIELD_ORDER`
    (the field carries its type and default)."""
    own = {f.name: f for f in dataclasses.fields(SystemConfig)}
    out = [(name, None, own[name]) for name in TOP_FIELDS]
    for group, cls in GROUPS.items():
        out += [(f.name, group, f) for f in dataclasses.fields(cls)]
    return out


# ---------------------------------------------------------------------- checks
def check_fields(owner: str, names) -> None:
    """Raise Python's ``TypeError`` for the first name that is neither a config field (by its flat
    name) nor a group of :data:`GROUPS`.

    ``owner`` is the callable as Python would name it (``"MultiSpinEnv.__init__()"``), so the
    message reads ``MultiSpinEnv.__init__() got an unexpected keyword argument 'x'`` — the text
    libraries probe for (SB3's ``make_vec_env`` retries without ``render_mode`` on TypeError,
    TorchRL's ``GymEnv`` without ``frameskip``).
    """
    for key in names:
        if key not in FIELD_NAMES and key not in GROUPS:
            raise TypeError(
                f"{owner} got an unexpected keyword argument {key!r} "
                f"(allowed: the config fields {', '.join(sorted(FIELD_NAMES))}, or a group {', '.join(GROUPS)})"
            )


def _tupled(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


__all__ = [
    "SystemConfig",
    "RadioConfig",
    "ChannelConfig",
    "ComputeConfig",
    "AcceptanceConfig",
    "EpisodeConfig",
    "DynamicsConfig",
    "TraceConfig",
    "GROUPS",
    "config_fields",
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
