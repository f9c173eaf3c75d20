"""Resuming where things changed (issue 32, item 5), each step a new `tether acp` process over
real pipes: a session opened from another folder than its own asks (keep, move, abort); a
session whose turns opened PTYs, run by a new process, tells the model they are gone; those host
notices are stored where they happened, sent to the model in order, and replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.test_agent_settings import PROVIDER
from tests.mcp.test_mcp_servers import NOTICES
from tests.support.harness import AgentProcess, Frame, spawn_agent
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_call, chat_text

pytestmark = pytest.mark.anyio

RESTART = "<tether-notice kind='restart'>"
MOVED = "<tether-notice kind='folder'>"


class World:
    def __init__(self, home: Path, tmp_path: Path, server: MockLLMServer) -> None:
        self.home = home
        self.old = tmp_path / "old-project"
        self.new = tmp_path / "new-project"
        self.old.mkdir()
        self.new.mkdir()
        config = tmp_path / "config.toml"
        config.write_text(PROVIDER.format(url=server.url))
        self.env = {"TETHER_CONFIG": str(config)}

    def agent(self) -> Any:
        return spawn_agent(self.home, env=self.env)


async def _first_session(world: World) -> str:
    async with world.agent() as agent:
        await agent.initialize()
        sid = await agent.new_session(world.old)
        assert (await agent.prompt(sid, "first"))["result"] == {"stopReason": "end_turn"}
        [opened] = [u for u in agent.updates(sid) if u.get("rawOutput", {}).get("ptyId") == 1]
        assert opened["status"] == "completed"
    return sid


async def _open(agent: AgentProcess, method: str, sid: str, cwd: Path) -> Frame:
    await agent.initialize(**NOTICES)
    params: dict[str, Any] = {"sessionId": sid, "cwd": str(cwd), "mcpServers": []}
    return await agent.request(method, params)


def _asked(agent: AgentProcess) -> list[dict[str, Any]]:
    return [f["params"] for f in agent.frames if f.get("method") == "session/request_permission"]


def _user_text(body: dict[str, Any]) -> list[str]:
    """The text of each user message of a chat-completions request."""
    found: list[str] = []
    for m in body["messages"]:
        if m["role"] != "user":
            continue
        content = m["content"]
        if isinstance(content, str):
            found.append(content)
        else:
            found.append("".join(p.get("text", "") for p in content))
    return found


def _replies(*texts: str) -> list[Reply]:
    """The first turn opens a PTY, then says the first text; a reply per later text."""
    first = Reply(chunks=chat_call("open_pty", {"argv": ["cat"]}))
    return [first, *(Reply(chunks=chat_text([t])) for t in texts)]


async def _listed_cwd(agent: AgentProcess, sid: str) -> str:
    listed = await agent.request("session/list", {})
    [row] = [r for r in listed["result"]["sessions"] if r["sessionId"] == sid]
    return row["cwd"]


@pytest.mark.slow
async def test_keep_the_old_folder_and_the_model_hears_of_the_restart(
    home: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/chat/completions", *_replies("one", "two"))
        world = World(home, tmp_path, server)
        sid = await _first_session(world)
        async with world.agent() as agent:
            loaded = await _open(agent, "session/load", sid, world.new)
            assert "result" in loaded, loaded
            [asked] = _asked(agent)
            assert str(world.old) in asked["toolCall"]["title"]
            assert str(world.new) in asked["toolCall"]["title"]
            kinds = [o["kind"] for o in asked["options"]]
            assert kinds == ["allow_once", "allow_always", "reject_once"]
            assert [o["name"] for o in asked["options"]] == [
                f"Keep {world.old}",
                f"Move to {world.new}",
                "Abort",
            ]
            assert (await agent.prompt(sid, "second"))["result"] == {"stopReason": "end_turn"}
            assert await _listed_cwd(agent, sid) == str(world.old)
            shown = [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
        second = server.posts[2].json()
    assert [u["title"] for u in shown] == [
        "A new tether process runs this session: the PTYs of the last one are gone"
    ]
    users = _user_text(second)
    assert users[0] == "first"
    assert users[1].startswith(RESTART) and users[1].endswith("second")
    assert "PTYs opened with open_pty (their ids no longer exist)" in users[1]
    assert f"- Working directory: {world.old}" in second["messages"][0]["content"]


@pytest.mark.slow
async def test_move_to_the_new_folder(home: Path, tmp_path: Path) -> None:
    (tmp_path / "new-project-marker").touch()
    with MockLLMServer() as server:
        server.script("/chat/completions", *_replies("one", "two"))
        world = World(home, tmp_path, server)
        sid = await _first_session(world)
        async with world.agent() as agent:
            agent.permission_choice = "allow_always"  # "Move to ..."
            resumed = await _open(agent, "session/resume", sid, world.new)
            assert "result" in resumed, resumed
            assert (await agent.prompt(sid, "second"))["result"] == {"stopReason": "end_turn"}
            assert await _listed_cwd(agent, sid) == str(world.new)
        second = server.posts[2].json()
    assert f"- Working directory: {world.new}" in second["messages"][0]["content"]
    users = _user_text(second)
    assert users[1].startswith(MOVED)  # in the order they were made
    assert RESTART in users[1] and users[1].index(MOVED) < users[1].index(RESTART)
    assert f"from the folder {world.old} to {world.new}" in users[1]


@pytest.mark.slow
async def test_abort_answers_with_an_error_and_changes_nothing(home: Path, tmp_path: Path) -> None:
    with MockLLMServer() as server:
        server.script("/chat/completions", *_replies("one", "two"))
        world = World(home, tmp_path, server)
        sid = await _first_session(world)
        async with world.agent() as agent:
            agent.permission_choice = "reject_once"  # "Abort"
            refused = await _open(agent, "session/load", sid, world.new)
            assert refused["error"]["code"] == -32602
            assert refused["error"]["message"] == (
                f"Session {sid} works in {world.old}; the user chose not to open it from "
                f"{world.new}"
            )
            assert refused["error"]["data"]["sessionCwd"] == str(world.old)
            assert await _listed_cwd(agent, sid) == str(world.old)
            gone = await agent.request(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}
            )
            assert "error" in gone  # it was not opened
        assert len(server.posts) == 2


@pytest.mark.slow
async def test_the_same_folder_asks_nothing_and_notices_replay_in_order(
    home: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/chat/completions", *_replies("one", "two"))
        world = World(home, tmp_path, server)
        sid = await _first_session(world)
        async with world.agent() as agent:
            await _open(agent, "session/load", sid, world.old)
            assert _asked(agent) == []
            assert (await agent.prompt(sid, "second"))["result"] == {"stopReason": "end_turn"}
        async with world.agent() as agent:
            await _open(agent, "session/load", sid, world.old)
            replayed = agent.updates(sid)
    order = [
        (u["sessionUpdate"], u.get("title") or u.get("content", {}).get("text", ""))
        for u in replayed
        if u["sessionUpdate"] in ("notice", "user_message_chunk", "agent_message_chunk")
    ]
    restart = "A new tether process runs this session: the PTYs of the last one are gone"
    assert order[:5] == [
        ("user_message_chunk", "first"),
        ("agent_message_chunk", "one"),
        ("notice", restart),
        ("user_message_chunk", "second"),  # the user's words only: the notice is the model's
        ("agent_message_chunk", "two"),
    ]


@pytest.mark.slow
async def test_a_session_that_never_opened_a_pty_is_told_nothing(
    home: Path, tmp_path: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/chat/completions", *(Reply(chunks=chat_text([t])) for t in "ab"))
        world = World(home, tmp_path, server)
        async with world.agent() as agent:
            await agent.initialize()
            sid = await agent.new_session(world.old)
            await agent.prompt(sid, "first")
        async with world.agent() as agent:
            await _open(agent, "session/load", sid, world.old)
            await agent.prompt(sid, "second")
            shown = [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
        second = server.posts[1].json()
    assert _user_text(second) == ["first", "second"]
    assert shown == []
