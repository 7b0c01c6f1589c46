"""The budget action: a cell's draft lengths as one drafting-time budget and a device set.

Every model-based controller's answer in a cell has the same shape. The round waits for its
slowest drafter, so a device whose draft ends before the slowest one's could draft more tokens for
free: the answers give every drafting device as many tokens as fit in one common time budget τ,
γ_k = ⌊τ / T_k^dft⌋, and switch some devices off (γ_k = 0: a device with a poor link whose
correction would cost the whole cell more time than its tokens are worth). Restricted to that
shape — τ on a grid of quarter tokens of the fastest device, each device on or off — the best
action scores what the local search and the greedy score (measured on the validation cells:
docs/results/cells-tried.md).

So a policy can decide in that shape instead of choosing K draft lengths independently:

- **one level** ℓ ∈ {0, …, L − 1} per cell (L = :data:`LEVELS_PER_TOKEN`·γ_max + 1): the budget
  τ = ℓ / 4 tokens of the fastest device, i.e. τ = (ℓ/4)·min_k T_k^dft;
- **one bit per device**: on (draft ⌊τ / T_k^dft⌋ tokens, at most γ_max) or off (draft 0).

The cell-level choice is what makes the lengths follow K (one decision whose effect is large,
instead of K small coordinated ones: with independent lengths, one device drafting longer than
the others only makes the round wait for it), and the bits learn which devices to leave out.

:class:`BudgetActions` is the SB3 ``VecEnvWrapper`` that plays such actions in the cell
generator's envs; :class:`BudgetSetPolicy` the device-set policy that decides them; the saved
agent's numpy decision (:class:`NumpyBudgetPolicy`) maps its decision to draft lengths itself, so
it is a controller like any other. The map is the env-side action type
:class:`msenv.envs.actions.BudgetAction`: it reads each device's exact drafting time (the round
context's ``t_draft``, the cell generators' ``draft_times``); only a bare observation, without its
context, is read back from the speed entries.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.distributions import MultiCategoricalDistribution
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from torch import nn

from msenv.engine.cells import SPEED_FEATURE
from msenv.envs.actions import LEVELS_PER_TOKEN, BudgetAction
from msenv.envs.sb3 import SB3VecEnv, what_if

from .distributions import MultiSpinPolicy
from .setpolicy import DeviceSetExtractor, NumpySetPolicy, device_rows, numpy_linears
from .threads import one_blas_thread

#: the initial logits of a device's bit (off, on): on with probability ≈ 0.88
ON_PRIOR = (0.0, 2.0)


class BudgetLayout(NamedTuple):
    """Where the budget map reads the cell generator's observation, and the grid of τ."""

    n_features: int  #: entries per device row (the mask last)
    n_globals: int  #: global entries after the device rows
    gamma_max: int  #: the longest draft
    per_token: int = LEVELS_PER_TOKEN  #: levels per token of the fastest device
    speed: int = 1  #: the column of a device row's drafting-speed entry

    @property
    def n_levels(self) -> int:
        return self.per_token * self.gamma_max + 1

    @property
    def action(self) -> BudgetAction:
        """The env-side action type that maps a budget action to draft lengths."""
        return BudgetAction(self.gamma_max, self.per_token)


def budget_layout(config) -> BudgetLayout:
    """The layout of a cell generator's (:class:`~msenv.envs.cells.CellConfig`) observation; a
    single-cell config is refused (``ValueError``): the map reads the generator's speed entry."""
    from msenv import layout_of

    lay = layout_of(config)
    if not lay.masked:
        raise ValueError(f"the budget action needs a cell generator's config (msenv/MultiSpin-Cells-v0), got "
                         f"{type(config).__name__}; allowed: a CellConfig")
    return BudgetLayout(lay.row, lay.n_globals, lay.gamma_max, speed=lay.device.index(SPEED_FEATURE))


def speed_ratios(obs: np.ndarray, layout: BudgetLayout) -> tuple[np.ndarray, np.ndarray]:
    """(T_k^dft / T_dft,ref [B, K], the device mask [B, K]) from cell-generator observations [B, obs]."""
    f = layout.n_features
    k = (obs.shape[-1] - layout.n_globals) // f
    rows = obs[:, : k * f].reshape(len(obs), k, f)
    x = np.clip(rows[..., layout.speed].astype(np.float64), -1.0 + 1e-7, 1.0 - 1e-7)
    return 1.0 + np.arctanh(x), rows[..., f - 1] > 0.5


