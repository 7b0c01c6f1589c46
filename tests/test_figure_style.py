"""The figures the docs show are legible in the site's article column: every text of a committed
figure, shown at the column's 736 px, is at least the body text's 16 px. A figure records its
smallest text (pixels at its own resolution) in its PNG's ``msenv:label-px`` text chunk, written
by the one figure writer, :func:`evaluation.report.save_figure`; these tests read the chunk with
the standard library, check the writer's measurement against independent ones, and check that a
redraw from the committed data gives the committed file's size."""

from __future__ import annotations

import ast
import json
import math
import shutil
import struct
from pathlib import Path

import pytest

from evaluation import report

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: env frames (pictures of a round, drawn by msenv's renderer), not figures: the episode GIFs only;
#: the round picture of the landing page (docs/figures/render.png) is saved as a figure
FRAMES: set[str] = set()


def png_size(path: Path) -> tuple[int, int]:
    kind, data = report.png_chunks(path)[0]
    assert kind == b"IHDR"
    return struct.unpack(">II", data[:8])


def recorded_label_px(path: Path) -> float:
    text = report.png_text(path)
    assert report.LABEL_PX_KEY in text, (f"{path.relative_to(ROOT)} has no {report.LABEL_PX_KEY} text chunk: not "
                                         "written by save_figure")
    return float(text[report.LABEL_PX_KEY])


# ----------------------------------------------------------------------------- the writer
@pytest.mark.parametrize("small_pt", [9.0, 14.0, None])
def test_save_figure_records_the_smallest_shown_text_in_pixels(tmp_path, small_pt):
    """Texts of known sizes (ticks, legend, title, figure text at 14 pt; one at ``small_pt``); an
    invisible text, an empty one and one in a hidden axes are not shown and do not count."""
    with report.figure_style() as plt:
        fig, (ax, hidden) = plt.subplots(1, 2)
        ax.plot([0, 1], [0, 1], label="line")
        ax.tick_params(labelsize=14)
        ax.legend(fontsize=14)
        ax.set_title("title", fontsize=14)
        ax.set_xlabel("x (units)", fontsize=14)
        ax.set_ylabel("y (units)", fontsize=14)
        fig.text(0.5, 0.5, "big", fontsize=14)
        if small_pt is not None:
            fig.text(0.1, 0.1, "small", fontsize=small_pt)
        fig.text(0.2, 0.2, "invisible", fontsize=5).set_visible(False)
        fig.text(0.3, 0.3, "  ", fontsize=4)
        hidden.set_title("in a hidden axes", fontsize=6)
        hidden.set_visible(False)
        px = report.save_figure(fig, tmp_path / "f.png")
        plt.close(fig)
    want = (small_pt or 14.0) / 72 * report.FIGURE_DPI
    assert px == pytest.approx(want)
    assert recorded_label_px(tmp_path / "f.png") == pytest.approx(want, abs=0.005)
    assert png_size(tmp_path / "f.png")[0] == round(report.FIGURE_WIDTH_IN * report.FIGURE_DPI)


def test_the_record_is_the_smallest_text_the_renderer_draws(tmp_path, monkeypatch):
    """Independently of the writer's walk over the figure's texts: every text the PNG renderer
    draws while a real figure (Fig 11, redrawn from its committed rows) is saved, its size."""
    from matplotlib.backends.backend_agg import RendererAgg

    from experiments.figures import FIGURES

    drawn = []
    draw_text = RendererAgg.draw_text

    def spy(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s.strip():
            drawn.append(prop.get_size_in_points())
        return draw_text(self, gc, x, y, s, prop, angle, ismath, mtext)

    monkeypatch.setattr(RendererAgg, "draw_text", spy)
    _, _, plot, title = FIGURES["fig11"]
    plot(report.read_csv(DOCS / "figures" / "fig11.csv"), tmp_path / "fig11.png", title)
    assert drawn
    assert recorded_label_px(tmp_path / "fig11.png") == pytest.approx(min(drawn) / 72 * report.FIGURE_DPI, abs=0.005)


def test_every_figure_is_written_by_save_figure():
    """No other code of the figures' layers calls ``savefig`` (msenv's env frames are pictures)."""
    sources = [p for d in ("experiments", "baselines", "evaluation", "agents", "benchmarks")
               for p in sorted((ROOT / d).rglob("*.py"))]
    bad = []
    for p in sources + [ROOT / "train.py"]:
        for node in ast.walk(ast.parse(p.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr in ("savefig", "imsave")
                    and p != ROOT / "evaluation" / "report.py"):
                bad.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not bad, "figures saved outside evaluation.report.save_figure: " + ", ".join(bad)


# ----------------------------------------------------------------------------- the committed figures
def _committed_figures() -> list:
    paths = sorted({*DOCS.glob("figures/**/*.png"), *DOCS.glob("leaderboard/**/*.png")})
    out = []
    for p in paths:
        rel = p.relative_to(ROOT).as_posix()
        if rel in FRAMES or "/episodes/" in rel:
            continue
        out.append(pytest.param(p, id=rel))
    return out


@pytest.mark.parametrize("path", _committed_figures())
def test_every_committed_figure_is_legible_in_the_article_column(path):
    px = recorded_label_px(path)
    width, _ = png_size(path)
    shown = px * min(1.0, report.COLUMN_PX / width)  # a narrower image is shown at its own size
    assert shown >= report.BODY_TEXT_PX, (
        f"{path.relative_to(ROOT)}: its smallest text is {px:.1f} px of {width} px, {shown:.1f} px in the "
        f"{report.COLUMN_PX} px column; the body text is {report.BODY_TEXT_PX} px")


# ----------------------------------------------------------------------------- redraws from committed data
def _same_figure(new: Path, committed: Path) -> None:
    assert png_size(new) == png_size(committed), f"{committed.relative_to(ROOT)} is not the size a redraw gives"
    assert recorded_label_px(new) == recorded_label_px(committed)


@pytest.mark.slow
@pytest.mark.parametrize("folder,csv,figures", [
    ("figures", "fig11.csv", ["fig11.png"]),
    ("figures/cells-dynamic", "cells.csv", ["cells.png", "cells_decision_time.png"]),
])
def test_a_redraw_from_the_committed_rows_gives_the_committed_figure(tmp_path, folder, csv, figures):
    from experiments.__main__ import main

    shutil.copy(DOCS / folder / csv, tmp_path / csv)
    assert main(["replot", "--out", str(tmp_path)]) == 0
    for name in figures:
        _same_figure(tmp_path / name, DOCS / folder / name)


@pytest.mark.slow
def test_a_redraw_from_a_committed_result_file_gives_the_leaderboard_figure(tmp_path, capsys):
    from evaluation.benchmark import main

    main(["--plot", str(DOCS / "leaderboard" / "dynamic-v1.json"), "--out", str(tmp_path)])
    assert f"wrote {tmp_path / 'dynamic-v1.png'}" in capsys.readouterr().out
    _same_figure(tmp_path / "dynamic-v1.png", DOCS / "leaderboard" / "dynamic-v1.png")


def test_replot_refuses_a_folder_without_figure_rows(tmp_path, capsys):
    from experiments.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(["replot", "--out", str(tmp_path)])
    assert e.value.code == 2 and "holds no figure's rows" in capsys.readouterr().err


def test_the_plot_command_refuses_a_file_that_is_not_a_result(tmp_path, capsys):
    from evaluation.benchmark import main

    (tmp_path / "x.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(SystemExit) as e:
        main(["--plot", str(tmp_path / "x.json")])
    assert e.value.code == 1 and "not a benchmark result" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


# ----------------------------------------------------------------------------- rows read back
def test_read_csv_gives_back_the_rows_write_csv_was_given(tmp_path):
    rows = [{"name": "a-1.5", "k": 20, "x": 10.0, "y": 1e-5, "ok": True, "z": float("nan"), "n": -3},
            {"name": "b", "k": 400, "x": 0.1, "y": 2.5, "ok": False, "z": 1.0, "n": 0},
            {"name": "timed only", "k": 5}]  # keys it does not have come back missing
    report.write_csv(rows, tmp_path / "r.csv")
    back = report.read_csv(tmp_path / "r.csv")
    assert [list(r) for r in back] == [list(r) for r in rows]
    for got, want in zip(back, rows):
        for key, value in want.items():
            assert type(got[key]) is type(value), key
            assert got[key] == value or (math.isnan(value) and math.isnan(got[key])), key


@pytest.mark.parametrize("folder", ["cells", "cells-dynamic"])
def test_a_cells_csv_reads_back_as_the_rows_the_run_plotted(folder):
    """A cells run stores the rows it plots twice: its CSV and, typed by JSON, cells.json's summary."""
    summary = json.loads((DOCS / "figures" / folder / "cells.json").read_text())["summary"]
    back = report.read_csv(DOCS / "figures" / folder / "cells.csv")
    assert back == summary
    assert [[type(v) for v in r.values()] for r in back] == [[type(v) for v in r.values()] for r in summary]


# ----------------------------------------------------------------------------- the round picture
@pytest.mark.slow
def test_the_round_picture_is_redrawn_as_committed_and_nothing_in_it_overlaps(tmp_path):
    """docs/figures/render.png (the first picture of README and the landing page) is the renderer's
    frame saved by save_figure: a redraw has its size and label record, its labels show at the
    body size in the column, and no two of its texts, markers' labels or keys overlap."""
    import sys

    sys.path.insert(0, str(DOCS / "_ext"))
    import episode_gifs

    committed = DOCS / "figures" / "render.png"
    px = episode_gifs.write_round_picture(tmp_path / "render.png")
    _same_figure(tmp_path / "render.png", committed)
    assert px * report.COLUMN_PX / png_size(committed)[0] >= report.BODY_TEXT_PX
    import gymnasium as gym
    import numpy as np

    import msenv  # noqa: F401

    for env_id, _k in (("msenv/MultiSpin-v0", 20), ("msenv/MultiSpin-Cells-v0", None)):
        env = gym.make(env_id, render_mode="rgb_array")
        env.reset(seed=1)
        env.step(np.full(env.action_space.shape, 3))
        assert env.render().shape == (360, 640, 3)
        fig = env.unwrapped._renderer.fig
        renderer = fig.canvas.get_renderer()
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in report.visible_texts(fig)]
        boxes.append(("server", env.unwrapped._renderer.ax.lines[0].get_window_extent(renderer)))
        for i, (a, ba) in enumerate(boxes):
            assert 0 <= ba.x0 and ba.x1 <= 640 and 0 <= ba.y0 and ba.y1 <= 360, (env_id, a, ba)
            for b, bb in boxes[i + 1:]:
                assert not ba.overlaps(bb), (env_id, a, b)
        env.close()
