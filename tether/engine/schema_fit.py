"""A tool schema from elsewhere (an MCP server's), reshaped so every provider accepts it, and
the way back for the arguments the model sends.

Each request carries every tool, and one schema a provider refuses fails the whole request.
What the APIs refuse (as tests/support/providers/tool_schema_rules.py reproduces, with sources):
OpenAI, a schema whose `type` is or names `"array"` without `items`, wherever it is, and
`oneOf`/`anyOf`/`allOf`/`enum`/`not` at the top; Anthropic, a top-level union, property keys
outside `^[a-zA-Z0-9_.-]{1,64}$`, and anything that is not valid JSON Schema draft 2020-12,
whatever the schema's own `$schema` says (the draft-07 tuple `items: [...]`, draft-04's boolean
`exclusiveMinimum`). So, through every position that holds a schema (`properties`, `items`,
`prefixItems`, unions, `additionalProperties`, `patternProperties`, definitions, ...; values
such as `default` or `enum` are left alone):

* an array, or a type list naming `"array"`, without `items` gets `items: {}` (anything);
* older drafts' spellings become draft 2020-12's: a tuple `items` becomes `prefixItems` (its
  `additionalItems` the new `items`; `false` a `maxItems`), a boolean `exclusiveMinimum` /
  `exclusiveMaximum` a number; `$schema` is dropped (what is sent is draft 2020-12);
* a boolean subschema becomes `{}` / `{"not": {}}` (`additionalProperties` keeps its boolean);
* a top-level union of object schemas becomes one object of all their properties (required:
  what every branch requires), and a top-level `not` or `enum` is dropped;
* odd property keys are renamed (`rule_name[]` -> `rule_name__`), the same key the same way in
  every branch of a union, and the model's arguments renamed back before anything else sees
  them.

The arguments are still checked against the original schema, so nothing reshaped here loosens
what a call may carry. A schema that is still no valid draft 2020-12 after all this raises
ValueError: its tool is left out, with a notice.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from typing import Any

KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
UNIONS = ("anyOf", "oneOf", "allOf")
TOP_DROPPED = ("not", "enum")  # OpenAI refuses them at the top
# Keywords holding one schema whose keys are not mapped back (it describes another value, or
# only says what the value must not be).
ELSEWHERE = ("not", "if", "then", "else", "contains", "propertyNames", "contentSchema")
DEFINITIONS = ("$defs", "definitions")
BOUNDS = (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum"))
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


class KeyMap:
    """Renamed property keys of one object (sent name -> original), and the maps of the
    values inside it: its properties', its other keys' (`additionalProperties`), its array
    items' (`prefixItems` by position, then `items`)."""

    __slots__ = ("children", "items", "names", "others", "prefix", "sent", "taken")

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.sent: dict[str, str] = {}  # original -> sent
        self.taken: set[str] = set()  # keys sent as they are, and names given
        self.children: dict[str, KeyMap] = {}
        self.others: KeyMap | None = None
        self.items: KeyMap | None = None
        self.prefix: list[KeyMap] = []

    @property
    def empty(self) -> bool:
        inner = [*self.children.values(), *self.prefix, self.others, self.items]
        return not self.names and all(m is None or m.empty for m in inner)

    def child(self, sent: str) -> KeyMap:
        return self.children.setdefault(sent, KeyMap())

    def other(self) -> KeyMap:
        self.others = self.others or KeyMap()
        return self.others

    def item(self) -> KeyMap:
        self.items = self.items or KeyMap()
        return self.items

    def position(self, n: int) -> KeyMap:
        while len(self.prefix) <= n:
            self.prefix.append(KeyMap())
        return self.prefix[n]

    def rename(self, key: str) -> str:
        """The name `key` is sent under (the same every time it is asked)."""
        if KEY.match(key):
            return key
        if key not in self.sent:
            base = re.sub(r"[^a-zA-Z0-9_.-]", "_", key)[:60] or "arg"
            name, n = base, 2
            while name in self.taken:
                name, n = f"{base[:58]}_{n}", n + 1
            self.taken.add(name)
            self.sent[key], self.names[name] = name, key
        return self.sent[key]

    def back(self, value: Any) -> Any:
        """`value` (the model's arguments) with the original keys."""
        if isinstance(value, list):
            return [_back(self._at(n), v) for n, v in enumerate(value)]
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for k, v in value.items():
            inner = self.children.get(str(k), self.others)
            out[self.names.get(str(k), str(k))] = _back(inner, v)
        return out

    def _at(self, n: int) -> KeyMap | None:
        return self.prefix[n] if n < len(self.prefix) else self.items


def _back(keys: KeyMap | None, value: Any) -> Any:
    return keys.back(value) if keys is not None else value


def fit(
    schema: dict[str, Any],
) -> tuple[dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]] | None]:
    """The schema as every provider takes it, and the function renaming arguments back (None
    when no key was renamed). ValueError when it cannot be made valid draft 2020-12."""
    top = _flatten_union(copy.deepcopy(schema))
    dialect = top.pop("$schema", DRAFT_2020_12)
    keys = KeyMap()
    out = _walk(top, keys)
    out.setdefault("properties", {})
    if str(dialect).rstrip("#") != DRAFT_2020_12:
        _check(out)  # checked as 2020-12 already (json_schema.problem), and kept valid here
    return out, (None if keys.empty else keys.back)


