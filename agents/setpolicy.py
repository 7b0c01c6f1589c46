"""A policy that sees the devices as a set: one network shared by every device (DeepSets).

The observation is K device rows of F entries plus G global entries (``msenv.engine.observation``).
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

from msenv import layout_of

from .distributions import MultiSpinPolicy
from .threads import one_blas_thread


class DeviceSetExtractor(nn.Module):
    """φ per device, the pooled summary over devices (the mean, or the mean and the max), ψ per
    device → (per-device latents [B, K·H], the cell's latent [B, H]) — SB3's ``mlp_extractor``
    interface."""

    def __init__(self, n_devices: int, n_features: int, n_globals: int, hidden: int = 64, masked: bool = False,
                 pooling: str = "mean", cell_latent: bool = False, row_outputs: int = 0) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r} is invalid; allowed: {', '.join(map(repr, POOLINGS))}")
        self.k, self.f, self.g, self.h = n_devices, n_features, n_globals, hidden
        self.masked, self.pooling = masked, pooling
        p = hidden * (2 if pooling == "meanmax" else 1)  # the summary's width
        self.phi = nn.Sequential(nn.Linear(n_features + n_globals, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                                 nn.Tanh())
        self.psi = nn.Sequential(nn.Linear(hidden + p, hidden), nn.Tanh())
        self.rho = nn.Sequential(nn.Linear(p + n_globals, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        #: with ``cell_latent`` the actor's latent starts with the cell's [summary, globals] (p + G
        #: entries), for a head that makes one decision per cell (:mod:`agents.budget`)
        self.cell_latent = cell_latent
        self.cell_dim = (p + n_globals) if cell_latent else 0
        #: with ``row_outputs`` m > 0 each device's latent is mapped here to m outputs (one linear map
        #: shared by every device) and a padded slot's are pinned to (0, PAD_LOGIT, …): the actor's
        #: latent is then m entries per slot, not H + 1 — far less to allocate and zero-fill around
        #: the padding in the backward pass of a large k_max
        self.row_outputs = int(row_outputs)
        if self.row_outputs:
            self.row_head = nn.Linear(hidden, self.row_outputs)
            pinned = th.full((self.row_outputs,), PAD_LOGIT)
            pinned[0] = 0.0
            self.register_buffer("row_pinned", pinned, persistent=False)
        per_slot = self.row_outputs or hidden + int(masked)  # masked: each latent carries its mask
        self.latent_dim_pi = self.cell_dim + n_devices * per_slot
        self.latent_dim_vf = hidden

    def _encode(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor, th.Tensor | None]:
        b, k = obs.shape[0], (obs.shape[1] - self.g) // self.f  # any K: the weights do not depend on it
        dev = obs[:, : k * self.f].reshape(b, k, self.f)
        glob = obs[:, k * self.f:]
        enc = self.phi(th.cat([dev, glob[:, None, :].expand(b, k, self.g)], dim=-1))  # [B, K, H]
        mask = dev[..., -1:] if self.masked else None  # 1 for a device, 0 for a padded slot
        if mask is None:
            pooled = enc.mean(dim=1)
        else:  # over the devices only
            pooled = (enc * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        if self.pooling == "meanmax":  # the max sees the extreme device (the slowest drafter, the worst link)
            top = enc if mask is None else th.where(mask > 0.5, enc, th.full_like(enc, -1.0))
            pooled = th.cat([pooled, top.max(dim=1).values], dim=-1)
        return enc, pooled, glob, mask

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        if self.masked:
            return self._packed(obs, actor=True, critic=True)
        enc, pooled, glob, mask = self._encode(obs)
        return self._actor(enc, pooled, mask, glob), self.rho(th.cat([pooled, glob], dim=-1))

    def _packed(self, obs: th.Tensor, actor: bool, critic: bool):
        """The masked forward pass on the devices only: the rows of padded slots are dropped before
        φ and ψ (in cells of K ~ U{5 … 50} in 50 slots, 45% of the rows), and each layer that
        reads [row, shared] is split as row·W_row + shared·W_shared, the shared part once per
        cell — the same function as :meth:`_encode`/:meth:`_actor` (to float rounding; the tests
        compare them), ≈ 1.8× faster forward and backward. A padded slot's latent is 0 with its
        mask 0 (:class:`DeviceHead` pins its logits)."""
        b, k = obs.shape[0], (obs.shape[1] - self.g) // self.f
        dev = obs[:, : k * self.f].reshape(b, k, self.f)
        glob = obs[:, k * self.f:]
        mask = dev[..., -1] > 0.5
        flat = mask.reshape(-1).nonzero().squeeze(1)  # the device rows, in (cell, slot) order
        cell = th.div(flat, k, rounding_mode="floor")
        w0, b0 = self.phi[0].weight, self.phi[0].bias
        shared = th.addmm(b0, glob, w0[:, self.f:].T).index_select(0, cell)
        z = th.tanh(th.addmm(shared, dev.reshape(-1, self.f).index_select(0, flat), w0[:, : self.f].T))
        enc = th.tanh(self.phi[2](z))  # φ_k [N, H]
        count = mask.sum(dim=1, keepdim=True).clamp(min=1).to(enc.dtype)
        pooled = enc.new_zeros(b, self.h).index_add_(0, cell, enc) / count
        if self.pooling == "meanmax":
            top = enc.new_full((b, self.h), -1.0).scatter_reduce(0, cell[:, None].expand(-1, self.h), enc, "amax")
            pooled = th.cat([pooled, top], dim=-1)
        out = []
        if actor:
            w1, b1 = self.psi[0].weight, self.psi[0].bias
            per_cell = th.addmm(b1, pooled, w1[:, self.h:].T).index_select(0, cell)
            z = th.tanh(th.addmm(per_cell, enc, w1[:, : self.h].T))
            if self.row_outputs:
                latent = self.row_pinned.repeat(b * k, 1).index_copy(0, flat, self.row_head(z)).reshape(b, -1)
            else:
                rows = th.cat([z, z.new_ones(len(flat), 1)], dim=1)
                latent = rows.new_zeros(b * k, self.h + 1).index_copy(0, flat, rows).reshape(b, -1)
            out.append(th.cat([pooled, glob, latent], dim=1) if self.cell_latent else latent)
        if critic:
            out.append(self.rho(th.cat([pooled, glob], dim=-1)))
        return tuple(out)

    def _actor(self, enc: th.Tensor, pooled: th.Tensor, mask: th.Tensor | None, glob: th.Tensor) -> th.Tensor:
        b, k = enc.shape[:2]
        z = self.psi(th.cat([enc, pooled[:, None, :].expand(b, k, pooled.shape[-1])], dim=-1))
        if self.row_outputs:
            out = self.row_head(z)
            latent = (out if mask is None else th.where(mask > 0.5, out, self.row_pinned)).reshape(b, -1)
        else:
            latent = (z if mask is None else th.cat([z, mask], dim=-1)).reshape(b, -1)
        return th.cat([pooled, glob, latent], dim=1) if self.cell_latent else latent

    def forward_actor(self, obs: th.Tensor) -> th.Tensor:
        if self.masked:
            return self._packed(obs, actor=True, critic=False)[0]
        enc, pooled, glob, mask = self._encode(obs)
        return self._actor(enc, pooled, mask, glob)

    def forward_critic(self, obs: th.Tensor) -> th.Tensor:
        if self.masked:
            return self._packed(obs, actor=False, critic=True)[0]
        _, pooled, glob, _ = self._encode(obs)
        return self.rho(th.cat([pooled, glob], dim=-1))


#: the summaries of the cell :class:`DeviceSetExtractor` can pool: the mean of the device encodings,
#: or the mean and the max (element-wise)
POOLINGS = ("mean", "meanmax")
#: the logits of a padded slot: γ = 0 with probability 1 (log-prob 0, entropy 0, no gradient)
PAD_LOGIT = -1e4


class DeviceHead(nn.Module):
    """The same linear map from a device's latent to its γ_max + 1 logits, for every device; with
    ``masked``, a padded slot's logits are pinned to γ = 0, so padding adds nothing to PPO's
    log-probabilities, entropy or gradients."""

    def __init__(self, n_devices: int, hidden: int, n_actions: int, masked: bool = False) -> None:
        super().__init__()
        self.k, self.h, self.masked = n_devices, hidden, masked
        self.linear = nn.Linear(hidden, n_actions)
        pinned = th.full((n_actions,), PAD_LOGIT)
        pinned[0] = 0.0
        self.register_buffer("pinned", pinned, persistent=False)

    @property
    def bias(self) -> nn.Parameter:
        return self.linear.bias

    def forward(self, latent: th.Tensor) -> th.Tensor:
        b = latent.shape[0]
        if not self.masked:
            return self.linear(latent.reshape(b, -1, self.h)).reshape(b, -1)
        z = latent.reshape(b, -1, self.h + 1)
        logits = th.where(z[..., self.h:] > 0.5, self.linear(z[..., : self.h]), self.pinned)
        return logits.reshape(b, -1)


def device_rows(observation_space, k: int, n_devices, hidden, n_globals: int) -> int:
    """The width of a device row of a device-set observation (``k`` device rows, then ``n_globals``
    global entries), after checking the policy's ``n_devices`` against the action's ``k`` slots and
    its ``hidden`` width; a ``ValueError`` naming the value otherwise."""
    if n_devices is not None and n_devices != k:
        raise ValueError(f"n_devices={n_devices!r} is invalid; allowed: the action space's {k} device slots")
    if isinstance(hidden, bool) or not isinstance(hidden, (int, np.integer)) or hidden < 1:
        raise ValueError(f"hidden={hidden!r} is invalid; allowed: an integer >= 1")
    size = observation_space.shape[0] - n_globals
    if size <= 0 or size % k:
        raise ValueError(f"observation of {observation_space.shape[0]} entries is not {k} device rows plus "
                         f"{n_globals} globals")
    return size // k


class DeviceSetPolicy(MultiSpinPolicy):
    """Actor-critic over the devices as a set; ``policy_kwargs``: ``n_devices``, ``n_globals``
    (default 2), ``hidden`` (default 64), ``pooling`` (:data:`POOLINGS`, default "mean") and
    ``masked`` (default False: every row a device; True:
    each row's last entry is 1 for a device, 0 for a padded slot, as
    ``msenv/MultiSpin-Cells-v0`` observes — :func:`set_layout` gives an env's values). Needs
    equal-sized MultiDiscrete actions (one draft length per device slot)."""

    def __init__(self, observation_space, action_space, lr_schedule, *args, n_devices: int | None = None,
                 n_globals: int = 2, hidden: int = 64, masked: bool = False, pooling: str = "mean", **kwargs):
        nvec = getattr(action_space, "nvec", None)
        if nvec is None or np.ndim(nvec) != 1:
            raise ValueError(f"action_space={action_space!r} is not allowed; allowed: a one-dimensional MultiDiscrete "
                             "space (one draft length per device slot)")
        if len(set(int(n) for n in nvec)) != 1:
            raise ValueError(f"action_space nvec={list(map(int, nvec))} is not allowed; allowed: equal sizes per "
                             "device slot")
        if n_devices is None:
            n_devices = len(nvec)
        if isinstance(n_devices, bool) or not isinstance(n_devices, (int, np.integer)) or n_devices != len(nvec):
            raise ValueError(f"n_devices={n_devices!r} is invalid; allowed: the action space's {len(nvec)} device "
                             "slots")
        if isinstance(hidden, bool) or not isinstance(hidden, (int, np.integer)) or hidden < 1:
            raise ValueError(f"hidden={hidden!r} is invalid; allowed: an integer >= 1")
        if isinstance(n_globals, bool) or not isinstance(n_globals, (int, np.integer)) or n_globals < 0:
            raise ValueError(f"n_globals={n_globals!r} is invalid; allowed: an integer >= 0")
        k = int(n_devices)
        size = observation_space.shape[0] - n_globals
        if size <= 0 or size % k:
            raise ValueError(f"observation of {observation_space.shape[0]} entries is not {k} device rows plus "
                             f"{n_globals} globals")
        self._set_dims = (k, size // k, n_globals, hidden, bool(masked), pooling)
        kwargs.setdefault("net_arch", [])
        super().__init__(observation_space, action_space, lr_schedule, *args, **kwargs)

    def numpy_policy(self, config=None) -> NumpySetPolicy:
        """Its deterministic decision in numpy (what a saved agent keeps)."""
        return NumpySetPolicy.from_torch(self)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = DeviceSetExtractor(*self._set_dims)

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        k, _, _, hidden, masked, _ = self._set_dims
        n = int(self.action_space.nvec[0])
        self.action_net = DeviceHead(k, hidden, n, masked)
        if self.ortho_init:
            nn.init.orthogonal_(self.action_net.linear.weight, gain=0.01)
            nn.init.zeros_(self.action_net.linear.bias)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)


def _tanh_mlp(rows: np.ndarray, shared: np.ndarray, layers) -> np.ndarray:
    """The (weight, bias) tanh ``layers`` on [row, shared] for every row: the first layer as
    row·W_row + shared·W_shared, so the shared part (one per cell) is multiplied once."""
    (w, c), *rest = layers
    n = rows.shape[-1]
    z = rows @ w[:n]
    z += shared @ w[n:] + c
    np.tanh(z, out=z)
    for w, c in rest:
        z = z @ w
        z += c
        np.tanh(z, out=z)
    return z


def _f32(pairs) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.asarray(w, np.float32), np.asarray(b, np.float32)) for w, b in pairs]


def numpy_linears(seq) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``nn.Linear`` layers of ``seq`` as float32 (W, b) pairs, W of shape (inputs, outputs)."""
    return [(m.weight.detach().cpu().numpy().T.astype(np.float32), m.bias.detach().cpu().numpy().astype(np.float32))
            for m in seq if isinstance(m, nn.Linear)]


def torch_set_arrays(policy) -> dict:
    """The keyword arguments of :class:`NumpySetPolicy` for a :class:`DeviceSetPolicy`: its layout
    and weights (float32, W of shape (inputs, outputs))."""
    ext = policy.mlp_extractor
    return dict(n_features=ext.f, n_globals=ext.g, hidden=ext.h, masked=ext.masked,
                pooling=getattr(ext, "pooling", "mean"), phi=numpy_linears(ext.phi), psi=numpy_linears(ext.psi),
                head=numpy_linears([policy.action_net.linear])[0])


class NumpySetPolicy:
    """The deterministic decision of a :class:`DeviceSetPolicy` in numpy (policy kind ``"set"``):
    the torch policy's mode, computed in float32 as torch does (numpy's float32 tanh is
    vectorised: ≈ 5× its float64 one), without torch's per-call overhead. Build it from its
    layout and weights (``phi``, ``psi``: lists of (W, b) with W of shape (inputs, outputs);
    ``head``: (W, b)) or with :meth:`from_torch`; ``NumpySetPolicy(torch_policy)`` (0.5's form) is
    :meth:`from_torch`."""

    KIND = "set"

    def __init__(self, policy=None, /, *, n_features: int = 0, n_globals: int = 0, hidden: int = 0,
                 masked: bool = False, pooling: str = "mean", phi=(), psi=(), head=None) -> None:
        if policy is not None:  # 0.5's NumpySetPolicy(torch_policy)
            self.__init__(**torch_set_arrays(policy))
            return
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r} is invalid; allowed: {', '.join(map(repr, POOLINGS))}")
        self.n_features, self.n_globals, self.hidden = int(n_features), int(n_globals), int(hidden)
        self.masked, self.pooling = bool(masked), pooling
        self.phi, self.psi = _f32(phi), _f32(psi)
        self.head = tuple(_f32([head])[0])
        if self.phi[0][0].shape[0] != self.n_features + self.n_globals or self.head[0].shape[0] != self.hidden:
            raise ValueError(f"weights do not match the layout: phi's first layer reads {self.phi[0][0].shape[0]} "
                             f"entries (n_features + n_globals = {self.n_features + self.n_globals}), the head "
                             f"{self.head[0].shape[0]} (hidden = {self.hidden})")

    @classmethod
    def from_torch(cls, policy: DeviceSetPolicy) -> NumpySetPolicy:
        """The numpy decision of a trained :class:`DeviceSetPolicy` (its weights copied out)."""
        return cls(**torch_set_arrays(policy))

    # ------------------------------------------------------------------ the Policy protocol
    @property
    def n_choices(self) -> int:
        return int(self.head[0].shape[1])

    def reads(self, config, frame_stack: int) -> tuple[int | None, str]:
        f, g = self.n_features, self.n_globals
        lay = None if config is None else layout_of(config)
        if self.masked:
            k = lay.slots if lay is not None and lay.masked else None
            trained = f"k_max = {k} as trained, another k_max too" if k else "any k_max"
            return (None if k is None else k * f + g), (
                f"the cell generator's padded observation, k_max·{f} + {g} entries ({trained}), each row's last entry "
                f"(its mask) 0 or 1; a single-cell env's observation goes through act(context, obs), which pads it")
        k = lay.slots if lay is not None and not lay.masked else None
        trained = f"K = {k} as trained, another K too" if k else "any K"
        return (None if k is None else k * f + g), f"K·{f} + {g} entries for K devices ({trained})"

    def fits(self, x: np.ndarray, frame_stack: int, mask: bool) -> bool:
        if frame_stack != 1:
            return True
        f, g, d = self.n_features, self.n_globals, x.shape[-1]
        ok = d > g and (d - g) % f == 0
        if ok and mask and self.masked:
            m = x[..., f - 1: d - g: f]
            ok = bool(np.all((m == 0) | (m == 1)))
        return ok

    def device_rows(self, x: np.ndarray) -> int:
        return (x.shape[-1] - self.n_globals) // self.n_features

    def check_config(self, config, name: str, frame_stack: int = 1) -> None:
        lay = layout_of(config)
        f, g = self.n_features, self.n_globals
        if self.masked:
            padded = lay if lay.masked else lay.padded(lay.slots)  # a single cell's rows, as the generator pads them
            if padded.row != f or padded.n_globals != g:
                raise ValueError(f"agent {name!r} reads device rows of {f} entries; this cell's have "
                                 f"{padded.row} (another model: e.g. the §11 dynamics add entries)")
        elif lay.masked:
            raise ValueError(f"agent {name!r} reads single-cell observations (device rows of {f} entries); "
                             "the cell generator's env shows padded ones: use a cell generator's agent")
        elif lay.row != f or lay.n_globals != g:
            raise ValueError(f"agent {name!r} reads device rows of {f} entries; this env's have "
                             f"{lay.row} (another model: e.g. the §11 dynamics add entries)")

    def to_portable(self) -> tuple[dict, dict[str, np.ndarray]]:
        layout = {"n_features": self.n_features, "n_globals": self.n_globals, "hidden": self.hidden,
                  "masked": self.masked, "pooling": self.pooling, "phi": len(self.phi), "psi": len(self.psi)}
        arrays: dict[str, np.ndarray] = {}
        for part in ("phi", "psi"):
            for i, (w, b) in enumerate(getattr(self, part)):
                arrays[f"{part}{i}.weight"], arrays[f"{part}{i}.bias"] = w, b
        arrays["head.weight"], arrays["head.bias"] = self.head
        return layout, arrays

    @classmethod
    def from_portable(cls, layout: dict, arrays: dict[str, np.ndarray], source) -> NumpySetPolicy:
        from .policies import pairs

        policy = cls(n_features=int(layout["n_features"]), n_globals=int(layout["n_globals"]),
                     hidden=int(layout["hidden"]), masked=bool(layout["masked"]), pooling=str(layout["pooling"]),
                     phi=pairs(arrays, "phi", int(layout["phi"])), psi=pairs(arrays, "psi", int(layout["psi"])),
                     head=(arrays["head.weight"], arrays["head.bias"]))
        policy.check_chains(source, None)
        return policy

    def check_chains(self, source, head_out: int | None) -> None:
        """Every layer fits the next (``ValueError`` naming ``source`` otherwise)."""
        from .policies import check_chain

        f, g, h = self.n_features, self.n_globals, self.hidden
        p = h * (2 if self.pooling == "meanmax" else 1)
        check_chain(source, "phi", self.phi, f + g, h)
        check_chain(source, "psi", self.psi, h + p, h)
        check_chain(source, "head", [self.head], h, head_out)

    # ------------------------------------------------------------------ deciding
    def act(self, x: np.ndarray, context=None) -> np.ndarray:
        """The deterministic draft lengths of observations ``x`` [..., obs] (any number of device
        rows), computed on one BLAS thread (:func:`agents.threads.one_blas_thread`); the context is
        not needed."""
        with one_blas_thread():
            return self._act(x)

    def _latents(self, x: np.ndarray):
        """(observations as rows [B, obs], each device's ψ latent [B, K, H], the cell's pooled summary
        [B, 1, p], the globals [B, 1, G], the device mask [B, K, 1] or None)."""
        x = x.reshape(-1, x.shape[-1])
        f = self.n_features
        b, k = len(x), (x.shape[-1] - self.n_globals) // f  # any K
        dev = x[:, : k * f].reshape(b, k, f)
        glob = x[:, None, k * f:]
        z = _tanh_mlp(dev, glob, self.phi)  # φ on [row, globals]
        mask = None
        if self.masked:
            mask = dev[..., -1:] > 0.5
            pooled = (z * mask).sum(axis=1, keepdims=True) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        else:
            pooled = z.mean(axis=1, keepdims=True)
        if self.pooling == "meanmax":
            top = z if not self.masked else np.where(mask, z, np.float32(-1.0))
            pooled = np.concatenate([pooled, top.max(axis=1, keepdims=True)], axis=-1)
        return x, _tanh_mlp(z, pooled, self.psi), pooled, glob, mask  # ψ on [φ_k, pooled]

    def _act(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        lead = x.shape[:-1]
        x, z, _, _, mask = self._latents(x)
        gamma = (z @ self.head[0] + self.head[1]).argmax(axis=-1)
        if self.masked:
            gamma = np.where(mask[..., 0], gamma, 0)  # a padded slot's pinned decision
        return gamma.reshape(lead + (z.shape[1],))


def set_layout(config) -> dict:
    """The ``policy_kwargs`` of :class:`DeviceSetPolicy` for an env of ``config``: a
    :class:`~msenv.SystemConfig` (K rows, 2 globals) or a :class:`~msenv.envs.cells.CellConfig`
    (k_max rows with their mask, 3 globals)."""
    lay = layout_of(config)
    return dict(n_devices=lay.slots, n_globals=lay.n_globals, masked=lay.masked)


__all__ = ["POOLINGS", "DeviceHead", "DeviceSetExtractor", "DeviceSetPolicy", "NumpySetPolicy", "device_rows",
           "set_layout"]
