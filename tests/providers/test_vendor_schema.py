"""The vendored schemas refuse what the APIs refuse (so the mock server's check means something),
and the mock server answers such a body as the API would: 400 `invalid_request_error`."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.providers import wire
from tests.support.providers.helpers import FAST_RETRY, collect, model_info, request
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.vendor_rules import refusal
from tests.support.providers.vendor_schema import API, problems
from tether.engine.providers.openai_chat_adapter import OpenAIChat
from tether.errors import ProviderError

CHAT = {
    "model": "gpt-5.5",
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
    "stream_options": {"include_usage": True},
    "max_completion_tokens": 100,
}
RESPONSES = {
    "model": "gpt-5.5",
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ],
    "stream": True,
    "max_output_tokens": 100,
}
MESSAGES = {
    "model": "claude-opus-5-5",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    "stream": True,
}


def test_valid_bodies_pass() -> None:
    assert problems("chat", CHAT) == []
    assert problems("responses", RESPONSES) == []
    assert problems("anthropic", MESSAGES) == []


@pytest.mark.parametrize(
    ("api", "body", "expected"),
    [
        ("chat", {**CHAT, "max_tokenz": 5}, "'max_tokenz' was unexpected"),
        ("chat", {**CHAT, "reasoning_effort": "extreme"}, "reasoning_effort"),
        ("chat", {**CHAT, "thinking": {"type": "enabled"}}, "'thinking' was unexpected"),
        ("chat", {k: v for k, v in CHAT.items() if k != "messages"}, "'messages' is a required"),
        (
            "responses",
            {**RESPONSES, "input": [{"type": "reasoning", "summary": []}]},  # no id
            "input",
        ),
        ("anthropic", {**MESSAGES, "thinking": {"type": "enabled"}}, "thinking"),
        ("anthropic", {**MESSAGES, "output_config": {"effort": "minimal"}}, "output_config"),
        ("anthropic", {**MESSAGES, "system": [{"type": "text"}]}, "system"),
    ],
)
def test_invalid_bodies_are_refused(api: API, body: dict[str, object], expected: str) -> None:
    found = problems(api, body)
    assert found and expected in "\n".join(found)


def test_deepseek_dialect_takes_its_documented_fields() -> None:
    body = {**CHAT, "thinking": {"type": "enabled"}}
    body["messages"] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok", "reasoning_content": "thought"},
        {"role": "user", "content": "more"},
    ]
    assert problems("chat", body, "deepseek") == []
    assert problems("chat", body, "openai") != []


@pytest.mark.anyio
async def test_the_server_answers_a_refused_body_with_a_400() -> None:
    # A request the adapter would never send: a reasoning model forced onto max_tokens.
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["never"])))
        info = model_info(max_tokens_param="max_tokens")
        async with httpx.AsyncClient() as client:
            llm = OpenAIChat(
                server.url + "/v1", "k", "gpt-5.5", info, client=client, retry=FAST_RETRY
            )
            with pytest.raises(
                ProviderError, match="HTTP 400: Unsupported parameter: 'max_tokens'"
            ):
                await collect(llm, request())
        assert server.rule_errors and server.schema_errors == []


def _with_tool(api: API, schema: dict[str, Any], strict: bool | None = False) -> dict[str, Any]:
    """A valid request carrying one tool of this schema, as each API spells a tool."""
    if api == "chat":
        function: dict[str, Any] = {"name": "t", "parameters": schema}
        if strict is not None:
            function["strict"] = strict
        return {**CHAT, "tools": [{"type": "function", "function": function}]}
    if api == "responses":
        tool = {"type": "function", "name": "t", "parameters": schema, "strict": strict}
        return {**RESPONSES, "tools": [tool]}
    return {**MESSAGES, "tools": [{"name": "t", "input_schema": schema}]}


OBJ = {"type": "object", "properties": {}}
STRING_OR_LIST = {"type": ["string", "array"], "description": "One path or several."}
TUPLE = {"type": "array", "items": [{"type": "integer"}, {"type": "integer"}]}
REFUSED_TOOLS: list[tuple[list[API], dict[str, Any], str]] = [
    (
        ["chat", "responses"],
        {**OBJ, "properties": {"paths": STRING_OR_LIST}},
        "In context=('properties', 'paths', 'type', '1'), array schema missing items.",
    ),
    (
        ["chat", "responses"],
        {**OBJ, "properties": {"m": {"type": "object", "additionalProperties": {"type": "array"}}}},
        "In context=('properties', 'm', 'additionalProperties'), array schema missing items.",
    ),
    (
        ["chat", "responses"],
        {**OBJ, "properties": {"a": {"anyOf": [{"type": "array"}, {"type": "null"}]}}},
        "In context=('properties', 'a', 'anyOf', '0'), array schema missing items.",
    ),
    (
        ["chat", "responses"],
        {**OBJ, "properties": {"p": {"type": "array", "prefixItems": [{"type": "array"}]}}},
        "In context=('properties', 'p'), array schema missing items.",
    ),
    (
        ["chat", "responses"],
        {**OBJ, "$defs": {"D": {"type": ["array", "null"]}}},
        "In context=('$defs', 'D', 'type', '0'), array schema missing items.",
    ),
    (
        ["chat", "responses"],
        {**OBJ, "not": {"required": ["a"]}},
        "schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not'",
    ),
    (["chat", "responses"], {"type": "object"}, "object schema missing properties"),
    (["chat", "responses"], {**OBJ, "properties": []}, "[] is not of type 'object'"),
    (["anthropic"], {"properties": {}}, "tools.0.custom.input_schema.type: Field required"),
    (
        ["anthropic"],
        {**OBJ, "properties": {"w": TUPLE}},
        "tools.0.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft "
        "2020-12",
    ),
    (
        ["anthropic"],
        {**OBJ, "properties": {"f": {"anyOf": [{**OBJ, "properties": {"a b": {}}}]}}},
        "Property keys should match pattern",
    ),
]


@pytest.mark.parametrize(
    ("api", "schema", "expected"),
    [(api, s, e) for apis, s, e in REFUSED_TOOLS for api in apis],
)
def test_tool_schemas_the_apis_refuse_are_refused(
    api: API, schema: dict[str, Any], expected: str
) -> None:
    body = _with_tool(api, schema)
    assert problems(api, body) == []  # the request schemas type a tool's schema as any object
    found = refusal(api, body, "openai")
    assert found is not None and expected in found, found


ACCEPTED_TOOLS: list[tuple[list[API], dict[str, Any]]] = [
    (["chat", "responses", "anthropic"], {**OBJ, "properties": {"paths": {**STRING_OR_LIST, "items": {}}}}),
    (["chat", "responses", "anthropic"], {**OBJ, "properties": {"o": {"type": "object"}}}),
    (["chat", "responses", "anthropic"], {**OBJ, "properties": {"n": {"type": ["string", "null"]}}}),
    (
        ["chat", "responses", "anthropic"],
        {**OBJ, "properties": {"w": {"type": "array", "prefixItems": [{"type": "integer"}], "items": {}}}},
    ),
    (["anthropic"], {"type": "object"}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("api", "schema"), [(api, s) for apis, s in ACCEPTED_TOOLS for api in apis]
)
def test_tool_schemas_the_apis_take_pass(api: API, schema: dict[str, Any]) -> None:
    body = _with_tool(api, schema)
    assert problems(api, body) == [] and refusal(api, body, "openai") is None


@pytest.mark.parametrize(
    ("api", "strict"), [("chat", True), ("responses", True), ("responses", None)]
)
def test_strict_tools_must_close_every_object_and_require_every_property(
    api: API, strict: bool | None
) -> None:
    """Responses makes a tool strict unless it says `strict: false` (tether says it)."""
    loose = {**OBJ, "properties": {"a": {"type": "string"}}, "required": []}
    closed = {**loose, "additionalProperties": False}
    found = refusal(api, _with_tool(api, loose, strict), "openai")
    assert found is not None and "'additionalProperties' is required" in found
    found = refusal(api, _with_tool(api, closed, strict), "openai")
    assert found is not None and "Missing 'a'" in found
    assert refusal(api, _with_tool(api, {**closed, "required": ["a"]}, strict), "openai") is None
    assert refusal(api, _with_tool(api, loose, False), "openai") is None
