"""Sphinx extension: the reference pages generated from the code at the start of every build.

Written into ``docs/generated/`` (not committed): one page per registered id, the configuration
reference, the controllers, the command lines, the per-id baselines tables and the list of
committed figures with the commit that last wrote each. Run as a script (``python
docs/_ext/msenv_docs.py``) to write them without building the site.
"""

from __future__ import annotations

import csv
import importlib
import importlib.util
import re
import subprocess
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
OUT = DOCS / "generated"
TABLES = DOCS / "figures" / "tables"

#: the command lines documented on the reference pages: (title, module or file, anchor)
CLIS = (
    ("python train.py", "train", "train"),
    ("python -m evaluation.evaluate", "evaluation.evaluate", "evaluate"),
    ("python -m evaluation.benchmark", "evaluation.benchmark", "benchmark"),
    ("python -m evaluation.leaderboard", "evaluation.leaderboard", "leaderboard"),
    ("python -m agents.convert", "agents.convert", "convert"),
    ("python -m experiments", "experiments.__main__", "experiments"),
    ("python -m agents.tune", "agents.tune", "tune"),
    ("python -m agents.rllib", "agents.rllib", "rllib"),
)


def page_name(env_id: str) -> str:
    """The file name (without suffix) of an id's page."""
    return "env-" + env_id.split("/")[-1]


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table (pipes inside a cell escaped); the generated pages' one table writer."""
    esc = [[str(c).replace("|", "\\|") for c in r] for r in rows]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in esc]) + "\n"


