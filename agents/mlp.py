"""The decision of an SB3 ``MlpPolicy`` actor in numpy: what a saved MLP agent needs to act
(no torch, no pickle)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .threads import one_blas_thread


class NumpyPolicy:
    """Deterministic forward pass of an SB3 ``MlpPolicy`` actor in numpy: ``layers`` is a list of
    ``("linear", (W, b))``, ``("tanh", None)`` or ``("relu", None)``; ``nvec`` the action sizes."""

    def __init__(self, policy) -> None:
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
        self._set(layers, policy.action_space.nvec)

    @classmethod
    def from_layers(cls, layers: list[tuple[str, Any]], nvec) -> NumpyPolicy:
        """The policy of saved ``layers`` (the portable format)."""
        self = cls.__new__(cls)
        for op, p in layers:
            if op not in ("linear", "tanh", "relu"):
                raise ValueError(f"layer {op!r} is not supported; allowed: linear, tanh, relu")
        self._set([(op, None if p is None else (np.asarray(p[0], np.float64), np.asarray(p[1], np.float64)))
                   for op, p in layers], nvec)
        return self

    def _set(self, layers, nvec) -> None:
        self.layers = layers
        self.nvec = np.asarray(nvec)

    def logits(self, x: np.ndarray) -> np.ndarray:
        for kind, p in self.layers:
            if kind == "linear":
                x = x @ p[0] + p[1]
            elif kind == "tanh":
                x = np.tanh(x)
            else:
                x = np.maximum(x, 0.0)
        return x

    def act(self, x: np.ndarray) -> np.ndarray:
        """Argmax of each device's categorical (all devices share one size γ_max + 1), on one BLAS
        thread (:func:`agents.threads.one_blas_thread`)."""
        with one_blas_thread():
            z = self.logits(x)
        return z.reshape(*z.shape[:-1], len(self.nvec), int(self.nvec[0])).argmax(axis=-1)
