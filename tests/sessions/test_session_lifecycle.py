"""Sessions that last: load (replay) and resume after a restart, close, delete, a kill -9 in the
middle of a turn, two processes on one database, and the store's forward migrations. The model
is a loopback OpenAI-compatible server, so what tether sends after a restart is visible."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.sessions.test_live_equals_replay import merge_chunks
from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply

pytestmark = pytest.mark.anyio

# Sent with a session's setup or a setting's change: a reload gets them in the load answer.
SETUP = {"available_commands_update", "config_option_update", "current_mode_update"}


def _env(server: MockLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.url + "/v1", "TETHER_MODEL": "openai:gpt-5.5"}


def _turn(agent: AgentProcess, sid: str) -> list[dict[str, Any]]:
    return merge_chunks([u for u in agent.updates(sid) if u["sessionUpdate"] not in SETUP])


def _integrity(home: Path) -> str:
    db = apsw.Connection(str(home / "tether.db"))
    try:
        [(result,)] = db.execute("PRAGMA integrity_check").fetchall()
    finally:
        db.close()
    return str(result)


async def _load(agent: AgentProcess, sid: str, project: Path) -> dict[str, Any]:
    params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
    return await agent.request("session/load", params)


def _write_turn() -> list[Reply]:
    """A turn that writes n.txt, then says so."""
    return [
        Reply(chunks=wire.chat_call("write_file", {"path": "n.txt", "content": "hi\n"})),
        Reply(chunks=wire.chat_text(["Wrote ", "n.txt."])),
    ]


@pytest.mark.slow
async def test_load_replays_what_was_shown_and_the_conversation_goes_on(
    home: Path, project: Path
) -> None:
    with MockLLMServer() as server:
        server.script(
            "/v1/chat/completions", *_write_turn(), Reply(chunks=wire.chat_text(["Still here."]))
        )
        async with spawn_agent(home, env=_env(server)) as first:
            await first.initialize()
            sid = await first.new_session(project)
            assert (await first.prompt(sid, "write it"))["result"]["stopReason"] == "end_turn"
            live = _turn(first, sid)
            await first.close_input()
            assert await first.wait_exit() == 0

        async with spawn_agent(home, env=_env(server)) as second:
            await second.initialize()
            answer = await _load(second, sid, project)
            assert answer["result"]["modes"]["currentModeId"] == "ask"
            replayed = _turn(second, sid)
            # The answer comes after the replay; the commands after the answer.
            i = second.frames.index(answer)
            assert all(f.get("method") == "session/update" for f in second.frames[1:i])
            assert replayed[0] == {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": "write it"},
            }
            assert replayed[1:] == live
            assert (await second.prompt(sid, "and now?"))["result"]["stopReason"] == "end_turn"
        messages = server.posts[-1].json()["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert messages[1]["content"] == "write it" and messages[-1]["content"] == "and now?"


def _renderings(home: Path) -> int:
    db = apsw.Connection(str(home / "tether.db"))
    try:
        [(kept,)] = db.execute("SELECT COUNT(*) FROM events WHERE shown IS NOT NULL").fetchall()
    finally:
        db.close()
    assert isinstance(kept, int)
    return kept


@pytest.mark.slow
async def test_a_session_stored_without_renderings_replays_the_same_and_gets_them(
    home: Path, project: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", *_write_turn())
        async with spawn_agent(home, env=_env(server)) as first:
            await first.initialize()
            sid = await first.new_session(project)
            await first.prompt(sid, "write it")
            live = _turn(first, sid)
        assert _renderings(home) > 0
        db = apsw.Connection(str(home / "tether.db"))  # as an older tether stored it
        db.execute("UPDATE events SET shown=NULL, shown_by=NULL")
        db.close()
        replays: list[list[dict[str, Any]]] = []
        for _ in range(2):
            async with spawn_agent(home, env=_env(server)) as again:
                await again.initialize()
                await _load(again, sid, project)
                await again.request("session/list", {})  # after the renderings are kept
                replays.append(_turn(again, sid))
            assert _renderings(home) > 0  # kept at the first replay: the second reads them
    assert replays[0] == replays[1] == [replays[0][0], *live]


@pytest.mark.slow
async def test_resume_does_not_replay_close_keeps_delete_removes(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["one"])))
        async with spawn_agent(home, env=_env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            await agent.prompt(sid, "first")
            assert (await agent.request("session/close", {"sessionId": sid}))["result"] == {}
            listed = await agent.request("session/list", {"cwd": str(project)})
            assert [(s["sessionId"], s["title"]) for s in listed["result"]["sessions"]] == [
                (sid, "first")
            ]
            before = len(agent.frames)
            params = {"sessionId": sid, "cwd": str(project)}
            resumed = await agent.request("session/resume", params)
            assert "configOptions" in resumed["result"]
            shown = [f["params"]["update"]["sessionUpdate"] for f in agent.frames[before:-1]]
            assert "user_message_chunk" not in shown and "agent_message_chunk" not in shown
            spill = home / "spill" / sid
            spill.mkdir(parents=True)
            (spill / "x.txt").write_text("big result")
            assert (await agent.request("session/delete", {"sessionId": sid}))["result"] == {}
            assert not spill.exists()
            listed = await agent.request("session/list", {})
            assert listed["result"]["sessions"] == []
            gone = await _load(agent, sid, project)
            assert gone["error"]["code"] == -32002
            gone = await agent.request("session/delete", {"sessionId": sid})
            assert gone["error"]["code"] == -32002


@pytest.mark.slow
@pytest.mark.parametrize("where", ["tool batch", "streaming"])
async def test_a_kill_mid_turn_keeps_the_committed_prefix(
    home: Path, project: Path, where: str
) -> None:
    with MockLLMServer() as server:
        listing = wire.chat_call("list_dir", {"path": "."}, "call_list")
        if where == "tool batch":  # killed while the write's permission request waits
            stuck = wire.chat_call("write_file", {"path": "w.txt", "content": "w"}, "call_w")
        else:  # killed while the model streams
            stuck = [*wire.chat_prefix(["Half of an ans"]), 30.0]
        server.script("/v1/chat/completions", Reply(chunks=listing), Reply(chunks=stuck))
        async with spawn_agent(home, env=_env(server)) as first:
            first.handler = _never_answer
            await first.initialize()
            sid = await first.new_session(project)
            await first.start_request(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
            )
            await _until(first, where)
            first.proc.kill()  # SIGKILL: no cleanup at all
            await first.wait_exit()
        assert _integrity(home) == "ok"

        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["Back."])))
        async with spawn_agent(home, env=_env(server)) as second:
            await second.initialize()
            assert "result" in await _load(second, sid, project)
            replayed = [u["sessionUpdate"] for u in _turn(second, sid)]
            assert replayed[0] == "user_message_chunk"
            assert "tool_call" in replayed  # the finished list_dir round was committed
            text = [u for u in _turn(second, sid) if u["sessionUpdate"] == "agent_message_chunk"]
            assert not any("Half" in u["content"]["text"] for u in text)  # nothing half-written
            assert (await second.prompt(sid, "again"))["result"]["stopReason"] == "end_turn"
            asked = [f for f in second.frames if f.get("method") == "session/request_permission"]
            assert asked == []  # nothing of the killed round runs again
        messages = server.posts[-1].json()["messages"]
    roles = [m["role"] for m in messages]
    assert messages[2]["tool_calls"][0]["id"] == "call_list"
    if where == "tool batch":  # the round's call was stored before it ran; never run, answered
        assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "user"]
        assert messages[4]["tool_calls"][0]["id"] == "call_w"
        assert "tether stopped while this call ran" in messages[5]["content"]
    else:
        assert roles == ["system", "user", "assistant", "tool", "user"]
    assert not (project / "w.txt").exists()


async def _never_answer(method: str, params: Any) -> Any:
    import anyio

    await anyio.sleep_forever()


async def _until(agent: AgentProcess, where: str) -> None:
    """Read until the turn is in the state to kill it in."""
    while True:
        frame = await agent.recv()
        if where == "tool batch" and frame.get("method") == "session/request_permission":
            return
        update = frame.get("params", {}).get("update", {})
        if where == "streaming" and "Half" in json.dumps(update.get("content")):
            return


@pytest.mark.slow
async def test_two_processes_on_one_database_lose_nothing(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        replies = [Reply(chunks=wire.chat_text([f"answer {i}"])) for i in range(4)]
        server.script("/v1/chat/completions", *replies)
        async with (
            spawn_agent(home, env=_env(server)) as a,
            spawn_agent(home, env=_env(server)) as b,
        ):
            await a.initialize()
            await b.initialize()
            sid_a = await a.new_session(project)
            sid_b = await b.new_session(project)
            await a.prompt(sid_a, "from window a")
            await b.prompt(sid_b, "from window b")
            assert "result" in await _load(b, sid_a, project)  # b opens a's session too
            await b.prompt(sid_a, "b continues a")
            await a.prompt(sid_a, "a goes on, unaware")
        async with spawn_agent(home, env=_env(server)) as c:
            await c.initialize()
            listed = await c.request("session/list", {})
            assert {s["sessionId"] for s in listed["result"]["sessions"]} == {sid_a, sid_b}
            await _load(c, sid_a, project)
            users = [
                u["content"]["text"]
                for u in c.updates(sid_a)
                if u["sessionUpdate"] == "user_message_chunk"
            ]
    assert sorted(users) == sorted(["from window a", "b continues a", "a goes on, unaware"])
    assert _integrity(home) == "ok"


async def test_an_old_database_is_migrated_forward(home: Path, project: Path) -> None:
    from tether.engine.sessions.migrations import SCHEMA_VERSION, migrate
    from tether.engine.sessions.store import Store

    db = apsw.Connection(str(home / "tether.db"))
    migrate(db, upto=1)
    state = json.dumps({"mode": "code", "model": "demo"})
    db.execute(
        "INSERT INTO sessions(id, cwd, title, created_at, updated_at, state) "
        "VALUES('sess_old', ?, 'old one', 't', '2025-01-01T00:00:00.000Z', ?)",
        (str(project), state),
    )
    message = json.dumps({"type": "user", "parts": [{"type": "text", "text": "hello then"}]})
    db.execute("INSERT INTO messages VALUES('sess_old', 0, ?)", (message,))
    db.close()
    store = Store(home / "tether.db")
    loaded = await store.load("sess_old")
    assert loaded is not None and loaded.state.mode == "code" and len(loaded.history) == 1
    assert await store.events("sess_old") == []
    await store.close()
    db = apsw.Connection(str(home / "tether.db"))
    [(version,)] = db.execute("PRAGMA user_version").fetchall()
    db.close()
    assert version == SCHEMA_VERSION


async def _long_session(home: Path, project: Path, turns: int) -> str:
    """A stored session of `turns` prompts and answers, as `tether acp` stores one."""
    from tether.engine import events as ev
    from tether.engine.history import AssistantMessage, TextPart, UserMessage
    from tether.engine.sessions.state import Session, SessionState
    from tether.engine.sessions.store import Store
    from tether.rpc.acp.replay_frames import acp_renderer

    s = Session("sess_long", str(project), SessionState(model="demo"))
    for i in range(turns):
        parts = [TextPart(f"question {i}")]
        s.history.append(UserMessage(list(parts)))
        s.record(ev.UserPrompted(list(parts), message=len(s.history) - 1))
        s.history.append(AssistantMessage(f"answer {i} " * 20))
        s.record(ev.TextDelta(f"m{i}", f"answer {i} " * 20))
    store = Store(home / "tether.db", acp_renderer())
    await store.save(s)
    await store.close()
    return s.id


@pytest.mark.slow
async def test_a_client_that_vanishes_mid_replay_leaves_the_store_intact(
    home: Path, project: Path
) -> None:
    """initialize and session/load back to back, then the client closes both pipes without
    reading the replay (far larger than a pipe holds): the agent exits, the store intact."""
    import anyio

    sid = await _long_session(home, project, 3000)
    frames = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/load",
            "params": {"sessionId": sid, "cwd": str(project), "mcpServers": []},
        },
    ]
    await anyio.to_thread.run_sync(_send_and_vanish, home, frames)
    assert _integrity(home) == "ok"


def _send_and_vanish(home: Path, frames: list[dict[str, Any]]) -> None:
    """Send the frames to a new `tether acp`, read one line, close both pipes: the agent's
    next write fails. It must then exit, and cleanly."""
    import os
    import subprocess

    from tests.support.harness import REPO, agent_command

    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        agent_command(), env=env, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
    proc.stdin.flush()
    proc.stdout.readline()  # the replay has begun
    proc.stdin.close()
    proc.stdout.close()
    try:
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()


@pytest.mark.slow
async def test_a_reload_shows_who_allowed_each_call_and_how_a_turn_ended(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """What the user decided is part of the session: after `session/load` the card still
    says who allowed it, and a cancelled turn still says it was cancelled."""
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "a.md", "content": "a"}}
    rounds = [
        [{"tool_call": write}],
        [{"text": "written"}],
        [{"text": "thinking..."}, {"delay": 60}],
    ]
    path = script(tmp_path / "s.json", rounds)
    async with spawn_agent(home, "--script", str(path)) as agent:
        agent.permission_choice = "allow_once"
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "write")
        rid = await agent.start_request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]}
        )
        while "thinking..." not in json.dumps(agent.updates(sid)):
            await agent.recv()
        await agent.notify("session/cancel", {"sessionId": sid})
        assert (await agent.until_response(rid))["result"] == {"stopReason": "cancelled"}
    async with spawn_agent(home, "--script", str(path)) as agent:
        await agent.initialize()
        params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
        assert "result" in await agent.request("session/load", params)
        replayed = json.dumps(agent.updates(sid))
    assert '"text": "Allowed: user (once)"' in replayed
    assert "[the turn was cancelled]" in replayed
