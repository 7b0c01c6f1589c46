"""The animated episode at the top of every env page: ``docs/figures/episodes/<name>.gif``, and the
round picture of the landing page and README, ``docs/figures/render.png``.

Each GIF is the first rounds of one seeded episode of the id, played by the paper's greedy
(``greedy-saa``), as ``render_mode="rgb_array"`` draws them, scaled to the article column's 736 px
(Pillow), where the renderer's texts show at 16 px. The round picture is the third round of
``msenv/MultiSpin-v0``'s seed-0 episode, drawn by the same renderer but saved by
``evaluation.report.save_figure`` at the docs figures' resolution, so that its PNG records its
smallest label (``msenv:label-px``) as every figure's does. The files are committed; run this
after a change to the renderer or to an id:

    python docs/_ext/episode_gifs.py            # every id, and the round picture
    python docs/_ext/episode_gifs.py msenv/MultiSpin-v0
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "figures" / "episodes"
ROUNDS, WIDTH, FRAME_MS, SEED = 12, 736, 700, 0
#: the landing page's round picture
PICTURE = ROOT / "docs" / "figures" / "render.png"


def gif_path(env_id: str) -> Path:
    return OUT / f"{env_id.split('/')[-1]}.gif"


def write_gif(env_id: str) -> Path:
    import gymnasium as gym
    import numpy as np
    from PIL import Image

    import msenv  # noqa: F401  (registers the ids)
    from baselines import make_controller

    env = gym.make(env_id, render_mode="rgb_array")
    controller = make_controller("greedy-saa")
    controller.reset(seed=SEED)
    env.reset(seed=SEED)
    frames = []
    for _ in range(ROUNDS):
        gamma = controller.act(env.unwrapped.context)  # the cell's K devices; the cells id pads to k_max
        action = np.zeros(env.action_space.shape, dtype=np.int64)
        action[:len(gamma)] = gamma
        _, _, terminated, truncated, _ = env.step(action)
        frame = Image.fromarray(env.render())
        frames.append(frame.resize((WIDTH, round(frame.height * WIDTH / frame.width)), Image.LANCZOS))
        if terminated or truncated:
            break
    env.close()
    palette = [f.quantize(colors=128, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE) for f in frames]
    path = gif_path(env_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    palette[0].save(path, save_all=True, append_images=palette[1:], duration=FRAME_MS, loop=0, optimize=True)
    return path


def write_round_picture(path: Path = PICTURE, rounds: int = 3) -> float:
    """The round picture (see the module's doc); returns its smallest label in pixels."""
    import gymnasium as gym

    import msenv  # noqa: F401  (registers the ids)
    from baselines import make_controller
    from evaluation.report import save_figure

    env = gym.make("msenv/MultiSpin-v0", render_mode="rgb_array")
    controller = make_controller("greedy-saa")
    controller.reset(seed=SEED)
    env.reset(seed=SEED)
    for _ in range(rounds):
        env.step(controller.act(env.unwrapped.context))
    env.render()
    px = save_figure(env.unwrapped._renderer.fig, path)
    env.close()
    return px


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    import msenv

    if not sys.argv[1:]:
        print(f"{PICTURE.relative_to(ROOT)}: labels {write_round_picture():.1f} px")
    for env_id in sys.argv[1:] or list(msenv.ENV_IDS):
        p = write_gif(env_id)
        print(f"{p.relative_to(ROOT)}: {p.stat().st_size / 1024:.0f} KB")
