"""The animated episode at the top of every env page: ``docs/figures/episodes/<name>.gif``.

Each GIF is the first rounds of one seeded episode of the id, played by the paper's greedy
(``greedy-saa``), as ``render_mode="rgb_array"`` draws them, at 640 px wide (Pillow).
The files are committed; run this after a change to the renderer or to an id:

    python docs/_ext/episode_gifs.py            # every id
    python docs/_ext/episode_gifs.py msenv/MultiSpin-v0
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "figures" / "episodes"
ROUNDS, WIDTH, FRAME_MS, SEED = 12, 640, 700, 0


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


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    import msenv

    for env_id in sys.argv[1:] or [*msenv.ENV_IDS, *msenv.CELL_IDS]:
        p = write_gif(env_id)
        print(f"{p.relative_to(ROOT)}: {p.stat().st_size / 1024:.0f} KB")
