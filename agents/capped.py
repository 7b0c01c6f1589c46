"""The capped action's policy: a cell-level budget level and each device's own length under it.

The action is :class:`msenv.envs.actions.CappedAction`'s [ℓ, γ_1 … γ_K]: one budget level for the
cell (τ = ℓ · the slowest device's time per token) and each device's length, played as
γ_k^eff = min(γ_k, ⌊τ / T_k^dft⌋). The round's drafting time is one cell-level choice; a device's
own entry only decides how much of the budget it uses (0: off). Where a rule's decisions couple the
devices through the round's drafting time (on n-gram traces: every device at 0, or every device
whose match is likely at 3–5 tokens), independent per-device lengths cloned from the rule let a few
devices draft where the rule drafts none and the whole round pays for it; the capped action keeps
that decision in one place and still represents every draft-length vector.

:class:`CappedSetPolicy` is the SB3 actor-critic: :class:`~agents.setpolicy.DeviceSetExtractor`
(unmasked: a single cell's K device rows) with a cell latent; the level's γ_max + 1 logits from an
MLP on the cell's [summary, globals] (a plain categorical), each device's γ_max + 1 logits from the
extractor's ``row_head`` (one linear map shared by every device). The K + 1 choices are independent
categoricals (log-probability: their sum); the deterministic decision is each one's mode.
:class:`NumpyCappedPolicy` is its decision in numpy (policy kind ``"capped"`` of the portable files),
which maps the action to draft lengths itself with the round context's exact drafting times, so a
saved agent is a controller like any other.
"""

from __future__ import annotations

import numpy as np
import torch as th
from torch import nn

from msenv.envs.actions import CappedAction

from .budget import BudgetLayout, speed_ratios
from .distributions import MultiSpinPolicy
from .setpolicy import DeviceSetExtractor, NumpySetPolicy, device_rows, numpy_linears
from .threads import one_blas_thread


class CappedHead(nn.Module):
    """The level's logits from the cell's [summary, globals] (one hidden tanh layer), followed by the
    devices' logits the extractor's ``row_head`` wrote: [B, (K + 1)·(γ_max + 1)]."""

    def __init__(self, cell_dim: int, hidden: int, n_choices: int) -> None:
        super().__init__()
        self.cell_dim = cell_dim
        self.level = nn.Sequential(nn.Linear(cell_dim, hidden), nn.Tanh(), nn.Linear(hidden, n_choices))

    def forward(self, latent: th.Tensor) -> th.Tensor:
        return th.cat([self.level(latent[:, : self.cell_dim]), latent[:, self.cell_dim:]], dim=1)


class CappedSetPolicy(MultiSpinPolicy):
    """The device-set actor-critic deciding capped actions (module docstring): ``policy_kwargs``
    ``n_devices`` (K), ``n_globals``, ``hidden`` (default 64), ``pooling``; the action space is
    ``MultiDiscrete([γ_max + 1] * (K + 1))``."""

    def __init__(self, observation_space, action_space, lr_schedule, *args, n_devices: int | None = None,
                 n_globals: int = 3, hidden: int = 64, pooling: str = "mean", **kwargs):
        nvec = [int(n) for n in getattr(action_space, "nvec", [])]
        if len(nvec) < 2 or len(set(nvec)) != 1 or nvec[0] < 2:
            raise ValueError(f"action_space={action_space!r} is not allowed; allowed: MultiDiscrete([γ_max + 1] * "
                             "(K + 1)), a budget level and a length per device (msenv.envs.actions.CappedAction)")
        k = len(nvec) - 1
        self._set_dims = (k, device_rows(observation_space, k, n_devices, hidden, n_globals), n_globals, hidden, False,
                          pooling)
        self.n_choice = nvec[0]
        kwargs.setdefault("net_arch", [])
        super().__init__(observation_space, action_space, lr_schedule, *args, **kwargs)

    def numpy_policy(self, config=None) -> NumpyCappedPolicy:
        """Its deterministic decision in numpy (what a saved agent keeps)."""
        return NumpyCappedPolicy.from_torch(self)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = DeviceSetExtractor(*self._set_dims, cell_latent=True, row_outputs=self.n_choice)

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        hidden = self._set_dims[3]
        self.action_net = CappedHead(self.mlp_extractor.cell_dim, hidden, self.n_choice)
        if self.ortho_init:
            nn.init.orthogonal_(self.action_net.level[2].weight, gain=0.01)
            nn.init.zeros_(self.action_net.level[2].bias)
            nn.init.orthogonal_(self.mlp_extractor.row_head.weight, gain=0.01)
            nn.init.zeros_(self.mlp_extractor.row_head.bias)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)


