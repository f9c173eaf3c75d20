"""Check JSON-RPC frames against the vendored ACP v1 JSON schema.

The schema (``tests/fixtures/acp-schema/schema.json``, from npm ``@agentclientprotocol/sdk``
2.4.0, ACP schema 1.25.0) is the wire contract: every frame the agent writes must validate.
Taken literally it is very loose, so validating a frame against its top-level ``anyOf``
proves almost nothing:

* every params union includes ``ExtRequest`` / ``ExtNotification`` and every result union
  ``ExtResponse``, all three ``{}`` (anything validates), and nothing ties a ``method`` to
  its params type;
* no object type is closed (no ``additionalProperties: false`` anywhere), so a snake_case
  ``raw_input`` next to the optional ``rawInput`` validates, although the spec says
  implementations "MUST NOT add any custom fields at the root of a type that's part of the
  specification";
* ``format`` (``uint16``, ``int64``, ...) is only an annotation in Draft 2020-12.

So a frame is checked as follows. It is classified (request / notification / result /
error) and validated against an envelope whose ``params`` / ``result`` / ``error`` is the
specific ``$defs`` type for its method; the method -> type maps are read from the schema's
own per-side unions and their ``x-method`` annotations (:func:`method_defs`). Integer
formats are range-checked. In strict mode (the default) no object of a spec type may carry a
key its schema does not declare (``_meta`` and free-form values such as ``rawInput`` stay
open). Methods not in the schema must be extensions (``_`` prefix).

A result frame (``{"id", "result"}``) cannot be tied to its method by the frame alone:
without ``method=...`` the result must match at least one of the side's response types
(extension results excluded: they would accept anything). Pass the request's method, or use
:func:`validate_agent_response`, to check the specific type.

For speed and readable errors the schema is prepared once, without changing what it
accepts: ``$ref``s to non-recursive ``$defs`` are inlined (the schema has no recursive ones;
any would be resolved through a ``referencing`` registry); a ``oneOf`` of string consts
becomes an ``enum``; a ``oneOf`` discriminated by a tag (``sessionUpdate``, ``type``,
``outcome``: the schema marks them with ``discriminator``) becomes "tag in enum" plus a
custom keyword that validates only the branch the tag selects. An unknown tag then reads
"'bogus' is not one of [...]" and a bad field is reported at its own path instead of
"not valid under any of the given schemas".

Every ``validate_*`` function returns ``None`` or raises ``AssertionError`` naming the path,
the message, the schema type and the frame.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NoReturn

from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from jsonschema.exceptions import relevance
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

__all__ = [
    "SCHEMA_PATH",
    "MethodDefs",
    "Side",
    "literal_schema_accepts",
    "method_defs",
    "validate_agent_frame",
    "validate_agent_response",
    "validate_client_frame",
    "validate_client_response",
]

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "fixtures" / "acp-schema" / "schema.json"

Side = Literal["agent", "client"]
Kind = Literal["request", "notification", "result", "error"]
Json = Any
Schema = dict[str, Any]

_SCHEMA_URI = "urn:tether:tests:acp-schema-v1"
_DEF_PREFIX = "#/$defs/"
_DISPATCH = "x-tether-dispatch"  # our keyword: {"tag": name, "branches": {value: schema}}
_DEF_NAME = "x-tether-def"  # annotation: the $defs name a (possibly inlined) schema came from
_ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params", "result", "error"})
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})
_MAX_FRAME_CHARS = 4000

# Ranges of the schema's integer formats (from the Rust types); doubles must be finite.
_INT_FORMATS: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


@dataclass(frozen=True)
class MethodDefs:
    """What one side may send, as method name -> ``$defs`` type name.

    ``requests`` / ``notifications``: the params type of each request / notification this
    side sends. ``responses``: the result type this side answers each incoming request
    with, keyed by that request's method.
    """

    requests: Mapping[str, str]
    notifications: Mapping[str, str]
    responses: Mapping[str, str]


# --------------------------------------------------------------------------------------
# Schema preparation


@functools.cache
def _raw_schema() -> Schema:
    with SCHEMA_PATH.open(encoding="utf-8") as fh:
        return json.load(fh)


def _is_annotation(key: str) -> bool:
    return key in _ANNOTATIONS or key.startswith("x-")


def _def_refs(node: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEF_PREFIX):
            out.add(ref.removeprefix(_DEF_PREFIX))
        for value in node.values():
            out |= _def_refs(value)
    elif isinstance(node, list):
        for value in node:
            out |= _def_refs(value)
    return out


def _recursive_defs(defs: Mapping[str, Any]) -> set[str]:
    graph = {name: _def_refs(body) for name, body in defs.items()}
    recursive: set[str] = set()
    for start in graph:
        stack, seen = list(graph[start]), set[str]()
        while stack:
            name = stack.pop()
            if name == start:
                recursive.add(start)
                break
            if name not in seen and name in graph:
                seen.add(name)
                stack.extend(graph[name])
    return recursive


def _const_enum(branches: list[Any]) -> list[Any] | None:
    """The values if every branch is just ``{type?, const}`` plus annotations."""
    values: list[Any] = []
    for branch in branches:
        if not isinstance(branch, dict) or "const" not in branch:
            return None
        if any(k not in ("const", "type") and not _is_annotation(k) for k in branch):
            return None
        values.append(branch["const"])
    if len({json.dumps(v) for v in values}) != len(values):
        return None
    return values


def _discriminated(node: Schema) -> tuple[str, dict[str, Schema]] | None:
    """``(tag, {value: branch})`` for a ``oneOf`` whose branches each require a distinct
    string const ``tag``."""
    disc = node.get("discriminator")
    branches = node.get("oneOf")
    if not isinstance(disc, dict) or not isinstance(branches, list):
        return None
    tag = disc.get("propertyName")
    if not isinstance(tag, str):
        return None
    out: dict[str, Schema] = {}
    for branch in branches:
        if not isinstance(branch, dict) or tag not in branch.get("required", []):
            return None
        value = branch.get("properties", {}).get(tag, {}).get("const")
        if not isinstance(value, str) or value in out:
            return None
        out[value] = branch
    return tag, out


class _Preparer:
    """Rewrites the raw schema as described in the module docstring."""

    def __init__(self, raw: Schema) -> None:
        self.raw_defs: dict[str, Any] = raw["$defs"]
        self.recursive = _recursive_defs(self.raw_defs)
        self.defs: dict[str, Schema] = {}

    def definition(self, name: str) -> Schema:
        found = self.defs.get(name)
        if found is None:
            found = self.node(self.raw_defs[name])
            if _DEF_NAME in found:  # an alias of another def: don't relabel the shared dict
                found = dict(found)
            found[_DEF_NAME] = name
            self.defs[name] = found
        return found

    def node(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.node(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        name = ref.removeprefix(_DEF_PREFIX) if isinstance(ref, str) else None
        if name is not None and name in self.raw_defs and name not in self.recursive:
            target = self.definition(name)
            rest = {k: self.node(v) for k, v in node.items() if k != "$ref"}
            if all(_is_annotation(k) for k in rest):
                return target
            out: Schema = {**rest, "allOf": [*rest.get("allOf", []), target]}
        else:
            out = {k: self.node(v) for k, v in node.items()}
        self._enum(out)
        self._dispatch(out)
        return self._flatten(out)

    @staticmethod
    def _enum(node: Schema) -> None:
        for keyword in ("oneOf", "anyOf"):
            branches = node.get(keyword)
            values = _const_enum(branches) if isinstance(branches, list) else None
            if values is not None and "enum" not in node:
                del node[keyword]
                node["enum"] = values

    @staticmethod
    def _dispatch(node: Schema) -> None:
        found = _discriminated(node)
        if found is None:
            return
        tag, branches = found
        del node["oneOf"], node["discriminator"]
        node.setdefault("type", "object")
        node["required"] = [
            *node.get("required", []),
            *([] if tag in node.get("required", []) else [tag]),
        ]
        node["properties"] = {
            **node.get("properties", {}),
            tag: {"type": "string", "enum": list(branches)},
        }
        node[_DISPATCH] = {"tag": tag, "branches": branches}

    @staticmethod
    def _flatten(node: Schema) -> Schema:
        """``{..., "allOf": [x]}`` -> ``{..., **x}`` when their keywords don't overlap."""
        all_of = node.get("allOf")
        if not (isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict)):
            return node
        (inner,) = all_of
        mine = {k for k in node if k != "allOf" and not _is_annotation(k)}
        theirs = {k for k in inner if not _is_annotation(k)}
        if mine & theirs:
            return node
        return {**inner, **{k: v for k, v in node.items() if k != "allOf"}}


