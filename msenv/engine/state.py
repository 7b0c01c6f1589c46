"""What every engine kind's state shares: the layout of its random draws and the batch operations.

Randomness enters the pure dynamics only as arrays of uniforms: each environment draws its
uniforms with one ``Generator.random`` call per reset and per step, so a batch of N environments
with N generators reproduces N single environments exactly. A kind names the parts of its reset
and step uniforms (:func:`draw_layout` turns the names and sizes into slices). Every kind starts
from the paper scenario's parts (:func:`paper_draws`, all U[0, 1)):

- reset: distances K | tasks K | drafting scales K | P_ul 1 | P_dl 1 | fading (2K, or K when
  reciprocal);
- step: outcome K | next-round fading (2K / K; none when ``fading_redraw="episode"``) |
  mode coins K (used by ``mode_policy="random"``; drawn under every policy so that the same seed
  gives the same outcomes and fading whatever the reactive policy — paired comparisons);

and appends its own after them (the kinds' modules list theirs).

A kind's state is a ``NamedTuple`` of arrays with a leading batch axis B (the fields it does not
use are None); :func:`where` and :func:`put_rows` work on any of them.
"""

from __future__ import annotations

import numpy as np

from ..config.system import SystemConfig

#: a draw layout's parts: (name, uniforms) in order
Parts = list[tuple[str, int]]


def links(cfg: SystemConfig) -> int:
    """Radio links with their own fading: 2 (UL, DL) or 1 (reciprocal)."""
    return 2 if cfg.channel.fading == "independent" else 1


def fading_draws(cfg: SystemConfig) -> int:
    """Uniforms of one round's i.i.d. fading."""
    return cfg.num_devices * links(cfg)


def paper_draws(cfg: SystemConfig) -> tuple[Parts, Parts, Parts]:
    """The paper scenario's parts of a reset's and a step's uniforms (module docstring), as
    (reset, step before the coins, the coins) — a kind inserts its step parts before or after the
    coins."""
    k = cfg.num_devices
    reset = [("distance", k), ("task", k), ("scale", k), ("p_ul", 1), ("p_dl", 1), ("fading", fading_draws(cfg))]
    step = [("outcome", k)]
    if cfg.channel.fading_redraw == "round":
        step += [("fading", fading_draws(cfg))]
    return reset, step, [("coins", k)]


def draw_layout(reset: Parts, step: Parts) -> dict[str, dict[str, slice]]:
    """Named slices of the reset and step uniforms, from their parts in order; ``"_size"`` spans
    all of each."""

    def build(parts: Parts) -> dict[str, slice]:
        out, i = {}, 0
        for name, n in parts:
            out[name] = slice(i, i + n)
            i += n
        out["_size"] = slice(0, i)
        return out

    return {"reset": build(reset), "step": build(step)}


def where(mask: np.ndarray, state, other):
    """Rows of ``other`` where ``mask`` [B] is true, else rows of ``state`` (states of one kind)."""
    out = []
    for a, b in zip(state, other):
        if a is None or b is None:
            out.append(None)
            continue
        m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
        out.append(np.where(m, b, a))
    return type(state)(*out)


def put_rows(state, rows: np.ndarray, fresh):
    """``state`` with its ``rows`` replaced by the rows of ``fresh`` (a state of len(rows) rows of
    the same kind); the other rows unchanged (copied). A field None in either is None."""
    out = []
    for a, b in zip(state, fresh):
        if a is None or b is None:
            out.append(None)
            continue
        a = a.copy()
        a[rows] = b
        out.append(a)
    return type(state)(*out)


__all__ = ["Parts", "draw_layout", "fading_draws", "links", "paper_draws", "put_rows", "where"]
