"""An adapter encodes the history once and each request only what is new (history.WireMemo):
whatever happened to the history between two requests (growth, a compaction, an undo, an edit,
a refused exchange and its undo, a request without tools), the body it sends is byte for byte
the body a fresh adapter sends for the same request, over the same loopback server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest

from tests.support.providers.helpers import READ_FILE, Kit, collect, model_info, request
from tests.support.providers.mock_llm_server import MockLLMServer, Recorded, Reply
from tether.engine import compaction
from tether.engine.history import (
    AssistantMessage,
    ImagePart,
    Message,
    MessageSizes,
    Reasoning,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_chars,
)
from tether.engine.providers.anthropic_adapter import AnthropicMessages, _mark_messages
from tether.engine.providers.base import ToolSpec
from tether.engine.providers.common import HTTPProvider, refusal_mark, without_refused
from tether.engine.providers.openai_chat_adapter import OpenAIChat
from tether.engine.providers.openai_responses_adapter import OpenAIResponses

pytestmark = pytest.mark.anyio

PNG = (  # a 1x1 picture
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _turn(n: int, call: bool) -> list[Message]:
    out: list[Message] = [UserMessage([TextPart(f"prompt {n}")])]
    if call:
        think = [
            Reasoning(f"thinking {n}", f"rs_{n}", f"enc-{n}", origin="openai", model="m"),
            Reasoning(f"thought {n}", f"sig-{n}", origin="anthropic", model="gpt-5.5"),
        ]
        tool = ToolCall(f"call_{n}", "read_file", json.dumps({"path": f"f{n}.py"}))
        out.append(AssistantMessage(f"reading {n}", think, [tool]))
        out.append(ToolResultMessage(f"call_{n}", "read_file", f"contents {n}\n" * 40))
    out.append(AssistantMessage(f"answer {n}"))
    return out


def _steps() -> list[tuple[str, list[Message], bool]]:
    """(what happened, the history a request carries, whether it has tools)."""
    history: list[Message] = []
    steps: list[tuple[str, list[Message], bool]] = []
    for n in range(6):
        history += _turn(n, call=n % 2 == 0)
        steps.append((f"turn {n}", list(history), True))
    steps.append(("without tools", list(history), False))
    compacted = compaction.with_summary("what happened so far", history[7:])
    steps.append(("compacted", compacted, True))
    steps.append(("compacted, grown", [*compacted, *_turn(6, call=True)], True))
    undone = history[:9]
    steps.append(("undone", undone, True))
    steps.append(("undone, a new turn", [*undone, *_turn(7, call=False)], True))
    edited = list(history)
    result = edited[2]
    assert isinstance(result, ToolResultMessage)
    edited[2] = compaction.shortened(result, 20)  # an old result shortened to fit the window
    steps.append(("edited", edited, True))
    refused = AssistantMessage("no", opaque=[refusal_mark(None)])
    with_refusal = [*history, UserMessage([TextPart("bad")]), refused]
    steps.append(("refused", with_refusal, True))
    steps.append(("refused, then a turn", [*with_refusal, *_turn(8, call=True)], True))
    steps.append(("the refusal undone", [*with_refusal[:-1], AssistantMessage("ok")], True))
    # a turn cut off after its tool ran, an empty round, then a refused exchange: the next
    # prompt joins the tool's result in one user message where an API merges them
    cut = [*history, *_turn(10, call=True)[:3], AssistantMessage(), *with_refusal[-2:]]
    steps.append(("cut off, refused", cut, True))
    steps.append(("cut off, refused, a prompt", [*cut, UserMessage([TextPart("next")])], True))
    picture = ImagePart(PNG, "image/png")
    seen = ToolResultMessage("call_0", "view_image", "a picture", images=[picture])
    pictured = [*history[:2], seen, *history[3:]]
    steps.append(("a tool's picture", pictured, True))
    steps.append(("a tool's picture, then a turn", [*pictured, *_turn(9, call=True)], True))
    steps.append(("the picture undone", history[:2], True))
    return steps


@pytest.mark.parametrize("images", [False, True], ids=["text-only", "images"])
async def test_every_request_body_is_a_fresh_adapters(
    kit: Kit, server: MockLLMServer, client: httpx.AsyncClient, images: bool
) -> None:
    server.responder = lambda _r: Reply(chunks=kit.text(["ok"]))

    def adapter() -> HTTPProvider:  # a reasoning model: its reasoning items go back too
        info = model_info(images=images, reasons=True)
        return kit.make(server.url + kit.base, "sk-test", "gpt-5.5", client=client, info=info)

    kept = adapter()
    for what, messages, tools in _steps():
        req = request(messages, tools=None if tools else [])
        await collect(kept, req)
        await collect(adapter(), req)
        again, fresh = server.posts[-2:]
        assert again.body == fresh.body, what
        if isinstance(kept, OpenAIResponses):
            _same_items(kept, again, messages, tools)
        if isinstance(kept, AnthropicMessages):  # as built whole, then marked for the cache
            whole = kept._messages(req.messages, req.reasoning)
            _mark_messages(whole)
            assert again.json()["messages"] == msgspec.to_builtins(whole), what
        if isinstance(kept, OpenAIChat):  # as built whole, message by message
            built = msgspec.to_builtins(kept._messages(req))
            assert again.json()["messages"] == built, what


def _same_items(llm: OpenAIResponses, sent: Recorded, messages: list[Message], tools: bool) -> None:
    """The items in the body are the messages' items, built one by one as before the memo."""
    want: list[Any] = [
        msgspec.to_builtins(item)
        for m in without_refused(messages)
        for item in llm._items(m, tools)
    ]
    assert sent.json()["input"] == want


def test_sizes_follow_the_history_through_every_change() -> None:
    sizes = MessageSizes()
    for what, messages, _ in _steps():
        assert sizes.total(messages) == sum(message_chars(m) for m in messages), what
        assert sizes.total(messages[3:]) == sum(message_chars(m) for m in messages[3:]), what


def test_the_fixed_part_is_the_sum_of_each_tool_s_encoding() -> None:
    tools = [READ_FILE, ToolSpec("list_dir", "List a directory", {"type": "object"})]
    each = sum(len(msgspec.json.encode(t)) for t in tools)
    assert compaction.fixed_chars("system", tools) == len("system") + each
    assert compaction.fixed_chars("system", tools[:1]) == len("system") + each - len(
        msgspec.json.encode(tools[1])
    )
    assert compaction.fixed_chars("system", []) == len("system")
