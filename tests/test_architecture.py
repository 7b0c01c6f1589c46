"""The code's structure, read from its source: layers point down, rooms stay small, compiled
kernels read their parameter blocks by named slot, private names stay in their module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from msenv.model import slots

ROOT = Path(__file__).resolve().parent.parent
#: each layer may import itself and the layers before it
LAYERS = ("msenv", "baselines", "evaluation", "agents", "experiments")
PACKAGES = [ROOT / name for name in LAYERS] + [ROOT / "benchmarks"]
MAX_MSENV_LINES = 450


def _sources(*dirs: Path) -> list[Path]:
    return sorted(p for d in dirs for p in d.rglob("*.py"))


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import, at any depth (lazy imports too)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module.split(".")[0]))
    return out


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_only_point_down(layer):
    above = set(LAYERS[LAYERS.index(layer) + 1:]) | {"train"}
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p in _sources(ROOT / layer)
           for line, mod in _imported_modules(ast.parse(p.read_text())) if mod in above]
    assert not bad, "\n".join(bad)


def test_no_msenv_baselines_or_evaluation_module_over_the_size_limit():
    long = {str(p.relative_to(ROOT)): n for p in _sources(ROOT / "msenv", ROOT / "baselines", ROOT / "evaluation")
            if (n := len(p.read_text().splitlines())) > MAX_MSENV_LINES}
    assert not long, f"modules over {MAX_MSENV_LINES} lines: {long}"


#: NamedTuple's public API (underscored only to keep clear of field names)
NAMEDTUPLE_API = {"_fields", "_make", "_replace", "_asdict", "_field_defaults"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in NAMEDTUPLE_API


def test_no_private_name_is_used_across_modules():
    bad = []
    for p in _sources(*PACKAGES) + [ROOT / "train.py"]:
        tree = ast.parse(p.read_text())
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                bad += [f"{p.relative_to(ROOT)}:{node.lineno} imports {a.name}" for a in node.names if _private(a.name)]
                modules.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Import):
                modules.update((a.asname or a.name).split(".")[0] for a in node.names)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                    and node.value.id in modules and node.value.id not in ("np", "math", "os", "sys")):
                bad.append(f"{p.relative_to(ROOT)}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not bad, "\n".join(bad)


def _compiled_functions(tree: ast.Module):
    """Functions numba compiles: decorated with ``njit`` or passed to ``njit(...)`` / ``ufunc``."""
    wrapped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func.func if isinstance(node.func, ast.Call) else node.func
            if getattr(f, "id", None) in ("njit", "ufunc", "vectorize"):
                wrapped.update(a.id for a in node.args if isinstance(a, ast.Name))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and (
                node.name in wrapped or any(ast.unparse(d).startswith("njit") for d in node.decorator_list)):
            yield node


#: compiled functions that index plain data by position (not a parameter or output block)
DATA_INDEXING = {"pairwise_sum"}  # the 8 partial sums of numpy's float order


def test_compiled_kernels_read_blocks_by_named_slot():
    kernels, bad = 0, []
    for p in _sources(ROOT / "msenv"):
        for fn in _compiled_functions(ast.parse(p.read_text())):
            kernels += 1
            if fn.name in DATA_INDEXING:
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.Subscript):
                    continue
                if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                    continue
                first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
                if isinstance(first, ast.Constant) and isinstance(first.value, int):
                    bad.append(f"{p.relative_to(ROOT)}:{node.lineno} {fn.name}: {ast.unparse(node)}")
    assert kernels >= 20, "the scan found too few compiled functions: is the detection broken?"
    assert not bad, "numbered access into a block:\n" + "\n".join(bad)


def test_the_scan_catches_a_numbered_access():
    tree = ast.parse("@njit(cache=True)\ndef k(params, out):\n    out[0] = params[3]\n")
    fn = next(_compiled_functions(tree))
    hits = [n for n in ast.walk(fn) if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant)]
    assert len(hits) == 2


@pytest.mark.parametrize("table,index", [
    (slots.RoundParams, slots.ROUND_PARAM), (slots.StepParams, slots.STEP_PARAM), (slots.StepDraws, slots.STEP_DRAW),
    (slots.Ints, slots.INT_ROW), (slots.Reals, slots.REAL_ROW), (slots.PerRound, slots.PER_ROUND),
    (slots.DynamicFloats, slots.DYN_REAL),
    (slots.DynamicFlags, slots.DYN_FLAG), (slots.ComplexRows, slots.COMPLEX_ROW), (slots.Moments, slots.MOMENT),
])
def test_slot_tables_number_their_fields_in_order(table, index):
    assert tuple(index) == tuple(range(len(table._fields)))
    filled = table(*(10.0 * i + 1 for i in range(len(table._fields))))
    packed = slots.pack(filled)
    for name in table._fields:
        assert packed[getattr(index, name)] == getattr(filled, name)


def test_the_dynamic_kernel_entry_takes_its_structs_fields_in_order():
    """``dynamic_rows(u, gamma, *inputs, *tables, *outputs)``: the compiled entry's parameters are
    the fields of the three NamedTuples, in order, so no call site depends on positions."""
    import inspect

    from msenv.engine.kinds import dynamics_round as dynamics

    params = list(inspect.signature(dynamics.dynamic_rows.py_func).parameters)
    assert params == ["u", "gamma", *dynamics.Inputs._fields, *dynamics.Tables._fields, *dynamics.Outputs._fields]
    inner = list(inspect.signature(dynamics.round_rows_of.py_func).parameters)
    assert inner == ["u", "gamma", "state", "tables", "out"]


# ---------------------------------------------------------------------- msenv's layout
#: msenv's subpackages, lowest first: each may import itself and the ones before it
MSENV_LAYERS = ("config", "model", "traces", "engine", "envs")
MAX_MODULES_PER_FOLDER = 10
#: the floor below every other: modules of msenv's top that import nothing of the project
BOTTOM_FLOOR = ("atomic",)


def test_msenv_is_its_subpackages():
    top = sorted(p.name for p in (ROOT / "msenv").iterdir() if p.suffix == ".py" or (p / "__init__.py").exists())
    assert top == sorted(["__init__.py", *(f"{m}.py" for m in BOTTOM_FLOOR), *MSENV_LAYERS])
    for folder in [p.parent for p in (ROOT / "msenv").glob("*/**/__init__.py")]:
        modules = [p.name for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= MAX_MODULES_PER_FOLDER, (folder, modules)
        assert ast.get_docstring(ast.parse((folder / "__init__.py").read_text())), f"{folder} says what it owns"


def test_the_bottom_floor_imports_nothing_of_the_project():
    """``msenv.atomic`` (every writer's atomic writes) sits below msenv's subpackages and the
    layers above: any module may import it, and it imports none of the project's."""
    for name in BOTTOM_FLOOR:
        tree = ast.parse((ROOT / "msenv" / f"{name}.py").read_text())
        imported = {mod.split(".")[0] for _, mod in _imported_modules(tree)}
        assert not imported & {*LAYERS, "train"}, (name, imported)
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level], name


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports_of(path: Path, top_level_only: bool) -> set[str]:
    """The project modules ``path`` imports (relative imports resolved; ``from X import y`` counts
    X.y when that is a module), at module level or anywhere."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def _project_graph(top_level_only: bool) -> dict[str, set[str]]:
    files = _sources(*PACKAGES) + [ROOT / "train.py"]
    names = {_module_name(p): p for p in files}
    graph = {}
    for name, p in names.items():
        targets = set()
        for mod in _imports_of(p, top_level_only):
            # a module imports its package's __init__ too, as Python does; count the module itself
            if mod in names and mod != name:
                targets.add(mod)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_the_projects_modules():
    """At module level and in function bodies alike (a package's ``__init__`` re-exporting its
    modules is the one edge left out: a module may import its own package's public names)."""
    graph = _project_graph(top_level_only=False)
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    assert not _cycles(graph)


def _command_lines() -> set[str]:
    """The project's command-line modules: those that define ``build_parser``."""
    return {_module_name(p) for p in _sources(*PACKAGES) + [ROOT / "train.py"]
            if any(isinstance(n, ast.FunctionDef) and n.name == "build_parser" for n in ast.parse(p.read_text()).body)}


def test_no_library_code_is_imported_from_a_command_line_module():
    """A command-line module is imported only by its own package's ``__init__`` (which re-exports
    its ``main``) and ``__main__``: the functions other modules need live in library modules
    (``evaluation.entries``, not the ``evaluation.evaluate`` command line)."""
    clis = _command_lines()
    assert {"evaluation.evaluate", "evaluation.benchmark.cli", "evaluation.leaderboard.cli", "train"} <= clis
    bad = []
    for p in _sources(*PACKAGES) + [ROOT / "train.py"]:
        name = _module_name(p)
        package = name if p.name == "__init__.py" else name.rpartition(".")[0]
        for mod in sorted(_imports_of(p, top_level_only=False) & clis - {name}):
            if not (mod.rpartition(".")[0] == package and p.name in ("__init__.py", "__main__.py")):
                bad.append(f"{p.relative_to(ROOT)} imports the command line {mod}")
    assert not bad, "\n".join(bad)


def test_the_cycle_scan_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] == "msenv" and len(parts) > 1 and parts[1] in MSENV_LAYERS:
        return MSENV_LAYERS.index(parts[1])
    return None


