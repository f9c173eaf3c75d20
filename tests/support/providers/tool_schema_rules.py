"""What the real APIs refuse in a tool's schema, beyond their request schemas (which type a
tool's `parameters` / `input_schema` only as "an object"). One refused tool fails the whole
request, in the vendor's own words, reproduced here. Each rule names where its text was seen:
the APIs do not publish a validator, so the sources are their error messages as users met them
(linked issues and pull requests), and the SDK's documentation where it states a default.

OpenAI (chat completions `tools[].function.parameters`, Responses `tools[].parameters`):
* the top must be `type: "object"` with no `oneOf`/`anyOf`/`allOf`/`enum`/`not`
  (nspady/google-calendar-mcp#39, langchain-ai/langchainjs#9804);
* the top must have `properties` (evalstate/fast-agent#143 on chat completions,
  everruns/everruns#984 on Responses); a nested object need not (prism-php/prism#746);
* the schema must be a valid JSON Schema: its messages are Python `jsonschema`'s ("[] is not of
  type 'object', 'boolean'", FoundationAgents/OpenManus#1162). Which draft is not published;
  2020-12 is checked here, the draft Anthropic names and the one tether sends;
* every schema whose `type` is `"array"`, or a list naming `"array"`, needs `items`, wherever
  it is: "array schema missing items" (sigoden/aichat#1049, gumloop/guMCP#136; a type list:
  tidewave-ai/tidewave_phoenix#224, context `(..., 'type', '0')`). `items: {}` is accepted
  (tidewave_phoenix a71d6a8: the revert that restored it for GPT-5);
* strict tools (chat: `strict: true`; Responses: `strict` true or null, "Default `true`" in
  openai-python's `FunctionToolParam`): every object needs `additionalProperties: false`
  (bytedance/trae-agent#173) and `required` naming every property (the "Structured Outputs"
  guide's supported schemas; the message as users quote it).

Anthropic (`tools[].input_schema`):
* `type` is required and must be `"object"` ("tools.N.custom.input_schema.type: Field required":
  Kilo-Org/kilocode#12238, BerriAI/litellm#31527);
* no `oneOf`/`allOf`/`anyOf` at the top (the comment on nspady/google-calendar-mcp#39);
* property keys match `^[a-zA-Z0-9_.-]{1,64}$` (the same report);
* the schema must be valid JSON Schema draft 2020-12, whatever its `$schema` says: the draft-07
  tuple `items: [...]` is refused and `prefixItems` taken (anthropics/anthropic-sdk-java#241,
  NousResearch/hermes-agent#63674, verified live; openclaw/openclaw#98588).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from .vendor_schema import API

Path = tuple[str, ...]
_KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
_ONE = (
    "items",
    "additionalProperties",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
)
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_TOP_REFUSED = ("oneOf", "anyOf", "allOf", "enum", "not")
_META = Draft202012Validator(Draft202012Validator.META_SCHEMA)


def refusal(api: API, body: dict[str, Any]) -> str | None:
    """The API's message for the first tool schema it refuses, or None."""
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict):
            continue
        if api == "anthropic":
            problem = _anthropic(i, tool)
        elif api in ("chat", "responses"):
            problem = _openai(api, tool)
        else:
            problem = None
        if problem is not None:
            return problem
    return None


def subschemas(node: Any, path: Path = ()) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every schema inside `node` (itself first) with its path, through the keywords that hold
    schemas; values (`default`, `enum`, `const`, `examples`) are not schemas."""
    if not isinstance(node, dict):
        return
    yield path, node
    for key in _ONE:
        if isinstance(node.get(key), dict):
            yield from subschemas(node[key], (*path, key))
    for key in _LISTS:
        if isinstance(node.get(key), list):
            for n, branch in enumerate(node[key]):
                yield from subschemas(branch, (*path, key, str(n)))
    for key in (*_MAPS, "dependencies"):
        if isinstance(node.get(key), dict):
            for name, value in node[key].items():
                yield from subschemas(value, (*path, key, str(name)))


def _types(schema: dict[str, Any]) -> list[Any]:
    kind = schema.get("type")
    return kind if isinstance(kind, list) else [kind]


def _openai(api: API, tool: dict[str, Any]) -> str | None:
    if api == "chat":
        function = tool.get("function") or {}
        schema, strict = function.get("parameters"), function.get("strict") is True
    elif tool.get("type") == "function":
        function, schema = tool, tool.get("parameters")
        strict = tool.get("strict") in (True, None)
    else:
        return None
    if not isinstance(schema, dict):
        return None
    head = f"Invalid schema for function '{function.get('name', '?')}': "
    problem = _openai_schema(schema) or (_openai_strict(schema) if strict else None)
    return head + problem if problem else None


def _openai_schema(schema: dict[str, Any]) -> str | None:
    if schema.get("type") != "object" or any(k in schema for k in _TOP_REFUSED):
        return (
            "schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' "
            "at the top level."
        )
    if "properties" not in schema:
        return "In context=(), object schema missing properties."
    invalid = _invalid(schema)
    if invalid is not None:
        return f"{invalid}."
    for path, node in subschemas(schema):
        kinds = _types(node)
        if "array" in kinds and "items" not in node:
            where = path + (("type", str(kinds.index("array"))) if len(kinds) > 1 else ())
            return f"In context={where!r}, array schema missing items."
    return None


def _openai_strict(schema: dict[str, Any]) -> str | None:
    for path, node in subschemas(schema):
        if "object" not in _types(node) and "properties" not in node:
            continue
        if node.get("additionalProperties") is not False:
            return (
                f"In context={path!r}, 'additionalProperties' is required to be supplied and "
                "to be false."
            )
        missing = [k for k in node.get("properties") or {} if k not in node.get("required", [])]
        if missing:
            return (
                f"In context={path!r}, 'required' is required to be supplied and to be an array "
                f"including every key in properties. Missing '{missing[0]}'."
            )
    return None


def _anthropic(i: int, tool: dict[str, Any]) -> str | None:
    schema = tool.get("input_schema")
    if not isinstance(schema, dict):
        return None  # a server tool (web search, ...): no schema of its own
    where = f"tools.{i}.custom.input_schema"
    if "type" not in schema:
        return f"{where}.type: Field required"
    if schema["type"] != "object":
        return f"{where}.type: Input should be 'object'"
    if any(k in schema for k in ("oneOf", "allOf", "anyOf")):
        return f"{where}: input_schema does not support oneOf, allOf, or anyOf at the top level"
    for _, node in subschemas(schema):
        props = node.get("properties")
        if isinstance(props, dict) and not all(_KEY.match(str(k)) for k in props):
            return (
                f"{where}.properties: Property keys should match pattern '^[a-zA-Z0-9_.-]{{1,64}}$'"
            )
    if _invalid(schema) is not None:
        return (
            f"{where}: JSON schema is invalid. It must match JSON Schema draft 2020-12 "
            "(https://json-schema.org/draft/2020-12). Learn more about tool use at "
            "https://docs.claude.com/en/docs/tool-use."
        )
    return None


def _invalid(schema: dict[str, Any]) -> str | None:
    """Why `schema` is no valid draft 2020-12 schema (its own `$schema` aside), or None."""
    errors = list(_META.iter_errors(schema))
    return best_match(errors).message if errors else None
