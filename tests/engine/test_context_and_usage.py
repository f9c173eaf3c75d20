"""Context reduction (shrink old tool results, then summarise), reasoning effort, usage cost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.inprocess import agent_in_memory
from tests.support.stored import stored_messages
from tether.engine.compaction import SUMMARY_HEADER, SUMMARY_PROMPT
from tether.engine.history import TextPart, ToolResultMessage, UserMessage
from tether.engine.registry import ToolArgs, ToolDef, tool
from tether.engine.seam import Capabilities
from tether.tools import catalog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class DumpArgs(ToolArgs):
    n: int


def _dump_tool() -> ToolDef:
    @tool(kind="read", read_only=True)
    async def dump(ctx: Capabilities, args: DumpArgs) -> str:
        """Produce a long text.

        Args:
            n: Which dump.
        """
        return f"dump {args.n}: " + "x" * 1500

    return dump


def _dumps(count: int) -> dict[str, Any]:
    return {
        "events": [
            {"tool_call": {"id": f"d{i}", "name": "dump", "arguments": {"n": i}}}
            for i in range(count)
        ]
    }


async def test_old_tool_results_shrink_then_the_past_is_summarised(
    home: Path, project: Path
) -> None:
    """A turn that overflows shortens its own older results (its newest kept); the next turn
    summarises the earlier conversation (the whole of it reaches the summariser) and goes out
    with the summary in place of what it covers. The store keeps every original."""
    script = {
        "model": {"context_window": 3000, "max_output_tokens": 500},
        "rounds": [
            _dumps(6),
            {"events": [{"text": "six dumps read"}]},
            {"events": [{"text": "SUMMARY: dumps 0-5 were read."}]},
            {"events": [{"text": "continuing"}]},
        ],
    }
    async with agent_in_memory(home, script, [_dump_tool()]) as client:
        sid = await client.start(project, {"session": {"notices": {}}})
        assert await client.prompt(sid, "read six dumps") == "end_turn"
        assert await client.prompt(sid, "and now?") == "end_turn"
        [model] = client.models
    second_round = model.requests[1]
    results = [m for m in second_round.messages if isinstance(m, ToolResultMessage)]
    # oldest first, only as many as the request needs (the newest stays whole)
    assert [len(r.content) < 500 for r in results] == [True] * 3 + [False] * 3
    summaries = [r for r in model.requests if r.system == SUMMARY_PROMPT]
    assert len(summaries) == 1 and summaries[0].tools == []
    sent = _text(summaries[0].messages[0])
    for n in range(6):  # every replaced result reached the summarisation request
        assert f"dump {n}: xxx" in sent
    after = model.requests[-1]
    assert _text(after.messages[0]) == SUMMARY_HEADER + "SUMMARY: dumps 0-5 were read."
    assert len(after.messages) == 2  # the summary, then the new prompt
    notices = [u["title"] for u in client.updates if u["sessionUpdate"] == "notice"]
    assert notices == ["Shortened 3 old tool results to fit the context window"]
    thoughts = [
        u["content"]["text"] for u in client.updates if u["sessionUpdate"] == "agent_thought_chunk"
    ]
    assert any("Context compacted here: the 9 messages before this point" in t for t in thoughts)
    stored = stored_messages(home, sid)
    assert all(len(m["content"]) > 1500 for m in stored if m["type"] == "tool")  # originals kept
    assert len(stored) == 11


def _text(message: object) -> str:
    assert isinstance(message, UserMessage) and isinstance(message.parts[0], TextPart)
    return message.parts[0].text


async def test_reasoning_effort_is_a_thought_level_option(home: Path, project: Path) -> None:
    script = {
        "model": {"reasoning_levels": ["low", "medium", "high"], "default_reasoning": "medium"},
        "rounds": [{"events": [{"text": "a"}]}, {"events": [{"text": "b"}]}],
    }
    async with agent_in_memory(home, script, catalog()) as client:
        await client.peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await client.peer.request("session/new", {"cwd": str(project), "mcpServers": []})
        sid = new["sessionId"]
        [reasoning] = [o for o in new["configOptions"] if o["id"] == "reasoning"]
        assert reasoning["category"] == "thought_level" and reasoning["currentValue"] == "medium"
        await client.prompt(sid, "one")
        result = await client.peer.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "reasoning", "value": "high"},
        )
        assert [o["currentValue"] for o in result["configOptions"]][-1] == "high"
        await client.prompt(sid, "two")
        with pytest.raises(Exception, match="unknown reasoning level"):
            await client.peer.request(
                "session/set_config_option",
                {"sessionId": sid, "configId": "reasoning", "value": "max"},
            )
        [model] = client.models
    assert [r.reasoning for r in model.requests] == ["medium", "high"]


async def test_usage_carries_the_session_cost_when_prices_are_known(
    home: Path, project: Path
) -> None:
    usage = {"usage": {"input": 1000, "output": 500}}
    script = {
        "model": {"input_price": 2.0, "output_price": 8.0, "context_window": 100000},
        "rounds": [
            {"events": [{"tool_call": {"id": "l", "name": "list_dir", "arguments": {}}}, usage]},
            {"events": [{"text": "done"}, usage]},
        ],
    }
    async with agent_in_memory(home, script, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "go")
    usage_updates = [u for u in client.updates if u["sessionUpdate"] == "usage_update"]
    assert [u["cost"] for u in usage_updates] == [
        {"amount": pytest.approx(0.006), "currency": "USD"},
        {"amount": pytest.approx(0.012), "currency": "USD"},
    ]
    assert all(u["used"] == 1500 and u["size"] == 100000 for u in usage_updates)


async def test_images_reach_an_image_capable_model(home: Path, project: Path) -> None:
    from tether.engine.history import ImagePart

    script = {"model": {"images": True}, "rounds": [{"events": [{"text": "a cat"}]}]}
    async with agent_in_memory(home, script, catalog()) as client:
        sid = await client.start(project)
        image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": "what is it?"}, image]}
        assert (await client.peer.request("session/prompt", params))["stopReason"] == "end_turn"
        [model] = client.models
    [message] = model.requests[0].messages
    assert isinstance(message, UserMessage)
    assert message.parts[1] == ImagePart("iVBORw0KGgo=", "image/png")
