"""The tool pipeline's limits: timeouts, per-file write locks, spill, round and output bounds."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.inprocess import agent_in_memory
from tests.stored import tool_results
from tether.engine.registry import CallPlan, ToolArgs, ToolDef, tool
from tether.engine.seam import Capabilities
from tether.engine.turn import TurnConfig
from tether.tools import catalog

pytestmark = pytest.mark.anyio


def _call(name: str, args: dict[str, Any], cid: str) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": args}}


class NapArgs(ToolArgs):
    seconds: float


def _slow_tool() -> ToolDef:
    @tool(kind="other", read_only=True, timeout=0.2)
    async def nap(ctx: Capabilities, args: NapArgs) -> str:
        """Sleep.

        Args:
            seconds: How long.
        """
        await anyio.sleep(args.seconds)
        return "rested"

    return nap


async def test_a_late_tool_becomes_tool_timeout(home: Path, project: Path) -> None:
    script = {
        "rounds": [
            {"events": [_call("nap", {"seconds": 5}, "n1"), _call("nap", {"seconds": 0}, "n2")]},
            {"events": [{"text": "ok"}]},
        ]
    }
    async with agent_in_memory(home, script, [_slow_tool()]) as client:
        sid = await client.start(project)
        start = anyio.current_time()
        assert await client.prompt(sid, "go") == "end_turn"
        assert anyio.current_time() - start < 3
    results = tool_results(home, sid)
    assert results[0] == "error [TOOL_TIMEOUT]: nap did not finish within 0.2 s"
    assert results[1] == "rested"


class AppendArgs(ToolArgs):
    path: str
    text: str
    delay: float


def _ordered_tools(log: list[str]) -> list[ToolDef]:
    @tool(kind="edit", timeout=5)
    async def append(ctx: Capabilities, args: AppendArgs) -> str:
        """Append text to a log after a delay.

        Args:
            path: Which file.
            text: What to append.
            delay: Seconds to wait first.
        """
        await anyio.sleep(args.delay)
        log.append(f"{args.path}:{args.text}")
        return "ok"

    @append.planned_by
    async def _plan(ctx: Capabilities, args: AppendArgs, mode: str) -> CallPlan:
        return CallPlan(title=f"append {args.path}", writes=[args.path])

    return [append]


async def test_calls_on_the_same_file_run_in_call_order(home: Path, project: Path) -> None:
    log: list[str] = []
    calls = [
        _call("append", {"path": "a", "text": "1", "delay": 0.3}, "c1"),
        _call("append", {"path": "b", "text": "1", "delay": 0.0}, "c2"),
        _call("append", {"path": "a", "text": "2", "delay": 0.0}, "c3"),
    ]
    script = {"rounds": [{"events": calls}, {"events": [{"text": "ok"}]}]}
    async with agent_in_memory(home, script, _ordered_tools(log)) as client:
        sid = await client.start(project)
        await client.prompt(sid, "go")
    # b ran in parallel (first); a:2 waited for a:1 although it was ready sooner.
    assert log == ["b:1", "a:1", "a:2"]


class DumpArgs(ToolArgs):
    lines: int


def _big_tool() -> ToolDef:
    @tool(kind="read", read_only=True)
    async def dump(ctx: Capabilities, args: DumpArgs) -> str:
        """Produce a long text.

        Args:
            lines: How many lines.
        """
        return "\n".join(f"line {i:06d} of the dump" for i in range(args.lines))

    return dump


async def test_oversized_results_spill_to_a_private_file(home: Path, project: Path) -> None:
    script = {
        "rounds": [{"events": [_call("dump", {"lines": 5000}, "d1")]}, {"events": [{"text": "ok"}]}]
    }
    async with agent_in_memory(home, script, [_big_tool(), *catalog()]) as client:
        sid = await client.start(project)
        await client.prompt(sid, "go")
    [result] = tool_results(home, sid)
    assert "result truncated" in result and len(result) < 6000
    spilled = Path(result.split("saved at ")[1].split(" — ")[0])
    assert spilled.read_text().startswith("line 000000 of the dump")
    assert spilled.read_text().endswith("line 004999 of the dump")
    assert stat.S_IMODE(os.stat(spilled.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(spilled).st_mode) == 0o600
    assert spilled.is_relative_to(home / "spill" / sid)


async def test_max_rounds_ends_the_turn(home: Path, project: Path) -> None:
    rounds = [{"events": [_call("list_dir", {}, f"l{i}")]} for i in range(5)]
    async with agent_in_memory(
        home, {"rounds": rounds}, catalog(), TurnConfig(system="s", max_rounds=3)
    ) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "max_turn_requests"
    assert len(tool_results(home, sid)) == 3


async def test_output_limit_is_continued_then_reported(home: Path, project: Path) -> None:
    cut = {"events": [{"text": "part"}, {"finish": "length"}]}
    script = {"rounds": [cut, cut, {"events": [{"text": " end"}]}]}
    async with agent_in_memory(home, script, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "end_turn"
        text = "".join(
            u["content"]["text"]
            for u in client.updates
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        assert text == "partpart end"
    script = {"rounds": [cut, cut, cut, {"events": [{"text": "never"}]}]}
    async with agent_in_memory(home, script, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "max_tokens"


async def test_refusal(home: Path, project: Path) -> None:
    script = {"rounds": [{"events": [{"text": "I can't help with that."}, {"finish": "refusal"}]}]}
    async with agent_in_memory(home, script, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "refusal"


async def test_usage_is_one_sample_per_round(home: Path, project: Path) -> None:
    rounds = [
        {"events": [_call("list_dir", {}, "l1"), {"usage": {"input": 100, "output": 20}}]},
        {"events": [{"text": "ok"}]},
    ]
    script = {"rounds": rounds, "model": {"context_window": 5000}}
    async with agent_in_memory(home, script, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "go")
    usage = [u for u in client.updates if u["sessionUpdate"] == "usage_update"]
    assert len(usage) == 2
    assert usage[0] == {
        "sessionUpdate": "usage_update",
        "used": 120,
        "size": 5000,
        "_meta": {"tether": {"inputTokens": 100, "cachedInputTokens": 0, "outputTokens": 20}},
    }
    assert usage[1]["used"] > 0  # no API usage in round 2: a chars/4 estimate


async def test_todo_write_sends_the_plan(home: Path, project: Path) -> None:
    todos = [
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress", "priority": "high"},
        {"content": "run the tests"},
    ]
    script = {
        "rounds": [
            {"events": [_call("todo_write", {"todos": todos}, "t1")]},
            {"events": [{"text": "ok"}]},
        ]
    }
    async with agent_in_memory(home, script, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "go")
        assert client.permissions == []
    [plan] = [u for u in client.updates if u["sessionUpdate"] == "plan"]
    assert plan["entries"] == [
        {"content": "read the code", "priority": "medium", "status": "completed"},
        {"content": "fix the bug", "priority": "high", "status": "in_progress"},
        {"content": "run the tests", "priority": "medium", "status": "pending"},
    ]
    assert tool_results(home, sid)[0].startswith("plan updated: 1/3 done\n[x] read the code")