def budget_lengths(level: np.ndarray, on: np.ndarray, obs: np.ndarray, layout: BudgetLayout,
                   t_draft: np.ndarray | None = None) -> np.ndarray:
    """Draft lengths [B, K] of budget actions: ``level`` [B] (τ = level / per_token tokens of the
    fastest device), ``on`` [B, K] (0/1 per device slot), in cells observed as ``obs`` [B, obs]
    whose devices draft at ``t_draft`` [B, K] s per token (padded slots 0): the env-side
    :class:`~msenv.envs.actions.BudgetAction`. Without ``t_draft`` (an observation alone, as in
    ``predict``) the drafting times are read back from the observation's speed entries, to float32
    precision. A device on drafts ⌊τ / T_k^dft⌋ tokens (at most γ_max), a device off and a padded
    slot 0."""
    if t_draft is not None:
        return layout.action.lengths(level, on, t_draft)
    obs = np.asarray(obs)
    ratio, mask = speed_ratios(obs.reshape(-1, obs.shape[-1]), layout)
    fastest = np.where(mask, ratio, np.inf).min(axis=1, keepdims=True)
    fastest = np.where(np.isfinite(fastest), fastest, 1.0)
    tau = np.asarray(level, dtype=np.float64).reshape(-1, 1) / layout.per_token * fastest
    gamma = np.minimum(np.floor(tau / ratio + 1e-9), layout.gamma_max).astype(np.int64)
    on = np.asarray(on).reshape(gamma.shape) > 0
    return np.where(on & mask, gamma, 0)