def _fmt(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt(x) for x in v) + ")"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def load_parser(module: str):
    """The ``build_parser()`` of a CLI module (``train`` is the repository's ``train.py``)."""
    if module == "train":
        spec = importlib.util.spec_from_file_location("train", ROOT / "train.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    else:
        mod = importlib.import_module(module)
    return mod.build_parser()


# ---------------------------------------------------------------------- baselines tables
def read_table(env_id: str) -> list[dict] | None:
    """The committed baselines table of ``env_id`` (None when there is none)."""
    from experiments.tables import table_name

    path = TABLES / f"{table_name(env_id)}.csv"
    if not path.exists():
        return None
    with open(path) as fh:
        return list(csv.DictReader(fh))


def table_markdown(rows: list[dict]) -> str:
    def pm(r, key, digits):
        return f"{float(r[key]):.{digits}f} ± {float(r[key + '_ci95']):.{digits}f}"

    body = [[r["controller"], pm(r, "throughput", 1), pm(r, "rel_throughput", 4), f"{float(r['mean_gamma']):.2f}",
             f"{float(r['t_com_ms']):.1f}", f"{float(r['decision_ms']):.3f}"] for r in rows]
    head = ["controller", "throughput (tok/s)", "vs the first row (paired)", "mean γ", "$T_{\\mathrm{com}}$ ms",
            "decision ms"]
    return md_table(head, body)


def table_section(env_id: str, level: str = "##") -> str:
    from experiments.tables import EPISODES, ROUNDS, SEED, command, controllers_for, table_name

    rows = read_table(env_id)
    head = (f"{level} Baselines table\n\nEvery controller of this id on the same {EPISODES} held-out episodes × "
            f"{ROUNDS} rounds (seeds {SEED}..): long-run throughput Σ tokens / Σ time with its 95% CI over "
            "episodes, its ratio to the first row paired per episode, and the controller's wall time per "
            "decision (one process on a 2-core machine shared with other work: compare within a table). "
            f"Controllers: {', '.join(f'`{c}`' for c in controllers_for(env_id))}. These are not `train.py`'s "
            "held-out episodes (10 × 100 rounds, seeds 10000 …), on which README and the tutorial give PPO's "
            "ratio to the greedy: the same agent's row here is measured on other episodes, so it differs.\n\n")
    if rows is None:
        return head + "Not measured yet for this id.\n"
    agents = [r["controller"] for r in rows if r["controller"].startswith("ppo")]
    name = table_name(env_id)
    dirs = [f"runs/ppo-{a.split(':', 1)[1]}/agent" for a in agents]
    how = f"Written by `{command(env_id, dirs)}` (file `docs/figures/tables/{name}.csv`)"
    if agents:
        from agents.defaults import id_settings
        from evaluation.provenance import file_date

        now = id_settings(env_id)
        policy = {"set": "the device-set policy", "mlp": "an MLP policy", "budget": "the budget policy"}.get(
            now["policy"], f"the {now['policy']} policy")
        made = file_date(TABLES / f"{name}.csv")
        how += (f"; `ppo:{name}` is the agent of `python train.py --env-id {env_id}` (seed 0) with the id's "
                f"defaults of the day the table was made{f' (file committed {made})' if made else ''}; "
                f"`agents/defaults.py` now trains this id with {policy}, {now['timesteps']:,} steps")
        if len(agents) > 1:
            how += f", and `ppo:{name}-mlp` the same with `--policy mlp --log-dir runs/ppo-{name}-mlp`"
    own = (f"To put your own agent in it: `{command(env_id, 'path/to/agent', 'results/')}` — any directory "
           "`load_agent` reads (`train.py` writes one in `<log-dir>/agent`).")
    return head + table_markdown(rows) + f"\n{how}. {own}\n"


# ---------------------------------------------------------------------- environments
#: the msenv release that added each id (docs/changelog.md); every id is still at -v0
ADDED_IN = {"msenv/MultiSpin-v0": "0.1.0", "msenv/MultiSpin-DeepSeek-v0": "0.1.0",
            "msenv/MultiSpin-HiddenAlpha-v0": "0.1.0", "msenv/MultiSpin-Mobile-v0": "0.1.0",
            "msenv/MultiSpin-Dynamic-v0": "0.1.0", "msenv/MultiSpin-Dynamic-Small-v0": "0.1.0",
            "msenv/MultiSpin-Hetero-v0": "0.2.0", "msenv/MultiSpin-Hetero-DR-v0": "0.2.0",
            "msenv/MultiSpin-Cells-v0": "0.3.0", "msenv/MultiSpin-Traces-v0": "unreleased"}
#: msenv's releases, oldest first (the headings of docs/changelog.md)
RELEASES = ("0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0")


def _top_image(name: str) -> str:
    """The page's opening picture: the committed animated episode (docs/_ext/episode_gifs.py),
    or, without one, the rendered first round."""
    if (ROOT / "docs" / "figures" / "episodes" / f"{name}.gif").exists():
        return (f"![an episode's first rounds, played by the paper's greedy](../figures/episodes/{name}.gif)")
    return f"![a rendered round](img/{name}.png)"


def history_section(env_id: str) -> str:
    """The id's version history: when it was added and what each later release did to it."""
    import msenv

    added = ADDED_IN[env_id]
    assert msenv.__version__ in RELEASES, f"add {msenv.__version__} to RELEASES (and its changelog entry)"
    if added not in RELEASES:  # added since the last release (the changelog's unreleased section)
        return ("## Version history\n\nAn id's version changes whenever its behaviour changes "
                f"([changelog](../changelog.md)); `{env_id}` is new since msenv {RELEASES[-1]} (unreleased).\n")
    rows = [[f"{added}", f"`{env_id}` added (`-v0`)"]]
    rows += [[r, ("unchanged: the same seed and actions give the same trajectory (its golden trajectory, "
                  "`tests/test_functional.py`)")] for r in RELEASES[RELEASES.index(added) + 1:]]
    return ("## Version history\n\nAn id's version changes whenever its behaviour changes "
            "([changelog](../changelog.md)); this one has only ever been `-v0`.\n\n"
            + md_table(["msenv", "this id"], rows))


def summary_box(env_id: str) -> str:
    """The box at the top of an id's page, as Gymnasium's env pages have: the spaces (read from the
    env itself), the reward, the episode and the import line."""
    import gymnasium as gym

    import msenv

    env = gym.make(env_id).unwrapped
    cfg = msenv.env_config(env_id)
    base = cfg.base
    nvec = env.action_space.nvec
    action = (f"MultiDiscrete([{nvec[0]}] * {len(nvec)})" if len(set(nvec.tolist())) == 1 else str(env.action_space))
    rows = [["Action space", f"`{action}` (a draft length per device slot)"],
            ["Observation space", f"`{env.observation_space}`"],
            ["Reward", f"the round's goodput Σ_k N_k / T (tokens/s) × `reward_scale` ({base.reward_scale:g})"],
            ["Episode", f"{base.episode_length} rounds, then truncated (never terminated)"],
            ["Import", f'`gym.make("{env_id}")` after `import msenv`']]
    env.close()
    return ":::{container} summary-box\n" + md_table(["", ""], rows) + ":::\n"


#: the committed result file whose scores a cell-generator id's page shows
CELL_SUITE = "cells-in-v1"


def cells_baselines_section(env_id: str) -> str:
    """The Cells id's baselines table: every method of the suite's committed result file, its IQM
    of throughput relative to the greedy and charged its decision time, with 95% intervals (the
    leaderboard's numbers, through the same role as the results pages)."""
    import json

    doc = json.loads((DOCS / "leaderboard" / f"{CELL_SUITE}.json").read_text())
    rows = []
    for label, m in doc["methods"].items():
        runs = m.get("runs", 1)
        rows.append([f"`{label}`", "agent" if m.get("kind") == "agent" else "controller", str(runs),
                     f"{{iqm}}`{CELL_SUITE} {label} throughput`", f"{{iqm}}`{CELL_SUITE} {label} realtime`"])
    return (f"## Baselines table\n\nThe test suite `{CELL_SUITE}` ({doc['suite']['description']}) — IQM of throughput "
            "relative to the paper's greedy, 95% intervals over training seeds and test episodes (the "
            "[leaderboard](leaderboard.md); `python -m evaluation.benchmark --suite "
            f"{CELL_SUITE}` and the file's own command reproduce it). *Charged its decision time*: the same with "
            "each decision's wall time added to its round.\n\n"
            + md_table(["method", "kind", "seeds", "throughput", "charged its decision time"], rows))


#: the trace ids, whose baselines are the test suite's (their committed result file)
TRACE_SUITE = "traces-v1"
TRACE_IDS = ("msenv/MultiSpin-Traces-v0",)


def oracle_only(env_id: str) -> dict[str, str]:
    """What a server cannot know on ``env_id``, derived from the engine itself: the fields of
    ``env.unwrapped.oracle_context`` that hold a value the server's ``context`` does not, each with
    the meaning its engine kind declares (``HIDDEN`` in ``msenv/engine/kinds/*.py``). A hidden field
    that its kind does not declare fails the build."""
    import dataclasses
    import sys

    import gymnasium as gym
    import numpy as np

    import msenv

    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    ctx, orc = env.context, env.oracle_context
    hidden = []
    for f in dataclasses.fields(orc):
        if f.name == "oracle":
            continue
        a, b = getattr(ctx, f.name), getattr(orc, f.name)
        if b is None or not isinstance(b, np.ndarray | float | int | np.generic):
            continue
        if a is None or np.shape(a) != np.shape(b) or not np.array_equal(a, b):
            hidden.append(f.name)
    env.close()
    from msenv.engine.functional import engine_for

    cfg = msenv.env_config(env_id)
    kind = sys.modules[type(engine_for(cfg)).__module__] if hasattr(cfg, "dynamics") else None
    declared = getattr(kind, "HIDDEN", {})
    missing = [h for h in hidden if h not in declared]
    if missing:
        raise RuntimeError(f"{env_id}: oracle_context holds {missing}, which {kind.__name__}.HIDDEN does not describe")
    return {h: declared[h] for h in hidden}


def server_knows(env_id: str) -> str:
    """The id page's "What a server can know", from :func:`oracle_only` and the kind's declarations."""
    import sys

    import msenv
    from msenv.engine.functional import engine_for

    cfg = msenv.env_config(env_id)
    hidden = oracle_only(env_id)
    kind = sys.modules[type(engine_for(cfg)).__module__]
    listing = "".join(f"\n- `{name}`: {doc}" for name, doc in hidden.items())
    if not hidden:
        return ("Nothing is hidden: the observation and `env.unwrapped.context` carry each device's α and the "
                "very gains its correction will use (the paper's assumption); `env.unwrapped.oracle_context` "
                "holds the same values as `context` (derived from the engine: checked when this page is built).")
    if env_id in TRACE_IDS:
        return ("A server never sees α: " + kind.CONTEXT_ALPHA + ". It sees what the observation table "
                "above lists — each device's acceptance so far, its last rounds and its request's tokens — and "
                "the paper's channel and budgets. Hidden from it, held only by `env.unwrapped.oracle_context` "
                "for explicitly named oracle controllers (`clairvoyant`), derived from the engine when this page "
                "is built:\n" + listing + "\n\nThe round's truth is in `info` for analysis (`acc_len`), never "
                "in the observation ([model §12](../model.md#model-12); the "
                "[traces results](../results/traces.md)).")
    seen = {"oracle": "the gains the correction will use", "decision": "the gains at decision time (the "
            "correction uses them evolved over the round's computation time)",
            "statistical": "only the large-scale gains β"}[cfg.dynamics.csi]
    alpha = ("each device's α" if cfg.dynamics.alpha_observed else
             "its belief about α "
             f"({'a Beta posterior per request' if cfg.belief == 'beta' else 'the chain filter'}), never α")
    return (f"A server sees {alpha}, and {seen}. The truth of every round — the true α and the gains the "
            "correction used — is in `info` (`alpha`, `g_ul_corr`, `g_dl_corr`) for analysis, and in "
            "`env.unwrapped.oracle_context` for explicitly named oracle controllers (`oracle-greedy`, "
            "`oracle-alpha-saa`, `oracle-csi-saa`); never in the observation "
            "([model §11](../model.md#model-11)). Held only by `oracle_context` (derived from the engine when "
            "this page is built):\n" + listing + "\n")


def suite_baselines_section(env_id: str, suite: str) -> str:
    """An id's baselines table from a test suite's committed result file: every method's IQM of
    throughput relative to the suite's reference, and charged its decision time, 95% intervals."""
    import json

    doc = json.loads((DOCS / "leaderboard" / f"{suite}.json").read_text())
    rows = []
    for label, m in doc["methods"].items():
        rows.append([f"`{label}`", "agent" if m.get("kind") == "agent" else "controller", str(m.get("runs", 1)),
                     f"{{iqm}}`{suite} {label} throughput`", f"{{iqm}}`{suite} {label} realtime`"])
    return (f"## Baselines table\n\nMeasured on the test suite `{suite}` ({doc['suite']['description']}) — IQM "
            "of throughput relative to the suite's reference, 95% intervals over training seeds and test episodes "
            f"(the [leaderboard](leaderboard.md); the [results page](../results/traces.md) and "
            "[results at a glance](results-at-a-glance.md) read them). *Charged its decision time*: the same "
            "with each decision's wall time added to its round.\n\n"
            + md_table(["method", "kind", "seeds", "throughput", "charged its decision time"], rows))


def _define_bounds(doc: str, cfg) -> str:
    """An observation entry's doc with its bounds said: "lo" and "hi" of the drafting-speed scale
    are the config's ``draft_scale_range``."""
    if "(hi − lo)" in doc:
        lo, hi = cfg.compute.draft_scale_range
        doc += f", where lo, hi = `draft_scale_range` ({lo:g}, {hi:g} for this id)"
    # a function of a quantity said in words: tanh(tokens the request has generated / 256)
    m = re.search(r"tanh\(([A-Za-z][^()/]*?\s[^()/]*?) / ([\d.]+)\)", doc)
    if m:
        doc = doc[:m.start()] + f"$\\tanh(n / {m.group(2)})$, n the {m.group(1).strip()}" + doc[m.end():]
    return doc


def env_page(env_id: str, out: Path = OUT) -> str:
    import numpy as np

    import msenv
    from msenv.config import FIELD_ORDER, SystemConfig
    from msenv.engine.functional import engine_for, feature_docs

    cfg = msenv.env_config(env_id)
    lay = msenv.layout_of(cfg)
    k, nf = lay.slots, lay.row
    default = SystemConfig()
    diff = [[f"`{name}`", _fmt(getattr(cfg, name)), _fmt(getattr(default, name))]
            for name in FIELD_ORDER if getattr(cfg, name) != getattr(default, name)]
    dev, glob = feature_docs(cfg)
    dev, glob = [_define_bounds(d, cfg) for d in dev], [_define_bounds(d, cfg) for d in glob]
    obs_rows = [[f"`{nf}k + {i}`", d] for i, d in enumerate(dev)] + [[f"`{nf}K + {i}`", d] for i, d in enumerate(glob)]
    info_rows = [[f"`{key.name}`", key.doc] for key in engine_for(cfg).info]
    name = env_id.split("/")[-1]
    img = out / "img" / f"{name}.png"
    _render(env_id, img)
    knows = server_knows(env_id)
    parts = [
        f"# `{env_id}`\n\n{summary_box(env_id)}\n{msenv.ENV_NOTES[env_id]}\n\n{_top_image(name)}\n",
        ("## Make it\n\n```python\nimport gymnasium as gym\nimport msenv  # registers the ids\n\n"
         f'env = gym.make("{env_id}")  # any config field as a keyword\n'
        "# a batched vector env: every env in one array call\n"
        f'venv = gym.make_vec("{env_id}", num_envs=64,\n'
        '                    vectorization_mode="vector_entry_point")\n```\n\n'
        f"Train on it: `python train.py --env-id {env_id}`; compare controllers on it: "
        f"`python -m evaluation.evaluate --env-id {env_id}`.\n"),
        "## Configuration\n\n" + (("Fields that differ from the default `SystemConfig()` "
                                   "([configuration reference](configuration.md)):\n\n"
                                   + md_table(["field", "this id", "default"], diff)) if diff else
                                  "The default `SystemConfig()` ([configuration reference](configuration.md)).\n"),
        f"## Spaces\n\n- **Action**: `MultiDiscrete([{cfg.gamma_max + 1}] * {k})` — one draft length in "
        f"[0, {cfg.gamma_max}] per device; a bad action raises `ValueError` naming the device.\n"
        f"- **Observation**: float32 `Box(-1, 1, ({lay.obs_size},))` — {k} device rows of {nf} entries "
        f"(device k at `{nf}k + j`), then {lay.n_globals} global entries:\n\n"
        + md_table(["index", "meaning"], obs_rows),
        ("## Reward and episode\n\nThe reward is the round's goodput Σ_k N_k / T in tokens/s, times "
         f"`reward_scale` ({cfg.reward_scale}). An episode is {cfg.episode_length} rounds, then truncated "
         "(never terminated). The score that matters over an episode is its long-run throughput Σ tokens / "
         "Σ time (`info['episode_throughput']`), not the mean reward: a long round weighs more.\n"),
        "## `info`\n\nNumbers and arrays only (vector envs stack them):\n\n" + md_table(["key", "meaning"], info_rows),
        f"## What a server can know\n\n{knows}\n",
        suite_baselines_section(env_id, TRACE_SUITE) if env_id in TRACE_IDS else table_section(env_id),
        history_section(env_id),
    ]
    obs, _ = msenv.MultiSpinEnv(cfg).reset(seed=0)
    assert obs.shape == (lay.obs_size,) and np.all(np.abs(obs) <= 1)
    return "\n".join(parts)


def cells_page(env_id: str, out: Path = OUT) -> str:
    """The page of a cell-generator id (generated from :class:`msenv.envs.cells.CellConfig`)."""
    import msenv
    from msenv.config import FIELD_ORDER, SystemConfig, field_docs
    from msenv.engine.base import CELL_INFO
    from msenv.engine.cells import K_SCALE, SPEED_FEATURE
    from msenv.engine.functional import engine_for, feature_docs
    from msenv.envs.cells import CELL_FIELDS, CellConfig

    cells = msenv.env_config(env_id)
    base, default = cells.base, SystemConfig()
    docs = field_docs(CellConfig)
    gen_rows = [[f"`{n}`", _fmt(cells.base.preset if n == "base" else getattr(cells, n)),
                 _fmt(getattr(CellConfig(), n)) if n != "base" else "`SystemConfig()`", docs[n]] for n in CELL_FIELDS]
    diff = [[f"`{name}`", _fmt(getattr(base, name)), _fmt(getattr(default, name))]
            for name in FIELD_ORDER if getattr(base, name) != getattr(default, name)]
    single = engine_for(base).layout
    nf, n_glob = single.row, single.n_globals
    dev, glob = feature_docs(base)
    dev[single.device.index(SPEED_FEATURE)] = ("tanh(T_k^dft / T_dft,ref − 1): the drafting-speed scale, the same in "
                                               "every cell")
    obs_rows = ([[f"`{nf + 1}k + {i}`", d] for i, d in enumerate(dev)]
                + [[f"`{nf + 1}k + {nf}`", "1 for a device, 0 for a padded slot (whose row is all zeros)"]]
                + [[f"`{nf + 1}·k_max + {i}`", d] for i, d in enumerate(glob)]
                + [[f"`{nf + 1}·k_max + {n_glob}`", f"tanh(ln K / {K_SCALE:g}): the cell's size"]])
    info_rows = [[f"`{key.name}`", key.doc.replace("[K]", "[k_max]")] for key in engine_for(base).info + CELL_INFO]
    name = env_id.split("/")[-1]
    _render(env_id, out / "img" / f"{name}.png")
    return "\n".join([
        f"# `{env_id}`\n\n{summary_box(env_id)}\n{msenv.ENV_NOTES[env_id]}\n\n{_top_image(name)}\n",
        ("A cell generator: every episode draws a new cell — its number of devices K, its drafting "
         "spread, and through the base config its distances, budgets and tasks — and plays it exactly as "
         "the single-cell env of that cell would (same seed, same rounds). The spaces stay fixed, as SB3 "
         "and the vector envs need: `k_max` device slots, the cell's devices first, the rest padding. One "
         "policy that reads the devices as a set acts in any cell; the committed agent "
         "`agents/pretrained/cells` was trained here once, on cells of 5 to 200 devices, deciding a "
         "drafting-time budget per cell and which devices draft (`--policy budget`; "
         "[results](../results/cells.md)).\n"),
        ("## Make it\n\n```python\nimport gymnasium as gym\nimport msenv  # registers the ids\n\n"
         f'env = gym.make("{env_id}")  # a new cell every episode\n'
        "obs, info = env.reset(seed=0)\nprint(info[\"num_devices\"], env.action_space.shape)\n"
        f'big = gym.make("{env_id}", k_range=(200, 200), k_max=200)  # K = 200\n'
        f'venv = gym.make_vec("{env_id}", num_envs=4,\n'
        '                    vectorization_mode="vector_entry_point")\n```\n\n'
        "The vector env (`msenv.envs.cells_vector.MultiSpinCellsVectorEnv`) holds its copies' cells in one batch "
        "padded "
        "to k_max and plays every copy's round in one kernel call, each over its own K devices (a padded slot "
        "never drafts nor counts in the verification pass), with the same numbers as Gymnasium's "
        "`SyncVectorEnv` of single envs bit for bit; `autoreset_mode` `\"next_step\"` (default) or "
        "`\"same_step\"`. Under the model §11 dynamics each copy's round is played by its cell's engine in the same "
        "batch; "
        "with a render mode `make_vec` gives "
        "`msenv.envs.cells_vector.MultiSpinCellsSyncVectorEnv`, which steps the copies one after the other. "
        "A PettingZoo variant: `msenv.envs.marl.MultiSpinCellsParallelEnv` (an episode's agents "
        "are its K devices).\n\n"
        f"Train on it: `python train.py --env-id {env_id}`; compare controllers and the committed agent in a "
        f"cell of 200 devices: `python -m evaluation.evaluate --env-id {env_id} --set k_range=[200,200] k_max=200 "
        "--controllers computation-only optimal-uniform --agent agents/pretrained/cells --episodes 2 --rounds 10`.\n"),
        "## Configuration\n\nThe generator's fields (`msenv.envs.cells.CellConfig`; keywords of `gym.make`, "
        "`--set` on the command lines; a bad value raises `ValueError` naming it, an unknown name `TypeError`; "
        "`num_devices` is refused: K is drawn):\n\n" + md_table(["field", "this id", "default", "meaning"], gen_rows)
        + "\nThe base's fields that differ from the default `SystemConfig()` ([configuration reference]"
        "(configuration.md)):\n\n" + md_table(["field", "this id", "default"], diff),
        f"## Spaces\n\n- **Action**: `MultiDiscrete([{base.gamma_max + 1}] * k_max)` — slots 0 … K − 1 are the "
        "cell's devices; the padded slots' entries must be valid draft lengths and are ignored (the round is "
        "played with `action[:K]`), so they never change tokens, latency or goodput.\n"
        f"- **Observation**: float32 `Box(-1, 1, ({nf + 1}·k_max + {n_glob + 1},))` — k_max rows of "
        f"{nf + 1} entries, then {n_glob + 1} globals:\n\n" + md_table(["index", "meaning"], obs_rows),
        ("## Reward and episode\n\nAs the single-cell ids: the round's goodput (tokens/s) times `reward_scale`, "
         f"{base.episode_length} rounds then truncated.\n"),
        "## `info`\n\nThe single-cell `info`, per-device arrays padded to k_max with zeros (so vector envs stack "
        "them), and the cell's size:\n\n" + md_table(["key", "meaning"], info_rows),
        ("## What a server can know\n\nWhat it knows in the cell the episode drew (the base config's model: here "
         "the paper's, where what a server sees is the truth), and the cell's size K; the padded slots are "
         "no devices.\n"),
        cells_baselines_section(env_id),
        history_section(env_id),
    ])


def _render(env_id: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import gymnasium as gym
    import matplotlib.pyplot as plt
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    env.step(np.full(env.action_space.shape, 5))
    plt.imsave(path, env.render())
    env.close()


def environments_index() -> str:
    import msenv

    notes = msenv.ENV_NOTES
    rows = [[f"[`{i}`]({page_name(i)}.md)", n] for i, n in notes.items()]
    toc = "\n".join(page_name(i) for i in notes)
    return ("# Environments\n\nEvery id `import msenv` registers (generated from `msenv.ENV_IDS`). Each "
            "page says how to make it, its configuration, spaces, reward, `info`, what a server can know and "
            "its baselines table.\n\n" + md_table(["id", "what"], rows)
            + f"\n```{{toctree}}\n:hidden:\n\n{toc}\n```\n")


# ---------------------------------------------------------------------- configuration, controllers, CLIs
_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|obj|exc):`~?([^`]+)`")


def _plain_roles(text: str, code: bool = True) -> str:
    """Docstring/help text with its RST roles (``:func:`x```) as `x` (``code``) or x, so that they
    never print literally on a Markdown page or in a ``text`` block."""
    return _ROLE.sub(lambda m: f"`{m.group(1)}`" if code else m.group(1), text)


def configuration_page() -> str:
    import typing

    from msenv.config import GROUPS, PRESETS, SystemConfig, config_fields, field_docs
    from msenv.config.deprecation import REMOVED_IN, SAA_FIELDS

    hints = {None: typing.get_type_hints(SystemConfig), **{g: typing.get_type_hints(c) for g, c in GROUPS.items()}}
    docs = field_docs()
    by_group: dict[str | None, list[list[str]]] = {}
    for name, group, f in config_fields():
        typ = str(hints[group][name]).replace("typing.", "").replace("<class '", "").replace("'>", "")
        by_group.setdefault(group, []).append([f'<a id="config-{name}"></a>`{name}`', f"`{typ}`",
                                               f"`{_fmt(f.default)}`", _plain_roles(docs[name])])
    tables = "".join(f"\n## {'`SystemConfig` itself' if g is None else f'`{g}`'}\n\n"
                     + ("" if g is None else f"`cfg.{g}`, a `msenv.config.{GROUPS[g].__name__}`.\n\n")
                     + md_table(["field", "type", "default", "meaning"], rows) for g, rows in by_group.items())
    presets = md_table(["preset", "fields it sets"],
                     [[f"`{n}`", ", ".join(f"`{k}={_fmt(v)}`" for k, v in p.items() if k != "preset")]
                      for n, p in PRESETS.items()])
    return ("# Configuration reference\n\n`msenv.SystemConfig` is a frozen, validated dataclass; this page is "
            "generated from it (each meaning is the field's `#:` comment in `msenv/config/groups.py` or `system.py`). "
            "Give fields to "
            "`gym.make(id, **fields)`, `SystemConfig(...)`, `cfg.replace(...)`, `--set FIELD=VALUE` on the "
            "command lines (VALUE in JSON), or `env.reset(options={'config': {...}})`. A bad value raises "
            "`ValueError` naming the field, the value and what is allowed; an unknown name raises Python's "
            "`TypeError`. [R] marks a reconstructed choice of the [model](../model.md).\n\n"
            + "Each field belongs to a group of one concern (`cfg.radio`, `cfg.channel`, `cfg.compute`, "
            "`cfg.acceptance`, `cfg.episode`, `cfg.dynamics`, `cfg.traces`; the first three fields are "
            "`SystemConfig`'s own); it is read and set by its flat name all the same (`cfg.p_dl_dbm` is "
            "`cfg.radio.p_dl_dbm`: the flat names are for users; msenv's own code reads a field through its "
            "group). One table per group follows.\n"
            + tables + "\n## Presets\n\n`msenv.preset(name, **overrides)`:\n\n" + presets
            + "\n\n## Deprecated\n\n" + md_table(["field", "since 0.6", "removed in"], [
                [f"`{name}`", (f"`baselines.saa.SAAConfig.{name}`; a controller's `"
                 f"{'n_samples' if name == 'n_saa' else 'objective'}`"), f"msenv {REMOVED_IN}"]
                for name in SAA_FIELDS])
            + "\nThe SAA controllers' settings are theirs (`make_controller('greedy-saa', n_samples=4000)`). "
            "A config given one with a value other than its default still sets the controllers' defaults, "
            "with a `DeprecationWarning`, until it is removed.\n")


