"""The decision of an SB3 ``MlpPolicy`` actor in numpy: what a saved MLP agent needs to act
(no torch, no pickle)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .threads import one_blas_thread


class NumpyPolicy:
    """Deterministic forward pass of an SB3 ``MlpPolicy`` actor in numpy (policy kind ``"mlp"``):
    ``layers`` is a list of ``("linear", (W, b))``, ``("tanh", None)`` or ``("relu", None)``;
    ``nvec`` the action sizes. ``NumpyPolicy(sb3_policy)`` (0.5's form) is
    :meth:`from_torch`."""

    KIND = "mlp"
    masked = False

    def __init__(self, layers, nvec=None) -> None:
        if nvec is None:  # 0.5's NumpyPolicy(sb3_policy)
            layers, nvec = torch_layers(layers)
        for op, _ in layers:
            if op not in ("linear", "tanh", "relu"):
                raise ValueError(f"layer {op!r} is not supported; allowed: linear, tanh, relu")
        self.layers = [(op, None if p is None else (np.asarray(p[0], np.float64), np.asarray(p[1], np.float64)))
                       for op, p in layers]
        self.nvec = np.asarray(nvec)

    @classmethod
    def from_torch(cls, policy) -> NumpyPolicy:
        """The numpy decision of an SB3 ``MlpPolicy`` (its weights copied out)."""
        return cls(*torch_layers(policy))

    # ------------------------------------------------------------------ the Policy protocol
    @property
    def n_choices(self) -> int:
        return int(self.nvec[0]) if len(self.nvec) else 0

    def _width(self) -> int | None:
        return next((p[0].shape[0] for op, p in self.layers if op == "linear"), None)

    def reads(self, config, frame_stack: int) -> tuple[int | None, str]:
        first = self._width()
        width = None if first is None else first // max(frame_stack, 1)
        return width, f"{width} entries" if width is not None else "any width"

    def fits(self, x: np.ndarray, frame_stack: int, mask: bool) -> bool:
        return x.shape[-1] == self.reads(None, frame_stack)[0]

    def device_rows(self, x: np.ndarray) -> int:
        return len(self.nvec)

    def check_config(self, config, name: str, frame_stack: int = 1) -> None:
        from msenv import layout_of

        lay = layout_of(config)
        size, devices = lay.obs_size, lay.slots
        width = self.reads(None, frame_stack)[0]
        if width != size or len(self.nvec) != devices:
            raise ValueError(f"agent {name!r} reads observations of {width} entries and decides for "
                             f"{len(self.nvec)} devices; this env's have {size} entries for {devices} "
                             "devices (an MLP agent acts only in the scenario it was trained on)")

    def to_portable(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays, ops = {}, []
        for i, (op, p) in enumerate(self.layers):
            if op == "linear":
                arrays[f"layer{i}.weight"], arrays[f"layer{i}.bias"] = p
            ops.append(op)
        return {"nvec": [int(n) for n in self.nvec], "layers": ops}, arrays

    @classmethod
    def from_portable(cls, layout: dict[str, Any], arrays: dict[str, np.ndarray], source) -> NumpyPolicy:
        from .policies import check_chain

        ops, nvec = layout["layers"], [int(n) for n in layout["nvec"]]
        if not isinstance(ops, list) or not nvec or len(set(nvec)) != 1 or nvec[0] < 2:
            raise ValueError(f"the mlp layout needs a list of layers and nvec, a list of equal action counts ≥ 2 "
                             f"(got layers={ops!r}, nvec={layout['nvec']!r})")
        layers = [(op, (arrays[f"layer{i}.weight"], arrays[f"layer{i}.bias"]) if op == "linear" else None)
                  for i, op in enumerate(ops)]
        policy = cls(layers, nvec)
        check_chain(source, "layer", [p for op, p in policy.layers if op == "linear"], None, sum(nvec))
        return policy

    # ------------------------------------------------------------------ deciding
    def logits(self, x: np.ndarray) -> np.ndarray:
        for kind, p in self.layers:
            if kind == "linear":
                x = x @ p[0] + p[1]
            elif kind == "tanh":
                x = np.tanh(x)
            else:
                x = np.maximum(x, 0.0)
        return x

    def act(self, x: np.ndarray, context=None) -> np.ndarray:
        """Argmax of each device's categorical (all devices share one size γ_max + 1), on one BLAS
        thread (:func:`agents.threads.one_blas_thread`); the context is not needed."""
        with one_blas_thread():
            z = self.logits(x)
        return z.reshape(*z.shape[:-1], len(self.nvec), int(self.nvec[0])).argmax(axis=-1)


def torch_layers(policy) -> tuple[list[tuple[str, Any]], np.ndarray]:
    """(layers, nvec) of an SB3 ``MlpPolicy``'s actor: its linear layers' weights (as float64, W of
    shape (inputs, outputs)) and activations."""
    import torch.nn as nn
    from stable_baselines3.common.torch_layers import FlattenExtractor

    layers: list[tuple[str, Any]] = []
    if not isinstance(policy.features_extractor, FlattenExtractor):
        raise ValueError("NumpyPolicy supports SB3's FlattenExtractor (MlpPolicy) only")
    for mod in list(policy.mlp_extractor.policy_net) + [policy.action_net]:
        if isinstance(mod, nn.Linear):
            layers.append(("linear", (mod.weight.detach().cpu().numpy().T.astype(np.float64),
                                      mod.bias.detach().cpu().numpy().astype(np.float64))))
        elif isinstance(mod, nn.Tanh):
            layers.append(("tanh", None))
        elif isinstance(mod, nn.ReLU):
            layers.append(("relu", None))
        else:
            raise ValueError(f"NumpyPolicy cannot run layer {mod!r}; supported: Linear, Tanh, ReLU")
    return layers, policy.action_space.nvec
