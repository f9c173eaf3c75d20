"""Hosted provider tools (the API's own web search): offered in the request as the vendor's
published schema says, a local tool of the same name left out (one name, one tool), nothing run
here when the model uses it, and its blocks kept and sent back with the round. The stand-in
refuses any body its vendor's schema refuses."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.providers import wire
from tests.support.providers.helpers import (
    FAST_RETRY,
    READ_FILE,
    collect,
    model_info,
    of_type,
    request,
)
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tether.engine.history import AssistantMessage, TextPart, UserMessage
from tether.engine.providers.anthropic_adapter import AnthropicMessages
from tether.engine.providers.base import OpaqueBlock, TextDelta, ToolCallDelta, ToolSpec
from tether.engine.providers.openai_responses_adapter import OpenAIResponses

pytestmark = pytest.mark.anyio

LOCAL_SEARCH = ToolSpec(
    "web_search",
    "Search the web",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
HOSTED = model_info(hosted_tools=("web_search",))
SEARCH_ACTION = {"type": "search", "query": "acp spec"}


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [t.get("name") or t["type"] for t in body["tools"]]


async def test_anthropic_offers_its_web_search_and_keeps_what_it_returns(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [
            {
                "type": "web_search_result",
                "url": "https://agentclientprotocol.com",
                "title": "ACP",
                "encrypted_content": "Eqgf",
                "page_age": None,
            }
        ],
    }
    deltas = [{"type": "input_json_delta", "partial_json": '{"query": "acp spec"}'}]
    server.script(
        "/v1/messages",
        Reply(
            chunks=[
                wire.anthropic_start(),
                *wire.anthropic_block(0, use, deltas),
                *wire.anthropic_block(1, result, []),
                *wire.anthropic_text_block(2, ["ACP is a protocol."]),
                *wire.anthropic_end(),
            ]
        ),
        Reply(chunks=wire.anthropic_text(["ok"])),
    )
    llm = AnthropicMessages(
        server.url, "k", "claude-opus-5-5", HOSTED, client=client, retry=FAST_RETRY
    )
    events = await collect(llm, request(tools=[LOCAL_SEARCH, READ_FILE]))
    body = server.posts[0].json()
    assert body["tools"][0] == {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    assert _tool_names(body) == ["web_search", "read_file"]  # our own web_search left out
    assert of_type(events, ToolCallDelta) == []  # nothing for tether to run
    kept = [e.block for e in of_type(events, OpaqueBlock)]
    assert kept == [{**use, "input": {"query": "acp spec"}}, result]
    # The next round sends both blocks back, before the text, as they came.
    history = [
        UserMessage([TextPart("what is acp?")]),
        AssistantMessage("ACP is a protocol.", opaque=kept),
        UserMessage([TextPart("thanks")]),
    ]
    await collect(llm, request(history, tools=[LOCAL_SEARCH]))
    sent = server.posts[1].json()["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["server_tool_use", "web_search_tool_result", "text"]
    assert server.schema_errors == []


async def test_responses_offers_its_web_search_and_sends_the_call_back(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    call = {"id": "ws_1", "type": "web_search_call", "status": "completed", "action": SEARCH_ACTION}
    script = wire.ResponsesScript().created()
    script.event(
        "response.output_item.added", output_index=0, item={**call, "status": "in_progress"}
    )
    script.event("response.output_item.done", output_index=0, item=call)
    script.text_deltas(1, ["ACP is a protocol."]).text_done(1, ["ACP is a protocol."])
    server.script("/v1/responses", Reply(chunks=script.completed()))
    server.script("/v1/responses", Reply(chunks=wire.responses_text(["ok"])))
    llm = OpenAIResponses(
        server.url + "/v1", "k", "gpt-5.5", HOSTED, client=client, retry=FAST_RETRY
    )
    events = await collect(llm, request(tools=[LOCAL_SEARCH, READ_FILE]))
    body = server.posts[0].json()
    assert body["tools"][0] == {"type": "web_search"}
    assert _tool_names(body) == ["web_search", "read_file"]
    assert "".join(e.text for e in of_type(events, TextDelta)) == "ACP is a protocol."
    assert of_type(events, ToolCallDelta) == []
    kept = [e.block for e in of_type(events, OpaqueBlock)]
    assert kept == [call]
    history = [
        UserMessage([TextPart("what is acp?")]),
        AssistantMessage("ACP is a protocol.", opaque=kept),
        UserMessage([TextPart("thanks")]),
    ]
    await collect(llm, request(history))
    items = server.posts[1].json()["input"]
    assert [i["type"] for i in items] == ["message", "web_search_call", "message", "message"]
    assert items[1] == call
    assert server.schema_errors == []


async def test_a_responses_search_call_never_reaches_anthropic(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    # A session that switched from a Responses model to Claude: the call item is not Messages
    # content (the API would refuse the whole request).
    server.script("/v1/messages", Reply(chunks=wire.anthropic_text(["ok"])))
    call = {"id": "ws_1", "type": "web_search_call", "status": "completed", "action": SEARCH_ACTION}
    history = [
        UserMessage([TextPart("q")]),
        AssistantMessage("a", opaque=[call]),
        UserMessage([TextPart("more")]),
    ]
    llm = AnthropicMessages(server.url, "k", "claude-opus-5-5", model_info(), client=client)
    await collect(llm, request(history))
    sent = server.posts[0].json()["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["text"]
