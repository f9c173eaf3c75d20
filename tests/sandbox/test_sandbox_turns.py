"""The sandbox as a user meets it through `tether acp`: in `code` mode a test run that writes
its cache in the project works unasked; writing to the home directory is refused by the sandbox
and the result says so; the session's network option opens and shuts the network (judged by a
loopback server that sees the request or not); the official Python SDK drives a confined turn;
`tether doctor` and `/status` name the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, Implementation

from tests.editors.test_python_sdk_client import SdkClient
from tests.support.harness import REPO, script, spawn_agent
from tests.support.sandbox_world import World, git, world
from tests.support.stored import tool_results

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform != "linux", reason="the Linux sandbox"),
]


def _run(cid: str, *argv: str, **more: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": "run_argv", "arguments": {"argv": list(argv), **more}}}


@pytest.fixture
def w() -> Iterator[World]:
    with world() as made:
        yield made


async def test_pytest_runs_unasked_and_home_writes_are_refused(w: World) -> None:
    tests = w.project / "tests"
    tests.mkdir()
    (tests / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    git(w.project, "add", "tests")
    git(w.project, "commit", "-q", "-m", "tests")
    target = w.home / "x"
    rounds = [
        [_run("t1", sys.executable, "-m", "pytest", "-q", "tests")],
        [_run("t2", "touch", str(target))],
        [{"text": "done"}],
    ]
    path = script(w.root / "s.json", rounds)
    async with spawn_agent(w.tether_home, "--script", str(path), env=w.env()) as agent:
        agent.permission_choice = "reject_once"  # nothing may need asking
        await agent.initialize(terminal=False)
        sid = await agent.new_session(w.project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        assert (await agent.prompt(sid, "test", timeout=60))["result"]["stopReason"] == "end_turn"
        asked = [f for f in agent.frames if f.get("method") == "session/request_permission"]
    assert asked == []
    ran, refused = tool_results(w.tether_home, sid)
    assert ran.startswith("[approval] mode (code)\nexit code 0") and "1 passed" in ran
    assert list(w.project.rglob(".pytest_cache/v/cache/nodeids"))  # its cache, in the project
    assert "Read-only file system" in refused and "[sandbox] this command ran confined" in refused
    assert "unconfined=true" in refused
    assert not target.exists()


class _Seen(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        _Seen.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the network")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Seen)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Seen.hits.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_the_network_option_opens_and_shuts_the_network(w: World, http_server: str) -> None:
    fetch = [
        sys.executable,
        "-c",
        f"import urllib.request as u; print(u.urlopen('{http_server}/' + __import__('sys').argv[1]).read())",
    ]
    rounds = [
        [_run("n1", *fetch, "shut")],
        [{"text": "one"}],
        [_run("n2", *fetch, "open")],
        [{"text": "two"}],
    ]
    path = script(w.root / "s.json", rounds)
    async with spawn_agent(w.tether_home, "--script", str(path), env=w.env()) as agent:
        await agent.initialize(terminal=False)
        sid = await agent.new_session(w.project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        await agent.prompt(sid, "off")
        resp = await agent.request(
            "session/set_config_option", {"sessionId": sid, "configId": "network", "value": "on"}
        )
        [option] = [o for o in resp["result"]["configOptions"] if o["id"] == "network"]
        assert option["currentValue"] == "on"
        await agent.prompt(sid, "on")
    assert _Seen.hits == ["/open"]  # the first request never reached the server
    shut, opened = tool_results(w.tether_home, sid)
    assert "[sandbox]" in shut and "opens no network connection" in shut
    assert "hello from the network" in opened


async def test_status_and_doctor_name_the_sandbox(w: World) -> None:
    async with spawn_agent(
        w.tether_home, "--script", str(script(w.root / "s.json", [])), env=w.env()
    ) as agent:
        await agent.initialize()
        sid = await agent.new_session(w.project)
        await agent.prompt(sid, "/status")
        said = "".join(
            u["content"]["text"]
            for u in agent.updates(sid)
            if u["sessionUpdate"] == "agent_message_chunk"
        )
    assert "- Sandbox: **bubblewrap**: bubblewrap " in said
    assert "- Network for confined commands: **off**" in said


def test_doctor_names_the_sandbox(w: World) -> None:
    env = {**os.environ, **w.env(), "PYTHONPATH": str(REPO)}
    text = subprocess.run(
        [sys.executable, "-m", "tether", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    ).stdout
    assert "sandbox (what confines the commands tether runs)\n  bubblewrap: bubblewrap" in text
    report = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tether", "doctor", "--json"],
            capture_output=True,
            text=True,
            env={**env, "TETHER_SANDBOX": "none"},
            check=False,
        ).stdout
    )
    assert report["sandbox"]["mechanism"] == "none" and report["sandbox"]["why"] == "turned off"
    assert any("no sandbox confines commands" in warning for warning in report["warnings"])


async def test_the_python_sdk_drives_a_confined_turn(w: World) -> None:
    """A client nobody here wrote: its `code`-mode turn runs confined, and the effect is absent."""
    outside = w.outside / "from-the-sdk"
    rounds = [[_run("s1", "touch", str(outside), "made-by-sdk.txt")], [{"text": "done"}]]
    path = script(w.root / "s.json", rounds)
    client = SdkClient()
    env = {**os.environ, **w.env(), "PYTHONPATH": str(REPO)}
    async with spawn_agent_process(
        client,  # pyright: ignore[reportArgumentType]  # structurally a Client
        sys.executable,
        "-m",
        "tether",
        "acp",
        "--script",
        str(path),
        env=env,
        cwd=REPO,
        transport_kwargs={"stderr": None},
    ) as (conn, _proc):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="sdk-test", version="0"),
        )
        session = await conn.new_session(cwd=str(w.project), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="code")
        resp = await conn.prompt(session_id=session.session_id, prompt=[text_block("touch")])
        assert resp.stop_reason == "end_turn"
    assert client.permissions == []  # code mode, confined: nobody was asked
    assert (w.project / "made-by-sdk.txt").exists() and not outside.exists()