def test_msenv_subpackages_import_only_downwards():
    bad = []
    for p in _sources(ROOT / "msenv"):
        here = _layer(_module_name(p))
        if here is None:
            continue
        for mod in _imports_of(p, top_level_only=False):
            there = _layer(mod)
            if mod == "msenv" or (there is not None and there > here):
                bad.append(f"{p.relative_to(ROOT)} imports {mod}")
    assert not bad, "\n".join(bad)


#: the attributes that tell an engine's kind (and the config property that decides it)
KIND_ATTRIBUTES = {"dynamic", "pads_cells", "is_paper_scenario"}
#: the fields whose presence tells a config's kind (a trace, a cell generator), and the classes whose
#: isinstance tells a config's or an engine's kind
KIND_FIELDS = {"trace_source", "base", "k_range", "k_max"}
KIND_CLASSES = {"SystemConfig", "CellConfig", "PaperEngine", "DynamicEngine", "TraceEngine", "PaperState",
                "DynamicState", "TraceState", "DynamicContext", "TraceContext"}
#: where a config may be asked whether it is a cell generator's (the config's own modules and the
#: cells shells)
CELLS_MODULES = {"msenv/config/cells.py", "msenv/config/spec.py", "msenv/envs/cells.py", "msenv/envs/cells_vector.py"}
#: where the kind is decided or declared: the engine, the config, the registry (which lists the ids of each
#: kind), and the trace data layer (which files a config's traces read)
KIND_HOMES = ("msenv/engine/", "msenv/config/", "msenv/__init__.py", "msenv/traces/")


