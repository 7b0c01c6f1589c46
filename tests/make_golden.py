"""Regenerate tests/data/golden_paper.npz: trajectories of the paper scenario (the default ids and
a few [R] variants) recorded with the code *before* the dynamics of model §11 were added. The test
``test_dynamics.py::test_paper_scenario_bit_identical_to_golden`` compares every obs, reward and
info key against it. Run only to re-baseline on purpose: ``python tests/make_golden.py``."""

from pathlib import Path

import gymnasium as gym
import numpy as np

import msenv  # noqa: F401

CASES = {
    "qwen": ("msenv/MultiSpin-v0", {}),
    "deepseek": ("msenv/MultiSpin-DeepSeek-v0", {}),
    "variants": ("msenv/MultiSpin-v0", dict(num_devices=7, fading="reciprocal", fading_redraw="episode",
                                             mode_policy="random", t_verify_per_token_s=0.001, episode_length=12)),
}
STEPS = 30


def record(env_id, kwargs, seed=3):
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = {"obs": [obs]}
    k, n = env.action_space.shape[0], int(env.action_space.nvec[0])
    for _ in range(STEPS):
        a = rng.integers(0, n, k)
        obs, r, term, trunc, info = env.step(a)
        out.setdefault("reward", []).append(r)
        out["obs"].append(obs)
        for key, v in info.items():
            out.setdefault(f"info_{key}", []).append(v)
        if term or trunc:
            obs, _ = env.reset()
            out["obs"].append(obs)
    return {key: np.asarray(v) for key, v in out.items()}


def write(cases: dict, filename: str) -> None:
    """Record every case and save them to tests/data/``filename``."""
    data = {}
    for name, (env_id, kw) in cases.items():
        for key, v in record(env_id, kw).items():
            data[f"{name}/{key}"] = v
    path = Path(__file__).parent / "data" / filename
    np.savez_compressed(path, **data)
    print(f"wrote {path} ({len(data)} arrays)")


if __name__ == "__main__":
    write(CASES, "golden_paper.npz")
