"""Request bodies checked against the vendors' published definitions.

OpenAI: the `components.schemas` of its OpenAPI spec that the request bodies reach
(`tests/fixtures/openai-openapi`). Anthropic: the JSON Schema of the Python SDK's request type
(`tests/fixtures/anthropic-sdk`). Both are prepared once, without accepting anything the source
refuses:

* OpenAPI's `nullable: true` becomes a JSON Schema `null` alternative, and its `$recursiveRef`
  (draft 2019-09) a plain `$ref` to the schema that declares `$recursiveAnchor`;
* OpenAI's `oneOf` is read as `anyOf`, as its SDK generators read it: some alternatives overlap
  (a user message matches both `EasyInputMessage` and `InputMessage`), so "exactly one" would
  refuse bodies the API takes;
* objects are closed (`unevaluatedProperties: false`): both APIs answer 400 to a parameter they
  do not know, while the published schemas leave objects open. Schemas composed with `allOf` are
  closed where they are used, their parts stay open (a part cannot see its siblings' keys).

The `deepseek` dialect is OpenAI's schema plus what DeepSeek's conventions add: on chat
completions, `thinking` on the request and `reasoning_content` on assistant messages; on
Responses, reasoning items that carry their text without an `id`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
Dialect = Literal["openai", "deepseek"]
API = Literal["chat", "responses", "anthropic", "models"]
_OPENAI_ROOTS = {
    "chat": "CreateChatCompletionRequest",
    "responses": "CreateResponse",
    "models": "ListModelsResponse",
}


def api_of(method: str, path: str) -> API | None:
    """Which request body a request carries, by its method and path (None: not checked)."""
    path = path.split("?", 1)[0]
    if method != "POST":
        return None
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/v1/messages"):
        return "anthropic"
    return None


def problems(api: API, body: Any, dialect: Dialect = "openai") -> list[str]:
    """Every way `body` breaks the published schema, best match first ([] when it is valid)."""
    validator = _validator(api, dialect)
    errors = list(validator.iter_errors(body))
    if not errors:
        return []
    best = best_match(errors)
    where = "/".join(str(p) for p in best.absolute_path) or "(root)"
    return [f"{where}: {best.message}", *(e.message for e in errors if e is not best)]


@functools.cache
def _validator(api: API, dialect: Dialect) -> Draft202012Validator:
    if api == "anthropic":
        schema = _close(
            json.loads((FIXTURES / "anthropic-sdk/message_create_params.json").read_text())
        )
        return Draft202012Validator(schema)
    doc = _openai_doc(dialect)
    root = {"$ref": f"#/components/schemas/{_OPENAI_ROOTS[api]}", "components": doc["components"]}
    return Draft202012Validator(root)


@functools.cache
def _openai_doc(dialect: Dialect) -> dict[str, Any]:
    doc = json.loads((FIXTURES / "openai-openapi/schemas.json").read_text())
    schemas: dict[str, Any] = doc["components"]["schemas"]
    for name, schema in schemas.items():
        schemas[name] = _json_schema(schema, name)
    if dialect == "deepseek":
        _deepseek(schemas)
    parts = _allof_parts(schemas)
    for name, schema in schemas.items():
        schemas[name] = _close(schema, open_top=name in parts)
    return doc


def _deepseek(schemas: dict[str, Any]) -> None:
    request = schemas["CreateChatCompletionRequest"]["allOf"][-1]["properties"]
    request["thinking"] = {
        "type": "object",
        "properties": {"type": {"enum": ["enabled", "disabled"]}},
        "required": ["type"],
    }
    assistant = schemas["ChatCompletionRequestAssistantMessage"]["properties"]
    assistant["reasoning_content"] = {"type": "string"}
    reasoning = schemas["ReasoningItem"]
    reasoning["required"] = [r for r in reasoning["required"] if r != "id"]


def _json_schema(node: Any, name: str) -> Any:
    """OpenAPI 3 spellings as JSON Schema: `nullable`, `$recursiveRef`."""
    if isinstance(node, list):
        return [_json_schema(v, name) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v, name) for k, v in node.items() if k != "$recursiveAnchor"}
    if "oneOf" in out:
        out["anyOf"] = out.pop("oneOf")
    if out.pop("$recursiveRef", None) is not None:
        out["$ref"] = f"#/components/schemas/{name}"
    if out.pop("nullable", False):
        out = _nullable(out)
    return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema = {**schema, "type": [kind, "null"]}
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def _allof_parts(schemas: dict[str, Any]) -> set[str]:
    """Names of the schemas that some `allOf` composes: they must stay open."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for part in node.get("allOf", []):
                ref = part.get("$ref", "") if isinstance(part, dict) else ""
                if ref:
                    found.add(ref.rsplit("/", 1)[1])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schemas)
    return found


def _close(node: Any, *, open_top: bool = False) -> Any:
    """Close every object schema that declares properties (or composes with allOf) and says
    nothing about others; parts of an allOf stay open."""
    if isinstance(node, list):
        return [_close(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "allOf":
            out[key] = [_close(part, open_top=True) for part in value]
        elif key in ("properties", "$defs", "patternProperties"):
            out[key] = {k: _close(v) for k, v in value.items()}
        else:
            out[key] = _close(value)
    declares = "properties" in out or "allOf" in out
    says = "additionalProperties" in out or "unevaluatedProperties" in out
    if declares and not says and not open_top:
        out["unevaluatedProperties"] = False
    return out
