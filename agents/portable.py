"""The portable agent format: what deciding needs, in files that loading cannot execute.

A saved agent directory holds, beside SB3's files for resuming training:

- ``policy.npz`` — the decision network's weights, plain float arrays (read with
  ``numpy.load(..., allow_pickle=False)``);
- ``agent.json`` — ``format`` / ``format_version``, ``policy_sha256`` (the SHA-256 of ``policy.npz``
  it was written with, checked when loading; agents saved before it record none), the policy ``kind`` (``"mlp"``: an SB3
  ``MlpPolicy`` actor; ``"set"``: :class:`~agents.setpolicy.DeviceSetPolicy`; ``"budget"``: the
  device-set policy deciding budget actions, :class:`~agents.budget.BudgetSetPolicy`; ``"capped"``: the one
  deciding capped actions, :class:`~agents.capped.CappedSetPolicy`) with its layout, the
  observation normalisation (mean, variance, clip, epsilon, or null), ``frame_stack``, the config
  the agent was trained on, and the training metadata.

Neither file can run code when it is read, so an agent from anywhere can be evaluated safely.
SB3's ``model.zip`` and ``vecnormalize.pkl`` deserialise Python objects (pickle): loading them
runs whatever code they carry. They stay in the directory for resuming training
(:mod:`agents.checkpoint`) and stochastic ``predict``, and are opened only when asked for
(``load_agent(path, sb3=True)``) — open them only from a source you trust.

``python -m agents.convert DIR [DIR ...]`` writes the portable files of an agent saved before
this format existed (it opens that agent's pickles, so: trusted directories only).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from msenv.atomic import atomic_files

from .policies import KINDS, Policy, policy_class

POLICY_FILE, AGENT_FILE = "policy.npz", "agent.json"
#: the key of agent.json that records policy.npz's SHA-256 (agents saved before it have none)
POLICY_DIGEST = "policy_sha256"
FORMAT, FORMAT_VERSION = "msenv-agent", 1
#: limits a reader checks before it allocates anything (a crafted file is refused, not loaded)
MAX_WEIGHT_BYTES = 256 * 2**20  #: all arrays of policy.npz together, as float64
MAX_ARRAYS = 512
MAX_JSON_BYTES = 16 * 2**20
#: the layout keys of each kind, with the allowed values of each: (type, low, high) or a tuple of choices
_INT = lambda lo, hi: (int, lo, hi)  # noqa: E731
_SET_LAYOUT = {"n_features": _INT(1, 256), "n_globals": _INT(0, 256), "hidden": _INT(1, 4096), "masked": (bool,),
               "pooling": ("mean", "meanmax"), "phi": _INT(1, 16), "psi": _INT(0, 16)}
LAYOUTS = {
    "mlp": {"nvec": (list,), "layers": (list,)},
    "set": _SET_LAYOUT,
    "budget": {**_SET_LAYOUT, "level": _INT(1, 16), "gamma_max": _INT(1, 1000), "per_token": _INT(1, 1000)},
    "capped": {**_SET_LAYOUT, "level": _INT(1, 16), "gamma_max": _INT(1, 1000)},
}
#: the most budget levels (per_token × gamma_max + 1) a budget policy may score per decision
MAX_LEVELS = 100_001


def check_layout(kind: str, layout: dict[str, Any]) -> None:
    """Every key of ``kind``'s layout, none other, each of its type and range (booleans are JSON
    booleans, counts integers); ``ValueError`` naming the key, the value and what is allowed."""
    want = LAYOUTS[kind]
    unknown = sorted(set(layout) - set(want))
    if unknown:
        raise ValueError(f"policy layout key {unknown[0]!r} is not known for kind {kind!r}; allowed: {', '.join(want)}")
    for key, rule in want.items():
        if key not in layout:
            raise ValueError(f"policy layout key {key!r} is missing (kind {kind!r})")
        val = layout[key]
        if rule[0] is bool:
            if not isinstance(val, bool):
                raise ValueError(f"policy layout {key}={val!r} is invalid; allowed: true or false")
        elif rule[0] is int:
            if isinstance(val, bool) or not isinstance(val, int) or not rule[1] <= val <= rule[2]:
                raise ValueError(f"policy layout {key}={val!r} is invalid; allowed: an integer in {rule[1]} … "
                                 f"{rule[2]}")
        elif rule[0] is list:
            if not isinstance(val, list) or not 1 <= len(val) <= 4096:
                raise ValueError(f"policy layout {key}={str(val)[:80]} is invalid; allowed: a list of 1 … 4096 entries")
        elif val not in rule:
            raise ValueError(f"policy layout {key}={val!r} is invalid; allowed: {', '.join(map(repr, rule))}")
    if kind == "mlp":
        if not all(isinstance(n, int) and not isinstance(n, bool) and 2 <= n <= 10_001 for n in layout["nvec"]):
            raise ValueError(f"policy layout nvec={str(layout['nvec'])[:80]} is invalid; allowed: action counts, "
                             "integers in 2 … 10001")
        if not all(op in ("linear", "tanh", "relu") for op in layout["layers"]):
            raise ValueError(f"policy layout layers={str(layout['layers'])[:80]} is invalid; allowed: 'linear', "
                             "'tanh', 'relu'")
    if kind == "budget" and layout["per_token"] * layout["gamma_max"] + 1 > MAX_LEVELS:
        raise ValueError(f"policy layout per_token={layout['per_token']} × gamma_max={layout['gamma_max']} is too many "
                         f"budget levels; allowed: at most {MAX_LEVELS - 1} levels")


def read_weights(nf: Path) -> dict[str, np.ndarray]:
    """The arrays of ``policy.npz``, their headers checked before any is read: a zip of at most
    :data:`MAX_ARRAYS` numeric ``.npy`` members, :data:`MAX_WEIGHT_BYTES` in all, every entry
    finite as float32 (what the decision computes in)."""
    try:
        with zipfile.ZipFile(nf) as z:
            members = z.infolist()
            if len(members) > MAX_ARRAYS:
                raise ValueError(f"{len(members)} arrays; allowed: at most {MAX_ARRAYS}")
            total = 0
            for m in members:
                if not m.filename.endswith(".npy"):
                    raise ValueError(f"member {m.filename!r} is not a .npy array")
                with z.open(m) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read(fh)
                if dtype.kind not in "biuf" or dtype.hasobject:
                    raise ValueError(f"array {m.filename[:-4]!r} has dtype {dtype}; allowed: numbers")
                total += 8 * int(np.prod(shape, dtype=np.float64))
                if total > MAX_WEIGHT_BYTES:
                    raise ValueError(f"the arrays declare more than {MAX_WEIGHT_BYTES // 2**20} MiB; allowed: at most "
                                     "that")
        with np.load(nf, allow_pickle=False) as data:
            arrays = {k: np.asarray(data[k]) for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{nf}: not a valid weights file ({type(e).__name__}: {e})") from None
    for name, a in arrays.items():
        with np.errstate(over="ignore"):
            ok = np.isfinite(a.astype(np.float32)).all()
        if not ok:
            raise ValueError(f"{nf}: array {name!r} holds entries that are not finite in float32; allowed: finite "
                             "numbers of magnitude below 3.4e38")
    return arrays


class ObsNormalization(NamedTuple):
    """VecNormalize's observation transform: clip((obs − mean) / sqrt(var + epsilon), ±clip)."""

    mean: np.ndarray
    var: np.ndarray
    clip: float = 10.0
    epsilon: float = 1e-8

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        z = (np.asarray(obs, dtype=np.float64) - self.mean) / np.sqrt(self.var + self.epsilon)
        return np.clip(z, -self.clip, self.clip)