class NumpyCappedPolicy(NumpySetPolicy):
    """The deterministic decision of a :class:`CappedSetPolicy` in numpy (float32, as torch; policy
    kind ``"capped"``): each choice's mode, mapped to draft lengths by
    :class:`~msenv.envs.actions.CappedAction` with the round context's exact drafting times (without
    a context: the times the observation's ``draft_speed`` entries show)."""

    KIND = "capped"

    def __init__(self, *, n_features: int, n_globals: int, hidden: int, pooling: str, gamma_max: int, phi, psi,
                 level, head, speed: int = 1) -> None:
        super().__init__(n_features=n_features, n_globals=n_globals, hidden=hidden, masked=False, pooling=pooling,
                         phi=phi, psi=psi, head=head)
        self.level = [(np.asarray(w, np.float32), np.asarray(b, np.float32)) for w, b in level]
        self.gamma_max, self.speed = int(gamma_max), int(speed)

    @classmethod
    def from_torch(cls, policy: CappedSetPolicy) -> NumpyCappedPolicy:
        ext, head = policy.mlp_extractor, policy.action_net
        return cls(n_features=ext.f, n_globals=ext.g, hidden=ext.h, pooling=ext.pooling,
                   gamma_max=policy.n_choice - 1, phi=numpy_linears(ext.phi), psi=numpy_linears(ext.psi),
                   level=numpy_linears(head.level), head=numpy_linears([ext.row_head])[0])

    @property
    def n_choices(self) -> int:
        return self.gamma_max + 1

    def to_portable(self) -> tuple[dict, dict[str, np.ndarray]]:
        layout, arrays = super().to_portable()
        layout.update(level=len(self.level), gamma_max=self.gamma_max)
        for i, (w, b) in enumerate(self.level):
            arrays[f"level{i}.weight"], arrays[f"level{i}.bias"] = w, b
        return layout, arrays

    @classmethod
    def from_portable(cls, layout: dict, arrays: dict[str, np.ndarray], source) -> NumpyCappedPolicy:
        from .policies import check_chain, pairs

        if layout["masked"]:
            raise ValueError("masked=true is invalid for a capped policy; allowed: false (a single cell's rows)")
        h = int(layout["hidden"])
        policy = cls(n_features=int(layout["n_features"]), n_globals=int(layout["n_globals"]), hidden=h,
                     pooling=str(layout["pooling"]), gamma_max=int(layout["gamma_max"]),
                     phi=pairs(arrays, "phi", int(layout["phi"])), psi=pairs(arrays, "psi", int(layout["psi"])),
                     level=pairs(arrays, "level", int(layout["level"])),
                     head=(arrays["head.weight"], arrays["head.bias"]))
        policy.check_chains(source, policy.n_choices)
        p = h * (2 if policy.pooling == "meanmax" else 1)
        check_chain(source, "level", policy.level, p + policy.n_globals, policy.n_choices)
        return policy

    def decide(self, x: np.ndarray) -> np.ndarray:
        """The capped actions [B, K + 1] (each choice's mode) of observations ``x`` [B, obs]."""
        x, z, pooled, glob, _ = self._latents(np.asarray(x, dtype=np.float32))
        cell = np.concatenate([pooled, glob], axis=-1)[:, 0]
        *hidden_layers, (w, b) = self.level
        for wi, bi in hidden_layers:
            cell = np.tanh(cell @ wi + bi)
        level = (cell @ w + b).argmax(axis=-1)
        gamma = (z @ self.head[0] + self.head[1]).argmax(axis=-1)
        return np.concatenate([level[:, None], gamma], axis=1)

    def _act(self, x: np.ndarray, context=None) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        lead = x.shape[:-1]
        rows = x.reshape(-1, x.shape[-1])
        action = self.decide(rows)
        if context is not None:
            t = np.asarray(context.t_draft, dtype=np.float64).reshape(-1, np.shape(context.t_draft)[-1])
        else:  # the drafting times as the observation shows them (a ratio to the reference: the map is scale-free)
            t = speed_ratios(rows, BudgetLayout(self.n_features, self.n_globals, self.gamma_max, speed=self.speed))[0]
            t = np.maximum(t, 1e-6)  # an entry no env writes (a ratio ≤ 0) reads as the fastest device
        gamma = CappedAction(self.gamma_max).lengths(action, t)
        return gamma.reshape(lead + (gamma.shape[-1],))

    def act(self, x: np.ndarray, context=None) -> np.ndarray:
        """The deterministic draft lengths of observations ``x`` [..., obs], on one BLAS thread."""
        with one_blas_thread():
            return self._act(x, context)


__all__ = ["CappedHead", "CappedSetPolicy", "NumpyCappedPolicy"]
