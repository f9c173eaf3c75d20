"""The aggregated confirm: one permission request per round, per-call choice, grants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.golden_util import check_golden
from tests.harness import AgentProcess, script, spawn_agent
from tests.stored import tool_results

pytestmark = pytest.mark.anyio


def _write(name: str, call_id: str) -> dict[str, Any]:
    return {
        "tool_call": {
            "id": call_id,
            "name": "write_file",
            "arguments": {"path": name, "content": f"{name}\n"},
        }
    }


def _two_writes(tmp_path: Path, *extra_rounds: list[dict[str, Any]]) -> Path:
    rounds = [
        [{"text": "Writing two files."}, _write("a.txt", "c1"), _write("b.txt", "c2")],
        [{"text": "done"}],
    ]
    return script(tmp_path / "two.json", [*rounds, *extra_rounds])


def _permission_requests(agent: AgentProcess) -> list[dict[str, Any]]:
    return [f for f in agent.frames if f.get("method") == "session/request_permission"]


async def test_two_calls_ask_once_for_the_round(home: Path, project: Path, tmp_path: Path) -> None:
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "go")
        assert resp["result"]["stopReason"] == "end_turn"
        [req] = _permission_requests(agent)
        card = req["params"]["toolCall"]
        assert card["toolCallId"].startswith("round_")
        assert card["title"] == "Approve 2 tool calls"
        listing = card["content"][0]["content"]["text"]
        assert "Create a.txt" in listing and "Create b.txt" in listing
        assert [c["type"] for c in card["content"][1:]] == ["diff", "diff"]
        kinds = [o["kind"] for o in req["params"]["options"]]
        assert kinds == ["allow_once", "allow_always", "allow_once", "reject_once"]
        # The two calls then run in parallel, so the rest of the transcript has no fixed order.
        paths = {str(project): "<project>", str(home): "<home>", str(tmp_path): "<tmp>"}
        upto = agent.frames.index(req) + 1
        check_golden("round_permission_asked", agent.frames[:upto], paths)
    assert (project / "a.txt").read_text() == "a.txt\n"
    assert (project / "b.txt").read_text() == "b.txt\n"
    assert all(r.endswith("(approved by user (round))") for r in tool_results(home, sid))


async def test_reject_all(home: Path, project: Path, tmp_path: Path) -> None:
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        agent.permission_choice = "reject_once"
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "go")
    assert not (project / "a.txt").exists() and not (project / "b.txt").exists()
    assert all("REJECTED" in r for r in tool_results(home, sid))


async def test_per_call_choice_uses_form_elicitation(
    home: Path, project: Path, tmp_path: Path
) -> None:
    asked: list[dict[str, Any]] = []
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        default = agent.handler

        async def handler(method: str, params: Any) -> Any:
            if method == "session/request_permission":
                return {"outcome": {"outcome": "selected", "optionId": "choose"}}
            if method == "elicitation/create":
                asked.append(params)
                return {"action": "accept", "content": {"call_0": True, "call_1": False}}
            return await default(method, params)

        agent.handler = handler
        await agent.initialize(elicitation={"form": {}})
        sid = await agent.new_session(project)
        await agent.prompt(sid, "go")
    [form] = asked
    assert form["mode"] == "form" and form["sessionId"] == sid
    props = form["requestedSchema"]["properties"]
    assert [p["title"] for p in props.values()] == ["Create a.txt", "Create b.txt"]
    assert all(p["type"] == "boolean" for p in props.values())
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()


async def test_per_call_choice_without_forms_asks_one_by_one(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        default = agent.handler
        answers = iter(["choose", "allow", "reject"])

        async def handler(method: str, params: Any) -> Any:
            if method == "session/request_permission":
                return {"outcome": {"outcome": "selected", "optionId": next(answers)}}
            return await default(method, params)

        agent.handler = handler
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "go")
        cards = [r["params"]["toolCall"]["toolCallId"] for r in _permission_requests(agent)]
    assert cards[0].startswith("round_") and cards[1:] == ["c1", "c2"]
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()


async def test_always_allow_records_a_grant(home: Path, project: Path, tmp_path: Path) -> None:
    third = [_write("c.txt", "c3")]
    path = _two_writes(tmp_path, third, [{"text": "again"}])
    async with spawn_agent(home, "--script", str(path)) as agent:
        agent.permission_choice = "allow_always"
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "first")
        assert len(_permission_requests(agent)) == 1
        await agent.prompt(sid, "second")
        assert len(_permission_requests(agent)) == 1  # the grant covered c.txt
    assert (project / "c.txt").exists()
    assert tool_results(home, sid)[-1].endswith("(approved by grant)")


async def test_calls_that_cannot_run_are_never_shown_for_approval(
    home: Path, project: Path, tmp_path: Path
) -> None:
    bad_round = [
        {"tool_call": {"id": "u1", "name": "launch_rockets", "arguments": {}}},
        {"tool_call": {"id": "u2", "name": "write_file", "arguments": "{not json"}},
        {"tool_call": {"id": "u3", "name": "write_file", "arguments": {"content": "no path"}}},
        {
            "tool_call": {
                "id": "u4",
                "name": "write_file",
                "arguments": {"path": "README.md", "content": "x"},
            }
        },
        _write("ok.txt", "u5"),
    ]
    path = script(tmp_path / "bad.json", [bad_round, [{"text": "done"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "go")
        [req] = _permission_requests(agent)
        assert req["params"]["toolCall"]["toolCallId"] == "u5"  # one call left: its own card
    results = tool_results(home, sid)
    assert results[0].startswith("error [UNKNOWN_TOOL]")
    assert results[1].startswith("error [INVALID_ARGS]: arguments are not valid JSON")
    assert results[2] == "error [INVALID_ARGS]: missing required argument `path`"
    assert results[3].startswith("error [FILE_EXISTS]")
    assert results[4].startswith("created ok.txt")


async def test_code_mode_creates_new_files_without_asking(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        await agent.prompt(sid, "go")
        assert _permission_requests(agent) == []
    assert (project / "a.txt").exists() and (project / "b.txt").exists()


async def test_cancel_answers_pending_permission_as_cancelled(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        rid = await agent.start_request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        )
        while not (req := _permission_requests(agent)):
            await agent.recv()
        await agent.notify("session/cancel", {"sessionId": sid})
        frame = await agent.recv()
        # The agent withdraws its own pending request, then ends the turn as cancelled.
        assert frame == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": req[0]["id"]},
        }
        resp = await agent.until_response(rid)
        assert resp["result"] == {"stopReason": "cancelled"}
        paths = {str(project): "<project>", str(home): "<home>", str(tmp_path): "<tmp>"}
        check_golden("round_permission_cancelled", agent.frames, paths)
    assert not (project / "a.txt").exists()
    assert all("ABORTED" in r for r in tool_results(home, sid))
