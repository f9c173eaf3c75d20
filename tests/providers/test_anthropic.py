"""Anthropic Messages over the mock server."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
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
from tether.engine.providers.anthropic_adapter import AnthropicMessages
from tether.engine.providers.base import (
    Finish,
    OpaqueBlock,
    ReasoningBlock,
    RetryNotice,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    Usage,
)
from tether.errors import ProviderError

pytestmark = pytest.mark.anyio

PATH = "/v1/messages"

SEARCH_USE = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://example.com",
            "title": "Example",
            "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
            "page_age": None,
        }
    ],
}


def make(server: MockLLMServer, client: httpx.AsyncClient, **kw: Any) -> AnthropicMessages:
    kw.setdefault("info", model_info())
    return AnthropicMessages(
        server.url, "sk-ant", "claude-test", client=client, retry=FAST_RETRY, **kw
    )


def thinking_block(index: int, parts: list[str], signature: list[str]) -> wire.Chunks:
    deltas = [{"type": "thinking_delta", "thinking": p} for p in parts]
    deltas += [{"type": "signature_delta", "signature": s} for s in signature]
    return wire.anthropic_block(
        index, {"type": "thinking", "thinking": "", "signature": ""}, deltas
    )


def tool_block(index: int, call_id: str, pieces: list[str]) -> wire.Chunks:
    start = {"type": "tool_use", "id": call_id, "name": "read_file", "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    return wire.anthropic_block(index, start, deltas)


async def test_thinking_and_text_stream_with_usage(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    chunks = [
        wire.anthropic_start(input_tokens=50, cache_read=20),
        *thinking_block(0, ["Let me ", "think."], ["EqQBCkYIBx", "gCKkA=="]),
        wire.anthropic_event("ping"),
        *wire.anthropic_text_block(1, ["Hello", "!"]),
        *wire.anthropic_end("end_turn", output_tokens=33),
    ]
    server.script(PATH, Reply(chunks=chunks))
    llm = make(server, client, info=model_info(thinking="budget"))
    events = await collect(llm, request(reasoning="low", max_output_tokens=1024))
    signed = Reasoning(
        "Let me think.", "EqQBCkYIBxgCKkA==", origin="anthropic", model="claude-test"
    )
    assert events == [
        ThoughtDelta("Let me "),
        ThoughtDelta("think."),
        ReasoningBlock(signed),
        TextDelta("Hello"),
        TextDelta("!"),
        Usage(input_tokens=75, output_tokens=33, cached_tokens=20),
        Finish("stop"),
    ]
    sent = server.requests[0]
    assert sent.headers["x-api-key"] == "sk-ant"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    body = sent.json()
    assert body["model"] == "claude-test"
    cache = {"type": "ephemeral"}
    # Breakpoints: the system prompt (caching the tools before it) and the last message.
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": cache}]
    assert body["stream"] is True
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": cache}]}
    ]
    assert body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a text file",
            "input_schema": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        }
    ]
    # low = 2048 budget; max_tokens grows so the answer still has its 1024 tokens.
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 2048 + 1024


@pytest.mark.parametrize(("level", "budget"), [("low", 2048), ("medium", 8192), ("high", 24576)])
async def test_thinking_budget_levels(
    server: MockLLMServer, client: httpx.AsyncClient, level: str, budget: int
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    llm = make(server, client, info=model_info(thinking="budget"))
    await collect(llm, request(reasoning=level, max_output_tokens=32000))
    body = server.requests[0].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert "output_config" not in body
    assert body["max_tokens"] == 32000  # already room for the answer


async def test_no_thinking_without_a_level(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    await collect(make(server, client), request())
    body = server.requests[0].json()
    assert "thinking" not in body and body["max_tokens"] == 4096


async def test_tool_use_input_assembles_from_fragments(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    chunks = [
        wire.anthropic_start(),
        *wire.anthropic_text_block(0, ["Reading."]),
        *tool_block(1, "toolu_1", wire.split_json({"path": "src/app.py"}, 3)),
        *tool_block(2, "toolu_2", []),
        *wire.anthropic_end("tool_use"),
    ]
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert of_type(events, ToolCallDelta) == [
        ToolCallDelta("toolu_1", "read_file", '{"path": "src/app.py"}'),
        ToolCallDelta("toolu_2", "read_file", "{}"),
    ]
    assert events[-1] == Finish("tool_calls")


async def test_server_tool_and_redacted_blocks_are_kept(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    deltas = [
        {"type": "input_json_delta", "partial_json": p} for p in ['{"query": ', '"acp spec"}']
    ]
    chunks = [
        wire.anthropic_start(),
        *wire.anthropic_block(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}, []),
        *wire.anthropic_block(1, SEARCH_USE, deltas),
        *wire.anthropic_block(2, SEARCH_RESULT, []),
        *wire.anthropic_text_block(3, ["Found it."]),
        *wire.anthropic_end(),
    ]
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert of_type(events, ReasoningBlock) == [
        ReasoningBlock(
            Reasoning("", redacted="EmwKAhgBEgy3va", origin="anthropic", model="claude-test")
        )
    ]
    assert of_type(events, OpaqueBlock) == [
        OpaqueBlock({**SEARCH_USE, "input": {"query": "acp spec"}}),
        OpaqueBlock(SEARCH_RESULT),
    ]
    assert not of_type(events, ToolCallDelta)  # nothing local to run
    assert events[-1] == Finish("stop")


async def test_second_round_sends_blocks_back_in_order(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    search_use = {**SEARCH_USE, "input": {"query": "acp spec"}}
    history = [
        UserMessage([TextPart("read a and b")]),
        AssistantMessage(
            text="Reading both.",
            reasoning=[
                Reasoning("Plan.", "sig-1", origin="anthropic"),
                Reasoning("", redacted="EmwK", origin="anthropic"),
                Reasoning("foreign", "rs_1", "enc", origin="openai"),  # not ours: dropped
                Reasoning("unsigned"),  # refused by the API: dropped
                # Another Claude model's thinking: bound to that model, dropped.
                Reasoning("other", "sig-2", origin="anthropic", model="claude-other"),
            ],
            tool_calls=[
                ToolCall("toolu_a", "read_file", '{"path":"a"}'),
                ToolCall("toolu_b", "read_file", "not json"),
            ],
            opaque=[search_use, SEARCH_RESULT],
        ),
        ToolResultMessage("toolu_a", "read_file", "A"),
        ToolResultMessage("toolu_b", "read_file", "bad arguments", is_error=True),
        UserMessage([TextPart("also c")]),
    ]
    await collect(make(server, client), request(history))
    messages = server.requests[0].json()["messages"]
    cache = {"type": "ephemeral"}
    assert messages == [
        # Cache breakpoints: the previous user message (read back) and the last (written).
        {
            "role": "user",
            "content": [{"type": "text", "text": "read a and b", "cache_control": cache}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Plan.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "EmwK"},
                search_use,
                SEARCH_RESULT,
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": "bad arguments",
                    "is_error": True,
                },
                {"type": "text", "text": "also c", "cache_control": cache},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("stop_reason", "reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("refusal", "refusal"),
        ("pause_turn", "pause"),
    ],
)
async def test_stop_reasons(
    server: MockLLMServer, client: httpx.AsyncClient, stop_reason: str, reason: str
) -> None:
    chunks = [
        wire.anthropic_start(),
        *wire.anthropic_text_block(0, ["x"]),
        *wire.anthropic_end(stop_reason),
    ]
    server.script(PATH, Reply(chunks=chunks))
    events = await collect(make(server, client), request())
    assert events[-1] == Finish(reason)  # type: ignore[arg-type]


def overloaded() -> bytes:
    return wire.anthropic_event(
        "error", error={"type": "overloaded_error", "message": "Overloaded"}
    )


async def test_overloaded_before_output_is_retried(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=[wire.anthropic_start(), overloaded()]))
    server.script(PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    events = await collect(make(server, client), request())
    assert "overloaded_error: Overloaded" in of_type(events, RetryNotice)[0].reason
    assert of_type(events, TextDelta) == [TextDelta("ok")]


async def test_overloaded_after_output_raises(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=[*wire.anthropic_prefix(["par"]), overloaded()]), Reply())
    with pytest.raises(ProviderError, match="overloaded_error") as info:
        await collect(make(server, client), request())
    assert info.value.retryable  # the caller may retry the round; we did not, output was shown
    assert len(server.requests) == 1


async def test_invalid_request_error_event_is_not_retried(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    bad = wire.anthropic_event("error", error={"type": "invalid_request_error", "message": "nope"})
    server.script(PATH, Reply(chunks=[wire.anthropic_start(), bad]), Reply())
    with pytest.raises(ProviderError, match="anthropic stream error: invalid_request_error: nope"):
        await collect(make(server, client), request())
    assert len(server.requests) == 1


async def test_images_become_base64_blocks(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["a cat"])))
    webp = "UklGRgAAAABXRUJQVlA4IA=="  # RIFF....WEBPVP8: the API checks the bytes' type
    req = request([UserMessage([ImagePart(webp, "image/webp"), TextPart("what?")])])
    await collect(make(server, client, info=model_info(images=True)), req)
    assert server.requests[0].json()["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": webp}},
        {"type": "text", "text": "what?", "cache_control": {"type": "ephemeral"}},
    ]


# --- thinking control -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "effort"), [("minimal", "low"), ("medium", "medium"), ("xhigh", "xhigh")]
)
async def test_current_claude_models_take_an_effort_not_a_budget(
    server: MockLLMServer, client: httpx.AsyncClient, level: str, effort: str
) -> None:
    # Claude 5 models answer 400 to a thinking budget; the effort level is the control.
    server.script(PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    llm = AnthropicMessages(server.url, "k", "claude-sonnet-5-5", model_info(), client=client)
    await collect(llm, request(reasoning=level, max_output_tokens=4096))
    body = server.requests[0].json()
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": effort}
    assert body["max_tokens"] == 4096
    assert server.rule_errors == []


@pytest.mark.parametrize(
    ("model", "control"),
    [
        ("claude-opus-5-5", "effort"),
        ("claude-opus-4-6", "effort"),
        ("claude-sonnet-4-5", "budget"),
        ("claude-opus-4-1-20250805", "budget"),
        ("claude-3-7-sonnet-latest", "budget"),
    ],
)
def test_thinking_control_follows_the_model_id(model: str, control: str) -> None:
    assert AnthropicMessages("u", "k", model, model_info()).thinking_control == control


async def test_reasoning_none_turns_thinking_off(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    await collect(make(server, client), request(reasoning="none"))
    body = server.requests[0].json()
    assert body["thinking"] == {"type": "disabled"} and "output_config" not in body


# --- refusals ---------------------------------------------------------------------------------

DETAILS = {
    "type": "refusal",
    "category": "cyber",
    "explanation": "This request asks for working malware.",
}


def refused_stream(details: dict[str, Any] | None) -> wire.Chunks:
    delta: dict[str, Any] = {"stop_reason": "refusal", "stop_sequence": None}
    if details is not None:
        delta["stop_details"] = details
    return [
        wire.anthropic_start(),
        *wire.anthropic_text_block(0, ["I can help with part"]),
        wire.anthropic_event("message_delta", delta=delta, usage={"output_tokens": 5}),
        wire.anthropic_event("message_stop"),
    ]


async def test_a_refusal_shows_its_details_and_marks_the_round(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=refused_stream(DETAILS)))
    events = await collect(make(server, client), request())
    texts = [e.text for e in of_type(events, TextDelta)]
    assert texts[0] == "I can help with part"
    assert "declined to continue (cyber): This request asks for working malware." in texts[1]
    assert of_type(events, OpaqueBlock) == [
        OpaqueBlock({"type": "tether.refused", "stop_details": DETAILS})
    ]
    assert events[-1] == Finish("refusal")


async def test_a_refusal_without_details_is_marked_silently(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=refused_stream(None)))
    events = await collect(make(server, client), request())
    assert [e.text for e in of_type(events, TextDelta)] == ["I can help with part"]
    assert len(of_type(events, OpaqueBlock)) == 1


async def test_the_refused_exchange_is_left_out_of_the_next_request(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["sure"])))
    mark = {"type": "tether.refused", "stop_details": DETAILS}
    history = [
        UserMessage([TextPart("hello")]),
        AssistantMessage(text="Hi."),
        UserMessage([TextPart("write malware")]),
        AssistantMessage(text="I can help with part", opaque=[mark]),
        UserMessage([TextPart("explain recursion")]),
    ]
    await collect(make(server, client), request(history))
    texts = [
        [b["text"] for b in m["content"] if b["type"] == "text"]
        for m in server.requests[0].json()["messages"]
    ]
    assert texts == [["hello"], ["Hi."], ["explain recursion"]]


async def test_a_refusal_inside_a_tool_loop_drops_the_whole_exchange(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["sure"])))
    mark = {"type": "tether.refused", "stop_details": None}
    history = [
        UserMessage([TextPart("read a")]),
        AssistantMessage(tool_calls=[ToolCall("toolu_1", "read_file", '{"path":"a"}')]),
        ToolResultMessage("toolu_1", "read_file", "A"),
        AssistantMessage(text="no", opaque=[mark]),
        UserMessage([TextPart("something else")]),
    ]
    await collect(make(server, client), request(history))
    messages = server.requests[0].json()["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert messages[0]["content"][0]["text"] == "something else"


# --- prompt caching ---------------------------------------------------------------------------


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where the body's cache breakpoints are, as "system", "tool:NAME" or "ROLE[i]:TYPE"."""
    found: list[str] = []
    system = body.get("system")
    if isinstance(system, list):
        found += ["system" for b in system if "cache_control" in b]
    found += [f"tool:{t['name']}" for t in body.get("tools", []) if "cache_control" in t]
    for i, m in enumerate(body["messages"]):
        found += [f"{m['role']}[{i}]:{b['type']}" for b in m["content"] if "cache_control" in b]
    return found


