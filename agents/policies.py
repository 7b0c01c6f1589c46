"""Policy kinds by protocol: a saved agent's numpy decision, whatever its kind, is a
:class:`Policy` — its kind's name, its layout and arrays for the portable files, how it reads
observations and decides, and how it is read back — and :data:`KINDS` finds each kind's class by
its name (the ``kind`` of ``agent.json``). The controller, the portable format and the loaders ask
a policy; none switches on its class."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

#: kind name → the class that implements it ("module:Class", imported on first use: an MLP agent
#: loads without torch)
KINDS: dict[str, str] = {
    "mlp": "agents.mlp:NumpyPolicy",
    "set": "agents.setpolicy:NumpySetPolicy",
    "budget": "agents.budget:NumpyBudgetPolicy",
    "capped": "agents.capped:NumpyCappedPolicy",
}


@runtime_checkable
class Policy(Protocol):
    """What every policy kind provides."""

    #: its name in ``agent.json`` (a key of :data:`KINDS`)
    KIND: ClassVar[str]
    #: True when it reads a cell generator's padded observation (device rows ending in their mask)
    masked: bool

    @property
    def n_choices(self) -> int:
        """It chooses draft lengths 0 … n_choices − 1."""

    def act(self, x: np.ndarray, context: Any = None) -> np.ndarray:
        """The deterministic draft lengths of observations ``x`` [..., obs]; ``context``: the
        round's :class:`~msenv.engine.context.RoundContext` when the caller has it (a kind may read
        exact values from it, as the budget policy reads the drafting times)."""

    def reads(self, config: Any, frame_stack: int) -> tuple[int | None, str]:
        """(the observation width it reads as trained on ``config`` — None: any —, what it reads, in words)."""

    def fits(self, x: np.ndarray, frame_stack: int, mask: bool) -> bool:
        """Whether observations of ``x``'s shape (and, with ``mask``, its mask entries) can be read."""

    def device_rows(self, x: np.ndarray) -> int:
        """How many device rows an observation ``x`` holds, as this policy reads it."""

    def check_config(self, config: Any, name: str, frame_stack: int = 1) -> None:
        """``ValueError`` (naming agent ``name``) when it cannot act in an env of ``config`` (its
        draft lengths' range is checked by the caller, against :attr:`n_choices`)."""

    def to_portable(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(its layout for ``agent.json``, its arrays for ``policy.npz``)."""

    @classmethod
    def from_portable(cls, layout: dict[str, Any], arrays: dict[str, np.ndarray], source: Path) -> Policy:
        """The policy of a checked layout and its arrays (``ValueError`` naming ``source`` when they
        do not fit)."""


def policy_class(kind: str) -> type[Policy]:
    """The class of policy kind ``kind`` (``ValueError`` for a kind not in :data:`KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"policy kind {kind!r} is not known; allowed: {', '.join(KINDS)}")
    module, _, name = KINDS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def check_chain(source: Path, name: str, pairs, first_in: int | None, last_out: int | None) -> None:
    """Layers ``(W, b)`` that compose: W 2-D, b its output size, each layer's input the previous
    output, the first input ``first_in`` and the last output ``last_out`` (None: any); else
    ``ValueError`` naming ``source`` and the layer."""
    prev = first_in
    for i, (w, b) in enumerate(pairs):
        key = name if name == "head" else f"{name}{i}"
        if w.ndim != 2 or b.shape != (w.shape[1],) or (prev is not None and w.shape[0] != prev):
            raise ValueError(f"{source}: {key}.weight {w.shape} / {key}.bias {b.shape} do not fit the layout "
                             f"(input {prev if prev is not None else 'any'})")
        prev = w.shape[1]
    if last_out is not None and prev != last_out:
        raise ValueError(f"{source}: the {name} layers end with {prev} outputs; the layout needs {last_out}")


def pairs(arrays: dict[str, np.ndarray], part: str, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``n`` layers ``part0 … part{n-1}`` of ``arrays`` as (weight, bias) pairs."""
    return [(arrays[f"{part}{i}.weight"], arrays[f"{part}{i}.bias"]) for i in range(n)]


__all__ = ["KINDS", "Policy", "check_chain", "pairs", "policy_class"]
