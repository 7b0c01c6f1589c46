"""Pictures of a round for ``render_mode="rgb_array"`` (model §8; matplotlib, Agg, no display).

The frame shows the cell from above — the server at the centre, every device at its distance
(devices spread evenly in angle, in index order), coloured by the round's outcome (all
accepted / corrected via UL / via DL / not drafting) and labelled with its draft length — and,
beside it, the round's latency split (drafting, verification, correction exchange) and its
goodput. The figure is built once per renderer and only its artists are updated per frame.
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
WIDTH, HEIGHT, DPI = 640, 360, 80


class RoundRenderer:
    """Draws RGB frames (uint8 [HEIGHT, WIDTH, 3]) of rounds of one environment."""

    def __init__(self, max_distance_m: float) -> None:
        try:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(
                "render_mode='rgb_array' needs matplotlib: pip install 'msenv[render]'"
            ) from e
        fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
        self.canvas = FigureCanvasAgg(fig)
        self.fig = fig
        ax = fig.add_axes((0.01, 0.03, 0.52, 0.94))
        r = 1.08 * max_distance_m
        ax.set_xlim(-r, r)
        ax.set_ylim(-r, r)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        for ring in np.linspace(0.0, max_distance_m, 6)[1:]:
            ax.add_patch(_circle(ring))
        ax.plot([0.0], [0.0], marker="s", color="black", markersize=9)
        ax.text(0.0, -0.09 * r, "server", ha="center", va="top", fontsize=7)
        self.ax = ax
        self.scatter = ax.scatter([], [], s=60, edgecolors="black", linewidths=0.5, zorder=3)
        self.labels: list[Any] = []
        handles = [
            ax.scatter([], [], color=COLORS[k], s=30, label=lab)
            for k, lab in (("accepted", "all accepted"), ("ul", "UL correction"),
                           ("dl", "DL correction"), ("idle", "no draft / not played"))
        ]
        ax.legend(handles=handles, loc="lower left", fontsize=6, framealpha=0.8)
        bar = fig.add_axes((0.60, 0.18, 0.36, 0.30))
        self.bar_ax = bar
        self.bars = bar.barh([0, 0, 0], [0.0, 0.0, 0.0], left=[0.0, 0.0, 0.0], height=0.6,
                             color=[(0.58, 0.40, 0.74), (0.55, 0.34, 0.29), (1.0, 0.50, 0.05)])
        bar.set_yticks([])
        bar.set_xlabel("round latency (ms): draft | verify | com", fontsize=7)
        bar.tick_params(labelsize=7)
        self.title = fig.text(0.60, 0.93, "", fontsize=9, va="top", family="monospace")
        self.body = fig.text(0.60, 0.80, "", fontsize=8, va="top", family="monospace")

    def frame(self, distance: np.ndarray, round_index: int, gamma: np.ndarray | None = None,
              info: dict[str, Any] | None = None) -> np.ndarray:
        """The picture of the last round played (or of the fresh episode when ``info`` is None)."""
        k = len(distance)
        angle = 2.0 * np.pi * np.arange(k) / k + np.pi / 2
        xy = np.stack([distance * np.cos(angle), distance * np.sin(angle)], axis=-1)
        self.scatter.set_offsets(xy)
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
            for (x, y), g in zip(xy * 1.0, np.asarray(gamma)):
                self.labels.append(self.ax.text(x, y + 0.045 * self.ax.get_ylim()[1], str(int(g)),
                                                ha="center", va="bottom", fontsize=6))
        if info is None:
            self.title.set_text(f"round {round_index}: not played yet")
            self.body.set_text("")
            parts = (0.0, 0.0, 0.0)
        else:
            parts = (1e3 * info["t_draft"], 1e3 * info["t_verify"], 1e3 * info["t_com"])
            n_ul = int(np.sum(np.asarray(info["modes"]) == MODE_UL))
            n_dl = int(np.sum(np.asarray(info["modes"]) == MODE_DL))
            self.title.set_text(f"round {round_index}   goodput {info['goodput']:7.1f} tok/s")
            self.body.set_text(
                f"tokens  {int(np.sum(info['tokens'])):4d}   mean γ {float(np.mean(gamma)):5.2f}\n"
                f"UL {n_ul:3d}   DL {n_dl:3d}   of {k} devices\n"
                f"T = {1e3 * info['latency']:6.1f} ms\n"
                f"draft {parts[0]:6.1f}  verify {parts[1]:6.1f}\n"
                f"com   {parts[2]:6.1f} ms"
            )
        left = np.concatenate([[0.0], np.cumsum(parts)[:-1]])
        for rect, w, x0 in zip(self.bars, parts, left):
            rect.set_width(w)
            rect.set_x(x0)
        self.bar_ax.set_xlim(0.0, max(1.0, 1.05 * float(np.sum(parts))))
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