def normalization_of(vecnormalize) -> ObsNormalization | None:
    """The observation transform of an SB3 ``VecNormalize`` (None when it does not normalise observations)."""
    if vecnormalize is None or not getattr(vecnormalize, "norm_obs", True):
        return None
    rms = vecnormalize.obs_rms
    return ObsNormalization(np.asarray(rms.mean, dtype=np.float64), np.asarray(rms.var, dtype=np.float64),
                            float(vecnormalize.clip_obs), float(vecnormalize.epsilon))


def write_portable(path: str | Path, policy: Policy, normalization: ObsNormalization | None,
                   meta: dict[str, Any]) -> Path:
    """Write ``policy.npz`` and ``agent.json`` for a numpy decision ``policy`` of any kind
    (:class:`~agents.policies.Policy`: its kind, layout and arrays); ``meta`` holds ``config`` and
    whatever else the agent's ``config.json`` holds. The two files are written as one output
    (:func:`msenv.atomic.atomic_files`), and ``agent.json`` records ``policy.npz``'s SHA-256
    (``policy_sha256``), which :func:`read_portable` checks: a pair of files from two saves is
    refused, not loaded."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    layout, arrays = policy.to_portable()
    if normalization is not None:
        arrays["obs.mean"], arrays["obs.var"] = normalization.mean, normalization.var
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    weights = buffer.getvalue()
    norm = None if normalization is None else {"clip": normalization.clip, "epsilon": normalization.epsilon}
    doc = {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": policy.KIND, "policy": layout,
           "normalization": norm, **meta, POLICY_DIGEST: hashlib.sha256(weights).hexdigest()}
    text = json.dumps(doc, indent=2).encode()
    atomic_files({path / POLICY_FILE: lambda fh: fh.write(weights), path / AGENT_FILE: lambda fh: fh.write(text)})
    return path


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_portable(path: str | Path):
    """``(policy, normalization, meta)`` of the portable agent in directory ``path``; reads only
    ``policy.npz`` (no pickles allowed) and ``agent.json``. A missing, corrupt or inconsistent
    file raises ``ValueError`` / ``FileNotFoundError`` naming it."""
    path = Path(path)
    jf, nf = path / AGENT_FILE, path / POLICY_FILE
    if not jf.is_file() or not nf.is_file():
        old = " (it holds SB3's model.zip only: an agent saved before the portable format; convert it once, if you " \
              "trust its source, with: python -m agents.convert DIR)" if (path / "model.zip").exists() else ""
        raise FileNotFoundError(f"no portable agent at {path}: expected {AGENT_FILE} and {POLICY_FILE}{old}")
    if jf.stat().st_size > MAX_JSON_BYTES:
        raise ValueError(f"{jf}: {jf.stat().st_size} bytes; allowed: at most {MAX_JSON_BYTES // 2**20} MiB")
    try:
        meta = json.loads(jf.read_text())
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{jf}: not a valid agent file (JSON: {type(e).__name__}: {str(e)[:120]})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{jf}: not an msenv agent file (format must be {FORMAT!r})")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{jf}: format_version={meta.get('format_version')!r} is not supported; allowed: "
                         f"{FORMAT_VERSION}")
    kind, layout = meta.get("kind"), meta.get("policy")
    if kind not in KINDS:
        raise ValueError(f"{jf}: kind={kind!r} is invalid; allowed: {', '.join(KINDS)}")
    if not isinstance(layout, dict):
        raise ValueError(f"{jf}: policy={str(layout)[:80]} is invalid; allowed: the {kind} policy's layout (an object)")
    try:
        check_layout(kind, layout)
    except ValueError as e:
        raise ValueError(f"{jf}: {e}") from None
    frames = meta.get("frame_stack", 1)
    if (isinstance(frames, bool) or not isinstance(frames, int) or not 1 <= frames <= 64
            or (kind != "mlp" and frames != 1)):
        raise ValueError(f"{jf}: frame_stack={frames!r} is invalid; allowed: "
                         + ("an integer in 1 … 64" if kind == "mlp" else f"1 (a {kind} policy reads one observation)"))
    digest = meta.get(POLICY_DIGEST)
    if digest is not None and (nf.stat().st_size > MAX_WEIGHT_BYTES or digest != _sha256(nf)):
        raise ValueError(f"{nf}: its SHA-256 is not the {POLICY_DIGEST}={str(digest)[:80]!r} that {AGENT_FILE} records "
                         f"(the two files are of different saves); allowed: the pair one save wrote")
    arrays = read_weights(nf)
    try:
        policy = policy_class(kind).from_portable(layout, arrays, nf)
    except KeyError as e:
        raise ValueError(f"{path}: {AGENT_FILE} and {POLICY_FILE} do not match (missing {e})") from None
    except (ValueError, TypeError, IndexError) as e:
        if str(e).startswith(str(nf)):
            raise
        raise ValueError(f"{jf}: the policy layout is invalid or does not match {POLICY_FILE} ({e})") from None
    norm = meta.get("normalization")
    normalization = None
    if norm is not None:
        if not isinstance(norm, dict):
            raise ValueError(f"{jf}: normalization={norm!r} is invalid; allowed: null or "
                             f"{{\"clip\": ..., \"epsilon\": ...}}")
        if "obs.mean" not in arrays or "obs.var" not in arrays:
            raise ValueError(f"{nf}: the normalisation arrays obs.mean/obs.var are missing")
        clip, eps = norm.get("clip"), norm.get("epsilon")
        for name, val, ok in (("clip", clip, lambda v: v > 0), ("epsilon", eps, lambda v: v >= 0)):
            if isinstance(val, bool) or not isinstance(val, (int, float)) or not np.isfinite(val) or not ok(val):
                raise ValueError(f"{jf}: normalization {name}={val!r} is invalid; allowed: a finite number "
                                 + ("> 0" if name == "clip" else "≥ 0"))
        mean, var = arrays["obs.mean"].astype(np.float64), arrays["obs.var"].astype(np.float64)
        width = policy.reads(None, frames)[0]  # an MLP's input width; None for a policy that reads any width
        want = (width,) if width is not None else mean.shape
        if mean.ndim != 1 or mean.shape != var.shape or mean.shape != want or (var < 0).any():
            raise ValueError(f"{nf}: obs.mean {mean.shape} and obs.var {var.shape} must be equal 1-D shapes "
                             f"{want} (the observation the policy reads), the variances ≥ 0")
        normalization = ObsNormalization(mean, var, float(clip), float(eps))
    return policy, normalization, meta
