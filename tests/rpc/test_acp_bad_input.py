"""Bad input is normal input: each gets a clear JSON-RPC error and the server keeps serving."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.support.harness import AgentProcess, script, slow_script, spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _still_serving(agent: AgentProcess) -> None:
    resp = await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert resp["result"]["protocolVersion"] == 1


async def test_malformed_json_gets_parse_error(home: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.send_raw(b'{"jsonrpc":"2.0","id":1,"method":\n')
        frame = await agent.recv()
        assert frame["id"] is None and frame["error"]["code"] == -32700
        await _still_serving(agent)


async def test_batch_array_is_an_invalid_request(home: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.send_raw(b'[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]\n')
        frame = await agent.recv()
        assert frame["id"] is None and frame["error"]["code"] == -32600
        assert "batch" in frame["error"]["message"]
        await _still_serving(agent)


async def test_not_a_request(home: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.send({"jsonrpc": "2.0", "id": 7})
        frame = await agent.recv()
        assert frame["id"] == 7 and frame["error"]["code"] == -32600
        await agent.send({"jsonrpc": "1.0", "id": 8, "method": "initialize", "params": {}})
        frame = await agent.recv()
        assert frame["id"] == 8 and frame["error"]["code"] == -32600
        await _still_serving(agent)


async def test_unknown_methods(home: Path) -> None:
    async with spawn_agent(home) as agent:
        resp = await agent.request("session/teleport", {})
        assert resp["error"]["code"] == -32601 and "session/teleport" in resp["error"]["message"]
        resp = await agent.request("_vendor/thing", {"x": 1})
        assert resp["error"]["code"] == -32601
        await agent.notify("_vendor/ping", {})
        await agent.notify("session/unknown_notification", {})
        await _still_serving(agent)
        assert (
            len(agent.frames) == 3
        )  # the two errors and one initialize answer: no reply to notifications


async def test_wrong_param_types_name_the_field(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        resp = await agent.request("initialize", {"protocolVersion": "one"})
        assert resp["error"]["code"] == -32602 and "protocolVersion" in resp["error"]["message"]
        await agent.initialize()
        resp = await agent.request("session/new", {"cwd": str(project)})
        assert resp["error"]["code"] == -32602 and "mcpServers" in resp["error"]["message"]
        resp = await agent.request("session/new", {"cwd": "relative/dir", "mcpServers": []})
        assert resp["error"]["code"] == -32602 and "absolute" in resp["error"]["message"]
        sid = await agent.new_session(project)
        resp = await agent.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "video"}]}
        )
        assert resp["error"]["code"] == -32602 and "prompt[0]" in resp["error"]["message"]
        image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        resp = await agent.request("session/prompt", {"sessionId": sid, "prompt": [image]})
        assert resp["error"]["code"] == -32602
        assert "the model demo does not accept images" in resp["error"]["message"]
        audio = {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
        resp = await agent.request("session/prompt", {"sessionId": sid, "prompt": [audio]})
        assert resp["error"]["code"] == -32602 and "audio" in resp["error"]["message"]


async def test_requests_before_initialize_are_refused(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        resp = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
        assert resp["error"]["code"] == -32600 and "initialize" in resp["error"]["message"]


async def test_unknown_session_id(home: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        resp = await agent.prompt("sess_nope", "hi")
        assert resp["error"]["code"] == -32002
        assert resp["error"]["data"] == {"sessionId": "sess_nope"}
        await agent.notify("session/cancel", {"sessionId": "sess_nope"})
        await _still_serving(agent)


async def test_embedded_resources_and_links_are_accepted(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        prompt = [
            {"type": "text", "text": "look"},
            {"type": "resource_link", "uri": "file:///x.py", "name": "x.py"},
            {"type": "resource", "resource": {"uri": "file:///y.py", "text": "print(1)"}},
        ]
        resp = await agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
        assert resp["result"]["stopReason"] == "end_turn"


async def test_oversized_frame_is_refused_cleanly(home: Path) -> None:
    async with spawn_agent(home, "--max-frame-bytes", "4096") as agent:
        await agent.send_raw(
            b'{"jsonrpc":"2.0","id":1,"method":"x","params":"' + b"a" * 10000 + b'"}\n'
        )
        frame = await agent.recv()
        assert frame["id"] is None and frame["error"]["code"] == -32600
        assert "exceeds" in frame["error"]["message"]
        await _still_serving(agent)


async def test_prompt_while_a_turn_runs_is_refused(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home, "--script", str(slow_script(tmp_path / "s.json"))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        first = await agent.start_turn(sid)
        second = await agent.prompt(sid, "b")
        assert second["error"]["code"] == -32001 and "already running" in second["error"]["message"]
        await agent.notify("session/cancel", {"sessionId": sid})
        done = await agent.until_response(first)
        assert done["result"] == {"stopReason": "cancelled"}


async def test_cancel_when_idle_is_harmless(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.notify("session/cancel", {"sessionId": sid})
        resp = await agent.prompt(sid, "hi")
        assert resp["result"]["stopReason"] == "end_turn"


async def test_stdin_closed_mid_turn_exits_cleanly(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home, "--script", str(slow_script(tmp_path / "s.json"))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.start_turn(sid)
        start = anyio.current_time()
        await agent.close_input()
        await agent.drain()
        assert await agent.wait_exit(timeout=5) == 0
        assert anyio.current_time() - start < 2.0
    # The user message was committed before the model answered: nothing is lost.
    async with spawn_agent(home) as again:
        await again.initialize()
        listed = await again.request("session/list", {})
        assert [s["sessionId"] for s in listed["result"]["sessions"]] == [sid]


async def test_cancel_request_cancels_a_running_prompt(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with spawn_agent(home, "--script", str(slow_script(tmp_path / "s.json"))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        rid = await agent.start_turn(sid)
        await agent.notify("$/cancel_request", {"requestId": rid})
        resp = await agent.until_response(rid)
        assert resp["error"]["code"] == -32800


async def test_provider_error_is_a_clear_rpc_error(
    home: Path, project: Path, tmp_path: Path
) -> None:
    failing = script(
        tmp_path / "fail.json",
        [[{"error": {"message": "HTTP 401: invalid api key", "status": 401}}]],
    )
    async with spawn_agent(home, "--script", str(failing)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "hi")
        assert resp["error"]["code"] == -32010
        assert resp["error"]["message"] == "The model provider failed: HTTP 401: invalid api key"
        await _still_serving(agent)
