"""The three tables of a bank's statistics, as text (the CLI's ``stats`` output).

1. acceptance by depth: requests, positions, α_0 … α_5, the cap, the share of positions at the cap;
2. per round, one row per γ: tokens per round (the i.i.d. model's prediction at α_0) ·
   P(no drafted token accepted) · first-token acceptance after a fully accepted / a rejected
   round · lag-1 correlation of successive rounds' accepted counts;
3. requests: length median / p90 and the per-request α_0 p10 / median / p90.

With bootstrap intervals, each figure is followed by its 95 % interval ``[low, high]``.
"""

from __future__ import annotations

import math

from .stats import N_DEPTHS, key


def _f(v: float, digits: int = 2) -> str:
    """A number with ``digits`` decimals, or n/a."""
    return "n/a" if not math.isfinite(v) else f"{v:.{digits}f}"


def _cell(figures, intervals, k, digits=2, percent=False) -> str:
    """A figure as text, with its interval when given."""
    v = figures[k]
    scale, unit = (100.0, "%") if percent else (1.0, "")
    d = 1 if percent else digits
    text = _f(v * scale, d) + unit
    if intervals is not None and k in intervals:
        lo, hi = intervals[k]
        text += f" [{_f(lo * scale, d)}, {_f(hi * scale, d)}]"
    return text


def depth_table(figures: dict[str, float], intervals=None) -> str:
    """Table 1: acceptance by depth, the cap and the share of positions at the cap."""
    cells = [f"{int(figures['requests'])}", f"{int(figures['positions'])}"]
    cells += [_cell(figures, intervals, key(f"alpha_{d}")) for d in range(N_DEPTHS)]
    cells += [f"{int(figures['cap'])}", _cell(figures, intervals, "at_cap", percent=True)]
    head = ["requests", "positions", *[f"α_{d}" for d in range(N_DEPTHS)], "cap", "at cap"]
    return _grid("acceptance by depth: α_d = P(acc_len ≥ d + 2 | acc_len ≥ d + 1), pooled over positions",
                 head, [cells])


def round_table(figures: dict[str, float], gammas, intervals=None) -> str:
    """Table 2: per-round figures, one row per γ."""
    rows = []
    for g in gammas:
        rows.append([str(g),
                     f"{_cell(figures, intervals, key('tokens', g))} ({_f(figures[key('iid_tokens', g)])})",
                     _cell(figures, intervals, key("p_nothing", g)),
                     (f"{_cell(figures, intervals, key('after_full', g))} / "
                      f"{_cell(figures, intervals, key('after_rejected', g))}"),
                     _cell(figures, intervals, key("lag1", g))])
    head = ["γ", "tokens/round (i.i.d. at α_0)", "P(none accepted)", "first token after full / rejected", "lag-1"]
    return _grid("per round (each request decoded from its start at a fixed γ, rounds pooled)", head, rows)


def request_table(figures: dict[str, float], intervals=None) -> str:
    """Table 3: request length median / p90 and per-request α_0 p10 / median / p90."""
    cells = [_cell(figures, intervals, "length_median", 0), _cell(figures, intervals, "length_p90", 0),
             _cell(figures, intervals, "alpha0_p10"), _cell(figures, intervals, "alpha0_median"),
             _cell(figures, intervals, "alpha0_p90")]
    head = ["length median", "length p90", "α_0 p10", "α_0 median", "α_0 p90"]
    return _grid("requests (per-request α_0: the share of its positions with acc_len ≥ 2)", head, [cells])


def _grid(title: str, head: list[str], rows: list[list[str]]) -> str:
    """A title, a header and right-aligned rows."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([title, line(head), *(line(r) for r in rows)])


def tables(figures: dict[str, float], gammas, intervals=None) -> str:
    """The three tables, separated by blank lines."""
    return "\n\n".join([depth_table(figures, intervals), round_table(figures, gammas, intervals),
                        request_table(figures, intervals)])


__all__ = ["depth_table", "request_table", "round_table", "tables"]
