"""new_temporary_workspace (issue 32, item 8; seed: "system temp allowlist; cleanup on chat exit;
no session rebind"): a real `tether acp` makes the directory in the system's temporary
directory, unasked; a command of a later turn writes there (through the sandbox, if any); the
session's directory stays the project; when the agent's input ends, the directory is gone.
Judged by the files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import script, spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.cold_start]  # TMPDIR reaches the agent itself


def _call(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": arguments}}


def _shown(frames: list[dict[str, Any]], call_id: str) -> str:
    """The text the client was shown on a call's card."""
    texts: list[str] = []
    for f in frames:
        update = f.get("params", {}).get("update", {}) if f.get("method") else {}
        if update.get("toolCallId") == call_id and update.get("content"):
            texts += [c["content"]["text"] for c in update["content"] if "content" in c]
    return "\n".join(texts)


@pytest.mark.slow
async def test_a_temporary_workspace_is_writable_and_removed_on_exit(
    home: Path, project: Path, tmp_path: Path
) -> None:
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    # The scripted model cannot know the new name: the shell finds it (the only one there).
    write = "cd " + str(system_tmp) + "/tether-ws-* && echo scratch > notes.txt && pwd"
    rounds = [
        [_call("t1", "new_temporary_workspace")],
        [{"text": "made"}],
        [_call("w1", "run_argv", argv=["sh", "-c", write])],
        [{"text": "written"}],
    ]
    turn = script(home / "turn.json", rounds)
    env = {"TMPDIR": str(system_tmp)}
    async with spawn_agent(home, "--script", str(turn), env=env) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        assert (await agent.prompt(sid, "make one"))["result"] == {"stopReason": "end_turn"}
        [made] = list(system_tmp.glob("tether-ws-*"))
        assert made.is_dir() and list(made.iterdir()) == []
        assert (made.stat().st_mode & 0o777) == 0o700
        assert (await agent.prompt(sid, "use it"))["result"] == {"stopReason": "end_turn"}
        assert (made / "notes.txt").read_text() == "scratch\n"
        permissions = [f for f in agent.frames if f.get("method") == "session/request_permission"]
        await agent.close_input()
        assert await agent.wait_exit(15) == 0
    assert not made.exists()
    created, ran = _shown(agent.frames, "t1"), _shown(agent.frames, "w1")
    assert created.startswith(f"created the temporary workspace {made.resolve()}: read, write")
    assert f"The working directory is still {project}." in created
    assert str(made.resolve()) in ran  # the command's pwd: it ran there
    # Only the shell asked (an interpreter); making the workspace asked nobody.
    assert [p["params"]["toolCall"]["toolCallId"] for p in permissions] == ["w1"]
    assert [p.name for p in project.iterdir()] == ["README.md"]  # the project is untouched
