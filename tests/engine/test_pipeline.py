"""The tool pipeline's limits: timeouts, per-file write locks, spill, round and output bounds."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.inprocess import agent_in_memory
from tests.support.stored import tool_results
from tether.engine.registry import CallPlan, ToolArgs, ToolDef, tool
from tether.engine.seam import Capabilities
from tether.engine.turn import TurnConfig
from tether.tools import catalog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


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
    assert "[Truncated (32768 chars max;" in result and len(result) < 6000
    spilled = Path(result.split("saved at ")[1].split(" — ")[0])
    assert spilled.read_text().startswith("line 000000 of the dump")
    assert spilled.read_text().endswith("line 004999 of the dump")
    assert stat.S_IMODE(os.stat(spilled.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(spilled).st_mode) == 0o600
    assert spilled.is_relative_to(home / "spill" / sid)


async def test_calls_of_one_round_that_depend_on_each_other_run_in_order(
    home: Path, project: Path
) -> None:
    """copy a -> c, then move c -> d, then read d, in one round: each planned against what the
    earlier ones left (the move's source and the read's file do not exist when the round is
    planned)."""
    (project / "a.txt").write_text("alpha\n")
    calls = [
        _call("copy_path", {"src": "a.txt", "dst": "c.txt"}, "c1"),
        _call("move_path", {"src": "c.txt", "dst": "d.txt"}, "m1"),
        _call("read_file", {"path": "d.txt"}, "r1"),
    ]
    script = {"rounds": [{"events": calls}, {"events": [{"text": "done"}]}]}
    async with agent_in_memory(home, script, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "end_turn"
    assert (project / "d.txt").read_text() == "alpha\n"
    assert not (project / "c.txt").exists() and (project / "a.txt").exists()
    results = tool_results(home, sid)
    assert not any("FILE_NOT_FOUND" in r for r in results), results
    assert "alpha" in results[2]


async def test_at_the_round_limit_the_user_decides(home: Path, project: Path) -> None:
    """Round 4 of a turn limited to 3 happens only after the user allowed it: rejected, the
    turn ends `max_turn_requests` (and /retry could go on); allowed, 3 more rounds; allowed
    always, no limit for the rest of the turn. One permission request each time, on its own
    card, its options by kind."""
    rounds = [{"events": [_call("list_dir", {}, f"l{i}")]} for i in range(10)]
    rounds.append({"events": [{"text": "done"}]})
    config = TurnConfig(system="s", max_rounds=3)
    async with agent_in_memory(home, {"rounds": rounds}, catalog(), config) as client:
        sid = await client.start(project)
        client.choice = "reject"
        assert await client.prompt(sid, "go") == "max_turn_requests"
        assert len(tool_results(home, sid)) == 3 and len(client.permissions) == 1
        asked = client.permissions[0]
        assert asked["toolCall"]["title"] == "Continue this turn past 3 rounds?"
        kinds = [o["kind"] for o in asked["options"]]
        assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
        client.choice = "allow"
        assert await client.prompt(sid, "again") == "end_turn"
        # 7 calls and the answer left: asked after 3 rounds and after 6 (3 more each time)
        assert len(client.permissions) == 3 and len(tool_results(home, sid)) == 10
    async with agent_in_memory(home, {"rounds": rounds}, catalog(), config) as client:
        sid = await client.start(project)
        client.choice = "allow_always"
        assert await client.prompt(sid, "go") == "end_turn"
        assert len(client.permissions) == 1 and len(tool_results(home, sid)) == 10


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


async def test_a_round_cut_at_the_output_limit_runs_none_of_its_calls(
    home: Path, project: Path
) -> None:
    """Its text stays and the turn goes on from it; its calls (the last may be cut mid
    arguments) are not run: the model issues them again in the continuation."""
    cut = {
        "events": [
            {"text": "writing"},
            _call("write_file", {"path": "t1.txt", "content": "x"}, "w1"),
            {"finish": "length"},
        ]
    }
    script = {"rounds": [cut, {"events": [{"text": " and done"}]}]}
    async with agent_in_memory(home, script, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "end_turn"
        [model] = client.models
    assert not (project / "t1.txt").exists() and client.permissions == []
    second = model.requests[1].messages
    assert "writing" in str(second[-2]) and not second[-2].tool_calls  # type: ignore[union-attr]
    assert "cut off by the output limit" in str(second[-1])


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
