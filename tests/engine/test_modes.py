"""Modes decide what asks: `ask` asks before every change, `code` creates files freely (and says
so in the result), `read-only` refuses every mutating call while keeping the tool list."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.harness import script, spawn_agent
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _write(path: str, overwrite: bool = False) -> dict[str, object]:
    args = {"path": path, "content": "new\n", "overwrite": overwrite}
    return {"tool_call": {"name": "write_file", "arguments": args}}


async def _run(home: Path, project: Path, tmp_path: Path, mode: str) -> tuple[str, list[str]]:
    rounds = [[_write("fresh.txt"), _write("README.md", overwrite=True)], [{"text": "ok"}]]
    path = script(tmp_path / "s.json", rounds)
    async with spawn_agent(home, "--script", str(path)) as agent:
        agent.permission_choice = "allow_once"
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.request("session/set_mode", {"sessionId": sid, "modeId": mode})
        assert resp["result"] == {}
        await agent.prompt(sid, "go")
        asked = [
            f["params"]["toolCall"]["toolCallId"]
            for f in agent.frames
            if f.get("method") == "session/request_permission"
        ]
    return ",".join(asked), tool_results(home, sid)


async def test_code_mode_says_the_mode_allowed_a_new_file(
    home: Path, project: Path, tmp_path: Path
) -> None:
    asked, results = await _run(home, project, tmp_path, "code")
    assert asked != "" and not asked.startswith("round_")  # only the replacement asked
    assert results[0].startswith("[approval] mode (code)\ncreated fresh.txt")
    assert results[1].startswith("[approval] user (once)\nreplaced README.md")


async def test_read_only_mode_refuses_changes_without_asking(
    home: Path, project: Path, tmp_path: Path
) -> None:
    asked, results = await _run(home, project, tmp_path, "read-only")
    assert asked == ""
    assert all(r.startswith("error [READ_ONLY_MODE]: write_file changes things") for r in results)
    assert all("switch to `ask` or `code` mode" in r for r in results)
    assert not (project / "fresh.txt").exists()
    assert (project / "README.md").read_text() == "# Demo project\n\nHello.\n"
