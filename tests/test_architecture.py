"""The code's structure, read from its source: layers point down, rooms stay small, compiled
kernels read their parameter blocks by named slot, private names stay in their module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from msenv import slots

ROOT = Path(__file__).resolve().parent.parent
#: each layer may import itself and the layers before it
LAYERS = ("msenv", "baselines", "agents", "experiments")
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


def test_no_msenv_module_over_the_size_limit():
    long = {p.name: n for p in _sources(ROOT / "msenv") if (n := len(p.read_text().splitlines())) > MAX_MSENV_LINES}
    assert not long, f"msenv modules over {MAX_MSENV_LINES} lines: {long}"


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
    (slots.RoundParams, slots.RP), (slots.StepParams, slots.SP), (slots.StepDraws, slots.SD),
    (slots.Ints, slots.IR), (slots.Reals, slots.FR), (slots.PerRound, slots.PR), (slots.DynamicFloats, slots.DF),
    (slots.DynamicFlags, slots.DB), (slots.ComplexRows, slots.CR), (slots.Moments, slots.MO),
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

    from msenv import dynamics

    params = list(inspect.signature(dynamics.dynamic_rows.py_func).parameters)
    assert params == ["u", "gamma", *dynamics.Inputs._fields, *dynamics.Tables._fields, *dynamics.Outputs._fields]
    inner = list(inspect.signature(dynamics.round_rows_of.py_func).parameters)
    assert inner == ["u", "gamma", "state", "tables", "out"]