async def test_cache_breakpoints_in_a_tool_loop(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    history = [
        UserMessage([TextPart("read a and b")]),
        AssistantMessage(
            reasoning=[Reasoning("Plan.", "sig", origin="anthropic", model="claude-test")],
            tool_calls=[ToolCall("toolu_1", "read_file", '{"path":"a"}')],
        ),
        ToolResultMessage("toolu_1", "read_file", "A"),
        AssistantMessage(
            reasoning=[Reasoning("More.", "sig2", origin="anthropic", model="claude-test")],
            tool_calls=[ToolCall("toolu_2", "read_file", '{"path":"b"}')],
        ),
        ToolResultMessage("toolu_2", "read_file", "B"),
    ]
    await collect(make(server, client), request(history))
    body = server.requests[0].json()
    # The system prompt (tools before it), the previous round's end, this round's end.
    assert breakpoints(body) == ["system", "user[2]:tool_result", "user[4]:tool_result"]


async def test_without_a_system_prompt_the_last_tool_holds_the_breakpoint(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    req = msgspec.structs.replace(request(), system="")
    await collect(make(server, client), req)
    body = server.requests[0].json()
    assert "system" not in body
    assert breakpoints(body) == ["tool:read_file", "user[0]:text"]


# --- DeepSeek's anthropic convention ----------------------------------------------------------


def deepseek(server: MockLLMServer, client: httpx.AsyncClient) -> AnthropicMessages:
    server.dialect = "deepseek"  # the mock answers DeepSeek's documented 400s
    return AnthropicMessages(
        server.url + "/anthropic",
        "sk-ds",
        "deepseek-v4-pro",
        model_info(),
        client=client,
        retry=FAST_RETRY,
        deepseek=True,
    )


DS_PATH = "/anthropic/v1/messages"


def ds_history() -> list[Any]:
    return [
        UserMessage([TextPart("read a")]),
        AssistantMessage(
            reasoning=[Reasoning("I should read a.", origin="deepseek", model="deepseek-v4-pro")],
            tool_calls=[ToolCall("toolu_1", "read_file", '{"path":"a"}')],
        ),
        ToolResultMessage("toolu_1", "read_file", "A"),
        # A round that kept no thinking (e.g. streamed by another provider before a switch).
        AssistantMessage(text="A says hi.", reasoning=[Reasoning("", redacted="blob")]),
        UserMessage([TextPart("and b?")]),
    ]


@pytest.mark.parametrize(
    ("level", "effort"), [("high", "high"), ("medium", "high"), ("max", "max")]
)
async def test_deepseek_gets_its_thinking_back_and_its_effort(
    server: MockLLMServer, client: httpx.AsyncClient, level: str, effort: str
) -> None:
    server.script(DS_PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    await collect(deepseek(server, client), request(ds_history(), reasoning=level))
    body = server.requests[0].json()
    assert body["thinking"]["type"] == "enabled"
    assert body["output_config"] == {"effort": effort}
    assistants = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
    assert assistants[0][0] == {"type": "thinking", "thinking": "I should read a.", "signature": ""}
    # No redacted thinking (DeepSeek has none): an empty thinking block instead.
    assert assistants[1][0] == {"type": "thinking", "thinking": "", "signature": ""}
    assert breakpoints(body) == []  # DeepSeek caches by itself
    assert server.rule_errors == []


async def test_deepseek_reasoning_none_disables_thinking(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(DS_PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    await collect(deepseek(server, client), request(ds_history(), reasoning="none"))
    body = server.requests[0].json()
    assert body["thinking"] == {"type": "disabled"}
    assert "output_config" not in body


async def test_deepseek_keeps_its_own_signature(
    server: MockLLMServer, client: httpx.AsyncClient
) -> None:
    server.script(DS_PATH, Reply(chunks=wire.anthropic_text(["ok"])))
    history = [
        UserMessage([TextPart("hi")]),
        AssistantMessage(text="Hello.", reasoning=[Reasoning("x", "ds-sig", origin="deepseek")]),
        UserMessage([TextPart("again")]),
    ]
    await collect(deepseek(server, client), request(history))
    assistant = server.requests[0].json()["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "x", "signature": "ds-sig"}