def _kind_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every read of an engine's kind in ``tree``: an engine kind's attribute, a
    ``trace_source`` compared with None (is there a trace?), ``getattr``/``hasattr`` of a field that
    only one kind has, and ``isinstance`` with a config, engine, state or context class."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in KIND_ATTRIBUTES:
            out.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Name) and node.id == "engine_of":
            out.append((node.lineno, "engine_of"))
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) \
                and node.left.attr == "trace_source" and any(isinstance(c, ast.Constant) and c.value is None
                                                             for c in node.comparators):
            out.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("isinstance", "hasattr", "getattr"):
            arg = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
            names = set(arg.replace("(", " ").replace(")", " ").replace(",", " ").replace("|", " ").split())
            if (node.func.id == "isinstance" and names & KIND_CLASSES) or arg.strip("'\"") in KIND_FIELDS:
                out.append((node.lineno, ast.unparse(node)))
    return out


def test_no_code_outside_the_engine_asks_which_engine_it_holds():
    """The engine is built once from the config (``engine_for``) and every shell, agent and script
    calls its methods and the config's :class:`~msenv.config.EnvSpec`: outside the engine, the
    config and the registry no code reads an engine's kind or asks which config it holds, and only
    the cells modules ask whether a config is a cell generator's."""
    bad = []
    for p in _sources(*PACKAGES, ROOT / "docs" / "_ext", ROOT / "examples") + [ROOT / "train.py"]:
        rel = str(p.relative_to(ROOT))
        if rel.startswith(KIND_HOMES) or rel in CELLS_MODULES:
            continue
        for line, what in _kind_reads(ast.parse(p.read_text())):
            bad.append(f"{rel}:{line} {what}")
    assert not bad, "\n".join(bad)


