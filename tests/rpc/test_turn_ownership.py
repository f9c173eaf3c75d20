"""A session belongs to one turn at a time, decided the moment a prompt arrives: requests sent
back to back, without waiting for any output, behave as if sent slowly."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.harness import script, spawn_agent
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _prompt(sid: str, text: str = "go") -> dict[str, object]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


async def test_a_second_prompt_sent_at_once_is_refused(
    home: Path, project: Path, tmp_path: Path
) -> None:
    path = script(tmp_path / "s.json", [[{"text": "first turn"}], [{"text": "second turn"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        first, second = await agent.start_requests(
            ("session/prompt", _prompt(sid)), ("session/prompt", _prompt(sid))
        )
        refused = await agent.until_response(second)
        assert refused["error"]["code"] == -32001
        done = await agent.until_response(first)
        assert done["result"] == {"stopReason": "end_turn"}
        # The refused prompt never reached the model: the next turn gets the second round.
        again = await agent.prompt(sid, "again")
        assert again["result"] == {"stopReason": "end_turn"}
    texts = [
        u["content"]["text"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert texts == ["first turn", "second turn"]


async def test_a_cancel_sent_right_after_the_prompt_counts(
    home: Path, project: Path, tmp_path: Path
) -> None:
    write = {"tool_call": {"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}}
    path = script(tmp_path / "s.json", [[write], [{"text": "done"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        rid = await agent.start_request("session/prompt", _prompt(sid))
        await agent.notify("session/cancel", {"sessionId": sid})
        resp = await agent.until_response(rid)
        assert resp["result"] == {"stopReason": "cancelled"}
        assert not any(f.get("method") == "session/request_permission" for f in agent.frames)
    assert not (project / "x.txt").exists()
    assert tool_results(home, sid) == []
