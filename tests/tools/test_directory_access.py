"""request_directory_access: the user opens a directory outside the project to the session's
tools (asked every time, kept with the session); denylisted or too broad places never."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import script, spawn_agent
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": name, "arguments": arguments}}


async def test_a_granted_directory_opens_to_reads_and_stays(
    home: Path, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("outside\n")
    target = str(other / "notes.txt")
    rounds = [
        [_call("r0", "read_file", path=target)],
        [_call("g1", "request_directory_access", path=str(other), mode="read")],
        [
            _call("r1", "read_file", path=target),
            _call("w1", "write_file", path=str(other / "x.txt"), content="x"),
        ],
        [{"text": "ok"}],
        [_call("r2", "read_file", path=target)],
        [{"text": "again"}],
    ]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "look next door")
        asks = [f for f in agent.frames if f.get("method") == "session/request_permission"]
        assert asks[0]["params"]["toolCall"]["title"] == f"Allow read access to {other}"
        await agent.close_input()
    results = tool_results(home, sid)
    assert results[0].startswith("error [OUTSIDE_ROOTS]")
    assert "ask the user to open its directory with request_directory_access" in results[0]
    assert results[1] == f"[approval] user (once)\ngranted: read access to {other} for this session"
    assert "outside" in results[2]
    assert "granted for reading only" in results[3]
    assert "request_directory_access (access: write)" in results[3]

    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds[4:]))) as agent:
        await agent.initialize()
        params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
        await agent.request("session/resume", params)
        await agent.prompt(sid, "once more")
    assert "outside" in tool_results(home, sid)[-1]  # the grant was kept with the session


async def test_denylisted_and_too_broad_places_are_never_granted(
    home: Path, project: Path, tmp_path: Path
) -> None:
    secrets = tmp_path / ".ssh"
    secrets.mkdir()
    user = tmp_path / "users" / "me"
    user.mkdir(parents=True)
    rounds = [
        [
            _call("a", "request_directory_access", path=str(secrets)),
            _call("b", "request_directory_access", path="/"),
            _call("c", "request_directory_access", path=str(tmp_path / "missing")),
            _call("d", "request_directory_access", path=str(user.parent)),
        ],
        [{"text": "ok"}],
    ]
    path = script(tmp_path / "s.json", rounds)
    async with spawn_agent(home, "--script", str(path), env={"HOME": str(user)}) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "go")
        assert not [f for f in agent.frames if f.get("method") == "session/request_permission"]
    a, b, c, d = tool_results(home, sid)
    assert a.startswith("error [PATH_DENIED]") and ".ssh" in a
    assert b.startswith("error [TOO_BROAD]")
    assert c.startswith("error [NOT_A_DIRECTORY]")
    assert d.startswith("error [TOO_BROAD]")  # the home directory's parent holds it