def _api_link(cls) -> str:
    """The class as ``baselines.Name``, linked to its entry in the API reference."""
    return f"{{py:class}}`baselines.{cls.__name__} <{cls.__module__}.{cls.__name__}>`"


def controllers_page() -> str:
    import msenv
    from baselines import REGISTRY
    from experiments.tables import controllers_for

    knows = {False: "what a server observes", True: "the truth (true α, the correction-time gains)",
             "alpha": "what a server observes, plus the true α", "csi": "what a server observes, plus the "
             "correction-time gains"}
    cost: dict[str, dict[str, str]] = {}
    for env_id in msenv.ENV_IDS:
        for r in read_table(env_id) or []:
            cost.setdefault(r["controller"], {})[env_id] = f"{float(r['decision_ms']):.2f}"
    ids = [i for i in msenv.ENV_IDS if read_table(i)]
    rows = []
    for name, cls in REGISTRY.items():
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        rows.append([f"`{name}`", _api_link(cls), knows[getattr(cls, "oracle", False)], doc])
    from baselines import Fixed

    rows.append(["`fixed-<γ>`", _api_link(Fixed), "nothing", "γ_k = γ for every device, every round."])
    cost_rows = [[f"`{name}`"] + [cost.get(name, {}).get(i, "—") for i in ids]
                 for name in dict.fromkeys([*REGISTRY, "fixed-4", *(c for i in ids for c in controllers_for(i))])
                 if name in cost]
    return ("# Controllers\n\nEvery name `--controllers` accepts (generated from `baselines.REGISTRY`; made by "
            "{py:func}`baselines.make_controller`; each class's entry in the [API reference](../api.md)). All "
            "act through one interface, `controller.act(context, obs)`, so the harness compares them — and "
            "trained agents (`agents.load_agent`, rows `ppo:<run>`) — on identical seeds. A controller sees "
            "`env.unwrapped.context` (what a server can know); only controllers whose `oracle` attribute is "
            "set get `env.unwrapped.oracle_context`.\n\n"
            + md_table(["name", "class", "what it knows", "what it does"], rows)
            + "\n## Cost per decision\n\nMilliseconds per decision, measured in the baselines tables "
            "(one process on a 2-core machine; the K of each id), four ids a table:\n\n"
            + "\n".join(md_table(["controller"] + [f"`{i.split('/')[-1]}`" for i in part],
                               [[row[0], *(row[1 + ids.index(i)] for i in part)] for row in cost_rows])
                        for part in (ids[j:j + 4] for j in range(0, len(ids), 4))))