def test_the_kind_scan_finds_each_read():
    tree = ast.parse("e.dynamic\nengine_of(c)\nisinstance(c, CellConfig)\nhasattr(c, 'k_range')\nc.pads_cells\n"
                     "cfg.traces.trace_source is not None\ngetattr(c, 'base', c)\nisinstance(e, (PaperEngine, int))\n"
                     "isinstance(x, int)\ngetattr(c, 'name')")
    assert sorted(w for _, w in _kind_reads(tree)) == sorted([
        ".dynamic", "engine_of", "isinstance(c, CellConfig)", "hasattr(c, 'k_range')", ".pads_cells",
        "cfg.traces.trace_source is not None", "getattr(c, 'base', c)", "isinstance(e, (PaperEngine, int))"])


def test_the_0_5_import_paths_are_the_modules_at_their_new_paths(monkeypatch):
    """Each old path of ``msenv.MOVED`` is the module at its new path, imported (or read as an
    attribute of msenv) with a DeprecationWarning that names the new path and msenv 0.7."""
    import importlib
    import pickle
    import re
    import sys

    import msenv

    for old, new in msenv.MOVED.items():
        if old.endswith(("sb3", "marl")):
            pytest.importorskip({"sb3": "stable_baselines3", "marl": "pettingzoo"}[old.rpartition(".")[2]])
        monkeypatch.delitem(sys.modules, old, raising=False)  # forgotten, so that importing it warns again
        with pytest.warns(DeprecationWarning, match=rf"^{re.escape(old)} is {re.escape(new)} since msenv 0\.6: "
                                                    rf"import {re.escape(new)} \(.*removed in msenv 0\.7\)$"):
            module = importlib.import_module(old)
        assert module is importlib.import_module(new)
        assert module.__spec__.name == new and module.__name__ == new
        if old.count(".") == 1:
            monkeypatch.delattr(msenv, old.rpartition(".")[2], raising=False)
            with pytest.warns(DeprecationWarning, match=re.escape(new)) as record:
                assert getattr(msenv, old.rpartition(".")[2]) is module
            assert [w.filename for w in record] == [__file__]
    for old in ("msenv.cells", "msenv.env"):
        monkeypatch.delitem(sys.modules, old)
    with pytest.warns(DeprecationWarning):
        from msenv.cells import CellConfig
    with pytest.warns(DeprecationWarning):
        from msenv.env import MultiSpinEnv

    assert MultiSpinEnv is msenv.MultiSpinEnv
    assert pickle.loads(pickle.dumps(CellConfig())) == CellConfig()
    with pytest.raises(AttributeError):
        msenv.no_such_module  # noqa: B018


def test_no_code_imports_a_moved_path():
    """The project's own code, docs and settings name the new paths (the old ones warn): no
    ``msenv.cells`` nor ``baselines.harness`` outside the changelog's history, the shims and the
    lines that say which release a path belongs to (a comment naming the 0.6 path its shim runs)."""
    import baselines
    import msenv

    old = sorted([*msenv.MOVED, *baselines.MOVED], key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, old)) + r")\b(?![\w/]*\.py)")
    files = [p for d in (*GROUPED_READERS, ROOT / "docs", ROOT / "agents" / "hyperparams") for p in d.rglob("*")
             if p.suffix in (".py", ".md", ".yml", ".toml") and not {"_build", "generated"} & set(p.parts)]
    allowed = {ROOT / "docs" / "changelog.md", ROOT / "msenv" / "__init__.py", ROOT / "baselines" / "__init__.py",
               ROOT / "evaluation" / "benchmark" / "check.py"}  # (the command the result files of 0.6 record)
    bad = [f"{p.relative_to(ROOT)}:{i}: {m.group(1)}" for p in sorted(set(files) | {ROOT / "README.md",
           ROOT / "train.py", ROOT / "pyproject.toml"}) if p not in allowed
           for i, line in enumerate(p.read_text().splitlines(), 1) if not re.search(r"\b0\.[567]\b", line)
           for m in pattern.finditer(line)]
    for p in _sources(*PACKAGES, ROOT / "tests", ROOT / "examples") + [ROOT / "train.py"]:
        if p.name in ("test_moved_paths.py", "test_architecture.py"):  # the shims' own tests
            continue
        for node in ast.walk(ast.parse(p.read_text())):  # from msenv import cells (an old module as a name)
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in ("msenv", "baselines"):
                bad += [f"{p.relative_to(ROOT)}:{node.lineno}: from {node.module} import {a.name}" for a in node.names
                        if f"{node.module}.{a.name}" in old]
    assert not bad, "old module paths (use the new ones):\n" + "\n".join(bad)


