"""OpenAI-compatible chat completions over the mock server."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.providers import wire
from tests.support.providers.helpers import FAST_RETRY, collect, model_info, of_type, request
from tests.support.providers.mock_llm_server import DONE, MockLLMServer, Reply
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
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    Usage,
)
from tether.engine.providers.openai_chat_adapter import OpenAIChat
from tether.errors import ProviderError

pytestmark = pytest.mark.anyio

PATH = "/v1/chat/completions"


def make(server: MockLLMServer, client: httpx.AsyncClient, **kw: Any) -> OpenAIChat:
    kw.setdefault("info", model_info())
    return OpenAIChat(
        server.url + "/v1", "sk-test", "test-model", client=client, retry=FAST_RETRY, **kw
    )


def tool_fragment(
    index: int, *, id: str | None = None, name: str | None = None, args: str = ""
) -> bytes:
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id:
        call |= {"id": id, "type": "function"}
        call["function"]["name"] = name
    return wire.chat_chunk({"tool_calls": [call]})


TWO_ROUNDS = [
    UserMessage([TextPart("read a.txt and b.txt")]),
    AssistantMessage(
        text="",
        reasoning=[Reasoning("I should read both.")],
        tool_calls=[
            ToolCall("call_a", "read_file", '{"path":"a.txt"}'),
            ToolCall("call_b", "read_file", '{"path":"b.txt"}'),
        ],
    ),
    ToolResultMessage("call_a", "read_file", "A"),
    ToolResultMessage("call_b", "read_file", "B", is_error=True),
    AssistantMessage(text="Both read."),
    UserMessage([TextPart("thanks")]),
]


async def test_text_and_reasoning_stream_with_usage(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.chat_text(["Hi", " there"], reasoning=["Think", "ing"])))
    events = await collect(make(server, client), request())
    assert events == [
        ThoughtDelta("Think"),
        ThoughtDelta("ing"),
        TextDelta("Hi"),
        TextDelta(" there"),
        ReasoningBlock(Reasoning("Thinking")),
        Usage(input_tokens=120, output_tokens=30, cached_tokens=100, reasoning_tokens=12),
        Finish("stop"),
    ]
    sent = server.requests[0]
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = sent.json()
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 4096
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a text file",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            },
        }
    ]
    assert "reasoning_effort" not in body and "thinking" not in body


async def test_tool_calls_split_in_fragments_merge_by_index(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    args_a = wire.split_json({"path": "src/a.py"}, 4)
    args_b = wire.split_json({"path": "b.md"}, 3)
    chunks: wire.Chunks = [wire.chat_chunk({"role": "assistant", "content": None})]
    chunks.append(tool_fragment(0, id="call_a", name="read_file"))
    chunks.append(tool_fragment(1, id="call_b", name="read_file", args=args_b[0]))
    # The two calls' fragments interleave: only the index ties a fragment to its call.
    for i in range(max(len(args_a), len(args_b))):
        if i < len(args_a):
            chunks.append(tool_fragment(0, args=args_a[i]))
        if 0 < i < len(args_b):
            chunks.append(tool_fragment(1, args=args_b[i]))
    chunks += wire.chat_end("tool_calls")
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert of_type(events, ToolCallDelta) == [
        ToolCallDelta("call_a", "read_file", '{"path": "src/a.py"}'),
        ToolCallDelta("call_b", "read_file", '{"path": "b.md"}'),
    ]
    assert events[-1] == Finish("tool_calls")


async def test_calls_without_index_and_reused_index(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    no_index = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a"'}}
    chunks: wire.Chunks = [
        wire.chat_chunk({"tool_calls": [no_index]}),
        wire.chat_chunk({"tool_calls": [{"function": {"arguments": ": 1}"}}]}),
        # A server that numbers every call 0: the new id starts a new call.
        tool_fragment(0, id="c2", name="g", args="{}"),
        *wire.chat_end("stop"),  # and says "stop" although it called tools
    ]
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert of_type(events, ToolCallDelta) == [
        ToolCallDelta("c1", "f", '{"a": 1}'),
        ToolCallDelta("c2", "g", "{}"),
    ]
    assert events[-1] == Finish("tool_calls")


async def test_two_round_history_is_sent_in_chat_shape(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.chat_text(["ok"])))
    await collect(make(server, client), request(TWO_ROUNDS))
    messages = server.requests[0].json()["messages"]
    assert messages[1:] == [
        {"role": "user", "content": "read a.txt and b.txt"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "type": "function",
                    "id": "call_a",
                    "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'},
                },
                {
                    "type": "function",
                    "id": "call_b",
                    "function": {"name": "read_file", "arguments": '{"path":"b.txt"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "A"},
        {"role": "tool", "tool_call_id": "call_b", "content": "B"},
        {"role": "assistant", "content": "Both read."},
        {"role": "user", "content": "thanks"},
    ]


async def test_deepseek_round_trips_reasoning_content(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.chat_text(["ok"])))
    server.dialect = "deepseek"
    llm = make(server, client, deepseek=True)
    await collect(llm, request(TWO_ROUNDS, reasoning="high"))
    body = server.requests[0].json()
    assistants = [m for m in body["messages"] if m["role"] == "assistant"]
    assert assistants[0]["reasoning_content"] == "I should read both."
    assert assistants[1]["reasoning_content"] == ""  # required even when the round kept none
    assert body["thinking"] == {"type": "enabled"}
    assert body["reasoning_effort"] == "high"
    assert llm.name == "deepseek"


async def test_deepseek_reasoning_none_disables_thinking(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.chat_text(["ok"])))
    server.dialect = "deepseek"
    await collect(make(server, client, deepseek=True), request(reasoning="none"))
    body = server.requests[0].json()
    assert body["thinking"] == {"type": "disabled"}
    assert "reasoning_effort" not in body


async def test_plain_server_gets_no_reasoning_content(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.chat_text(["ok"])))
    await collect(make(server, client), request(TWO_ROUNDS, reasoning="low"))
    body = server.requests[0].json()
    assert all("reasoning_content" not in m for m in body["messages"])
    assert body["reasoning_effort"] == "low"


@pytest.mark.parametrize(
    ("wire_reason", "reason"),
    [
        ("stop", "stop"),
        ("tool_calls", "tool_calls"),
        ("length", "length"),
        ("content_filter", "refusal"),
    ],
)
async def test_finish_reasons(
    server: MockLLMServer, client: httpx.AsyncClient, wire_reason: str, reason: str
) -> None:
    server.script(PATH, Reply(chunks=wire.chat_prefix(["x"]) + wire.chat_end(wire_reason)))
    events = await collect(make(server, client), request())
    assert events[-1] == Finish(reason)  # type: ignore[arg-type]


async def test_deepseek_usage_and_missing_done(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "prompt_cache_hit_tokens": 8}
    chunks = wire.chat_prefix(["x"]) + wire.chat_end(usage=usage)
    chunks.remove(DONE)  # finish_reason arrived: a stream without [DONE] is still complete
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert of_type(events, Usage) == [Usage(input_tokens=10, output_tokens=5, cached_tokens=8)]
    assert events[-1] == Finish("stop")


async def test_vllm_style_reasoning_field(server: MockLLMServer, client: httpx.AsyncClient) -> None:
    chunks = [
        wire.chat_chunk({"reasoning": "hmm"}),
        *wire.chat_prefix(["x"]),
        *wire.chat_end(usage=None),
    ]
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert events[0] == ThoughtDelta("hmm")
    assert not of_type(events, Usage)  # none reported: the engine estimates


async def test_error_inside_the_stream(server: MockLLMServer, client: httpx.AsyncClient) -> None:
    error = wire.sse({"error": {"message": "context too long", "type": "invalid_request_error"}})
    server.script(PATH, Reply(chunks=[*wire.chat_prefix(["x"]), error]))
    with pytest.raises(ProviderError, match="openai: stream error: context too long"):
        await collect(make(server, client), request())


async def test_image_parts_become_data_urls(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.chat_text(["a cat"])))
    image = ImagePart(data="AAAA", mime_type="image/jpeg")
    req = request([UserMessage([TextPart("what?"), image])])
    await collect(make(server, client, info=model_info(images=True)), req)
    assert server.requests[0].json()["messages"][1]["content"] == [
        {"type": "text", "text": "what?"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
    ]


@pytest.mark.parametrize("model", ["gpt-5.5", "o4-mini", "openai/gpt-5"])
async def test_reasoning_models_get_max_completion_tokens(
    server: MockLLMServer, client: httpx.AsyncClient, model: str
) -> None:
    # OpenAI refuses max_tokens for reasoning models (the mock server answers that 400 too).
    server.script(PATH, Reply(chunks=wire.chat_text(["ok"])))
    llm = OpenAIChat(server.url + "/v1", "k", model, model_info(), client=client)
    await collect(llm, request(max_output_tokens=1000))
    body = server.requests[0].json()
    assert body["max_completion_tokens"] == 1000 and "max_tokens" not in body


def test_openai_itself_gets_max_completion_tokens_and_other_servers_max_tokens() -> None:
    def param(url: str, model: str = "gpt-4.1", **info: Any) -> str:
        return OpenAIChat(url, "k", model, model_info(**info)).token_limit_param()

    assert param("https://api.openai.com/v1") == "max_completion_tokens"
    assert param("http://localhost:11434/v1") == "max_tokens"
    assert param("http://localhost:11434/v1", "qwen3", reasons=True) == "max_completion_tokens"
    # Configured explicitly: wins over the URL and the id.
    assert param("https://api.openai.com/v1", max_tokens_param="max_tokens") == "max_tokens"
    assert param("http://vllm:8000/v1", "gpt-5", max_tokens_param="max_tokens") == "max_tokens"
    deepseek = OpenAIChat(
        "https://api.deepseek.com", "k", "deepseek-v4-pro", model_info(), deepseek=True
    )
    assert deepseek.token_limit_param() == "max_tokens"  # what DeepSeek documents
