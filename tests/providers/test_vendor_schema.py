"""The vendored schemas refuse what the APIs refuse (so the mock server's check means something),
and the mock server answers such a body as the API would: 400 `invalid_request_error`."""

from __future__ import annotations

import httpx
import pytest

from tether.engine.providers.base import ProviderError
from tether.engine.providers.openai_chat_adapter import OpenAIChat

from . import wire
from .helpers import FAST_RETRY, collect, model_info, request
from .mock_llm_server import MockLLMServer, Reply
from .vendor_schema import API, problems

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
