"""wait through a real `tether acp`: a numeric string is seconds, the card names the wait and
counts it down; booleans and text are refused with what was wrong; `session/cancel` ends a long
wait at once, and its result says how long it ran."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.lsp_client import lsp_in_process, script_file
from tests.support.stored import tool_results
from tether.errors import ToolError
from tether.tools.wait import MAX_WAIT, wait_seconds


def _wait(call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": "wait", "arguments": arguments}}


def _card(agent: AgentProcess, sid: str, call_id: str) -> list[dict[str, Any]]:
    return [u for u in agent.updates(sid) if u.get("toolCallId") == call_id]


def _texts(updates: list[dict[str, Any]]) -> list[str]:
    return [c["content"]["text"] for u in updates for c in u.get("content") or []]


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_numeric_string_is_seconds(home: Path, project: Path, tmp_path: Path) -> None:
    rounds = [[_wait("w1", seconds="2", reason="the server to come up")], [{"text": "up"}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        started = time.monotonic()
        assert (await agent.prompt(sid, "go"))["result"]["stopReason"] == "end_turn"
        took = time.monotonic() - started
        card = _card(agent, sid, "w1")
    assert 2 <= took < 8
    assert card[0]["title"] == "Wait 2 s: the server to come up"
    assert card[0]["sessionUpdate"] == "tool_call"
    assert "2 s left of 2 s" in _texts(card) and "1 s left of 2 s" in _texts(card)
    assert card[-1]["status"] == "completed"
    assert tool_results(home, sid) == ["waited 2 s"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_what_is_not_a_number_is_explained(home: Path, project: Path, tmp_path: Path) -> None:
    calls = [
        _wait("w1", seconds=True),
        _wait("w2", seconds="soon"),
        _wait("w3", seconds=[5]),
        _wait("w4", seconds=MAX_WAIT + 1),
    ]
    rounds = [calls, [{"text": "ok"}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        assert (await agent.prompt(sid, "go"))["result"]["stopReason"] == "end_turn"
    assert tool_results(home, sid) == [
        "error [INVALID_ARGS]: seconds must be a number such as 5; got the boolean true",
        "error [INVALID_ARGS]: seconds must be a number such as 5; got the text 'soon'",
        "error [INVALID_ARGS]: seconds must be a number such as 5; got a list",
        "error [INVALID_ARGS]: seconds may be at most 300; wait again afterwards if you must, "
        "or look at what you are waiting for",
    ]


@pytest.mark.slow
@pytest.mark.anyio
async def test_cancel_ends_the_wait(home: Path, project: Path, tmp_path: Path) -> None:
    rounds = [[_wait("w1", seconds=120, reason="a slow build")], [{"text": "never"}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        rid = await agent.start_request("session/prompt", params)
        while not any(u.get("status") == "in_progress" for u in _card(agent, sid, "w1")):
            await agent.recv()
        started = time.monotonic()
        await anyio.sleep(1)
        await agent.notify("session/cancel", {"sessionId": sid})
        resp = await agent.until_response(rid)
        took = time.monotonic() - started
        card = _card(agent, sid, "w1")
    assert resp["result"]["stopReason"] == "cancelled"
    assert took < 5  # of the 120 s asked for
    [result] = tool_results(home, sid)
    head = "error [ABORTED]: the wait was cancelled by the user after "
    assert result.startswith(head) and result.endswith(" s")
    assert 1 <= float(result.removeprefix(head).removesuffix(" s")) < 5
    assert card[-1]["status"] == "failed" and _texts([card[-1]]) == [result]


@pytest.mark.slow
@pytest.mark.anyio
async def test_tether_lsp_shows_and_cancels_the_wait(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))
    rounds = [[_wait("w1", seconds="120", reason="a slow build")], [{"text": "never"}]]
    async with lsp_in_process(project, script_file(tmp_path / "s.json", rounds)) as (editor, _):
        await editor.start()
        pending = editor.prompt_request("go", msg_id="p1")

        def waiting() -> bool:  # the LSP front shows the running call's title (and countdown)
            shown = [v.get("message") or "" for v in editor.values("report")]
            return any(m.startswith("Running: Wait 120 s: a slow build") for m in shown)

        await editor.wait_for(waiting)
        await anyio.sleep(0.5)
        started = time.monotonic()
        assert await editor.command("tether.cancel") == {"cancelled": True}
        assert (await pending)["stopReason"] == "cancelled"
        assert time.monotonic() - started < 5
    [result] = tool_results(home, (await _session_id(home)))
    assert result.startswith("error [ABORTED]: the wait was cancelled by the user after ")


async def _session_id(home: Path) -> str:
    import apsw

    db = apsw.Connection(str(home / "tether.db"))
    try:
        [(sid,)] = db.execute("SELECT id FROM sessions").fetchall()
    finally:
        db.close()
    return str(sid)


@pytest.mark.parametrize(
    ("value", "seconds"), [(5, 5.0), (0.5, 0.5), ("5", 5.0), (" 2.5 ", 2.5), (300, 300.0)]
)
def test_numbers_and_numeric_strings(value: object, seconds: float) -> None:
    assert wait_seconds(value) == seconds


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (False, "got the boolean false"),
        (None, "got null"),
        ({"s": 5}, "got an object"),
        ("", "got the text ''"),
        ("5 minutes", "got the text '5 minutes'"),
        (0, "must be more than 0; got 0"),
        (-1, "must be more than 0; got -1"),
        ("nan", "got the text 'nan'"),
        ("inf", "got the text 'inf'"),
        ("301", "may be at most 300"),
    ],
)
def test_what_is_refused(value: object, why: str) -> None:
    with pytest.raises(ToolError) as e:
        wait_seconds(value)
    assert e.value.code == "INVALID_ARGS" and why in e.value.message
