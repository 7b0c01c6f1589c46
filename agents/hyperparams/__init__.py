"""rl-zoo3's hyperparameters for msenv (``agents/hyperparams/ppo.yml``), generated from the one
table of training defaults (:mod:`agents.defaults`): ``python -m agents.hyperparams`` writes the
file, ``python -m agents.hyperparams --check`` says whether the committed one is up to date. Use::

    python -m rl_zoo3.train --algo ppo --env msenv/MultiSpin-v0 --gym-packages msenv \\
        --conf-file agents/hyperparams/ppo.yml

The file lists every registered single-cell id whose defaults rl-zoo3 can express: SB3's
``MlpPolicy`` (the same network as msenv's batched ``MultiSpinPolicy``) or the device-set policy
(``agents.setpolicy.DeviceSetPolicy`` with the id's layout, on raw observations) on the env's own
reward, with the action prior as a callback; an id whose row needs more (the budget policy, a
reward wrapper, training config fields) is named in a comment instead."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from msenv import ENV_IDS, env_config

from ..defaults import PER_ID, id_settings, ppo_kwargs
from ..setpolicy import set_layout

#: train.py's policy → the class rl-zoo3 builds (an SB3 name or a class path)
POLICY_CLASSES = {"mlp": "MlpPolicy", "set": "agents.setpolicy.DeviceSetPolicy"}
#: the generated file
PATH = Path(__file__).resolve().parent / "ppo.yml"
#: its first lines
HEADER = """\
# rl-zoo3 hyperparameters for msenv (PPO), GENERATED from agents/defaults.py (the one table of
# training defaults) by `python -m agents.hyperparams`: edit the table, then regenerate. Use:
#   python -m rl_zoo3.train --algo ppo --env msenv/MultiSpin-v0 --gym-packages msenv \\
#       --conf-file agents/hyperparams/ppo.yml
"""


def _value(v: Any) -> str:
    """A YAML scalar: floats tagged (YAML 1.1 reads ``1e-05`` as a string), strings quoted."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"!!float {v!r}"
    if isinstance(v, str):
        return repr(v)
    return str(v)


def _py(v: Any) -> str:
    """A Python literal for rl-zoo3's ``dict(...)`` strings: dicts as ``dict(key=value)``."""
    if isinstance(v, dict):
        return "dict(" + ", ".join(f"{k}={_py(x)}" for k, x in v.items()) + ")"
    return repr(v)


def expressible(env_id: str) -> str | None:
    """None if rl-zoo3 can train ``env_id`` with its defaults; else why not."""
    s, row = id_settings(env_id), PER_ID.get(env_id, {})
    if s["policy"] not in POLICY_CLASSES:
        return f"policy {s['policy']!r}"
    if s["reward"] != "goodput":
        return f"reward {s['reward']!r}"
    if row.get("config"):
        return "training config fields"
    return None


def entry(env_id: str) -> dict[str, Any]:
    """``env_id``'s hyperparameters, as rl-zoo3 names them: the set policy reads the raw
    observation (no per-entry statistics) and takes the id's layout instead of ``net_arch``."""
    s = id_settings(env_id)
    ppo = ppo_kwargs(s)
    mlp = s["policy"] == "mlp"
    policy_kwargs = ppo["policy_kwargs"] if mlp else {
        **set_layout(env_config(env_id)), **{k: v for k, v in ppo["policy_kwargs"].items() if k != "net_arch"}}
    return {"n_envs": s["n_envs"], "n_timesteps": s["timesteps"], "policy": POLICY_CLASSES[s["policy"]],
            **{k: v for k, v in ppo.items() if k != "policy_kwargs"},
            "normalize": f"dict(norm_obs={mlp}, norm_reward=True, gamma={ppo['gamma']!r})",
            "policy_kwargs": _py(policy_kwargs),
            "env_wrapper": "msenv.envs.env.RoundMetrics",
            # Monitor sits inside env_wrapper in SB3's make_vec_env: only core info keys can be listed here
            "monitor_kwargs": "dict(info_keywords=('episode_throughput',))",
            "callback": [{"agents.callbacks.ActionPriorCallback": {"decay": s["action_prior"]}}]}


def _lines(items: dict[str, Any], indent: str = "  ") -> list[str]:
    """An entry's YAML lines (a list value: rl-zoo3's callbacks, each a class path with keywords)."""
    out = []
    for k, v in items.items():
        if isinstance(v, list):
            out.append(f"{indent}{k}:")
            for item in v:
                (name, kwargs), = item.items()
                out.append(f"{indent}  - {name}:")
                out += [f"{indent}      {a}: {_value(b)}" for a, b in kwargs.items()]
        else:
            out.append(f"{indent}{k}: {_value(v)}")
    return out


def zoo_yaml() -> str:
    """The text of ``ppo.yml``: the first expressible id in full (anchor ``&main``), each other one
    as ``<<: *main`` where its hyperparameters are the same, in full where they differ."""
    ids = [i for i in ENV_IDS if expressible(i) is None]
    left = [f"{i} ({expressible(i)})" for i in [*ENV_IDS, *PER_ID] if expressible(i) is not None]
    note = "Left out (their defaults need more than rl-zoo3's options): " + ", ".join(dict.fromkeys(left))
    text = HEADER + "".join(f"# {line}\n" for line in textwrap.wrap(note, 96))
    first = entry(ids[0])
    text += "\n".join([f"{ids[0]}: &main", *_lines(first)]) + "\n"
    for i in ids[1:]:
        text += "\n" + "\n".join([f"{i}:", "  <<: *main"] if entry(i) == first else [f"{i}:", *_lines(entry(i))]) + "\n"
    return text


def write(path: str | Path = PATH) -> Path:
    """Write :func:`zoo_yaml` to ``path``."""
    Path(path).write_text(zoo_yaml())
    return Path(path)


__all__ = ["HEADER", "PATH", "POLICY_CLASSES", "entry", "expressible", "write", "zoo_yaml"]
