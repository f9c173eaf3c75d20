"""What editors expect of an agent's cards and chunks, and slash commands that help instead of
failing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": name, "arguments": arguments}}


def _started(agent: AgentProcess, call_id: str) -> dict[str, Any]:
    return next(
        u
        for u in agent.updates()
        if u["sessionUpdate"] == "tool_call" and u["toolCallId"] == call_id
    )


async def _turn(home: Path, project: Path, path: Path) -> tuple[AgentProcess, str]:
    async with spawn_agent(home, "--script", str(path)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "go")
        assert resp["result"]["stopReason"] == "end_turn"
    return agent, sid


async def test_writing_identical_content_does_not_ask(
    home: Path, project: Path, tmp_path: Path
) -> None:
    same = (project / "README.md").read_text()
    call = _call("w1", "write_file", path="README.md", content=same, overwrite=True)
    agent, sid = await _turn(home, project, script(tmp_path / "s.json", [[call], [{"text": "ok"}]]))
    assert not [f for f in agent.frames if f.get("method") == "session/request_permission"]
    assert tool_results(home, sid) == ["README.md already has this content; nothing written"]


async def test_cards_have_human_titles_even_when_refused(
    home: Path, project: Path, tmp_path: Path
) -> None:
    todo = _call("t1", "todo_push", titles=["look around"])
    exists = _call("w1", "write_file", path="README.md", content="other")
    outside = _call("w2", "write_file", path="../escape.txt", content="x")
    rounds = [[todo, exists, outside], [{"text": "ok"}]]
    agent, sid = await _turn(home, project, script(tmp_path / "s.json", rounds))
    plan = _started(agent, "t1")
    assert (plan["title"], plan["kind"]) == ("Plan: look around", "think")
    refused = _started(agent, "w1")
    assert (refused["title"], refused["kind"]) == ("Write README.md", "edit")
    assert refused["locations"] == [{"path": str(project / "README.md")}]
    assert _started(agent, "w2")["title"] == "Write ../escape.txt"
    results = tool_results(home, sid)
    assert results[1].startswith("error [FILE_EXISTS]")
    assert results[2].startswith("error [OUTSIDE_ROOTS]")


async def test_no_message_starts_with_a_blank_chunk(
    home: Path, project: Path, tmp_path: Path
) -> None:
    rounds = [
        [{"thought": "\n"}, {"thought": "hmm"}, {"text": " "}, {"text": "\n\n"}, {"text": "Hi"}]
    ]
    agent, _ = await _turn(home, project, script(tmp_path / "s.json", rounds))
    chunks = [
        (u["sessionUpdate"], u["content"]["text"])
        for u in agent.updates()
        if u["sessionUpdate"] in ("agent_message_chunk", "agent_thought_chunk")
    ]
    assert chunks == [("agent_thought_chunk", "\nhmm"), ("agent_message_chunk", " \n\nHi")]


async def test_mode_and_model_without_an_argument_list_the_choices(
    home: Path, project: Path
) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        texts: dict[str, str] = {}
        for command in ("/mode", "/model"):
            before = len(agent.updates(sid))
            resp = await agent.prompt(sid, command)
            assert resp["result"] == {"stopReason": "end_turn"}
            texts[command] = "".join(
                u["content"]["text"]
                for u in agent.updates(sid)[before:]
                if u["sessionUpdate"] == "agent_message_chunk"
            )
    assert texts["/mode"].startswith("Mode is **ask**")
    assert "- `ask`:" in texts["/mode"] and "- `code`:" in texts["/mode"]
    assert texts["/model"].startswith("Model is **demo")
    assert "- `demo" in texts["/model"]
