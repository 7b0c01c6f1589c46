"""The portable agent format: what deciding needs, in files that loading cannot execute.

A saved agent directory holds, beside SB3's files for resuming training:

- ``policy.npz`` — the decision network's weights, plain float arrays (read with
  ``numpy.load(..., allow_pickle=False)``);
- ``agent.json`` — ``format`` / ``format_version``, the policy ``kind`` (``"mlp"``: an SB3
  ``MlpPolicy`` actor; ``"set"``: :class:`~agents.setpolicy.DeviceSetPolicy`; ``"budget"``: the
  device-set policy deciding budget actions, :class:`~agents.budget.BudgetSetPolicy`) with its layout, the
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

import json
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .mlp import NumpyPolicy

POLICY_FILE, AGENT_FILE = "policy.npz", "agent.json"
FORMAT, FORMAT_VERSION = "msenv-agent", 1
KINDS = ("mlp", "set", "budget")
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
                raise ValueError(f"policy layout {key}={val!r} is invalid; allowed: an integer in {rule[1]} … {rule[2]}")
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
                    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                    shape, _, dtype = read(fh)
                if dtype.kind not in "biuf" or dtype.hasobject:
                    raise ValueError(f"array {m.filename[:-4]!r} has dtype {dtype}; allowed: numbers")
                total += 8 * int(np.prod(shape, dtype=np.float64))
                if total > MAX_WEIGHT_BYTES:
                    raise ValueError(f"the arrays declare more than {MAX_WEIGHT_BYTES // 2**20} MiB; allowed: at most that")
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


def write_portable(path: str | Path, policy, normalization: ObsNormalization | None, meta: dict[str, Any]) -> Path:
    """Write ``policy.npz`` and ``agent.json`` for a numpy decision ``policy``
    (:class:`~agents.mlp.NumpyPolicy` or :class:`~agents.setpolicy.NumpySetPolicy`);
    ``meta`` holds ``config`` and whatever else the agent's ``config.json`` holds."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    if isinstance(policy, NumpyPolicy):
        kind, layout, layers = "mlp", {"nvec": [int(n) for n in policy.nvec], "layers": []}, []
        for i, (op, p) in enumerate(policy.layers):
            if op == "linear":
                arrays[f"layer{i}.weight"], arrays[f"layer{i}.bias"] = p
            layers.append(op)
        layout["layers"] = layers
    else:
        budget = getattr(policy, "layout", None)
        kind = "set" if budget is None else "budget"
        layout = {"n_features": policy.f, "n_globals": policy.g, "hidden": policy.h, "masked": bool(policy.masked),
                  "pooling": policy.pooling, "phi": len(policy.phi), "psi": len(policy.psi)}
        parts = ("phi", "psi")
        if budget is not None:
            layout.update(level=len(policy.level), gamma_max=budget.gamma_max, per_token=budget.per_token)
            parts += ("level",)
        for part in parts:
            for i, (w, b) in enumerate(getattr(policy, part)):
                arrays[f"{part}{i}.weight"], arrays[f"{part}{i}.bias"] = w, b
        arrays["head.weight"], arrays["head.bias"] = policy.head
    if normalization is not None:
        arrays["obs.mean"], arrays["obs.var"] = normalization.mean, normalization.var
    np.savez(path / POLICY_FILE, **arrays)
    norm = None if normalization is None else {"clip": normalization.clip, "epsilon": normalization.epsilon}
    doc = {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": kind, "policy": layout,
           "normalization": norm, **meta}
    (path / AGENT_FILE).write_text(json.dumps(doc, indent=2))
    return path