def _dispatch_keyword(
    validator: Any, spec: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """Validate ``instance`` against the one branch its tag selects (see ``_Preparer``)."""
    if not isinstance(instance, dict):
        return
    branch = spec["branches"].get(instance.get(spec["tag"]))
    if branch is not None:  # a missing / unknown tag is reported by "required" / "enum"
        yield from validator.descend(instance, branch, schema_path=instance[spec["tag"]])


_Validator = validators.extend(Draft202012Validator, {_DISPATCH: _dispatch_keyword})


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())

    def int_range(lo: int, hi: int):
        def check(value: object) -> bool:
            if isinstance(value, bool) or not isinstance(value, int):
                return True  # only integers are range-checked; "type" reports the rest
            return lo <= value <= hi

        return check

    for name, (lo, hi) in _INT_FORMATS.items():
        checker.checks(name)(int_range(lo, hi))

    def finite(value: object) -> bool:
        return not isinstance(value, float) or math.isfinite(value)

    checker.checks("double")(finite)
    checker.checks("float")(finite)
    return checker


# --------------------------------------------------------------------------------------
# Method maps, read from the schema's own unions


def _union_defs(node: Any) -> list[str]:
    """``$defs`` names reachable from ``node`` through anyOf / oneOf / allOf only."""
    out: list[str] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEF_PREFIX):
            out.append(ref.removeprefix(_DEF_PREFIX))
        for keyword in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(keyword, []):
                out.extend(_union_defs(sub))
    return out