def split_action(actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(levels [B], device bits [B, K]) of budget actions [B, 1 + K]."""
    actions = np.asarray(actions).reshape(-1, np.shape(actions)[-1])
    return actions[:, 0], actions[:, 1:]


def draft_times(venv: VecEnv) -> np.ndarray:
    """Each sub-env's device slots' drafting times [n, k_max] (s per token, padded slots 0) of a
    cell generator's SB3 VecEnv: the batched env's, or each single env's ``draft_times``."""
    while isinstance(venv, VecEnvWrapper):
        venv = venv.venv
    if isinstance(venv, SB3VecEnv):
        return venv.venv.draft_times
    return np.stack(venv.get_attr("draft_times"))


class BudgetActions(VecEnvWrapper):
    """Plays budget actions (``MultiDiscrete([L] + [2] * k_max)``: the level, then one bit per
    device slot) in a cell generator's SB3 VecEnv, as the env-side
    :class:`~msenv.envs.actions.BudgetAction` maps them with each device's exact drafting time.
    Forwards ``what_if`` the same way."""

    def __init__(self, venv: VecEnv, layout: BudgetLayout) -> None:
        k = (venv.observation_space.shape[0] - layout.n_globals) // layout.n_features
        super().__init__(venv, action_space=layout.action.space(k))
        self.layout = layout
        self._obs: np.ndarray | None = None

    def lengths(self, actions: np.ndarray) -> np.ndarray:
        """The draft lengths [n, k_max] of budget ``actions`` [n, 1 + k_max] in the current cells."""
        if self._obs is None:
            raise RuntimeError("call reset() first")
        level, on = split_action(actions)
        return self.layout.action.lengths(level, on, draft_times(self.venv))

    def reset(self):
        self._obs = self.venv.reset()
        return self._obs

    def step_async(self, actions: np.ndarray) -> None:
        self.venv.step_async(self.lengths(actions))

    def step_wait(self):
        obs, rew, done, infos = self.venv.step_wait()
        self._obs = obs
        return obs, rew, done, infos

    def what_if(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return what_if(self.venv, self.lengths(actions))


class BudgetDistribution(MultiCategoricalDistribution):
    """One categorical over the L levels and one over (off, on) per device slot, from logits
    [B, L + 2K]; log-probabilities, entropies and samples computed in one batched pass (a padded
    slot's logits pin it off: log-probability 0, entropy 0)."""

    def __init__(self, n_levels: int, n_devices: int) -> None:
        super().__init__([n_levels] + [2] * n_devices)
        self.n_levels, self.k = int(n_levels), int(n_devices)
        self.lp_level: th.Tensor | None = None
        self.lp_dev: th.Tensor | None = None

    def proba_distribution(self, action_logits: th.Tensor) -> BudgetDistribution:
        self.lp_level = th.log_softmax(action_logits[:, : self.n_levels], dim=-1)
        self.lp_dev = th.log_softmax(action_logits[:, self.n_levels:].reshape(-1, self.k, 2), dim=-1)
        return self

    @property
    def distribution(self):
        return []

    @distribution.setter
    def distribution(self, value) -> None:  # SB3's base __init__ assigns None
        if value is not None:
            raise AttributeError("BudgetDistribution.distribution is derived from the logits")

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        actions = actions.long()
        level = self.lp_level.gather(1, actions[:, :1]).squeeze(1)
        return level + self.lp_dev.gather(-1, actions[:, 1:, None]).squeeze(-1).sum(dim=1)

    def entropy(self) -> th.Tensor:
        def h(lp):
            lp = lp.clamp(min=th.finfo(lp.dtype).min)
            return -(lp.exp() * lp).sum(dim=-1)

        return h(self.lp_level) + h(self.lp_dev).sum(dim=1)

    @staticmethod
    def _gumbel_max(lp: th.Tensor) -> th.Tensor:
        u = th.rand_like(lp).clamp_(min=th.finfo(lp.dtype).tiny)
        return th.argmax(lp - th.log(-th.log(u)), dim=-1)

    def sample(self) -> th.Tensor:
        return th.cat([self._gumbel_max(self.lp_level)[:, None], self._gumbel_max(self.lp_dev)], dim=1)

    def mode(self) -> th.Tensor:
        return th.cat([self.lp_level.argmax(dim=-1, keepdim=True), self.lp_dev.argmax(dim=-1)], dim=1)


def level_logits(z, n_levels: int, xp=th):
    """The level's logits from the level network's two outputs ``z`` [B, 2]: a discretised normal
    over the levels 0 … L − 1, −½((ℓ − μ)/σ)², with centre μ = (L − 1)·sigmoid(z₀) and spread
    σ = σ_min + σ₀·(L − 1)·exp(clip(z₁, −6, 1)) (:data:`LEVEL_SPREAD`). Ordered levels: one
    number, μ, moves with the cell — a categorical with a free logit per level learns the average
    cell's level through its biases long before the network learns to tell cells apart. ``xp``:
    torch or numpy (the portable decision computes the same in float32)."""
    sigma_min, sigma0 = LEVEL_SPREAD
    top = n_levels - 1
    if xp is th:
        mu = top * th.sigmoid(z[:, :1])
        sigma = sigma_min + sigma0 * top * th.exp(z[:, 1:].clamp(-6.0, 1.0))
        grid = th.arange(n_levels, dtype=z.dtype, device=z.device)
    else:
        z = z.astype(np.float32)
        mu = np.float32(top) / (np.float32(1) + np.exp(-z[:, :1]))
        sigma = np.float32(sigma_min) + np.float32(sigma0 * top) * np.exp(np.clip(z[:, 1:], -6.0, 1.0))
        grid = np.arange(n_levels, dtype=np.float32)
    return -0.5 * ((grid - mu) / sigma) ** 2


#: (σ_min in levels, σ₀ as a share of the levels) of :func:`level_logits`: at the start σ ≈ 12 levels,
#: and never below 1.5 levels — the level keeps exploring the steps around its centre (with 0.25 it
#: settled on a nearby step: validation IQM 1.064 against 1.0635, the same within one seed, and
#: 0.97 against 0.98 at K = 5 where the steps are coarse; docs/results/cells-tried.md)
LEVEL_SPREAD = (1.5, 0.15)


class BudgetHead(nn.Module):
    """The level's logits from the cell's [summary, globals] (one hidden tanh layer, then the centre
    and spread of :func:`level_logits`); each device's (off, on) logits come from the extractor
    (its ``row_head``: one linear map shared by every device, a padded slot pinned off)."""

    def __init__(self, cell_dim: int, hidden: int, n_levels: int) -> None:
        super().__init__()
        self.cell_dim, self.n_levels = cell_dim, n_levels
        self.level = nn.Sequential(nn.Linear(cell_dim, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, latent: th.Tensor) -> th.Tensor:
        level = level_logits(self.level(latent[:, : self.cell_dim]), self.n_levels)
        return th.cat([level, latent[:, self.cell_dim:]], dim=1)


class BudgetSetPolicy(MultiSpinPolicy):
    """The device-set actor-critic (:class:`~agents.setpolicy.DeviceSetExtractor`, masked, on the
    cell generator's observation) deciding budget actions: ``policy_kwargs`` ``n_devices``
    (k_max), ``n_globals``, ``hidden`` (default 64), ``pooling``; the action space is
    ``MultiDiscrete([L] + [2] * n_devices)`` (:class:`BudgetActions`)."""

    def __init__(self, observation_space, action_space, lr_schedule, *args, n_devices: int | None = None,
                 n_globals: int = 3, hidden: int = 64, masked: bool = True, pooling: str = "mean", **kwargs):
        nvec = [int(n) for n in getattr(action_space, "nvec", [])]
        if len(nvec) < 2 or nvec[0] < 2 or any(n != 2 for n in nvec[1:]):
            raise ValueError(f"action_space={action_space!r} is not allowed; allowed: MultiDiscrete([L] + [2] * k), "
                             "a budget level and a bit per device slot (agents.budget.BudgetActions)")
        k = len(nvec) - 1
        if n_devices is not None and n_devices != k:
            raise ValueError(f"n_devices={n_devices!r} is invalid; allowed: the action space's {k} device slots")
        if not masked:
            raise ValueError("masked=False is not allowed: the budget action reads the cell generator's masked rows")
        row = device_rows(observation_space, k, n_devices, hidden, n_globals)
        self._set_dims = (k, row, n_globals, hidden, True, pooling)
        self.n_levels = nvec[0]
        kwargs.setdefault("net_arch", [])
        super().__init__(observation_space, action_space, lr_schedule, *args, **kwargs)

    def numpy_policy(self, config) -> NumpyBudgetPolicy:
        """Its deterministic decision in numpy in the cells of ``config`` (what a saved agent keeps)."""
        return NumpyBudgetPolicy.from_torch(self, budget_layout(config))

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = DeviceSetExtractor(*self._set_dims, cell_latent=True, row_outputs=2)

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        k, hidden = self._set_dims[0], self._set_dims[3]
        self.action_dist = BudgetDistribution(self.n_levels, k)
        self.action_net = BudgetHead(self.mlp_extractor.cell_dim, hidden, self.n_levels)
        bits = self.mlp_extractor.row_head
        if self.ortho_init:
            nn.init.orthogonal_(self.action_net.level[2].weight, gain=0.1)
            nn.init.orthogonal_(bits.weight, gain=0.01)
            nn.init.zeros_(self.action_net.level[2].bias)
        with th.no_grad():
            bits.bias.copy_(th.tensor(ON_PRIOR))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_action_dist_from_latent(self, latent_pi: th.Tensor):
        return self.action_dist.proba_distribution(action_logits=self.action_net(latent_pi))


class NumpyBudgetPolicy(NumpySetPolicy):
    """The deterministic decision of a :class:`BudgetSetPolicy` in numpy (float32, as torch; policy
    kind ``"budget"``): the most likely level and bits, mapped to draft lengths by
    :func:`budget_lengths` — so it returns draft lengths, as every controller does. Build it from
    its ``layout`` (:class:`BudgetLayout`) and weights (``level``: the level head's layers) or with
    :meth:`from_torch`."""

    KIND = "budget"

    def __init__(self, *, layout: BudgetLayout, hidden: int, pooling: str, phi, psi, level, head) -> None:
        super().__init__(n_features=layout.n_features, n_globals=layout.n_globals, hidden=hidden, masked=True,
                         pooling=pooling, phi=phi, psi=psi, head=head)
        self.level = [(np.asarray(w, np.float32), np.asarray(b, np.float32)) for w, b in level]
        self.layout = layout

    @classmethod
    def from_torch(cls, policy: BudgetSetPolicy, layout: BudgetLayout) -> NumpyBudgetPolicy:
        """The numpy decision of a trained :class:`BudgetSetPolicy` in cells of ``layout``."""
        ext, head = policy.mlp_extractor, policy.action_net
        return cls(layout=layout, hidden=ext.h, pooling=ext.pooling, phi=numpy_linears(ext.phi),
                   psi=numpy_linears(ext.psi), level=numpy_linears(head.level), head=numpy_linears([ext.row_head])[0])

    # ------------------------------------------------------------------ the Policy protocol
    @property
    def n_choices(self) -> int:
        return self.layout.gamma_max + 1

    def to_portable(self) -> tuple[dict, dict[str, np.ndarray]]:
        layout, arrays = super().to_portable()
        layout.update(level=len(self.level), gamma_max=self.layout.gamma_max, per_token=self.layout.per_token)
        for i, (w, b) in enumerate(self.level):
            arrays[f"level{i}.weight"], arrays[f"level{i}.bias"] = w, b
        return layout, arrays

    @classmethod
    def from_portable(cls, layout: dict, arrays: dict[str, np.ndarray], source) -> NumpyBudgetPolicy:
        from .policies import check_chain, pairs

        for name in ("gamma_max", "per_token"):
            val = layout[name]
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValueError(f"{name}={val!r} is invalid; allowed: an integer ≥ 1")
        if not layout["masked"]:
            raise ValueError("masked=false is invalid for a budget policy; allowed: true")
        h = int(layout["hidden"])
        policy = cls(layout=BudgetLayout(int(layout["n_features"]), int(layout["n_globals"]), layout["gamma_max"],
                                         layout["per_token"]),
                     hidden=h, pooling=str(layout["pooling"]), phi=pairs(arrays, "phi", int(layout["phi"])),
                     psi=pairs(arrays, "psi", int(layout["psi"])), level=pairs(arrays, "level", int(layout["level"])),
                     head=(arrays["head.weight"], arrays["head.bias"]))
        policy.check_chains(source, 2)
        p = h * (2 if policy.pooling == "meanmax" else 1)
        check_chain(source, "level", policy.level, p + policy.n_globals, 2)
        return policy

    # ------------------------------------------------------------------ deciding
    def decide(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(levels [B], device bits [B, K]) of observations ``x`` [B, obs]."""
        x, z, pooled, glob, mask = self._latents(np.asarray(x, dtype=np.float32))
        cell = np.concatenate([pooled, glob], axis=-1)[:, 0]
        *hidden_layers, (w, b) = self.level
        for wi, bi in hidden_layers:
            cell = np.tanh(cell @ wi + bi)
        level = level_logits(cell @ w + b, self.layout.n_levels, np).argmax(axis=-1)
        on = (z @ self.head[0] + self.head[1]).argmax(axis=-1) * mask[..., 0]
        return level, on

    def _act(self, x: np.ndarray, context=None) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        lead = x.shape[:-1]
        rows = x.reshape(-1, x.shape[-1])
        level, on = self.decide(rows)
        t_draft = None
        if context is not None:  # the exact drafting times, padded to the observation's slots
            slots = self.device_rows(rows)
            t = np.asarray(context.t_draft, dtype=np.float64).reshape(-1, np.shape(context.t_draft)[-1])
            t_draft = np.pad(t, ((0, 0), (0, slots - t.shape[-1])))
        gamma = budget_lengths(level, on, rows, self.layout, t_draft)
        return gamma.reshape(lead + (gamma.shape[-1],))

    def act(self, x: np.ndarray, context=None) -> np.ndarray:
        """The deterministic draft lengths of observations ``x`` [..., obs], on one BLAS thread;
        with the round's ``context`` the budget is mapped with each device's exact drafting time,
        without it with the times the observation shows."""
        with one_blas_thread():
            return self._act(x, context)


__all__ = ["BudgetActions", "BudgetDistribution", "BudgetHead", "BudgetLayout", "BudgetSetPolicy", "LEVEL_SPREAD",
           "LEVELS_PER_TOKEN", "NumpyBudgetPolicy", "budget_layout", "budget_lengths", "level_logits", "speed_ratios",
           "split_action"]