#: the width of the command lines' help on their page: what the article column shows unscrolled
HELP_COLUMNS = 86


def _wrap_help(text: str, width: int = HELP_COLUMNS) -> str:
    """A ``--help`` text with every line longer than ``width`` wrapped at spaces, its continuation
    lines indented to where the line's description starts (two spaces or more into it)."""
    import textwrap

    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        m = re.match(r"(\s*\S.*?\s{2,})(?=\S)", line)
        hang = len(m.group(1)) if m and len(m.group(1)) < width // 2 else len(line) - len(line.lstrip()) + 2
        out += textwrap.wrap(line, width, subsequent_indent=" " * hang, break_long_words=True,
                             break_on_hyphens=False)
    return "\n".join(out)


def subcommands(parser) -> dict:
    """A parser's subcommands (name → its parser), in their order; empty when it has none."""
    import argparse

    return {name: sub for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def _help_text(parser) -> str:
    """A parser's ``--help`` as the page shows it: wrapped to :data:`HELP_COLUMNS`, roles plain."""
    import os

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_COLUMNS)  # argparse wraps its help to the terminal's width
    try:
        return _wrap_help(_plain_roles(parser.format_help(), code=False)).rstrip()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def cli_page() -> str:
    parts = [("# Command lines\n\nThe help of every command, generated from its argument parser; a command of "
             "subcommands is followed by each subcommand's own help.\n")]
    for title, module, anchor in CLIS:
        parser = load_parser(module)
        parts.append(f"({anchor}-cli)=\n## `{title}`\n\n```text\n{_help_text(parser)}\n```\n")
        for name, sub in subcommands(parser).items():
            parts.append(f"### `{title} {name}`\n\n```text\n{_help_text(sub)}\n```\n")
    return "\n".join(parts)