def _by_method(raw: Schema, names: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        method = raw["$defs"][name].get("x-method")
        if isinstance(method, str):  # Ext* types carry none: extension methods
            if out.get(method, name) != name:
                raise ValueError(f"schema maps {method!r} to both {out[method]} and {name}")
            out[method] = name
    return out


def _top_branch(raw: Schema, title: str) -> Schema:
    for branch in raw["anyOf"]:
        if branch.get("title") == title:
            return branch
    raise ValueError(f"the schema has no top-level branch titled {title!r}")


def _side_defs(raw: Schema, side: Side) -> MethodDefs:
    """A side's unions are its top-level branch ("Agent" / "Client"), whose anyOf holds
    ``Request`` / ``Response`` / ``Notification`` refs (AgentRequest, ...); the protocol-level
    branch adds ``$/cancel_request`` for both sides."""
    parts: dict[str, Schema] = {}
    for sub in _top_branch(raw, side.capitalize())["anyOf"]:
        (name,) = _union_defs(sub)
        parts[sub["title"]] = raw["$defs"][name]
    results = [
        b["properties"]["result"]
        for b in parts["Response"]["anyOf"]
        if "result" in b.get("properties", {})
    ]
    notifications = _by_method(raw, _union_defs(parts["Notification"]["properties"]["params"]))
    notifications.update(
        _by_method(raw, _union_defs(_top_branch(raw, "ProtocolLevel")["properties"]["params"]))
    )
    return MethodDefs(
        requests=MappingProxyType(
            _by_method(raw, _union_defs(parts["Request"]["properties"]["params"]))
        ),
        notifications=MappingProxyType(notifications),
        responses=MappingProxyType(_by_method(raw, [n for r in results for n in _union_defs(r)])),
    )


# --------------------------------------------------------------------------------------
# The checker


def _type_matches(instance: Any, expected: Any) -> bool:
    names = [expected] if isinstance(expected, str) else expected
    if not isinstance(names, list):
        return True
    for name in names:
        kinds = _JSON_TYPES.get(name)
        if kinds is None:
            return True
        if isinstance(instance, bool) and name not in ("boolean",):
            continue
        if isinstance(instance, kinds):
            if name == "integer" and isinstance(instance, float) and not instance.is_integer():
                continue
            return True
        if name == "integer" and isinstance(instance, float) and instance.is_integer():
            return True
    return False


class _Checker:
    def __init__(self) -> None:
        raw = _raw_schema()
        prep = _Preparer(raw)
        for name in raw["$defs"]:
            prep.definition(name)
        self.defs = prep.defs
        self.top = {b["title"]: prep.node(b) for b in raw["anyOf"]}
        resource = Resource.from_contents({"$defs": self.defs}, default_specification=DRAFT202012)
        registry: Registry[Any] = Registry().with_resource(_SCHEMA_URI, resource)
        self._base = _Validator(
            {"$id": _SCHEMA_URI, "$defs": self.defs},
            registry=registry,
            format_checker=_format_checker(),
        )
        self._validators: dict[int, Any] = {}
        self._frames: dict[tuple[Side, Kind, str | None], Schema] = {}
        self.methods: dict[Side, MethodDefs] = {
            "agent": _side_defs(raw, "agent"),
            "client": _side_defs(raw, "client"),
        }
        self._literal: dict[Side, Schema] = {
            side: {"anyOf": [self.top[side.capitalize()], self.top["ProtocolLevel"]]}
            for side in ("agent", "client")
        }

    def validator(self, schema: Schema) -> Any:
        # Every schema passed here lives as long as the checker, so ids are stable keys.
        found = self._validators.get(id(schema))
        if found is None:
            found = self._base.evolve(schema=schema)
            self._validators[id(schema)] = found
        return found

    # ---- envelopes

    def frame_schema(self, side: Side, kind: Kind, method: str | None) -> Schema:
        key = (side, kind, method)
        found = self._frames.get(key)
        if found is None:
            found = self._frames[key] = self._envelope(side, kind, method)
        return found

    def _envelope(self, side: Side, kind: Kind, method: str | None) -> Schema:
        methods = self.methods[side]
        props: Schema = {"jsonrpc": {"type": "string", "const": "2.0"}}
        required = ["jsonrpc"]
        if kind != "notification":
            props["id"] = self.defs["RequestId"]
            required.append("id")
        if kind in ("request", "notification"):
            table = methods.requests if kind == "request" else methods.notifications
            props["method"] = {"type": "string", "const": method}
            required.append("method")
            name = table.get(method or "")
            if name is None:  # an extension method: free-form params
                props["params"] = {"type": ["object", "array", "null"]}
            elif self.defs[name].get("required"):
                props["params"] = self.defs[name]
                required.append("params")
            else:  # like the SDKs, absent / null params stand for {}
                props["params"] = {"anyOf": [self.defs[name], {"type": "null"}]}
        elif kind == "result":
            name = methods.responses.get(method or "")
            props["result"] = self.defs[name] if name is not None else {}
            required.append("result")
        else:
            props["error"] = self.defs["Error"]
            required.append("error")
        return {"type": "object", "properties": props, "required": required}

    # ---- validation

    def check(self, side: Side, obj: Json, method: str | None, strict: bool) -> None:
        what = f"ACP {side} frame"
        if not isinstance(obj, dict):
            _fail(what, "$", f"a frame is a JSON object, not {type(obj).__name__}", obj)
        kind = self._classify(side, obj, method, what)
        if kind == "result" and method is None:
            self._check_any_result(side, obj, strict, what)
            return
        self._check_as(side, kind, obj.get("method", method), obj, strict, what)

    def _check_as(
        self, side: Side, kind: Kind, method: str | None, obj: Json, strict: bool, what: str
    ) -> None:
        schema = self.frame_schema(side, kind, method)
        errors = list(self.validator(schema).iter_errors(obj))
        if errors:
            _fail_with(what, errors, obj)
        if strict:
            unknown = list(self.unknown_keys(obj, schema, "$"))
            if unknown:
                path, key, declared = unknown[0]
                more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
                _fail(
                    what,
                    path,
                    f"unknown property {key!r}{more}; this object declares only "
                    f"{', '.join(declared)} (the spec forbids custom fields outside _meta)",
                    obj,
                )

    def _check_any_result(self, side: Side, obj: Json, strict: bool, what: str) -> None:
        """A result without its method: some response type of ``side`` must accept it.

        The candidates are tried best-fitting first (most of the result's keys declared,
        fewest required keys missing); if none accepts it, the best fit's error is raised.
        """
        self._check_as(side, "result", None, obj, strict, what)  # the envelope alone
        result = obj["result"]
        keys = set(result) if isinstance(result, dict) else set()

        def fit(item: tuple[str, str]) -> tuple[int, int]:
            target = self.defs[item[1]]
            return (
                len(keys & set(target.get("properties", {}))),
                -len(set(target.get("required", [])) - keys),
            )

        candidates = sorted(self.methods[side].responses.items(), key=fit, reverse=True)
        for method, _ in candidates:
            try:
                self._check_as(side, "result", method, obj, strict, what)
            except AssertionError:
                continue
            return
        method, name = candidates[0]
        self._check_as(
            side, "result", method, obj, strict, f"{what} (no response type fits; closest: {name})"
        )

    def _classify(self, side: Side, obj: dict[str, Json], method: str | None, what: str) -> Kind:
        extra = sorted(set(obj) - _ENVELOPE_KEYS)
        if extra:
            _fail(what, "$", f"unknown JSON-RPC member(s) {extra}", obj)
        methods = self.methods[side]
        if "method" in obj:
            clash = sorted({"result", "error"} & set(obj))
            if clash:
                _fail(what, "$", f"a request or notification carries {clash}", obj)
            kind: Kind = "request" if "id" in obj else "notification"
            table = methods.requests if kind == "request" else methods.notifications
            name = obj["method"]
            if not isinstance(name, str):
                _fail(what, "$.method", f"{name!r} is not a string", obj)
            if name not in table and not name.startswith("_"):
                sends = ", ".join(sorted(table))
                _fail(
                    what,
                    "$.method",
                    f"{name!r} is not a {kind} the {side} sends (it sends: {sends}; "
                    "extension methods start with '_')",
                    obj,
                )
            if method is not None and name != method:
                _fail(what, "$.method", f"expected method {method!r}, got {name!r}", obj)
            return kind
        if "result" in obj and "error" in obj:
            _fail(what, "$", "a response carries both 'result' and 'error'", obj)
        if "result" in obj:
            if method is not None:
                _check_answerable(side, methods, method)
            return "result"
        if "error" in obj:
            return "error"
        _fail(
            what,
            "$",
            "neither a request or notification ('method') nor a response ('result' / 'error')",
            obj,
        )

    def literal_accepts(self, side: Side, obj: Json) -> bool:
        return self.validator(self._literal[side]).is_valid(obj)

    # ---- strict mode: keys that no applicable schema declares

    def _applicable(self, instance: Json, schema: Any) -> Iterator[Schema]:
        """``schema`` and each in-place subschema of it that applies to ``instance``."""
        if not isinstance(schema, dict):
            return
        yield schema
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEF_PREFIX):  # a recursive def, if any
            yield from self._applicable(instance, self.defs[ref.removeprefix(_DEF_PREFIX)])
        for sub in schema.get("allOf", ()):
            yield from self._applicable(instance, sub)
        for keyword in ("anyOf", "oneOf"):
            for sub in schema.get(keyword, ()):
                if not self._quick_reject(instance, sub) and self.validator(sub).is_valid(instance):
                    yield from self._applicable(instance, sub)
        dispatch = schema.get(_DISPATCH)
        if dispatch is not None and isinstance(instance, dict):
            yield from self._applicable(
                instance, dispatch["branches"].get(instance.get(dispatch["tag"]))
            )
        if "if" in schema:
            if self.validator(schema["if"]).is_valid(instance):
                yield from self._applicable(instance, schema["if"])
                yield from self._applicable(instance, schema.get("then"))
            else:
                yield from self._applicable(instance, schema.get("else"))

    @staticmethod
    def _quick_reject(instance: Json, schema: Any) -> bool:
        if not isinstance(schema, dict):
            return False
        if "type" in schema and not _type_matches(instance, schema["type"]):
            return True
        if isinstance(instance, dict):
            for key, sub in schema.get("properties", {}).items():
                if (
                    isinstance(sub, dict)
                    and "const" in sub
                    and key in instance
                    and instance[key] != sub["const"]
                ):
                    return True
        return False

    def unknown_keys(
        self, instance: Json, schema: Any, path: str
    ) -> Iterator[tuple[str, str, list[str]]]:
        pieces = list(self._applicable(instance, schema))
        if isinstance(instance, dict):
            declared: dict[str, list[Any]] = {}
            open_object = False
            extra: list[Any] = []
            for piece in pieces:
                for key, sub in piece.get("properties", {}).items():
                    declared.setdefault(key, []).append(sub)
                for keyword in (
                    "additionalProperties",
                    "unevaluatedProperties",
                    "patternProperties",
                ):
                    if keyword in piece:
                        open_object = True
                        if keyword != "patternProperties":
                            extra.append(piece[keyword])
            closed = bool(declared) and not open_object
            for key, value in instance.items():
                child = _join(path, key)
                if key in declared:
                    for sub in declared[key]:
                        yield from self.unknown_keys(value, sub, child)
                elif closed:
                    yield path, key, sorted(declared)
                else:
                    for sub in extra:
                        yield from self.unknown_keys(value, sub, child)
        elif isinstance(instance, list):
            for piece in pieces:
                prefix = piece.get("prefixItems", [])
                items = piece.get("items")
                for i, value in enumerate(instance):
                    yield from self.unknown_keys(
                        value, prefix[i] if i < len(prefix) else items, f"{path}[{i}]"
                    )


