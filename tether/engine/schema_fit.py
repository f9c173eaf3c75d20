"""A tool schema from elsewhere (an MCP server's), reshaped so every provider accepts it, and
the way back for the arguments the model sends.

Each request carries every tool, and one schema a provider refuses fails the whole request:
OpenAI refuses an array without `items`; Anthropic refuses `anyOf`/`oneOf`/`allOf` at the top
and property keys outside `^[a-zA-Z0-9_.-]{1,64}$`. So: arrays get `items: {}`; a top-level
union of object schemas becomes one object of all their properties (required: what every branch
requires; the arguments are still checked against the original); odd keys are renamed
(`rule_name[]` -> `rule_name__`), and the model's arguments renamed back before anything else
sees them. What cannot be reshaped raises ValueError: the tool is left out, with a notice.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import msgspec

KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
UNIONS = ("anyOf", "oneOf", "allOf")


class KeyMap(msgspec.Struct):
    """Renamed property keys of one object schema (sent name -> original), and the maps of
    its properties' own objects and of its array items."""

    names: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    children: dict[str, KeyMap] = msgspec.field(default_factory=dict[str, "KeyMap"])
    items: KeyMap | None = None

    @property
    def empty(self) -> bool:
        return (
            not self.names
            and all(c.empty for c in self.children.values())
            and (self.items is None or self.items.empty)
        )

    def back(self, value: Any) -> Any:
        """`value` (the model's arguments) with the original keys."""
        if isinstance(value, list):
            return [self.items.back(v) if self.items else v for v in value]
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for k, v in value.items():
            child = self.children.get(str(k))
            out[self.names.get(str(k), str(k))] = child.back(v) if child else v
        return out


def fit(
    schema: dict[str, Any],
) -> tuple[dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]] | None]:
    """The schema as every provider takes it, and the function renaming arguments back (None
    when no key was renamed)."""
    out = _flatten_union(copy.deepcopy(schema))
    keys = KeyMap()
    out = _walk(out, keys)
    if keys.empty:
        return out, None
    return out, keys.back


def _flatten_union(schema: dict[str, Any]) -> dict[str, Any]:
    unions = [k for k in UNIONS if k in schema]
    if not unions:
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
    note = "The arguments must match one of several shapes; the tool says which if they do not."
    schema["description"] = f"{schema.get('description', '')} {note}".strip()
    return schema


def _walk(node: Any, keys: KeyMap) -> Any:
    if isinstance(node, list):
        return [_walk(v, KeyMap()) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "properties" and isinstance(v, dict):
            out[k] = _properties(v, keys)
        elif k == "items" and isinstance(v, dict):
            keys.items = KeyMap()
            out[k] = _walk(v, keys.items)
        else:
            out[str(k)] = _walk(v, KeyMap())
    if out.get("type") == "array" and "items" not in out:
        out["items"] = {}  # OpenAI: "array schema missing items"
    if "required" in out and isinstance(out["required"], list):
        renamed = {orig: sent for sent, orig in keys.names.items()}
        out["required"] = [renamed.get(str(r), r) for r in out["required"]]
    return out


def _properties(props: dict[str, Any], keys: KeyMap) -> dict[str, Any]:
    out: dict[str, Any] = {}
    taken = {str(k) for k in props if KEY.match(str(k))}
    for k, v in props.items():
        original = str(k)
        sent = original if KEY.match(original) else _rename(original, taken)
        if sent != original:
            keys.names[sent] = original
        child = KeyMap()
        out[sent] = _walk(v, child)
        if not child.empty:
            keys.children[sent] = child
    return out


def _rename(key: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-zA-Z0-9_.-]", "_", key)[:60] or "arg"
    name, n = base, 2
    while name in taken:
        name, n = f"{base[:58]}_{n}", n + 1
    taken.add(name)
    return name