def figure_commits() -> str:
    rows = []
    for path in sorted((DOCS / "figures").rglob("*")):
        if path.is_file() and path.suffix in (".png", ".csv"):
            rel = path.relative_to(ROOT).as_posix()
            try:
                out = subprocess.run(["git", "log", "-1", "--format=%h %cs", "--", rel], cwd=ROOT, capture_output=True,
                                     text=True, timeout=30).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                out = ""
            commit, _, date = out.partition(" ")
            rows.append([f"`{rel}`", f"`{commit}`" if commit else "(not committed)", date or "—"])
    return ("# Figure files and their commits\n\nEvery committed figure and data file of the results pages, with "
            "the commit that last wrote it (generated from `git log`).\n\n"
            + md_table(["file", "commit", "date"], rows))


def baselines_tables_page() -> str:
    import msenv

    parts = [("# Baselines tables\n\nOne table per registered id — the table users of benchmark environments "
              "ask for (generated from the committed CSVs in `docs/figures/tables/`).\n")]
    for env_id in msenv.ENV_IDS:
        parts.append(f"## [`{env_id}`]({page_name(env_id)}.md)\n\n" + table_section(env_id, "###"))
    return "\n".join(parts)


#: the house's floors, top first: (title, folder or file names under the repository, what it is)
FLOORS = (
    ("experiments · train.py", ("experiments", "train.py"), "the paper's figures, studies, training and comparison"),
    ("agents", ("agents",), "PPO, policy kinds by protocol, portable agents"),
    ("evaluation", ("evaluation",), "the harness, the benchmark and its statistics, the leaderboard"),
    ("baselines", ("baselines",), "the controllers behind one interface"),
    ("msenv.envs", ("msenv/envs",), "the Gymnasium shells and adapters"),
    ("msenv.engine", ("msenv/engine",), "state, observation, context, the two steps"),
    ("msenv.traces", ("msenv/traces",), "trace banks of measured acceptance, their statistics, the fitted model"),
    ("msenv.model", ("msenv/model",), "the formulas and the round kernel"),
    ("msenv.config", ("msenv/config",), "validated, frozen configs, one per concern"),
    ("msenv.atomic", ("msenv/atomic.py",), "atomic writes: every writer's temporary file, fsync and rename"),
)