def _check_answerable(side: Side, methods: MethodDefs, method: str) -> None:
    """A caller's mistake (not a frame's): asking for the response to a method ``side``
    never answers."""
    if method not in methods.responses and not method.startswith("_"):
        answers = ", ".join(sorted(methods.responses))
        raise ValueError(f"the {side} answers no request {method!r} (it answers: {answers})")


@functools.cache
def _checker() -> _Checker:
    return _Checker()


# --------------------------------------------------------------------------------------
# Error reporting


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def _path(error: ValidationError) -> str:
    out = "$"
    for part in error.absolute_path:
        out = _join(out, part)
    return out


def _best(errors: list[ValidationError]) -> ValidationError:
    """The most telling error. Inside an anyOf/oneOf, skip the branches that fail only
    because the value has another type (``null`` vs object, ...) and follow the branch that
    got furthest into the value."""
    best = max(errors, key=relevance)
    while best.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in best.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        depth = len(best.absolute_path)
        viable = {
            k: v
            for k, v in branches.items()
            if not all(e.validator == "type" and len(e.absolute_path) == depth for e in v)
        }
        if not viable:
            break
        chosen = max(viable.values(), key=lambda v: max(len(e.absolute_path) for e in v))
        best = max(chosen, key=relevance)
    return best


def _describe(schema: Any) -> str:
    if not isinstance(schema, dict):
        return json.dumps(schema)
    for key in (_DEF_NAME, "title"):
        if isinstance(schema.get(key), str):
            return schema[key]
    if "type" in schema:
        return json.dumps(schema["type"])
    return "?"