def test_baselines_holds_only_the_controllers():
    """The evaluation left ``baselines`` for its own package: what is left is the controllers, and
    every old path of ``baselines.MOVED`` names a module that exists at its new path."""
    import importlib.util

    import baselines

    assert sorted(p.name for p in (ROOT / "baselines").iterdir() if p.suffix == ".py") == [
        "__init__.py", "adaptive.py", "base.py", "bayes_trace.py", "greedy.py", "registry.py", "saa.py", "simple.py",
        "trace_rules.py", "tuned.py"]
    for old, new in baselines.MOVED.items():
        assert not (ROOT / (old.replace(".", "/") + ".py")).exists()
        assert importlib.util.find_spec(new) is not None, new


# ---------------------------------------------------------------------- the config read by group
#: the code held to reading a SystemConfig's grouped fields through their group (msenv/config
#: defines the flat aliases; the tests exercise them, as users may)
GROUPED_READERS = [*PACKAGES, ROOT / "examples", ROOT / "docs" / "_ext"]


def _flat_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, expression) of every read of a grouped field by its flat name: an attribute named like
    a grouped field (``x.p_dl_dbm``) that is not read on its group (``x.radio.p_dl_dbm``) nor on a
    slot table of the kernels (``ROUND_PARAM.bandwidth_hz``: the blocks' slots are named for the
    fields they carry), whatever the object is called. ``episode_length`` and ``reward_scale`` are
    left out: a :class:`~msenv.config.CellConfig` holds them too, so code that takes either config
    reads them flat."""
    from msenv.config import GROUPS, CellConfig
    from msenv.config.groups import GROUP_OF

    shared = {name for name in GROUP_OF if isinstance(getattr(CellConfig, name, None), property)}
    tables = {name for name in vars(slots) if name.isupper()}
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in GROUP_OF or node.attr in shared:
            continue
        owner = node.value
        if isinstance(owner, ast.Attribute) and owner.attr in GROUPS:
            continue
        if isinstance(owner, ast.Name) and owner.id in tables:
            continue
        out.append((node.lineno, ast.unparse(node)))
    return out


def test_the_code_reads_the_config_by_group():
    """Outside msenv/config no code reads a grouped field by its flat alias (``cfg.p_dl_dbm``): it
    reads it through its group (``cfg.radio.p_dl_dbm``). The flat names stay for users."""
    bad = [f"{p.relative_to(ROOT)}:{line} {what}" for p in _sources(*GROUPED_READERS) + [ROOT / "train.py"]
           if not p.is_relative_to(ROOT / "msenv" / "config") for line, what in _flat_reads(ast.parse(p.read_text()))]
    assert not bad, "flat reads of grouped fields (read them through their group):\n" + "\n".join(bad)


def test_the_flat_read_scan_finds_each_read():
    tree = ast.parse("cfg.p_dl_dbm\nself.config.base.csi\ncfg.radio.p_dl_dbm\nROUND_PARAM.bandwidth_hz\n"
                     "env_config(i).trace_source\nctx.t_draft\ncfg.episode_length\nx.dynamics.csi")
    assert [w for _, w in _flat_reads(tree)] == ["cfg.p_dl_dbm", "self.config.base.csi", "env_config(i).trace_source"]
