"""The todo stack end to end: the model's todo_* calls over ACP, the plan a client sees, the stack
kept with the session across processes, the reminder at a turn's end through each channel, and
the retired todo_write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import script, spawn_agent
from tests.support.inprocess import agent_in_memory
from tests.support.stored import stored_messages, tool_results
from tether.engine.history import AssistantMessage, ToolResultMessage, UserMessage
from tether.engine.system_prompt import PERSONA
from tether.engine.turn import TurnConfig
from tether.tools import catalog

pytestmark = pytest.mark.anyio


def _call(name: str, cid: str, **args: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": args}}


def _plans(updates: list[dict[str, Any]]) -> list[list[tuple[str, str]]]:
    return [
        [(e["content"], e["status"]) for e in u["entries"]]
        for u in updates
        if u["sessionUpdate"] == "plan"
    ]


BREAKDOWN = [
    [_call("todo_push", "p1", titles=["T1", "T2"])],
    [_call("todo_push", "p2", titles=["T1.1", "T1.2"])],
    [_call("todo_update", "u1", number=1, status="done")],
    [_call("todo_update", "u2", number=2, status="cancelled")],
    [_call("todo_pop", "o1")],
    [_call("todo_update", "u3", number=1, status="in_progress", notes="parser first")],
    [{"text": "working on T1"}],
]


@pytest.mark.slow
async def test_a_depth_first_breakdown_shows_as_the_plan(home: Path, project: Path) -> None:
    rounds = [{"events": r} for r in BREAKDOWN]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "end_turn"
        assert client.permissions == []  # the stack is tether's record: nothing asks
        live = _plans(client.updates)
        replayed = _plans(await client.load(sid, project))
    assert live == [
        [("T1", "pending"), ("T2", "pending")],
        [("T1.1", "pending"), ("T1.2", "pending"), ("T1", "pending"), ("T2", "pending")],
        [("T1.1", "completed"), ("T1.2", "pending"), ("T1", "pending"), ("T2", "pending")],
        [
            ("T1.1", "completed"),
            ("T1.2 (cancelled)", "completed"),
            ("T1", "pending"),
            ("T2", "pending"),
        ],
        [("T1", "pending"), ("T2", "pending")],
        [("T1", "in_progress"), ("T2", "pending")],
    ]
    assert replayed == live
    results = tool_results(home, sid)
    assert results[1] == (
        "pushed a group of 2 task(s)\n"
        "Todo stack (LIFO of task groups, TOP first; depth 2):\n"
        "group 2 TOP:\n"
        "  1. [ ] T1.1\n"
        "  2. [ ] T1.2\n"
        "group 1:\n"
        "  3. [ ] T1\n"
        "  4. [ ] T2"
    )
    assert results[4].startswith("popped a group of 2 task(s)\n")
    assert results[5].startswith("task 1 is now in_progress: T1\n")
    assert "  1. [~] T1 — parser first\n  2. [ ] T2" in results[5]


@pytest.mark.slow
async def test_mistakes_are_explained_and_change_nothing(home: Path, project: Path) -> None:
    rounds = [
        {"events": [_call("todo_pop", "o1")]},
        {"events": [_call("todo_update", "u1", number=3, status="done")]},
        {"events": [_call("todo_push", "p1", titles=["  "])]},
        {"events": [{"text": "ok"}]},
    ]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "go")
    assert tool_results(home, sid) == [
        "error [TOOL_FAILED]: the todo stack is empty: nothing to pop",
        "error [INVALID_ARGS]: there is no task 3: the stack is empty (see todo_list)",
        "error [INVALID_ARGS]: give at least one non-empty title",
    ]
    assert _plans(client.updates) == []


def _two_turns(strategy: str, second: list[dict[str, Any]]) -> dict[str, Any]:
    """Turn 1 pushes a group and stops; turn 2 answers without a todo call, then `second`."""
    rounds = [
        [_call("todo_push", "p1", titles=["write the parser", "test it"])],
        [{"text": "planned"}],
        [{"text": "the weather is fine"}],
        second,
    ]
    return {"rounds": [{"events": r} for r in rounds], "strategy": strategy}


async def _run_two_turns(
    home: Path, project: Path, strategy: str, second: list[dict[str, Any]]
) -> tuple[Any, str]:
    doc = _two_turns(strategy, second)
    turn = TurnConfig(system=PERSONA, todo_nag=doc.pop("strategy"))
    async with agent_in_memory(home, doc, catalog(), turn) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "plan it") == "end_turn"
        assert await client.prompt(sid, "how is the weather?") == "end_turn"
    return client, sid


@pytest.mark.slow
async def test_a_turn_that_forgets_open_work_is_reminded_once(home: Path, project: Path) -> None:
    client, sid = await _run_two_turns(home, project, "developer", [{"text": "I'll go on."}])
    requests = client.models[0].requests
    assert len(requests) == 4  # the reminder made one more round, and only one
    last = requests[3].messages[-1]
    assert isinstance(last, UserMessage) and last.host
    text = last.parts[0].text  # type: ignore[union-attr]
    assert text.startswith(
        "[TODO OPEN WORK] You are ending the turn with 2 open task(s) on the todo stack "
        "(1 group(s)) and did not touch it this turn. Open tasks are unfinished work: "
        "write the parser; test it."
    )
    assert "  1. [ ] write the parser" in text
    # Stored for the model's later requests; never shown to the client as the user's words.
    stored = [m for m in stored_messages(home, sid) if m["type"] == "user"]
    assert stored[-1]["host"] is True
    chunks = [u for u in client.updates if u["sessionUpdate"] == "user_message_chunk"]
    assert "[TODO" not in str(chunks)


@pytest.mark.slow
async def test_a_finished_stack_left_standing_gets_the_hygiene_reminder(
    home: Path, project: Path
) -> None:
    rounds = [
        [_call("todo_push", "p1", titles=["only task"])],
        [_call("todo_update", "u1", number=1, status="done")],
        [{"text": "done"}],
        [{"text": "hello"}],
        [{"text": "cleaning up later"}],
    ]
    turn = TurnConfig(system=PERSONA, todo_nag="user")
    doc = {"rounds": [{"events": r} for r in rounds]}
    async with agent_in_memory(home, doc, catalog(), turn) as client:
        sid = await client.start(project)
        await client.prompt(sid, "do it")
        await client.prompt(sid, "hi")
    requests = client.models[0].requests
    assert len(requests) == 5
    last = requests[4].messages[-1]
    assert isinstance(last, UserMessage) and not last.host  # the `user` channel
    assert last.parts[0].text.startswith(  # type: ignore[union-attr]
        "[TODO HYGIENE] The todo stack still holds 1 group(s) whose every task is done or "
        "cancelled."
    )


@pytest.mark.slow
async def test_the_synthetic_tool_channel_lists_the_real_stack(home: Path, project: Path) -> None:
    client, _ = await _run_two_turns(home, project, "synthetic_tool", [{"text": "on it"}])
    requests = client.models[0].requests
    assert len(requests) == 4
    call, result = requests[3].messages[-2:]
    assert isinstance(call, AssistantMessage) and isinstance(result, ToolResultMessage)
    assert [c.name for c in call.tool_calls] == ["todo_list"]
    assert result.content == (
        "Todo stack (LIFO of task groups, TOP first; depth 1):\n"
        "group 1 TOP:\n"
        "  1. [ ] write the parser\n"
        "  2. [ ] test it"
    )
    cards = [u for u in client.updates if u["sessionUpdate"] == "tool_call"]
    assert cards[-1]["title"] == "Plan (todo reminder)"
    assert cards[-1]["toolCallId"] == result.call_id


@pytest.mark.slow
async def test_no_reminder_with_none_or_when_the_turn_touched_the_stack(
    home: Path, project: Path
) -> None:
    client, _ = await _run_two_turns(home, project, "none", [])
    assert len(client.models[0].requests) == 3
    rounds = [
        [_call("todo_push", "p1", titles=["a"])],
        [{"text": "planned"}],
        [_call("todo_list", "l1")],
        [{"text": "still on a"}],
    ]
    doc = {"rounds": [{"events": r} for r in rounds]}
    async with agent_in_memory(home, doc, catalog()) as client:
        sid = await client.start(project)
        await client.prompt(sid, "plan")
        assert await client.prompt(sid, "and?") == "end_turn"  # no fifth round wanted


@pytest.mark.slow
async def test_the_stack_outlives_the_process_and_todo_write_is_retired(
    home: Path, project: Path, tmp_path: Path
) -> None:
    first = script(
        tmp_path / "one.json",
        [[_call("todo_push", "p1", titles=["keep me"])], [{"text": "ok"}]],
    )
    async with spawn_agent(home, "--script", str(first)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "plan")
    old = {"todos": [{"content": "x"}]}
    second = script(
        tmp_path / "two.json",
        [[_call("todo_list", "l1"), _call("todo_write", "w1", **old)], [{"text": "ok"}]],
    )
    async with spawn_agent(home, "--script", str(second)) as agent:
        await agent.initialize()
        params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
        await agent.request("session/load", params)
        await agent.prompt(sid, "what is left?")
    listing, retired = tool_results(home, sid)[1:]
    assert "  1. [ ] keep me" in listing
    assert retired == (
        "error [UNKNOWN_TOOL]: todo_write was replaced by the todo stack: todo_push adds a "
        "group of tasks, todo_update changes one by its number, todo_pop removes the finished "
        "TOP group, todo_list shows the stack, todo_clear empties it"
    )


@pytest.mark.slow
async def test_the_user_changes_the_stack_with_todos(home: Path, project: Path) -> None:
    rounds = [{"events": [_call("todo_list", "l1")]}, {"events": [{"text": "seen"}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        for text in ("/todos push ship it; tell the team", "/todos push check CI", "/todos pop"):
            assert await client.prompt(sid, text) == "end_turn"
        await client.prompt(sid, "what is planned?")
        said = "".join(
            u["content"]["text"]
            for u in client.updates
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        assert "Pushed a group.\n\n```\nTodo stack (LIFO" in said
        assert "Popped the TOP group." in said
        assert await client.prompt(sid, "/todos bogus") == "end_turn"
        assert await client.prompt(sid, "/todos clear") == "end_turn"
    assert _plans(client.updates) == [
        [("ship it", "pending"), ("tell the team", "pending")],
        [("check CI", "pending"), ("ship it", "pending"), ("tell the team", "pending")],
        [("ship it", "pending"), ("tell the team", "pending")],
        [],
    ]
    assert tool_results(home, sid)[0].endswith("  1. [ ] ship it\n  2. [ ] tell the team")


@pytest.mark.slow
async def test_the_config_file_picks_the_reminder_channel(
    home: Path, project: Path, tmp_path: Path
) -> None:
    (home / "config.toml").write_text('[agent]\ntodo_nag_strategy = "synthetic_tool"\n')
    rounds = [
        [_call("todo_push", "p1", titles=["a"])],
        [{"text": "planned"}],
        [{"text": "bye"}],
        [{"text": "right, a is open"}],
    ]
    path = script(tmp_path / "s.json", rounds)
    env = {"TETHER_CONFIG": str(home / "config.toml")}
    async with spawn_agent(home, "--script", str(path), env=env) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "plan")
        assert (await agent.prompt(sid, "done?"))["result"] == {"stopReason": "end_turn"}
        titles = [u.get("title") for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call"]
    assert titles[-1] == "Plan (todo reminder)"
    assert tool_results(home, sid)[-1].endswith("  1. [ ] a")