def _render(obj: Json) -> str:
    try:
        text = json.dumps(obj, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(obj)
    if len(text) > _MAX_FRAME_CHARS:
        text = f"{text[:_MAX_FRAME_CHARS]}... ({len(text)} chars)"
    return text


def _fail(what: str, path: str, message: str, obj: Json) -> NoReturn:
    raise AssertionError(f"{what} is invalid at {path}: {message}\n  frame: {_render(obj)}")


def _fail_with(what: str, errors: list[ValidationError], obj: Json) -> NoReturn:
    best = _best(errors)
    message = best.message
    if best.validator in ("anyOf", "oneOf") and isinstance(best.validator_value, list):
        names = [_describe(s) for s in best.validator_value]
        message += f" (tried: {', '.join(map(str, names))})"
    schema = best.schema if isinstance(best.schema, dict) else {}
    where = f" [in {schema[_DEF_NAME]}]" if _DEF_NAME in schema else ""
    more = f"\n  ({len(errors) - 1} more error(s) in this frame)" if len(errors) > 1 else ""
    raise AssertionError(
        f"{what} is invalid at {_path(best)}: {message}{where}{more}\n  frame: {_render(obj)}"
    )


# --------------------------------------------------------------------------------------
# Public API


def method_defs(side: Side) -> MethodDefs:
    """The ``$defs`` types of what ``side`` sends: its requests' and notifications' params,
    and its results keyed by the incoming request's method."""
    return _checker().methods[side]


def literal_schema_accepts(side: Side, obj: Json) -> bool:
    """Whether the schema's own top-level branch for ``side`` (or the protocol-level one)
    accepts ``obj``: the loose, literal reading of the schema."""
    return _checker().literal_accepts(side, obj)


def validate_agent_frame(obj: Json, *, method: str | None = None, strict: bool = True) -> None:
    """Assert that ``obj`` is a frame the agent may write.

    ``method``: for a result, the method of the client request it answers (checks that
    response type); for a request / notification, the method it must carry.
    ``strict``: reject keys the schema does not declare (see the module docstring).
    """
    _checker().check("agent", obj, method, strict)


def validate_agent_response(method: str, obj: Json, *, strict: bool = True) -> None:
    """Assert that ``obj`` is a successful agent response to the client request ``method``
    (``initialize`` -> ``InitializeResponse``, ``session/prompt`` -> ``PromptResponse``, ...)."""
    _require_result("agent", method, obj, strict)


def validate_client_frame(obj: Json, *, method: str | None = None, strict: bool = True) -> None:
    """Assert that ``obj`` is a frame a client may write (options as for the agent)."""
    _checker().check("client", obj, method, strict)


def validate_client_response(method: str, obj: Json, *, strict: bool = True) -> None:
    """Assert that ``obj`` is a successful client response to the agent request ``method``."""
    _require_result("client", method, obj, strict)


def _require_result(side: Side, method: str, obj: Json, strict: bool) -> None:
    checker = _checker()
    _check_answerable(side, checker.methods[side], method)
    if isinstance(obj, dict) and "method" in obj:
        _fail(
            f"ACP {side} response to {method}",
            "$",
            "expected a response, got a request or notification",
            obj,
        )
    checker.check(side, obj, method, strict)
    if "result" not in obj:
        _fail(f"ACP {side} response to {method}", "$.error", "expected a result, got an error", obj)
