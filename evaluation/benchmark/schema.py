"""The published JSON Schema of a benchmark result file (``result.schema.json``, shipped beside this
module) and its validation, one line per problem naming the JSON path, the value and what the
schema allows there (the ``description`` of the schema's node).

msenv reads three things as JSON and JSON Schema mean them where Python's ``json`` and ``re`` would
let more through: an ``integer`` is a number written without a fraction (``1``, not ``1.0``), a
``number`` is finite (``NaN`` and ``Infinity`` are no JSON numbers), and a pattern's final ``$`` is
the string's end, as ECMA-262 reads it (Python's ``re`` lets it match before a final newline)."""

from __future__ import annotations

import json
import math
import re
from functools import cache
from importlib.resources import files
from typing import Any

#: the schema file's name, inside this package
SCHEMA_FILE = "result.schema.json"
#: the most schema problems reported for one file (the rest counted in one more line)
MAX_PROBLEMS = 20
#: the longest value a problem line quotes
MAX_VALUE = 80


@cache
def result_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a benchmark result file, as shipped with the package."""
    return json.loads(files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


def _ecma_pattern(validator, pattern: str, instance: Any, schema: dict[str, Any]):
    """The ``pattern`` keyword as ECMA-262 reads it: a final ``$`` matches only at the string's end."""
    from jsonschema import ValidationError

    if not validator.is_type(instance, "string"):
        return
    m = re.search(pattern, instance)
    if m is None or (pattern.endswith("$") and not pattern.endswith("\\$") and m.end() != len(instance)):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _validator():
    """A draft 2020-12 validator of :func:`result_schema` with JSON's own integers and numbers."""
    from jsonschema import Draft202012Validator, validators

    def integer(checker, x):
        return isinstance(x, int) and not isinstance(x, bool)

    def number(checker, x):
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

    types = Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": integer, "number": number})
    cls = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern}, type_checker=types)
    schema = result_schema()
    Draft202012Validator.check_schema(schema)
    return cls(schema)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "…"


def json_path(parts) -> str:
    """The JSONPath of a location: ``$.methods['greedy-saa'].runs``, ``$.episodes[3]``."""
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", p):
            out += f".{p}"
        else:
            out += "['" + p.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return out


def _allowed(schema: Any) -> str:
    return schema.get("description", "") if isinstance(schema, dict) else ""


#: the keywords whose problem line adds the validator's own words to what the node allows
COUNTS = ("minItems", "maxItems", "minProperties", "maxProperties")


def problem_line(error) -> str:
    """One line of a :class:`jsonschema.ValidationError`: the JSON path, the value, what is allowed."""
    parts = list(error.absolute_path)
    if error.validator == "required":  # the missing property's own description says what it must be
        name = error.message.removesuffix(" is a required property").strip("'\"")
        node = error.schema.get("properties", {}).get(name)
        return f"{json_path([*parts, name])} is missing; required: {_allowed(node) or _allowed(error.schema)}"
    if list(error.schema_path)[-2:-1] == ["propertyNames"]:
        noun = error.schema.get("title", "key")
        return f"{json_path(parts)}: {noun} {_short(error.instance)} is invalid; allowed: {_allowed(error.schema)}"
    allowed = _allowed(error.schema) or error.message
    if error.validator in COUNTS:
        allowed += f" ({error.message})"
    return f"{json_path(parts)}={_short(error.instance)} is invalid; allowed: {allowed}"


def _not_a_result(error) -> bool:
    """The document is no result at all: not an object, or without the result's ``format``."""
    top = not error.absolute_path
    return (top and error.validator == "type") or list(error.absolute_path) == ["format"] or (
        top and error.validator == "required" and error.message.startswith("'format'"))


def _order(error) -> list[tuple[int, Any]]:
    return [(0, p) if isinstance(p, int) else (1, p) for p in error.absolute_path]


def schema_problems(document: Any) -> list[str]:
    """What :func:`result_schema` refuses in ``document``, one line each (empty: nothing); a
    document that is no benchmark result at all gets that one line. Needs ``jsonschema`` (the
    ``bench`` extra); without it, one line saying so."""
    try:
        validator = _validator()
    except ImportError:
        return ["checking a result file needs the jsonschema package (pip install 'msenv[bench]')"]
    errors = sorted(validator.iter_errors(document), key=_order)
    first = [e for e in errors if _not_a_result(e)]
    lines = list(dict.fromkeys(problem_line(e) for e in (first[:1] or errors)))
    if len(lines) > MAX_PROBLEMS:
        lines = lines[:MAX_PROBLEMS] + [f"… and {len(lines) - MAX_PROBLEMS} more problems of the schema"]
    return lines


__all__ = ["MAX_PROBLEMS", "SCHEMA_FILE", "json_path", "problem_line", "result_schema", "schema_problems"]
