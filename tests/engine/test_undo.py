"""/undo reverts the file changes of the last turn, shown as diffs and confirmed; a second /undo
goes one more turn back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import AgentProcess, script, spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _write(path: str, content: str, overwrite: bool = False) -> dict[str, Any]:
    args = {"path": path, "content": content, "overwrite": overwrite}
    return {"tool_call": {"name": "write_file", "arguments": args}}


def _texts(agent: AgentProcess, since: int) -> str:
    return "".join(
        u["content"]["text"]
        for u in agent.updates()[since:]
        if u["sessionUpdate"] == "agent_message_chunk"
    )


async def test_undo_goes_back_turn_by_turn(home: Path, project: Path, tmp_path: Path) -> None:
    rounds = [
        [_write("README.md", "first edit\n", overwrite=True), _write("new.txt", "hello\n")],
        [{"text": "turn one done"}],
        [_write("README.md", "second edit\n", overwrite=True)],
        [{"text": "turn two done"}],
    ]
    original = (project / "README.md").read_text()
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "one")
        await agent.prompt(sid, "two")
        assert (project / "README.md").read_text() == "second edit\n"

        before = len(agent.updates())
        await agent.prompt(sid, "/undo")
        assert (project / "README.md").read_text() == "first edit\n"
        assert _texts(agent, before) == "Undone: README.md."
        card = next(u for u in agent.updates()[before:] if u["sessionUpdate"] == "tool_call")
        assert card["title"] == "Undo the last turn: README.md" and card["kind"] == "edit"
        [diff] = card["content"]
        assert (diff["oldText"], diff["newText"]) == ("second edit\n", "first edit\n")

        before = len(agent.updates())
        await agent.prompt(sid, "/undo")
        assert (project / "README.md").read_text() == original
        assert not (project / "new.txt").exists()
        assert _texts(agent, before) == "Undone: README.md, new.txt (delete)."

        before = len(agent.updates())
        await agent.prompt(sid, "/undo")
        assert _texts(agent, before).startswith("Nothing to undo")


async def test_a_rejected_undo_changes_nothing(home: Path, project: Path, tmp_path: Path) -> None:
    rounds = [[_write("a.txt", "a\n")], [{"text": "ok"}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "go")
        agent.permission_choice = "reject_once"
        before = len(agent.updates())
        await agent.prompt(sid, "/undo")
        assert _texts(agent, before) == "Undo cancelled: nothing was changed."
        closed = [u for u in agent.updates()[before:] if u["sessionUpdate"] == "tool_call_update"]
        assert closed[-1]["status"] == "failed"
    assert (project / "a.txt").read_text() == "a\n"
