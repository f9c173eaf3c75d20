"""Tool schemas made fit for a model request, and used to check a call's arguments before anyone
is asked about it.

Providers reject a whole request for one `$ref` they cannot resolve, so a schema is made
self-contained by the one inliner here (`inline`), for the built-in tools' inferred schemas
(engine/registry.py) and for schemas that come from elsewhere (an MCP server's tool,
`self_contained`): local references are inlined where they are used, within a bound on the
work; a recursive one cannot be, and one that points elsewhere becomes "anything".
`jsonschema` is imported only when a checker is built (it comes with the MCP SDK).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tether.errors import TetherError

DEFINITION_KEYS = ("$defs", "definitions")
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
MAX_PROBLEMS = 5  # problems named in one INVALID_ARGS message
# Inlining a chain of definitions each used twice doubles per link: a 2 KB schema can grow to
# millions of nodes. Past this many, the schema is refused (its tool is left out).
MAX_NODES = 20_000

Checker = Callable[[dict[str, Any]], list[str]]


class RecursiveRef(Exception):
    """A definition refers to itself: it cannot be inlined."""

    def __init__(self, ref: str) -> None:
        super().__init__(ref)
        self.ref = ref


class SchemaTooLarge(TetherError, ValueError):
    """Made self-contained, the schema would be too large to send with every request."""

    def __init__(self, message: str) -> None:
        super().__init__("SCHEMA_TOO_LARGE", message)


def self_contained(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of an object schema with no reference a provider could fail to resolve (a
    recursive one keeps its definitions: it resolves inside the schema), and its dialect
    named where it was only implied."""
    out = copy.deepcopy(schema)
    out.setdefault("type", "object")
    if out.get("type") == "object" and not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    body = {k: v for k, v in out.items() if k not in DEFINITION_KEYS}
    try:
        return _dialect(inline(body, out))
    except RecursiveRef:
        return _dialect(_drop_dangling(out, out))


def target(root: dict[str, Any], ref: str) -> Any:
    """What a local reference (`#/$defs/Item`) points at, or None."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for raw in [p for p in ref[1:].split("/") if p]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def inline(node: Any, root: dict[str, Any]) -> Any:
    """`node` with every local reference into `root` replaced by what it points at (a
    reference's own keys win); one to nowhere or elsewhere is dropped (it accepts anything).
    RecursiveRef for a reference inside its own target; SchemaTooLarge past MAX_NODES."""
    return _inline(node, root, (), [MAX_NODES])


def _inline(node: Any, root: dict[str, Any], seen: tuple[str, ...], budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise SchemaTooLarge(
            f"its references, inlined, make over {MAX_NODES:,} schema nodes (too large to send "
            "with every request)"
        )
    if isinstance(node, list):
        return [_inline(v, root, seen, budget) for v in node]
    if not isinstance(node, dict):
        return node
    rest = {k: _inline(v, root, seen, budget) for k, v in node.items() if k != "$ref"}
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return rest
    if ref in seen:
        raise RecursiveRef(ref)
    found = target(root, ref)
    if not isinstance(found, dict):
        return rest  # a reference to nowhere (or elsewhere) accepts anything
    return {**_inline(found, root, (*seen, ref), budget), **rest}


def _drop_dangling(node: Any, root: dict[str, Any]) -> Any:
    """Keep local references that resolve (recursion needs them); drop the others."""
    if isinstance(node, list):
        return [_drop_dangling(v, root) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _drop_dangling(v, root) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and not isinstance(target(root, ref), dict):
        del out["$ref"]
    return out


def problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a valid JSON schema for an object of arguments, or None."""
    from jsonschema import SchemaError, validators

    if schema.get("type") != "object":
        return f"its type is {schema.get('type')!r}, not 'object'"
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return f"not a valid JSON schema: {exc.message}"
    return None


def _dialect(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, marked draft-07 when it names no `$schema` and is valid as draft-07 but not as
    draft 2020-12 (the default): servers wrote the tuple `items: [...]` before MCP named a
    default dialect (2025-11-25), and the checker then reads it as they meant it."""
    if "$schema" in schema or not _tuple_items(schema):
        return schema  # the common case, decided without a check
    from jsonschema import Draft7Validator, Draft202012Validator

    if Draft202012Validator(Draft202012Validator.META_SCHEMA).is_valid(schema):
        return schema  # the list was a value (a `default`), not a tuple
    if not Draft7Validator(Draft7Validator.META_SCHEMA).is_valid(schema):
        return schema  # invalid either way: `problem` says why
    return {"$schema": DRAFT_07, **schema}


def _tuple_items(node: Any) -> bool:
    """Whether an `items` holds a list somewhere (draft 2020-12 refuses it, draft-07 takes it)."""
    if isinstance(node, list):
        return any(_tuple_items(v) for v in node)
    if not isinstance(node, dict):
        return False
    return isinstance(node.get("items"), list) or any(_tuple_items(v) for v in node.values())


def checker(schema: dict[str, Any]) -> Checker:
    """A function naming what is wrong with some arguments (nothing: an empty list)."""
    from jsonschema import validators

    validator = validators.validator_for(schema)(schema)

    def check(arguments: dict[str, Any]) -> list[str]:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        return [_describe(e) for e in errors[:MAX_PROBLEMS]]

    return check


def _describe(error: Any) -> str:
    """One problem in the words of the built-in tools' errors: arguments named, not paths."""
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required" and isinstance(error.validator_value, list):
        present = error.instance if isinstance(error.instance, dict) else {}
        missing = [str(n) for n in error.validator_value if n not in present]
        where = f" in `{path}`" if path else ""
        return f"missing required argument `{missing[0] if missing else '?'}`{where}"
    return f"`{path}`: {error.message}" if path else str(error.message)
