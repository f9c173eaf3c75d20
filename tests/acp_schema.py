"""Check JSON-RPC frames against the vendored ACP v1 JSON schema.

The schema (``tests/fixtures/acp-schema/schema.json``, from npm ``@agentclientprotocol/sdk``
2.4.0, ACP schema 1.25.0) is the wire contract: every frame the agent writes must validate.
Taken literally it is very loose, so checking a frame against its top-level ``anyOf`` proves
almost nothing:

* the params union of every side includes ``ExtRequest`` / ``ExtNotification`` and the
  result union includes ``ExtResponse``, all of which are ``{}`` (anything validates), and
  no union ties a ``method`` to its params type;
* no object type is closed (no ``additionalProperties: false`` anywhere), so a snake_case
  ``raw_input`` next to the optional ``rawInput`` validates, although the spec says
  implementations "MUST NOT add any custom fields at the root of a type that's part of the
  specification";
* ``format`` (``uint16``, ``int64``, ...) is annotation-only in Draft 2020-12.

So a frame is checked in three steps: (1) against the literal schema (the agent's or
client's top-level branch, plus the protocol-level branch for ``$/cancel_request``);
(2) after classifying it (request / notification / result / error) against the specific
``$defs`` type for its method, the method -> type maps being read from the schema's own
unions and ``x-method`` annotations; (3) strict mode (default): no object of a spec type may
carry a key its schema does not declare (``_meta`` and free-form values like ``rawInput``
stay open). Integer formats are range-checked.

Two semantics-preserving rewrites of the schema give fast validation and readable errors:
a ``oneOf``/``anyOf`` of string consts becomes an ``enum``; a ``oneOf`` discriminated by a
tag (``sessionUpdate``, ``type``, ``outcome``) becomes "tag in enum" plus ``if tag == v then
branch_v``, so an unknown tag reads "'bogus' is not one of [...]" and a bad field in a known
variant is reported at its own path instead of as "not valid under any of the given schemas".

A result frame (``{"id", "result"}``) cannot be tied to its method by the frame alone: without
``method=...`` its result is checked against the union of the sending side's response types
(extension results excluded, they would accept anything); pass the request's method (or use
:func:`validate_agent_response`) to check the specific response type.

Public API: :func:`validate_agent_frame`, :func:`validate_agent_response`,
:func:`validate_client_frame`, :func:`validate_client_response`, :func:`method_defs`.
Every ``validate_*`` raises ``AssertionError`` with the failing path, the message and the
frame, and returns ``None`` when the frame is valid.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NoReturn

from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.exceptions import relevance
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

__all__ = [
    "SCHEMA_PATH",
    "MethodDefs",
    "Side",
    "method_defs",
    "validate_agent_frame",
    "validate_agent_response",
    "validate_client_frame",
    "validate_client_response",
]

SCHEMA_PATH = Path(__file__).resolve().parent / "fixtures" / "acp-schema" / "schema.json"

Side = Literal["agent", "client"]
Json = Any
Schema = dict[str, Any]

_SCHEMA_URI = "urn:tether:test:acp-schema-v1"
_DEF_PREFIX = "#/$defs/"
_ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params", "result", "error"})
_MAX_FRAME_CHARS = 4000

# Ranges for the schema's integer formats (Rust-derived); "double" must be finite.
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


@dataclass(frozen=True)
class MethodDefs:
    """What one side may send, as method name -> ``$defs`` type name.

    ``requests``/``notifications``: the params type of each request/notification this side
    sends. ``responses``: the result type this side answers each incoming request with
    (keyed by the request's method).
    """

    requests: Mapping[str, str]
    notifications: Mapping[str, str]
    responses: Mapping[str, str]


# --------------------------------------------------------------------------------------
# Loading and rewriting the schema


@functools.cache
def _raw_schema() -> Schema:
    with SCHEMA_PATH.open(encoding="utf-8") as fh:
        return json.load(fh)


def _resolve_local(root: Schema, schema: Schema) -> Schema:
    """Follow a chain of local ``$ref``s (only ``#/$defs/Name`` occurs in this schema)."""
    seen: set[str] = set()
    while "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith(_DEF_PREFIX) or ref in seen:
            break
        seen.add(ref)
        schema = root["$defs"][ref.removeprefix(_DEF_PREFIX)]
    return schema


def _const_enum(branches: list[Any]) -> list[Any] | None:
    """The const values if every branch is just ``{type?, const, title?, description?}``."""
    values: list[Any] = []
    for branch in branches:
        if not isinstance(branch, dict) or "const" not in branch:
            return None
        if set(branch) - {"const", "type", "title", "description"}:
            return None
        values.append(branch["const"])
    if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
        return None
    return values


def _discriminated(schema: Schema) -> tuple[str, list[tuple[Any, Schema]]] | None:
    """``(tag, [(value, branch)])`` for a ``oneOf`` whose branches each require a distinct
    const ``tag`` (the schema marks these with ``discriminator``)."""
    disc = schema.get("discriminator")
    branches = schema.get("oneOf")
    if not isinstance(disc, dict) or not isinstance(branches, list):
        return None
    tag = disc.get("propertyName")
    if not isinstance(tag, str):
        return None
    out: list[tuple[Any, Schema]] = []
    for branch in branches:
        if not isinstance(branch, dict):
            return None
        tag_schema = branch.get("properties", {}).get(tag)
        if not isinstance(tag_schema, dict) or "const" not in tag_schema:
            return None
        if tag not in branch.get("required", []):
            return None
        out.append((tag_schema["const"], branch))
    if len({json.dumps(v, sort_keys=True) for v, _ in out}) != len(out):
        return None
    return tag, out


def _rewrite(node: Any) -> Any:
    """Apply the two rewrites described in the module docstring, recursively."""
    if isinstance(node, list):
        return [_rewrite(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _rewrite(value) for key, value in node.items()}
    for keyword in ("oneOf", "anyOf"):
        values = _const_enum(node[keyword]) if isinstance(node.get(keyword), list) else None
        if values is not None:
            del node[keyword]
            node["enum"] = values
    disc = _discriminated(node)
    if disc is not None:
        tag, branches = disc
        del node["oneOf"]
        node.setdefault("type", "object")
        node["required"] = sorted({*node.get("required", []), tag})
        dispatch: list[Schema] = [
            {"properties": {tag: {"enum": [value for value, _ in branches]}}},
        ]
        for value, branch in branches:
            dispatch.append(
                {
                    "if": {"properties": {tag: {"const": value}}, "required": [tag]},
                    "then": branch,
                }
            )
        node["allOf"] = [*node.get("allOf", []), *dispatch]
    return node


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())

    def int_range(lo: int, hi: int):
        def check(value: object) -> bool:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return True  # formats only constrain numbers; "type" handles the rest
            if isinstance(value, float) and not value.is_integer():
                return True  # "type": "integer" reports this one
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


def _refs_in_union(schema: Any) -> list[str]:
    """``$defs`` names reachable from ``schema`` through anyOf/oneOf/allOf only."""
    out: list[str] = []
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEF_PREFIX):
            out.append(ref.removeprefix(_DEF_PREFIX))
        for keyword in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(keyword, []):
                out.extend(_refs_in_union(sub))
    return out


def _by_method(root: Schema, names: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        method = root["$defs"][name].get("x-method")
        if isinstance(method, str):  # Ext* types carry no method: extensions, handled apart
            if method in out:
                raise ValueError(f"schema maps {method!r} to both {out[method]} and {name}")
            out[method] = name
    return out


def _top_branch(root: Schema, title: str) -> Schema:
    for branch in root["anyOf"]:
        if branch.get("title") == title:
            return branch
    raise ValueError(f"schema has no top-level branch titled {title!r}")


def _side_defs(root: Schema, side: Side) -> MethodDefs:
    branch = _top_branch(root, side.capitalize())  # "Agent" / "Client"
    parts: dict[str, str] = {}
    for sub in branch["anyOf"]:  # titled Request / Response / Notification
        (ref,) = _refs_in_union(sub)
        parts[sub["title"]] = ref
    request = root["$defs"][parts["Request"]]
    notification = root["$defs"][parts["Notification"]]
    response = root["$defs"][parts["Response"]]
    result_unions = [b["properties"]["result"] for b in response["anyOf"] if "result" in b.get("properties", {})]
    protocol = _top_branch(root, "ProtocolLevel")["properties"]["params"]
    notifications = _by_method(root, _refs_in_union(notification["properties"]["params"]))
    notifications.update(_by_method(root, _refs_in_union(protocol)))
    return MethodDefs(
        requests=MappingProxyType(_by_method(root, _refs_in_union(request["properties"]["params"]))),
        notifications=MappingProxyType(notifications),
        responses=MappingProxyType(_by_method(root, [r for u in result_unions for r in _refs_in_union(u)])),
    )


# --------------------------------------------------------------------------------------
# The compiled checker


def _ref(name: str) -> Schema:
    return {"$ref": f"{_DEF_PREFIX}{name}"}


def _params_schema(root: Schema, name: str) -> tuple[Schema, bool]:
    """Schema for ``params`` of type ``name`` and whether ``params`` must be present.

    Like the SDKs, an absent/null ``params`` stands for ``{}``: fine only if the type has no
    required fields.
    """
    if root["$defs"][name].get("required"):
        return _ref(name), True
    return {"anyOf": [_ref(name), {"type": "null"}]}, False


class _Checker:
    def __init__(self) -> None:
        raw = _raw_schema()
        self.root: Schema = _rewrite(copy.deepcopy(raw))
        self.root["$id"] = _SCHEMA_URI
        registry: Registry[Any] = Registry().with_resource(
            _SCHEMA_URI, Resource.from_contents(self.root, default_specification=DRAFT202012)
        )
        self._base = Draft202012Validator(
            self.root, registry=registry, format_checker=_format_checker()
        )
        self._validators: dict[int, Draft202012Validator] = {}
        self.defs: dict[Side, MethodDefs] = {
            "agent": _side_defs(raw, "agent"),
            "client": _side_defs(raw, "client"),
        }
        # The literal schema: a side's own top-level branch, or the protocol-level one.
        self._literal: dict[Side, Schema] = {
            side: {
                "anyOf": [
                    {"$ref": f"#/anyOf/{self._top_index(side.capitalize())}"},
                    {"$ref": f"#/anyOf/{self._top_index('ProtocolLevel')}"},
                ]
            }
            for side in ("agent", "client")
        }
        self._frames: dict[tuple[Side, str, str | None], Schema] = {}

    def _top_index(self, title: str) -> int:
        for i, branch in enumerate(self.root["anyOf"]):
            if branch.get("title") == title:
                return i
        raise ValueError(title)

    def validator(self, schema: Schema) -> Draft202012Validator:
        # Entry schemas are cached in self._frames / the schema tree, so ids are stable.
        found = self._validators.get(id(schema))
        if found is None:
            found = self._base.evolve(schema=schema)
            self._validators[id(schema)] = found
        return found

    # ---- frame schemas

    def frame_schema(self, side: Side, kind: str, method: str | None) -> Schema:
        key = (side, kind, method)
        found = self._frames.get(key)
        if found is None:
            found = self._build_frame_schema(side, kind, method)
            self._frames[key] = found
        return found

    def _build_frame_schema(self, side: Side, kind: str, method: str | None) -> Schema:
        defs = self.defs[side]
        props: Schema = {"jsonrpc": {"type": "string", "const": "2.0"}}
        required = ["jsonrpc"]
        if kind in ("request", "result", "error"):
            props["id"] = _ref("RequestId")
            required.append("id")
        if kind in ("request", "notification"):
            assert method is not None
            props["method"] = {"type": "string", "const": method}
            required.append("method")
            table = defs.requests if kind == "request" else defs.notifications
            if method in table:
                props["params"], needs = _params_schema(self.root, table[method])
                if needs:
                    required.append("params")
            else:  # an extension method ("_..."): params are free-form
                props["params"] = {"type": ["object", "array", "null"]}
        elif kind == "result":
            if method is None:
                props["result"] = {"anyOf": [_ref(n) for n in dict.fromkeys(defs.responses.values())]}
            elif method in defs.responses:
                props["result"] = _ref(defs.responses[method])
            else:  # the result of an extension method
                props["result"] = {}
            required.append("result")
        else:
            props["error"] = _ref("Error")
            required.append("error")
        return {"type": "object", "properties": props, "required": required}

    # ---- validation

    def check(self, side: Side, obj: Json, method: str | None, strict: bool) -> None:
        what = f"ACP {side} frame"
        if not isinstance(obj, dict):
            _fail(what, "$", f"a frame must be a JSON object, got {type(obj).__name__}", obj)
        kind = self._classify(side, obj, method, what)
        frame_method = obj.get("method") if kind in ("request", "notification") else method
        schema = self.frame_schema(side, kind, frame_method)
        errors = list(self.validator(schema).iter_errors(obj))
        if errors:
            _fail_with(what, errors, obj)
        # Backstop: the schema's own top-level branch must accept it too.
        errors = list(self.validator(self._literal[side]).iter_errors(obj))
        if errors:
            _fail_with(what + " (literal top-level schema)", errors, obj)
        if strict:
            unknown = list(self._unknown_keys(obj, schema, "$"))
            if unknown:
                path, key, where = unknown[0]
                more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
                _fail(
                    what,
                    path,
                    f"unknown property {key!r}{more}: the schema for this object declares only "
                    f"{where}; the spec forbids custom fields outside _meta",
                    obj,
                )

    def _classify(self, side: Side, obj: dict[str, Json], method: str | None, what: str) -> str:
        extra = sorted(set(obj) - _ENVELOPE_KEYS)
        if extra:
            _fail(what, "$", f"unknown JSON-RPC envelope member(s) {extra}", obj)
        if "method" in obj:
            clash = sorted({"result", "error"} & set(obj))
            if clash:
                _fail(what, "$", f"a request/notification must not carry {clash}", obj)
            name = obj["method"]
            kind = "request" if "id" in obj else "notification"
            table = self.defs[side].requests if kind == "request" else self.defs[side].notifications
            if isinstance(name, str) and name not in table and not name.startswith("_"):
                known = ", ".join(sorted(table))
                _fail(
                    what,
                    "$.method",
                    f"{name!r} is not a {kind} the {side} may send (known: {known}; "
                    "extension methods start with '_')",
                    obj,
                )
            if method is not None and name != method:
                _fail(what, "$.method", f"expected method {method!r}, got {name!r}", obj)
            return kind
        if "result" in obj and "error" in obj:
            _fail(what, "$", "a response carries both 'result' and 'error'", obj)
        if "result" in obj:
            if method is not None and method not in self.defs[side].responses:
                if not method.startswith("_"):
                    known = ", ".join(sorted(self.defs[side].responses))
                    raise ValueError(f"the {side} answers no request {method!r} (known: {known})")
            return "result"
        if "error" in obj:
            return "error"
        _fail(what, "$", "neither a request/notification ('method') nor a response", obj)

    # ---- strict mode: keys no applicable schema declares

    def _applicable(self, instance: Json, schema: Any) -> Iterator[Schema]:
        """The schema and every in-place subschema that applies to ``instance``."""
        if not isinstance(schema, dict):
            return
        yield schema
        ref = schema.get("$ref")
        if isinstance(ref, str):
            yield from self._applicable(instance, _resolve_local(self.root, schema))
        for sub in schema.get("allOf", []):
            yield from self._applicable(instance, sub)
        for keyword in ("anyOf", "oneOf"):
            for sub in schema.get(keyword, []):
                if self._quick_reject(instance, sub):
                    continue
                if self.validator(sub).is_valid(instance):
                    yield from self._applicable(instance, sub)
        if "if" in schema:
            if self.validator(schema["if"]).is_valid(instance):
                yield from self._applicable(instance, schema["if"])
                yield from self._applicable(instance, schema.get("then"))
            else:
                yield from self._applicable(instance, schema.get("else"))

    def _quick_reject(self, instance: Json, schema: Any) -> bool:
        """Cheap pre-check before ``is_valid``: a const property the instance contradicts."""
        if not isinstance(schema, dict) or not isinstance(instance, dict):
            return False
        for key, sub in schema.get("properties", {}).items():
            if isinstance(sub, dict) and "const" in sub and key in instance:
                if instance[key] != sub["const"]:
                    return True
        return False

    def _unknown_keys(self, instance: Json, schema: Schema, path: str) -> Iterator[tuple[str, str, str]]:
        pieces = list(self._applicable(instance, schema))
        if isinstance(instance, dict):
            declared: dict[str, list[Any]] = {}
            open_object = False
            extra_schemas: list[Any] = []
            for piece in pieces:
                for key, sub in piece.get("properties", {}).items():
                    declared.setdefault(key, []).append(sub)
                for keyword in ("additionalProperties", "unevaluatedProperties", "patternProperties"):
                    if keyword in piece:
                        open_object = True
                        if keyword != "patternProperties":
                            extra_schemas.append(piece[keyword])
            closed = bool(declared) and not open_object
            for key, value in instance.items():
                child = f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"
                if key in declared:
                    for sub in declared[key]:
                        yield from self._unknown_keys(value, sub, child)
                elif closed:
                    yield path, key, ", ".join(sorted(declared))
                else:
                    for sub in extra_schemas:
                        if isinstance(sub, dict):
                            yield from self._unknown_keys(value, sub, child)
        elif isinstance(instance, list):
            for piece in pieces:
                prefix = piece.get("prefixItems", [])
                items = piece.get("items")
                for i, value in enumerate(instance):
                    sub = prefix[i] if i < len(prefix) else items
                    if isinstance(sub, dict):
                        yield from self._unknown_keys(value, sub, f"{path}[{i}]")


@functools.cache
def _checker() -> _Checker:
    return _Checker()


# --------------------------------------------------------------------------------------
# Error reporting


def _path(error: ValidationError) -> str:
    out = "$"
    for part in error.absolute_path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _is_type_miss(error: ValidationError, parent: ValidationError) -> bool:
    return error.validator == "type" and len(error.absolute_path) == len(parent.absolute_path)


def _best(errors: list[ValidationError]) -> ValidationError:
    """Pick the most telling error; inside an anyOf/oneOf, ignore branches that fail only
    because the instance has another type (``null`` vs object ...) and follow the branch
    that got furthest."""
    best = max(errors, key=relevance)
    while best.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in best.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        viable = {k: v for k, v in branches.items() if not all(_is_type_miss(e, best) for e in v)}
        if not viable:
            break
        key = max(viable, key=lambda k: max(len(e.absolute_path) for e in viable[k]))
        best = max(viable[key], key=relevance)
    return best


def _render(obj: Json) -> str:
    try:
        text = json.dumps(obj, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        text = repr(obj)
    if len(text) > _MAX_FRAME_CHARS:
        text = text[:_MAX_FRAME_CHARS] + f"... ({len(text)} chars)"
    return text


def _fail(what: str, path: str, message: str, obj: Json) -> NoReturn:
    raise AssertionError(f"{what} is invalid at {path}: {message}\n  frame: {_render(obj)}")


def _fail_with(what: str, errors: list[ValidationError], obj: Json) -> NoReturn:
    best = _best(errors)
    message = best.message
    if best.validator in ("anyOf", "oneOf"):
        titles = [s.get("title") or s.get("$ref", "?") for s in best.validator_value if isinstance(s, dict)]
        message += f" (tried: {', '.join(map(str, titles))})"
    schema_path = "/".join(str(p) for p in best.absolute_schema_path)
    more = f"; {len(errors) - 1} other error(s)" if len(errors) > 1 else ""
    raise AssertionError(
        f"{what} is invalid at {_path(best)}: {message}\n"
        f"  schema path: {schema_path}{more}\n"
        f"  frame: {_render(obj)}"
    )


# --------------------------------------------------------------------------------------
# Public API


def method_defs(side: Side) -> MethodDefs:
    """The methods ``side`` may send (requests, notifications) or answer (responses)."""
    return _checker().defs[side]


def validate_agent_frame(obj: Json, *, method: str | None = None, strict: bool = True) -> None:
    """Assert that ``obj`` is a frame the agent may write.

    ``method``: for a result frame, the method of the request it answers (checks the
    specific response type); for a request/notification, the method it must carry.
    ``strict``: also reject keys the schema does not declare (see module docstring).
    """
    _checker().check("agent", obj, method, strict)


def validate_agent_response(method: str, obj: Json, *, strict: bool = True) -> None:
    """Assert that ``obj`` is a successful response to the client request ``method``
    (``initialize`` -> ``InitializeResponse``, ``session/prompt`` -> ``PromptResponse``, ...)."""
    checker = _checker()
    if method not in checker.defs["agent"].responses and not method.startswith("_"):
        known = ", ".join(sorted(checker.defs["agent"].responses))
        raise ValueError(f"the agent answers no request {method!r} (known: {known})")
    checker.check("agent", obj, method, strict)
    if "result" not in obj:
        _fail(f"ACP agent response to {method}", "$", "expected a result, got an error", obj)


def validate_client_frame(obj: Json, *, method: str | None = None, strict: bool = True) -> None:
    """Assert that ``obj`` is a frame a client may write (same options as the agent's)."""
    _checker().check("client", obj, method, strict)


def validate_client_response(method: str, obj: Json, *, strict: bool = True) -> None:
    """Assert that ``obj`` is a successful client response to the agent request ``method``."""
    checker = _checker()
    if method not in checker.defs["client"].responses and not method.startswith("_"):
        known = ", ".join(sorted(checker.defs["client"].responses))
        raise ValueError(f"the client answers no request {method!r} (known: {known})")
    checker.check("client", obj, method, strict)
    if "result" not in obj:
        _fail(f"ACP client response to {method}", "$", "expected a result, got an error", obj)
