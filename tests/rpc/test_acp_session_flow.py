"""The ACP conversation through the real `tether acp` subprocess, frame by frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.golden_util import check_golden
from tests.support.harness import slow_script, spawn_agent

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.cold_start,
    pytest.mark.slow,
]  # the engine loads beside the answers


async def test_initialize_negotiates_version_1(home: Path) -> None:
    async with spawn_agent(home) as agent:
        for asked in (1, 2, 65535):
            resp = await agent.request(
                "initialize", {"protocolVersion": asked, "clientCapabilities": {}}
            )
            assert resp["result"]["protocolVersion"] == 1
        result = resp["result"]
        assert result["authMethods"] == []
        assert result["agentInfo"]["name"] == "tether"
        caps = result["agentCapabilities"]
        assert caps["sessionCapabilities"] == {
            "list": {},
            "resume": {},
            "close": {},
            "delete": {},
            "additionalDirectories": {},
        }
        assert caps["loadSession"] is True


async def test_demo_turn_with_permission_matches_golden(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "show me what you can do")
        assert resp["result"] == {"stopReason": "end_turn"}
        assert "reviewed by the tether demo" in (project / "README.md").read_text()
        kinds = [u["sessionUpdate"] for u in agent.updates(sid)]
        assert kinds[0] == "available_commands_update"
        for k in (
            "agent_message_chunk",
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "usage_update",
            "session_info_update",
        ):
            assert k in kinds, k
        edit = next(
            u
            for u in agent.updates(sid)
            if u["sessionUpdate"] == "tool_call" and u["kind"] == "edit"
        )
        assert edit["content"][0]["type"] == "diff"
        assert edit["locations"] == [{"path": str(project / "README.md")}]
        check_golden(
            "demo_turn_allowed", agent.frames, {str(project): "<project>", str(home): "<home>"}
        )


async def test_rejected_edit_leaves_file_alone(home: Path, project: Path) -> None:
    before = (project / "README.md").read_text()
    async with spawn_agent(home) as agent:
        agent.permission_choice = "reject_once"
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "go")
        assert resp["result"] == {"stopReason": "end_turn"}
        failed = [u for u in agent.updates(sid) if u.get("status") == "failed"]
        assert "REJECTED" in failed[0]["content"][0]["content"]["text"]
    assert (project / "README.md").read_text() == before


async def test_available_commands_come_after_the_new_session_response(
    home: Path, project: Path
) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        rid = await agent.start_request("session/new", {"cwd": str(project), "mcpServers": []})
        first = await agent.recv()
        assert first.get("id") == rid and "result" in first
        second = await agent.recv()
        assert second["params"]["update"]["sessionUpdate"] == "available_commands_update"
        names = [c["name"] for c in second["params"]["update"]["availableCommands"]]
        assert names == [
            *("mode", "model", "undo", "title", "compact", "retry", "status", "btw", "clear"),
            *("export", "grants", "init", "todos", "mcp", "yolo", "help", "skills"),
        ]


async def test_modes_and_config_options_stay_in_sync(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        resp = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
        result = resp["result"]
        sid = result["sessionId"]
        assert result["modes"]["currentModeId"] == "ask"
        cats = {o["id"]: o.get("category") for o in result["configOptions"]}
        assert cats == {
            "mode": "mode",
            "model": "model",
            "approvals": None,
            "always": None,
            "network": None,
        }

        resp = await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        assert resp["result"] == {}
        update = (await agent.recv())["params"]["update"]
        assert update["sessionUpdate"] == "config_option_update"
        assert update["configOptions"][0]["currentValue"] == "code"

        resp = await agent.request(
            "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "ask"}
        )
        assert resp["result"]["configOptions"][0]["currentValue"] == "ask"
        update = (await agent.recv())["params"]["update"]
        assert update == {"sessionUpdate": "current_mode_update", "currentModeId": "ask"}

        bad = await agent.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
        assert bad["error"]["code"] == -32602 and "yolo" in bad["error"]["message"]
        bad = await agent.request(
            "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "nope"}
        )
        assert bad["error"]["code"] == -32602


async def test_slash_commands_run(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "/mode code")
        assert resp["result"] == {"stopReason": "end_turn"}
        kinds = [u["sessionUpdate"] for u in agent.updates(sid)]
        assert "current_mode_update" in kinds and "config_option_update" in kinds
        resp = await agent.prompt(sid, "/help")
        text = "".join(
            u["content"]["text"]
            for u in agent.updates(sid)
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        assert "/mode" in text and "read_file" in text


async def test_list_sessions_filters_by_cwd_and_pages(
    home: Path, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with spawn_agent(home) as agent:
        await agent.initialize()
        mine = {await agent.new_session(project) for _ in range(3)}
        for sid in mine:
            await agent.prompt(sid, "hello")
        await agent.new_session(project)  # opened, never prompted: nobody's conversation
        untitled = await agent.new_session(other)  # prompted with blank text: no title
        await agent.prompt(untitled, "   ")
        resp = await agent.request("session/list", {"cwd": str(project)})
        listed = resp["result"]["sessions"]
        assert {s["sessionId"] for s in listed} == mine
        assert all(s["cwd"] == str(project) and s["title"] == "hello" for s in listed)
        assert "nextCursor" not in resp["result"]
        everything = await agent.request("session/list", {})
        assert len(everything["result"]["sessions"]) == 4
        [bare] = [s for s in everything["result"]["sessions"] if s["sessionId"] == untitled]
        assert "title" not in bare  # never `null`: clients read it as a string
        bad = await agent.request("session/list", {"cursor": "%%%"})
        assert bad["error"]["code"] == -32602


async def test_sessions_persist_across_processes(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "title me")
        await agent.close_input()
        assert await agent.wait_exit() == 0
    async with spawn_agent(home) as agent:
        await agent.initialize()
        resp = await agent.request("session/list", {"cwd": str(project)})
        [info] = resp["result"]["sessions"]
        assert info["sessionId"] == sid and info["title"] == "title me"


async def test_close_session(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        assert (await agent.request("session/close", {"sessionId": sid}))["result"] == {}
        again = await agent.prompt(sid, "hello?")
        assert again["error"]["code"] == -32002


async def test_content_length_framing_is_detected(home: Path, project: Path) -> None:
    async with spawn_agent(home, framing="content-length") as agent:
        resp = await agent.initialize()
        assert resp["result"]["protocolVersion"] == 1
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "hi")
        assert resp["result"]["stopReason"] == "end_turn"


async def test_reader_thread_transport(home: Path, project: Path) -> None:
    # The Windows path (a daemon thread reading stdin), forced on here.
    async with spawn_agent(home, env={"TETHER_STDIO_THREAD": "1"}) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "hi")
        assert resp["result"]["stopReason"] == "end_turn"
        await agent.close_input()
        await agent.drain()
        assert await agent.wait_exit() == 0


async def test_tether_ask_runs_the_demo_headlessly(home: Path, project: Path) -> None:
    import os
    import sys

    import anyio

    from tests.support.harness import REPO

    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "tether", "ask", "--yes", "--cwd", str(project), "show me"]
    done = await anyio.run_process(cmd, env=env, check=False)
    out = done.stderr.decode()  # the cards and the stop line; stdout has the answer alone
    assert done.returncode == 0, out
    assert "▸ Replace README.md  [edit]" in out and "[stop: end_turn]" in out
    assert "reviewed by the tether demo" in (project / "README.md").read_text()
    cmd = [sys.executable, "-m", "tether", "ask", "--no", "--json", "--cwd", str(project), "again"]
    done = await anyio.run_process(cmd, env=env, check=False)
    frames = [__import__("json").loads(line) for line in done.stdout.decode().splitlines()]
    assert frames[-1]["result"] == {"stopReason": "end_turn"}
    assert (
        "reviewed by the tether demo" in (project / "README.md").read_text()
    )  # rejected: unchanged


async def test_commands_follow_new_and_load_even_when_the_input_ends_at_once(
    home: Path, project: Path
) -> None:
    """Editors offer slash commands from `available_commands_update`: it must come right after
    `session/new` (the first start, and the next one answered from the cache) and
    `session/load`, without waiting for a prompt, even when the client sent its requests back to
    back and closed its input."""

    async def commands_after(method: str, params: dict[str, Any]) -> list[str]:
        async with spawn_agent(home) as agent:
            await agent.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": {"protocolVersion": 1, "clientCapabilities": {}}})  # fmt: skip
            await agent.send({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            await agent.close_input()
            await agent.drain()
            frames = agent.frames
        answered = next(i for i, f in enumerate(frames) if f.get("id") == 1)
        assert "result" in frames[answered], frames[answered]
        updates = [f["params"]["update"] for f in frames[answered + 1 :] if "method" in f]
        return [u["sessionUpdate"] for u in updates]

    new = {"cwd": str(project), "mcpServers": []}
    assert "available_commands_update" in await commands_after("session/new", new)
    assert "available_commands_update" in await commands_after("session/new", new)  # cached
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "hello")
    load = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
    assert "available_commands_update" in await commands_after("session/load", load)


async def test_a_session_closed_and_loaded_again_is_sent_its_commands_again(
    home: Path, project: Path
) -> None:
    """`session/close` ends the client's view of a session: loading it again in the same
    process is a new view, which needs the slash commands like any other."""
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        assert (await agent.request("session/close", {"sessionId": sid}))["result"] == {}
        before = len(agent.frames)
        load = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
        assert "result" in await agent.request("session/load", load)
        await agent.prompt(sid, "hello")  # the commands come by the end of a turn at the latest
        updates = [f["params"]["update"]["sessionUpdate"] for f in agent.frames[before:]
                   if f.get("method") == "session/update"]  # fmt: skip
    assert "available_commands_update" in updates


async def test_a_session_closed_during_its_turn_is_forgotten_and_loaded_again_gets_commands(
    home: Path, project: Path
) -> None:
    """The last commands sent to each session are kept only while it is open: a session closed
    while its turn runs gets no `available_commands_update` from that turn's end (it is
    closed), and loaded again it is a new view that gets its commands, as after any load."""
    slow = slow_script(home / "slow.json")
    async with spawn_agent(home, "--script", str(slow)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        turn = await agent.start_turn(sid)
        closing = len(agent.frames)
        close = await agent.request("session/close", {"sessionId": sid})
        assert close["result"] == {}
        assert (await agent.until_response(turn))["result"] == {"stopReason": "cancelled"}
        after_close = [f["params"]["update"]["sessionUpdate"] for f in agent.frames[closing:]
                       if f.get("method") == "session/update"]  # fmt: skip
        assert "available_commands_update" not in after_close
        loading = len(agent.frames)
        load = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
        assert "result" in await agent.request("session/load", load)
        # a slash command asks no model; by its answer the commands have come at the latest
        assert "result" in await agent.prompt(sid, "/help")
        updates = [f["params"]["update"]["sessionUpdate"] for f in agent.frames[loading:]
                   if f.get("method") == "session/update"]  # fmt: skip
    assert "available_commands_update" in updates
