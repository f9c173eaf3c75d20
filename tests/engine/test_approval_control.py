"""Approvals the user controls, through `tether acp` (a real subprocess, every frame validated):
"always" answers for the session or for the project (kept in the store across restarts), the
allow-all mode (never past the denylists, never inherited by a reload), and a rejection's note
reaching the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _write(name: str, call_id: str) -> dict[str, Any]:
    arguments = {"path": name, "content": f"{name}\n"}
    return {"tool_call": {"id": call_id, "name": "write_file", "arguments": arguments}}


def _asked(agent: AgentProcess) -> list[dict[str, Any]]:
    return [f for f in agent.frames if f.get("method") == "session/request_permission"]


async def _set(agent: AgentProcess, sid: str, option: str, value: str) -> None:
    params = {"sessionId": sid, "configId": option, "value": value}
    assert "result" in await agent.request("session/set_config_option", params)


async def test_a_project_grant_holds_in_the_next_process(
    home: Path, project: Path, tmp_path: Path
) -> None:
    first = script(tmp_path / "one.json", [[_write("a.txt", "c1")], [{"text": "ok"}]])
    async with spawn_agent(home, "--script", str(first)) as agent:
        agent.permission_choice = "allow_always"
        await agent.initialize()
        sid = await agent.new_session(project)
        await _set(agent, sid, "always", "project")
        await agent.prompt(sid, "write a")
        [asked] = _asked(agent)
        names = {o["kind"]: o["name"] for o in asked["params"]["options"]}
        assert names["allow_always"].endswith(" in this project")
    (project / "a.txt").unlink()  # the grant names creating a.txt: the next process does again
    second = script(tmp_path / "two.json", [[_write("a.txt", "c2")], [{"text": "ok"}]])
    async with spawn_agent(home, "--script", str(second)) as agent:
        agent.permission_choice = "reject_once"  # were it asked, a.txt would not be written
        await agent.initialize()
        other = await agent.new_session(project)  # a new session of the same project
        await agent.prompt(other, "write a")
        assert _asked(agent) == []
    assert (project / "a.txt").read_text() == "a.txt\n"
    assert tool_results(home, other)[0].startswith("[approval] grant (project)\n")


async def test_a_session_grant_stays_in_its_session(
    home: Path, project: Path, tmp_path: Path
) -> None:
    first = script(tmp_path / "one.json", [[_write("a.txt", "c1")], [{"text": "ok"}]])
    async with spawn_agent(home, "--script", str(first)) as agent:
        agent.permission_choice = "allow_always"
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "write a")
    (project / "a.txt").unlink()
    second = script(tmp_path / "two.json", [[_write("a.txt", "c2")], [{"text": "ok"}]])
    async with spawn_agent(home, "--script", str(second)) as agent:
        agent.permission_choice = "reject_once"
        await agent.initialize()
        other = await agent.new_session(project)
        await agent.prompt(other, "write a")
        assert len(_asked(agent)) == 1
    assert not (project / "a.txt").exists()


async def test_allow_all_runs_everything_but_the_denylists(
    home: Path, project: Path, tmp_path: Path
) -> None:
    calls = [
        _write("a.txt", "c1"),
        {
            "tool_call": {
                "id": "c2",
                "name": "write_file",
                "arguments": {"path": ".env.local", "content": "K=1\n"},
            }
        },
        {
            "tool_call": {
                "id": "c3",
                "name": "run_argv",
                "arguments": {"argv": ["sudo", "touch", str(tmp_path / "pwned")]},
            }
        },
        {
            "tool_call": {
                "id": "c4",
                "name": "run_argv",
                "arguments": {"argv": ["touch", "ran.txt"], "unconfined": True, "reason": "test"},
            }
        },
    ]
    turn = script(
        tmp_path / "t.json", [calls, [{"text": "ok"}], [_write("z.txt", "c5")], [{"text": "ok"}]]
    )
    async with spawn_agent(home, "--script", str(turn)) as agent:
        agent.permission_choice = "reject_once"  # were anything asked, it would not run
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.request("session/set_mode", {"sessionId": sid, "modeId": "allow-all"})
        assert resp["result"] == {}
        await agent.prompt(sid, "go")
        assert _asked(agent) == []
    assert (project / "a.txt").exists() and (project / "ran.txt").exists()
    assert not (project / ".env.local").exists() and not (tmp_path / "pwned").exists()
    results = tool_results(home, sid)
    assert results[0].startswith("[approval] mode (allow-all)\n")
    assert "error [" in results[1] and "error [" in results[2]
    # A reload is a new sitting: the session is back in the default mode and asks again.
    async with spawn_agent(home, "--script", str(turn)) as agent:
        agent.permission_choice = "reject_once"
        await agent.initialize()
        resp = await agent.request(
            "session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []}
        )
        assert resp["result"]["modes"]["currentModeId"] == "ask"


async def test_a_rejection_note_reaches_the_model(
    home: Path, project: Path, tmp_path: Path
) -> None:
    turn = script(tmp_path / "t.json", [[_write("a.txt", "c1")], [{"text": "ok"}]])
    async with spawn_agent(home, "--script", str(turn)) as agent:
        agent.permission_choice = "reject_once"
        default = agent.handler
        forms: list[Any] = []

        async def handler(method: str, params: Any) -> Any:
            if method == "elicitation/create":
                forms.append(params)
                return {"action": "accept", "content": {"note": "call it b.txt"}}
            return await default(method, params)

        agent.handler = handler
        await agent.initialize(elicitation={"form": {}})
        sid = await agent.new_session(project)
        await agent.prompt(sid, "go")
    [form] = forms
    assert form["message"].startswith("Rejected: ")
    assert "note" in form["requestedSchema"]["properties"]
    assert "required" not in form["requestedSchema"]
    assert not (project / "a.txt").exists()
    [result] = tool_results(home, sid)
    assert result == "error [REJECTED]: user declined; the user says: 'call it b.txt'"


async def test_a_bad_always_value_is_invalid_params(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        params = {"sessionId": sid, "configId": "always", "value": "forever"}
        resp = await agent.request("session/set_config_option", params)
        assert resp["error"]["code"] == -32602
        assert "forever" in resp["error"]["message"]
        await agent.close_input()  # end input at once: the agent still exits cleanly
        assert await agent.wait_exit() == 0