def _flatten_union(schema: dict[str, Any]) -> dict[str, Any]:
    dropped = [k for k in TOP_DROPPED if schema.pop(k, None) is not None]
    unions = [k for k in UNIONS if k in schema]
    if not unions:
        if dropped:
            _note(schema, "Some combinations of arguments are refused; the tool says which.")
        return schema
    branches: list[dict[str, Any]] = []
    for key in unions:
        value = schema.pop(key)
        if not isinstance(value, list) or not all(isinstance(b, dict) for b in value):
            raise ValueError(f"its top-level {key} is not a list of schemas")
        branches += [b for b in value]
    properties: dict[str, Any] = dict(schema.get("properties") or {})
    required: set[str] | None = None
    every = [str(r) for r in schema.get("required") or []]
    for branch in branches:
        if branch.get("type", "object") != "object":
            raise ValueError("its top-level union holds a schema that is not an object")
        for name, prop in (branch.get("properties") or {}).items():
            properties.setdefault(str(name), prop)
        wants = {str(r) for r in branch.get("required") or []}
        if "allOf" in unions:
            every += sorted(wants)
        else:
            required = wants if required is None else required & wants
    schema["type"] = "object"
    schema["properties"] = properties
    schema["required"] = sorted(set(every) | (required or set()))
    _note(schema, "The arguments must match one of several shapes; the tool says which if not.")
    return schema


def _note(schema: dict[str, Any], note: str) -> None:
    schema["description"] = f"{schema.get('description', '')} {note}".strip()


def _walk(node: Any, keys: KeyMap) -> Any:
    """A schema as every provider takes it; `keys` gathers the keys renamed in the value it
    describes (the branches of a union describe the same value: they share it)."""
    if isinstance(node, bool):
        return {} if node else {"not": {}}
    if not isinstance(node, dict):
        return node
    node = _modern(node)
    _reserve(node, keys)
    out: dict[str, Any] = {}
    for k, v in node.items():
        out[str(k)] = _inner(str(k), v, keys)
    if "array" in _types(out) and "items" not in out:
        out["items"] = {}  # OpenAI: "array schema missing items"
    if isinstance(out.get("required"), list):
        out["required"] = [keys.sent.get(str(r), r) for r in out["required"]]
    return out


def _inner(key: str, value: Any, keys: KeyMap) -> Any:
    """What `key` of a schema holds, fitted: schemas walked with the map of the value they
    describe; anything else (`enum`, `default`, `required`, ...) as it is."""
    if key == "properties" and isinstance(value, dict):
        return _properties(value, keys)
    if key in UNIONS and isinstance(value, list):
        return [_walk(b, keys) for b in value]
    if key == "dependentSchemas" and isinstance(value, dict):
        return {k: _walk(v, keys) for k, v in value.items()}
    if key == "dependencies" and isinstance(value, dict):  # schemas or lists of names
        return {k: _walk(v, keys) if isinstance(v, dict | bool) else v for k, v in value.items()}
    if key == "items":
        return _walk(value, keys.item())
    if key == "prefixItems" and isinstance(value, list):
        return [_walk(b, keys.position(n)) for n, b in enumerate(value)]
    if key in ("additionalProperties", "unevaluatedProperties", "unevaluatedItems"):
        return value if isinstance(value, bool) else _walk(value, keys.other())
    if key == "patternProperties" and isinstance(value, dict):
        return {k: _walk(v, keys.other()) for k, v in value.items()}
    if key in DEFINITIONS and isinstance(value, dict):
        return {k: _walk(v, KeyMap()) for k, v in value.items()}  # reached by reference
    if key in ELSEWHERE:
        return _walk(value, KeyMap())
    return value


def _properties(props: dict[str, Any], keys: KeyMap) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in props.items():
        sent = keys.rename(str(k))
        out[sent] = _walk(v, keys.child(sent))
    return out


def _reserve(node: dict[str, Any], keys: KeyMap) -> None:
    """Keep the keys sent as they are (here and in the union's branches) from being given to
    a renamed one."""
    props = node.get("properties")
    if isinstance(props, dict):
        keys.taken.update(str(k) for k in props if KEY.match(str(k)))
    for union in UNIONS:
        for branch in node.get(union) or []:
            if isinstance(branch, dict):
                _reserve(branch, keys)


def _modern(node: dict[str, Any]) -> dict[str, Any]:
    """Older drafts' spellings in a schema, as draft 2020-12 says them."""
    node = dict(node)
    tuple_form = node.get("items")
    rest = node.pop("additionalItems", None)  # without a tuple `items`, it means nothing
    if isinstance(tuple_form, list):
        node.setdefault("prefixItems", tuple_form)
        if rest is False:  # nothing after the tuple
            most = node.get("maxItems")
            node["items"], node["maxItems"] = {}, min(len(tuple_form), _int(most, len(tuple_form)))
        else:
            node["items"] = {} if rest is None else rest
    for exclusive, bound in BOUNDS:
        flag = node.get(exclusive)
        if isinstance(flag, bool):  # draft-04: a flag on `minimum`, now the bound itself
            del node[exclusive]
            if flag and bound in node:
                node[exclusive] = node.pop(bound)
    return node


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _types(schema: dict[str, Any]) -> list[Any]:
    kind = schema.get("type")
    return kind if isinstance(kind, list) else [kind]


def _check(schema: dict[str, Any]) -> None:
    from jsonschema.exceptions import best_match

    errors = list(_meta().iter_errors(schema))
    if errors:
        raise ValueError(
            f"its schema is no valid JSON Schema draft 2020-12, as Anthropic requires, even "
            f"reshaped: {best_match(errors).message}"
        )


@functools.cache
def _meta() -> Any:
    """A validator of draft 2020-12 schemas (`jsonschema` is imported when first needed)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(Draft202012Validator.META_SCHEMA)
