"""The aggregated confirm: one permission request per round, per-call choice, grants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.golden_util import check_golden
from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


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


def _updates_for(agent: AgentProcess, call_id: str) -> list[dict[str, Any]]:
    return [u for u in agent.updates() if u.get("toolCallId") == call_id]


async def test_two_calls_ask_once_for_the_round(home: Path, project: Path, tmp_path: Path) -> None:
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "go")
        assert resp["result"]["stopReason"] == "end_turn"
        [req] = _permission_requests(agent)
        card = req["params"]["toolCall"]
        round_id = card["toolCallId"]
        assert round_id.startswith("round_")
        assert card["title"] == "Edit a.txt, b.txt" and card["kind"] == "edit"
        assert [c["type"] for c in card["content"]] == ["diff", "diff", "content"]
        listing = card["content"][2]["content"]["text"]
        assert "Create a.txt" in listing and "Create b.txt" in listing
        kinds = [o["kind"] for o in req["params"]["options"]]
        assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
        # The round's card is announced before the request and closed once decided.
        shown = _updates_for(agent, round_id)
        assert shown[0]["sessionUpdate"] == "tool_call" and shown[0]["title"] == card["title"]
        assert agent.frames.index(req) > agent.frames.index(
            next(f for f in agent.frames if f.get("params", {}).get("update") is shown[0])
        )
        assert shown[-1]["sessionUpdate"] == "tool_call_update"
        assert shown[-1]["status"] == "completed"
        # The two calls then run in parallel, so the rest of the transcript has no fixed order.
        paths = {str(project): "<project>", str(home): "<home>", str(tmp_path): "<tmp>"}
        upto = agent.frames.index(req) + 1
        check_golden("round_permission_asked", agent.frames[:upto], paths)
    assert (project / "a.txt").read_text() == "a.txt\n"
    assert (project / "b.txt").read_text() == "b.txt\n"
    assert all(r.startswith("[approval] user (round)\n") for r in tool_results(home, sid))


async def test_reject_all(home: Path, project: Path, tmp_path: Path) -> None:
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        agent.permission_choice = "reject_once"
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "go")
        assert resp["result"]["stopReason"] == "end_turn"
        [req] = _permission_requests(agent)
        closed = _updates_for(agent, req["params"]["toolCall"]["toolCallId"])[-1]
        assert closed["status"] == "failed"
    assert not (project / "a.txt").exists() and not (project / "b.txt").exists()
    assert tool_results(home, sid) == ["error [REJECTED]: user declined"] * 2


async def _per_call(agent: AgentProcess, project: Path) -> str:
    sid = await agent.new_session(project)
    resp = await agent.request(
        "session/set_config_option",
        {"sessionId": sid, "configId": "approvals", "value": "call"},
    )
    [approvals] = [o for o in resp["result"]["configOptions"] if o["id"] == "approvals"]
    assert approvals["currentValue"] == "call"
    return sid


async def test_per_call_review_uses_form_elicitation(
    home: Path, project: Path, tmp_path: Path
) -> None:
    asked: list[dict[str, Any]] = []
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        default = agent.handler

        async def handler(method: str, params: Any) -> Any:
            if method == "elicitation/create":
                asked.append(params)
                content = {"call_0": True, "call_1": False, "note": "  name it c.txt  "}
                return {"action": "accept", "content": content}
            return await default(method, params)

        agent.handler = handler
        await agent.initialize(elicitation={"form": {}})
        sid = await _per_call(agent, project)
        await agent.prompt(sid, "go")
        assert _permission_requests(agent) == []
    [form] = asked
    assert form["mode"] == "form" and form["sessionId"] == sid
    props = form["requestedSchema"]["properties"]
    titles = ["Create a.txt", "Create b.txt", "Note for the agent"]
    assert [p["title"] for p in props.values()] == titles
    assert [p["type"] for p in props.values()] == ["boolean", "boolean", "string"]
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()
    rejected = tool_results(home, sid)[1]
    assert rejected == "error [REJECTED]: user declined; the user says: 'name it c.txt'"


async def test_per_call_review_without_forms_asks_one_by_one(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home, "--script", str(_two_writes(tmp_path))) as agent:
        default = agent.handler
        answers = iter(["allow", "reject"])

        async def handler(method: str, params: Any) -> Any:
            if method == "session/request_permission":
                return {"outcome": {"outcome": "selected", "optionId": next(answers)}}
            return await default(method, params)

        agent.handler = handler
        await agent.initialize()
        sid = await _per_call(agent, project)
        await agent.prompt(sid, "go")
        requests = _permission_requests(agent)
        cards = [r["params"]["toolCall"]["toolCallId"] for r in requests]
        assert cards == ["c1", "c2"]
        for r in requests:
            kinds = [o["kind"] for o in r["params"]["options"]]
            assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()


async def test_always_allow_records_a_grant(home: Path, project: Path, tmp_path: Path) -> None:
    # "Always allow these" grants each call what its line named: creating a.txt, creating
    # b.txt; a later c.txt is not among them.
    third = [_write("b.txt", "c3"), _write("c.txt", "c4")]
    path = _two_writes(tmp_path, third, [{"text": "again"}])
    async with spawn_agent(home, "--script", str(path)) as agent:
        agent.permission_choice = "allow_always"
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "first")
        assert len(_permission_requests(agent)) == 1
        (project / "b.txt").unlink()
        agent.permission_choice = "reject_once"
        await agent.prompt(sid, "second")
        asked = _permission_requests(agent)
        assert len(asked) == 2  # the grant covered b.txt; c.txt asked
        assert asked[1]["params"]["toolCall"]["toolCallId"] == "c4"
    assert (project / "b.txt").exists() and not (project / "c.txt").exists()
    results = tool_results(home, sid)
    assert results[-2].startswith("[approval] grant (session)\n")
    assert results[-1].startswith("error [REJECTED]")


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
    assert results[4].startswith("[approval] user (once)\ncreated ok.txt")


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


async def _pending_round(agent: AgentProcess, project: Path) -> tuple[str, int, dict[str, Any]]:
    await agent.initialize()
    sid = await agent.new_session(project)
    rid = await agent.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
    )
    while not (req := _permission_requests(agent)):
        await agent.recv()
    return sid, rid, req[0]


async def test_session_cancel_leaves_the_pending_permission_to_the_client(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """After session/cancel the client answers its pending permission requests itself (ACP):
    the agent must not withdraw them, and the late `cancelled` answer is taken quietly."""
    async with spawn_agent(
        home, "--script", str(_two_writes(tmp_path)), capture_stderr=True
    ) as agent:
        sid, rid, req = await _pending_round(agent, project)
        await agent.notify("session/cancel", {"sessionId": sid})
        resp = await agent.until_response(rid)
        assert resp["result"] == {"stopReason": "cancelled"}
        await agent.send(
            {"jsonrpc": "2.0", "id": req["id"], "result": {"outcome": {"outcome": "cancelled"}}}
        )
        assert not [f for f in agent.frames if f.get("method") == "$/cancel_request"]
        round_id = req["params"]["toolCall"]["toolCallId"]
        assert _updates_for(agent, round_id)[-1]["status"] == "failed"
        paths = {str(project): "<project>", str(home): "<home>", str(tmp_path): "<tmp>"}
        check_golden("round_permission_cancelled", agent.frames, paths)
        await agent.close_input()
        await agent.drain()
        assert "unknown request id" not in await agent.stderr_text()
    assert not (project / "a.txt").exists()
    assert all("ABORTED" in r or "cancelled" in r for r in tool_results(home, sid))


async def test_a_withdrawn_prompt_withdraws_its_pending_permission(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """Cancelling the prompt request itself ($/cancel_request) is not session/cancel: the agent
    withdraws what it asked, and ignores a late answer quietly."""
    async with spawn_agent(
        home, "--script", str(_two_writes(tmp_path)), capture_stderr=True
    ) as agent:
        _, rid, req = await _pending_round(agent, project)
        await agent.notify("$/cancel_request", {"requestId": rid})
        withdrawn = await agent.recv()
        while withdrawn.get("method") == "session/update":
            withdrawn = await agent.recv()
        assert withdrawn == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": req["id"]},
        }
        resp = await agent.until_response(rid)
        assert resp["error"]["code"] == -32800
        await agent.send(
            {"jsonrpc": "2.0", "id": req["id"], "result": {"outcome": {"outcome": "cancelled"}}}
        )
        await agent.close_input()
        await agent.drain()
        assert "unknown request id" not in await agent.stderr_text()
    assert not (project / "a.txt").exists()