def read_portable(path: str | Path):
    """``(policy, normalization, meta)`` of the portable agent in directory ``path``; reads only
    ``policy.npz`` (no pickles allowed) and ``agent.json``. A missing, corrupt or inconsistent
    file raises ``ValueError`` / ``FileNotFoundError`` naming it."""
    from .setpolicy import NumpySetPolicy

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
        raise ValueError(f"{jf}: format_version={meta.get('format_version')!r} is not supported; allowed: {FORMAT_VERSION}")
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
    if isinstance(frames, bool) or not isinstance(frames, int) or not 1 <= frames <= 64 or (kind != "mlp" and frames != 1):
        raise ValueError(f"{jf}: frame_stack={frames!r} is invalid; allowed: "
                         + ("an integer in 1 … 64" if kind == "mlp" else f"1 (a {kind} policy reads one observation)"))
    arrays = read_weights(nf)
    try:
        if kind == "mlp":
            ops, nvec = layout["layers"], [int(n) for n in layout["nvec"]]
            if not isinstance(ops, list) or not nvec or len(set(nvec)) != 1 or nvec[0] < 2:
                raise ValueError(f"the mlp layout needs a list of layers and nvec, a list of equal action counts ≥ 2 "
                                 f"(got layers={ops!r}, nvec={layout['nvec']!r})")
            layers = [(op, (arrays[f"layer{i}.weight"], arrays[f"layer{i}.bias"]) if op == "linear" else None)
                      for i, op in enumerate(ops)]
            policy = NumpyPolicy.from_layers(layers, nvec)
            linear = [p for op, p in policy.layers if op == "linear"]
            _check_chain(nf, "layer", linear, None, sum(nvec))
        else:
            f, g, h = int(layout["n_features"]), int(layout["n_globals"]), int(layout["hidden"])
            names = ("phi", "psi", "level") if kind == "budget" else ("phi", "psi")
            parts = {part: [(arrays[f"{part}{i}.weight"], arrays[f"{part}{i}.bias"]) for i in range(int(layout[part]))]
                     for part in names}
            head = (arrays["head.weight"], arrays["head.bias"])
            if kind == "budget":
                from .budget import BudgetLayout, NumpyBudgetPolicy

                gmax, per = layout["gamma_max"], layout["per_token"]
                for name, val in (("gamma_max", gmax), ("per_token", per)):
                    if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                        raise ValueError(f"{name}={val!r} is invalid; allowed: an integer ≥ 1")
                if not layout["masked"]:
                    raise ValueError("masked=false is invalid for a budget policy; allowed: true")
                budget = BudgetLayout(f, g, gmax, per)
                policy = NumpyBudgetPolicy.from_arrays(layout=budget, hidden=h, pooling=str(layout["pooling"]),
                                                       phi=parts["phi"], psi=parts["psi"], level=parts["level"],
                                                       head=head)
            else:
                policy = NumpySetPolicy.from_arrays(
                    n_features=f, n_globals=g, hidden=h, masked=bool(layout["masked"]), pooling=str(layout["pooling"]),
                    phi=parts["phi"], psi=parts["psi"], head=head)
            p = h * (2 if policy.pooling == "meanmax" else 1)
            _check_chain(nf, "phi", policy.phi, f + g, h)
            _check_chain(nf, "psi", policy.psi, h + p, h)
            _check_chain(nf, "head", [policy.head], h, 2 if kind == "budget" else None)
            if kind == "budget":
                _check_chain(nf, "level", policy.level, p + g, 2)
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
            raise ValueError(f"{jf}: normalization={norm!r} is invalid; allowed: null or {{\"clip\": ..., \"epsilon\": ...}}")
        if "obs.mean" not in arrays or "obs.var" not in arrays:
            raise ValueError(f"{nf}: the normalisation arrays obs.mean/obs.var are missing")
        clip, eps = norm.get("clip"), norm.get("epsilon")
        for name, val, ok in (("clip", clip, lambda v: v > 0), ("epsilon", eps, lambda v: v >= 0)):
            if isinstance(val, bool) or not isinstance(val, (int, float)) or not np.isfinite(val) or not ok(val):
                raise ValueError(f"{jf}: normalization {name}={val!r} is invalid; allowed: a finite number "
                                 + ("> 0" if name == "clip" else "≥ 0"))
        mean, var = arrays["obs.mean"].astype(np.float64), arrays["obs.var"].astype(np.float64)
        width = policy.layers[0][1][0].shape[0] if kind == "mlp" and policy.layers and policy.layers[0][0] == "linear" \
            else None
        frames = meta.get("frame_stack", 1)
        want = (width // frames,) if width is not None and isinstance(frames, int) and frames >= 1 else mean.shape
        if mean.ndim != 1 or mean.shape != var.shape or mean.shape != want or (var < 0).any():
            raise ValueError(f"{nf}: obs.mean {mean.shape} and obs.var {var.shape} must be equal 1-D shapes "
                             f"{want} (the observation the policy reads), the variances ≥ 0")
        normalization = ObsNormalization(mean, var, float(clip), float(eps))
    return policy, normalization, meta


def _check_chain(source: Path, name: str, pairs, first_in: int | None, last_out: int | None) -> None:
    """Layers ``(W, b)`` that compose: W 2-D, b its output size, each layer's input the previous
    output, the first input ``first_in`` and the last output ``last_out`` (None: any)."""
    prev = first_in
    for i, (w, b) in enumerate(pairs):
        key = name if name == "head" else f"{name}{i}"
        if w.ndim != 2 or b.shape != (w.shape[1],) or (prev is not None and w.shape[0] != prev):
            raise ValueError(f"{source}: {key}.weight {w.shape} / {key}.bias {b.shape} do not fit the layout "
                             f"(input {prev if prev is not None else 'any'})")
        prev = w.shape[1]
    if last_out is not None and prev != last_out:
        raise ValueError(f"{source}: the {name} layers end with {prev} outputs; the layout needs {last_out}")
