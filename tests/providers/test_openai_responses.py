"""OpenAI Responses API over the mock server."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.providers import wire
from tests.support.providers.helpers import FAST_RETRY, collect, model_info, of_type, request
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tether.engine.history import (
    AssistantMessage,
    ImagePart,
    Reasoning,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tether.engine.providers.base import (
    Finish,
    ReasoningBlock,
    RetryNotice,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    Usage,
)
from tether.engine.providers.openai_responses_adapter import OpenAIResponses
from tether.errors import ProviderError

pytestmark = pytest.mark.anyio

PATH = "/v1/responses"


def make(
    server: MockLLMServer, client: httpx.AsyncClient, model: str = "test-model", **kw: Any
) -> OpenAIResponses:
    kw.setdefault("info", model_info())
    return OpenAIResponses(
        server.url + "/v1", "sk-test", model, client=client, retry=FAST_RETRY, **kw
    )


def history(reasoning: list[Reasoning]) -> list[Any]:
    return [
        UserMessage([TextPart("read a.txt and b.txt")]),
        AssistantMessage(
            text="Reading both.",
            reasoning=reasoning,
            tool_calls=[
                ToolCall("call_a", "read_file", '{"path":"a.txt"}'),
                ToolCall("call_b", "read_file", '{"path":"b.txt"}'),
            ],
        ),
        ToolResultMessage("call_a", "read_file", "A"),
        ToolResultMessage("call_b", "read_file", "B"),
        AssistantMessage(text="Done."),
        UserMessage([TextPart("thanks")]),
    ]


async def test_reasoning_summary_and_text_stream(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    chunks = (
        wire.ResponsesScript()
        .created()
        .reasoning(0, ["Plan", "ning"], encrypted="gAAAA-secret")
        .text_deltas(1, ["Hel", "lo"])
        .text_done(1, ["Hel", "lo"])
        .completed(done=True)
    )
    server.script(PATH, Reply(chunks=chunks))
    llm = make(server, client, "gpt-5.5", info=model_info(reasoning=("low", "high")))
    events = await collect(llm, request(reasoning="high"))
    assert events == [
        ThoughtDelta("Plan"),
        ThoughtDelta("ning"),
        ReasoningBlock(
            Reasoning("Planning", "rs_0", "gAAAA-secret", origin="openai", model="gpt-5.5")
        ),
        TextDelta("Hel"),
        TextDelta("lo"),
        Usage(input_tokens=200, output_tokens=40, cached_tokens=64, reasoning_tokens=16),
        Finish("stop"),
    ]
    body = server.requests[0].json()
    assert body["model"] == "gpt-5.5"
    assert body["stream"] is True
    assert body["instructions"] == "You are terse."
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a text file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
            "strict": False,
        }
    ]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["max_output_tokens"] == 4096


async def test_function_call_arguments_assemble(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    pieces = wire.split_json({"path": "src/main.py"}, 5)
    chunks = (
        wire.ResponsesScript()
        .created()
        .call(0, "call_1", "read_file", pieces)
        .call(1, "call_2", "read_file", ['{"path"', ': "b"}'])
        .completed()
    )
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert of_type(events, ToolCallDelta) == [
        ToolCallDelta("call_1", "read_file", '{"path": "src/main.py"}'),
        ToolCallDelta("call_2", "read_file", '{"path": "b"}'),
    ]
    assert events[-1] == Finish("tool_calls")


async def test_two_rounds_keep_calls_contiguous_and_send_reasoning_back(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.responses_text(["ok"])))
    kept = [
        Reasoning("Plan", "rs_9", "gAAAA-secret", origin="openai"),
        Reasoning("from another provider", "sig", "blob", origin="anthropic"),
    ]
    reasoner = model_info(reasoning=("low", "medium", "high"))
    await collect(make(server, client, "gpt-5.5", info=reasoner), request(history(kept)))
    items = server.requests[0].json()["input"]
    assert items[1:] == [
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Plan"}],
            "id": "rs_9",
            "encrypted_content": "gAAAA-secret",
        },
        {"type": "message", "role": "assistant", "content": "Reading both."},
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "read_file",
            "arguments": '{"path":"a.txt"}',
        },
        {
            "type": "function_call",
            "call_id": "call_b",
            "name": "read_file",
            "arguments": '{"path":"b.txt"}',
        },
        {"type": "function_call_output", "call_id": "call_a", "output": "A"},
        {"type": "function_call_output", "call_id": "call_b", "output": "B"},
        {"type": "message", "role": "assistant", "content": "Done."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    ]


async def test_deepseek_sends_reasoning_text_for_every_round(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    # DeepSeek streams reasoning_text and ends at response.completed without [DONE].
    script = wire.ResponsesScript().created()
    script.event(
        "response.output_item.added", output_index=0, item={"id": "r", "type": "reasoning"}
    )
    script.event("response.reasoning_text.delta", output_index=0, delta="deep ")
    script.event("response.reasoning_text.delta", output_index=0, delta="thought")
    done = {
        "id": "r",
        "type": "reasoning",
        "content": [{"type": "reasoning_text", "text": "deep thought"}],
    }
    script.event("response.output_item.done", output_index=0, item=done)
    chunks = script.text_deltas(1, ["ok"]).text_done(1, ["ok"]).completed(done=False)
    server.script(PATH, Reply(chunks=chunks))
    server.dialect = "deepseek"
    llm = make(server, client, deepseek=True)
    events = await collect(
        llm, request(history([Reasoning("I will read both.")]), reasoning="high")
    )
    assert of_type(events, ThoughtDelta) == [ThoughtDelta("deep "), ThoughtDelta("thought")]
    assert of_type(events, ReasoningBlock)[0].reasoning.text == "deep thought"
    assert events[-1] == Finish("stop")
    body = server.requests[0].json()
    reasoning_items = [i for i in body["input"] if i["type"] == "reasoning"]
    assert reasoning_items == [
        {
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "I will read both."}],
        },
        {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "\n"}]},
    ]
    assert "store" not in body and "include" not in body
    assert body["reasoning"] == {"effort": "high"}


async def test_incomplete_at_max_output_tokens_is_length(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    chunks = (
        wire.ResponsesScript()
        .created()
        .text_deltas(0, ["cut"])
        .completed(status="incomplete", incomplete="max_output_tokens")
    )
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert events[-1] == Finish("length")


async def test_response_failed_raises(server: MockLLMServer, client: httpx.AsyncClient) -> None:
    script = wire.ResponsesScript().created().text_deltas(0, ["x"])
    error = {"code": "invalid_prompt", "message": "prompt flagged"}
    script.event("response.failed", response={"id": "resp_1", "status": "failed", "error": error})
    server.script(PATH, Reply(chunks=script.chunks))
    with pytest.raises(ProviderError, match="response failed: invalid_prompt: prompt flagged"):
        await collect(make(server, client), request())


async def test_error_event_before_output_is_retried_when_transient(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    script = wire.ResponsesScript().created()
    script.event("error", code="server_error", message="try again")
    server.script(PATH, Reply(chunks=script.chunks), Reply(chunks=wire.responses_text(["ok"])))
    events = await collect(make(server, client), request())
    assert "server_error: try again" in of_type(events, RetryNotice)[0].reason
    assert events[-1] == Finish("stop")


async def test_text_only_in_done_item_is_still_shown(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    chunks = wire.ResponsesScript().created().text_done(0, ["whole answer"]).completed()
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert of_type(events, TextDelta) == [TextDelta("whole answer")]


async def test_image_parts_become_input_images(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.responses_text(["a cat"])))
    req = request([UserMessage([TextPart("what?"), ImagePart("AAAA", "image/png")])])
    await collect(make(server, client, info=model_info(images=True)), req)
    assert server.requests[0].json()["input"][0]["content"] == [
        {"type": "input_text", "text": "what?"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
    ]


async def test_a_model_that_does_not_reason_gets_no_reasoning_items(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    # The earlier rounds ran on gpt-5.5 (same provider); the session switched to gpt-4.1.
    # OpenAI refuses reasoning items and the encrypted-content include for such a model.
    server.script(PATH, Reply(chunks=wire.responses_text(["ok"])))
    kept = [Reasoning("Plan", "rs_9", "gAAAA-secret", origin="openai", model="gpt-5.5")]
    await collect(make(server, client, "gpt-4.1"), request(history(kept)))
    body = server.requests[0].json()
    assert [i for i in body["input"] if i["type"] == "reasoning"] == []
    assert "include" not in body and "reasoning" not in body
    assert server.rule_errors == []