def _modules(places: tuple[str, ...]) -> list[str]:
    names = []
    for place in places:
        path = ROOT / place
        if path.is_file():
            names.append(path.stem)
        else:
            names += sorted(p.stem for p in path.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
            names += sorted(f"{p.name}/" for p in path.iterdir() if (p / "__init__.py").exists())
    return names


def house_svg() -> str:
    """The picture of the house (docs/design.md): one floor per layer, top first, each with its
    modules as they are on disk; every import points down a floor or more. Every text is 16 px at
    the picture's own width (the body text's size in the article column)."""
    import textwrap

    width, left, gap, top, line = 660, 100, 22, 10, 22
    parts, y = [], top
    for i, (title, places, what) in enumerate(FLOORS):
        rows = textwrap.wrap(" · ".join(_modules(places)), 54)
        h = 36 + line * len(rows)
        if i:
            parts.append(f'<line x1="{left + 40}" y1="{y - gap}" x2="{left + 40}" y2="{y - 3}" stroke="#5b6b82" '
                         'stroke-width="2" marker-end="url(#down)"/>')
        parts.append(f'<rect x="{left}" y="{y}" width="{width - left - 10}" height="{h}" rx="8" '
                     f'fill="{"#eef3fb" if title.startswith("msenv") else "#f4f4f4"}" stroke="#5b6b82"/>')
        parts.append(f'<text x="{left + 12}" y="{y + 24}" font-size="16" font-weight="bold">{title}</text>')
        parts.append(f'<title>{title}: {what}</title>')
        for j, row in enumerate(rows):
            parts.append(f'<text x="{left + 12}" y="{y + 46 + j * line}" font-size="16" '
                         f'font-family="monospace">{row}</text>')
        y += h + gap
    h = y - gap + 10
    parts.append(f'<text x="8" y="{top + 30}" font-size="16" fill="#444">imports</text>'
                 f'<text x="8" y="{top + 50}" font-size="16" fill="#444">point</text>'
                 f'<text x="8" y="{top + 70}" font-size="16" fill="#444">down</text>'
                 f'<line x1="40" y1="{top + 82}" x2="40" y2="{h - 30}" stroke="#5b6b82" stroke-width="3" '
                 'marker-end="url(#down)"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {h}" width="{width}" height="{h}" '
            'font-family="sans-serif">'
            '<defs><marker id="down" viewBox="0 0 10 10" refX="5" refY="9" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M0,0 L5,10 L10,0 z" fill="#5b6b82"/></marker></defs>'
            '<rect width="100%" height="100%" fill="white"/>' + "".join(parts) + "</svg>\n")


def write_all(out: Path = OUT) -> list[Path]:
    """Write every generated page; returns the files written."""
    import msenv
    from msenv.config import CellConfig

    out.mkdir(parents=True, exist_ok=True)
    pages = {"environments.md": environments_index(), "configuration.md": configuration_page(),
             "controllers.md": controllers_page(), "cli.md": cli_page(), "figure-commits.md": figure_commits(),
             "baselines-tables.md": baselines_tables_page()}
    for env_id in msenv.ENV_IDS:  # the page of the shell that plays the id
        page = cells_page if msenv.env_config(env_id).entry == CellConfig.entry else env_page
        pages[f"{page_name(env_id)}.md"] = page(env_id, out)
    from plain_math import markdown_math

    # the code's plain-Unicode formulas as math (the command lines' help stays as printed)
    pages = {name: text if name in ("cli.md", "figure-commits.md") else markdown_math(text)
             for name, text in pages.items()}
    pages["house.svg"] = house_svg()
    written = []
    for name, text in pages.items():
        path = out / name
        if not path.exists() or path.read_text() != text:  # unchanged pages keep their mtime (no rebuild)
            path.write_text(text)
        written.append(path)
    return written


def _on_builder_inited(app) -> None:
    write_all()


def _link_figures_to_full_size(app, doctree) -> None:
    """Every figure of a results page opens its full-size file on a click: the image gets the
    column's width, and Sphinx links a resized image to its original (``html_scaled_image_link``)."""
    from docutils import nodes

    if not app.env.docname.startswith("results/"):
        return
    for image in doctree.findall(nodes.image):
        if not isinstance(image.parent, nodes.reference) and not any(k in image for k in ("width", "height", "scale")):
            image["width"] = "100%"


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    app.connect("doctree-read", _link_figures_to_full_size)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    import sys

    sys.path[:0] = [str(ROOT)]
    for p in write_all():
        print(p.relative_to(ROOT))
