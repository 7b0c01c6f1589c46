"""A policy that sees the devices as a set: one network shared by every device (DeepSets).

The observation is K device rows of F entries plus G global entries (``msenv.observation``).
Each device row, with the globals, goes through the same encoder φ; the mean of the encodings is
the cell's summary; each device's logits come from the same head ψ(φ_k, summary), and the value
from ρ(summary). So the weights do not depend on K, permuting the devices permutes the actions,
and what the network learns about one device (a slow drafter, a weak downlink) it applies to
every device — where an MLP over the flat vector has to learn it slot by slot.

:class:`DeviceSetPolicy` is an SB3 ``ActorCriticPolicy`` (with msenv's batched MultiDiscrete
distribution): ``make_ppo(venv, policy="set")`` builds PPO with it; save/load and
:class:`~agents.controller.PPOController` work as for the MLP policy.
"""

from __future__ import annotations

import numpy as np
import torch as th
from torch import nn

from .distributions import MultiSpinPolicy


class DeviceSetExtractor(nn.Module):
    """φ per device, the mean over devices, ψ per device → (per-device latents [B, K·H], the cell's
    latent [B, H]) — SB3's ``mlp_extractor`` interface."""

    def __init__(self, n_devices: int, n_features: int, n_globals: int, hidden: int = 64) -> None:
        super().__init__()
        self.k, self.f, self.g, self.h = n_devices, n_features, n_globals, hidden
        self.phi = nn.Sequential(nn.Linear(n_features + n_globals, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                                 nn.Tanh())
        self.psi = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh())
        self.rho = nn.Sequential(nn.Linear(hidden + n_globals, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.latent_dim_pi = n_devices * hidden
        self.latent_dim_vf = hidden

    def _encode(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        b, k = obs.shape[0], (obs.shape[1] - self.g) // self.f  # any K: the weights do not depend on it
        dev = obs[:, : k * self.f].reshape(b, k, self.f)
        glob = obs[:, k * self.f:]
        enc = self.phi(th.cat([dev, glob[:, None, :].expand(b, k, self.g)], dim=-1))  # [B, K, H]
        return enc, enc.mean(dim=1), glob

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        enc, pooled, glob = self._encode(obs)
        return self._actor(enc, pooled), self.rho(th.cat([pooled, glob], dim=-1))

    def _actor(self, enc: th.Tensor, pooled: th.Tensor) -> th.Tensor:
        b, k = enc.shape[:2]
        return self.psi(th.cat([enc, pooled[:, None, :].expand(b, k, self.h)], dim=-1)).reshape(b, -1)

    def forward_actor(self, obs: th.Tensor) -> th.Tensor:
        enc, pooled, _ = self._encode(obs)
        return self._actor(enc, pooled)

    def forward_critic(self, obs: th.Tensor) -> th.Tensor:
        _, pooled, glob = self._encode(obs)
        return self.rho(th.cat([pooled, glob], dim=-1))


class DeviceHead(nn.Module):
    """The same linear map from a device's latent to its γ_max + 1 logits, for every device."""

    def __init__(self, n_devices: int, hidden: int, n_actions: int) -> None:
        super().__init__()
        self.k, self.h = n_devices, hidden
        self.linear = nn.Linear(hidden, n_actions)

    @property
    def bias(self) -> nn.Parameter:
        return self.linear.bias

    def forward(self, latent: th.Tensor) -> th.Tensor:
        b = latent.shape[0]
        return self.linear(latent.reshape(b, -1, self.h)).reshape(b, -1)


class DeviceSetPolicy(MultiSpinPolicy):
    """Actor-critic over the devices as a set; ``policy_kwargs``: ``n_devices``, ``n_globals``
    (default 2) and ``hidden`` (default 64). Needs equal-sized MultiDiscrete actions (one draft
    length per device)."""

    def __init__(self, observation_space, action_space, lr_schedule, *args, n_devices: int | None = None,
                 n_globals: int = 2, hidden: int = 64, **kwargs):
        k = int(n_devices if n_devices is not None else len(action_space.nvec))
        size = observation_space.shape[0] - n_globals
        if size <= 0 or size % k:
            raise ValueError(f"observation of {observation_space.shape[0]} entries is not {k} device rows plus "
                             f"{n_globals} globals")
        self._set_dims = (k, size // k, n_globals, hidden)
        kwargs.setdefault("net_arch", [])
        super().__init__(observation_space, action_space, lr_schedule, *args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = DeviceSetExtractor(*self._set_dims)

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        k, _, _, hidden = self._set_dims
        n = int(self.action_space.nvec[0])
        self.action_net = DeviceHead(k, hidden, n)
        if self.ortho_init:
            nn.init.orthogonal_(self.action_net.linear.weight, gain=0.01)
            nn.init.zeros_(self.action_net.linear.bias)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)


class NumpySetPolicy:
    """The deterministic decision of a :class:`DeviceSetPolicy` in numpy (its weights copied out):
    identical actions to the torch policy's mode, without torch's per-call overhead."""

    def __init__(self, policy: DeviceSetPolicy) -> None:
        ext = policy.mlp_extractor

        def linears(seq):
            return [(m.weight.detach().cpu().numpy().T.astype(np.float64), m.bias.detach().cpu().numpy().astype(np.float64))
                    for m in seq if isinstance(m, nn.Linear)]

        self.k, self.f, self.g, self.h = ext.k, ext.f, ext.g, ext.h
        self.phi, self.psi = linears(ext.phi), linears(ext.psi)
        head = policy.action_net.linear
        self.head = (head.weight.detach().cpu().numpy().T.astype(np.float64), head.bias.detach().cpu().numpy().astype(np.float64))

    def act(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        lead = x.shape[:-1]
        x = x.reshape(-1, x.shape[-1])
        b, k = len(x), (x.shape[-1] - self.g) // self.f  # any K
        dev = x[:, : k * self.f].reshape(b, k, self.f)
        glob = np.broadcast_to(x[:, None, k * self.f:], (b, k, self.g))
        z = np.concatenate([dev, glob], axis=-1)
        for w, c in self.phi:
            z = np.tanh(z @ w + c)
        pooled = np.broadcast_to(z.mean(axis=1, keepdims=True), z.shape)
        z = np.concatenate([z, pooled], axis=-1)
        for w, c in self.psi:
            z = np.tanh(z @ w + c)
        logits = z @ self.head[0] + self.head[1]
        return logits.argmax(axis=-1).reshape(lead + (k,))


__all__ = ["DeviceHead", "DeviceSetExtractor", "DeviceSetPolicy", "NumpySetPolicy"]
