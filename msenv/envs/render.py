"""Pictures of a round for ``render_mode="rgb_array"`` (model §8; matplotlib, Agg, no display).

The frame shows the cell from above — the server (the black square) at the centre, every device
at its distance (devices spread evenly in angle, in index order), coloured by the round's outcome
(all accepted / corrected via UL / via DL / not drafting), its draft length written on the cell's
rim at the device's angle, so that no label can cover another or the server — and, beside it, the
round's goodput, the key of the colours and the latency split (drafting, verification, correction
exchange) with a key of its own. Every text is :data:`FONT_PT` points: 14 px in a 640 px frame,
and the body text's size where the docs show the picture (``docs/figures/render.png``, drawn by
``docs/_ext/episode_gifs.py``). The figure is built once per renderer and only its artists are
updated per frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model.reactive import MODE_DL, MODE_NONE, MODE_UL

#: outcome colours (RGB in [0, 1]) and their legend labels
COLORS = {
    "idle": (0.70, 0.70, 0.70),
    "accepted": (0.17, 0.63, 0.17),
    "ul": (0.12, 0.47, 0.71),
    "dl": (0.84, 0.15, 0.16),
}
#: the latency bar's parts: (colour, key label)
LATENCY_PARTS = (((0.58, 0.40, 0.74), "draft"), ((0.55, 0.34, 0.29), "verify"),
                 ((1.0, 0.50, 0.05), "correction"))
WIDTH, HEIGHT, DPI = 640, 360, 80
#: the one font size of the picture (points)
FONT_PT = 13.0
#: where the draft lengths are written: this fraction of the cell's radius out from the centre
RIM = 1.12


class RoundRenderer:
    """Draws RGB frames (uint8 [HEIGHT, WIDTH, 3]) of rounds of one environment; :attr:`fig` is
    the matplotlib figure it draws them on."""

    def __init__(self, max_distance_m: float) -> None:
        try:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
            from matplotlib.lines import Line2D
            from matplotlib.patches import Patch
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(
                "render_mode='rgb_array' needs matplotlib: pip install 'msenv[render]'"
            ) from e
        fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
        self.canvas = FigureCanvasAgg(fig)
        self.fig = fig
        ax = fig.add_axes((0.0, 0.0, HEIGHT / WIDTH, 1.0))  # a square: the cell and its rim
        self.rim = RIM * max_distance_m
        r = 1.2 * max_distance_m
        ax.set_xlim(-r, r)
        ax.set_ylim(-r, r)
        ax.set_aspect("equal")
        ax.set_axis_off()
        for ring in np.linspace(0.0, max_distance_m, 6)[1:]:
            ax.add_patch(_circle(ring))
        ax.plot([0.0], [0.0], marker="s", color="black", markersize=9, zorder=4)
        self.ax = ax
        self.scatter = ax.scatter([], [], s=70, edgecolors="black", linewidths=0.5, zorder=3)
        self.labels: list[Any] = []
        x0 = HEIGHT / WIDTH + 0.03
        self.title = fig.text(x0, 0.95, "", fontsize=FONT_PT, va="top", weight="bold")
        self.body = fig.text(x0, 0.86, "", fontsize=FONT_PT, va="top", linespacing=1.25)
        dot = dict(marker="o", linestyle="", markeredgecolor="black", markeredgewidth=0.5, markersize=9)
        handles = [Line2D([], [], color=COLORS[k], label=lab, **dot)
                   for k, lab in (("accepted", "all accepted"), ("ul", "UL correction"),
                                  ("dl", "DL correction"), ("idle", "no draft"))]
        handles.append(Line2D([], [], color="black", marker="s", linestyle="", markersize=8, label="server"))
        fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(x0 - 0.01, 0.66), ncols=2,
                   fontsize=FONT_PT, frameon=False, handletextpad=0.2, columnspacing=0.8,
                   borderaxespad=0.0, borderpad=0.0, labelspacing=0.3)
        bar = fig.add_axes((x0, 0.27, 0.96 - x0, 0.08))
        bar.set_axis_off()
        self.bar_ax = bar
        self.bars = bar.barh([0, 0, 0], [0.0, 0.0, 0.0], left=[0.0, 0.0, 0.0], height=1.0,
                             color=[c for c, _ in LATENCY_PARTS])
        self.latency = fig.text(x0, 0.37, "", fontsize=FONT_PT, va="bottom")
        self.bar_key = fig.legend(handles=[Patch(color=c, label=lab) for c, lab in LATENCY_PARTS],
                                  loc="upper left", bbox_to_anchor=(x0 - 0.01, 0.24), ncols=1,
                                  fontsize=FONT_PT, frameon=False, handlelength=1.2, handletextpad=0.4,
                                  borderaxespad=0.0, borderpad=0.0, labelspacing=0.25)

    def frame(self, distance: np.ndarray, round_index: int, gamma: np.ndarray | None = None,
              info: dict[str, Any] | None = None) -> np.ndarray:
        """The picture of the last round played (or of the fresh episode when ``info`` is None)."""
        k = len(distance)
        angle = 2.0 * np.pi * np.arange(k) / k + np.pi / 2
        unit = np.stack([np.cos(angle), np.sin(angle)], axis=-1)
        self.scatter.set_offsets(distance[:, None] * unit)
        colors = np.tile(COLORS["idle"], (k, 1))
        if info is not None and gamma is not None:
            modes = np.asarray(info["modes"])
            drafting = np.asarray(gamma) > 0
            colors[drafting & (modes == MODE_NONE)] = COLORS["accepted"]
            colors[modes == MODE_UL] = COLORS["ul"]
            colors[modes == MODE_DL] = COLORS["dl"]
        self.scatter.set_facecolors(colors)
        for t in self.labels:
            t.remove()
        self.labels = []
        if gamma is not None and k <= 40:
            for (x, y), g in zip(self.rim * unit, np.asarray(gamma)):
                self.labels.append(self.ax.text(x, y, str(int(g)), ha="center", va="center", fontsize=FONT_PT))
        if info is None:
            self.title.set_text(f"round {round_index}: not played yet")
            self.body.set_text("on the rim: draft lengths")
            self.latency.set_text("latency")
            parts = (0.0, 0.0, 0.0)
        else:
            parts = (1e3 * info["t_draft"], 1e3 * info["t_verify"], 1e3 * info["t_com"])
            n_ul = int(np.sum(np.asarray(info["modes"]) == MODE_UL))
            n_dl = int(np.sum(np.asarray(info["modes"]) == MODE_DL))
            self.title.set_text(f"round {round_index}: {info['goodput']:.1f} tokens/s")
            self.body.set_text(f"{int(np.sum(info['tokens']))} tokens, mean draft {float(np.mean(gamma)):.2f}\n"
                               f"{n_ul} UL, {n_dl} DL of {k} devices\n"
                               "on the rim: draft lengths")
            self.latency.set_text(f"latency {1e3 * info['latency']:.1f} ms")
        for text, p, (_, lab) in zip(self.bar_key.get_texts(), parts, LATENCY_PARTS):
            text.set_text(f"{lab} {p:.1f} ms" if info is not None else lab)
        left = np.concatenate([[0.0], np.cumsum(parts)[:-1]])
        for rect, w, x0 in zip(self.bars, parts, left):
            rect.set_width(w)
            rect.set_x(x0)
        self.bar_ax.set_xlim(0.0, max(1.0, float(np.sum(parts))))
        self.bar_ax.set_ylim(-0.5, 0.5)
        self.canvas.draw()
        return np.asarray(self.canvas.buffer_rgba())[:, :, :3].copy()


def ansi_line(round_index: int, info: dict[str, Any] | None) -> str:
    """One line of text about the last round (``render_mode="ansi"``)."""
    if info is None:
        return "msenv: no round played yet\n"
    modes = "".join(".UD"[m] for m in info["modes"])
    return (
        f"round {round_index}: tokens {int(info['tokens'].sum())} in {info['latency'] * 1e3:.1f} ms "
        f"(draft {info['t_draft'] * 1e3:.1f}, verify {info['t_verify'] * 1e3:.1f}, com {info['t_com'] * 1e3:.1f}) "
        f"goodput {info['goodput']:.1f} tok/s modes [{modes}]\n"
    )


def _circle(radius: float):
    from matplotlib.patches import Circle

    return Circle((0.0, 0.0), radius, fill=False, color=(0.85, 0.85, 0.85), lw=0.6)


#: matplotlib's backends that draw into files or arrays only: none can open a window
NON_INTERACTIVE = ("agg", "cairo", "pdf", "pgf", "ps", "svg", "template")


def display_problem() -> str | None:
    """None when ``render_mode="human"`` can show frames here (matplotlib with an interactive
    backend); else why not, in words."""
    try:
        import matplotlib
    except ImportError:
        return "it needs matplotlib (pip install 'msenv[render]')"
    backend = str(matplotlib.get_backend()).lower()
    if backend in NON_INTERACTIVE:
        return (f"matplotlib's backend here is {backend!r}, which cannot open a window (no display, or "
                "MPLBACKEND=Agg); run with a display and an interactive backend (e.g. MPLBACKEND=TkAgg)")
    return None


class HumanWindow:
    """``render_mode="human"``: each round's frame (:class:`RoundRenderer`) in a matplotlib window,
    shown for 1/``fps`` s."""

    def __init__(self, fps: float) -> None:
        problem = display_problem()
        if problem:
            raise RuntimeError(f"render_mode='human' shows each round in a matplotlib window, but {problem}; "
                               "allowed here: render_mode='rgb_array' (frames as arrays, which Gymnasium's "
                               "RecordVideo saves) or 'ansi'")
        import matplotlib.pyplot as plt

        self.plt, self.pause, self.fig, self.image = plt, 1.0 / fps, None, None

    def show(self, frame: np.ndarray) -> None:
        """Show ``frame`` (uint8 [H, W, 3]), opening the window on the first call."""
        plt = self.plt
        if self.fig is None or not plt.fignum_exists(self.fig.number):
            self.fig, ax = plt.subplots(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
            ax.set_axis_off()
            self.fig.subplots_adjust(0, 0, 1, 1)
            self.image = ax.imshow(frame)
            plt.show(block=False)
        else:
            self.image.set_data(frame)
            self.fig.canvas.draw_idle()
        plt.pause(self.pause)

    def close(self) -> None:
        if self.fig is not None:
            self.plt.close(self.fig)
            self.fig = None
