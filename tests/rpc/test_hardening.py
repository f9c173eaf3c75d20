"""Nothing a client, a file or a burst can do takes the agent down (the defects an adversarial
review found, each a regression test on real pipes and real files)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.support.harness import REPO, AgentProcess, script, spawn_agent
from tests.support.stored import tool_results
from tether.engine.local.private_files import DAY
from tether.errors import ConfigError

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
INIT = {"protocolVersion": 1, "clientCapabilities": {}}


def _deep(depth: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":9,"method":"initialize","params":'
        + b"[" * depth
        + b"]" * depth
        + b"}"
    )


async def _send_body(agent: AgentProcess, body: bytes) -> None:
    if agent.framing == "content-length":
        await agent.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    else:
        await agent.send_raw(body + b"\n")


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
async def test_deeply_nested_json_is_refused_first_or_later(home: Path, framing: str) -> None:
    async with spawn_agent(home, framing=framing) as agent:
        await _send_body(agent, _deep(1000))  # the first frame: the fast initialize path
        answer = await agent.recv()
        assert answer["id"] is None and answer["error"]["code"] == -32600
        assert "nested deeper" in answer["error"]["message"]
        assert "result" in await agent.request("initialize", INIT)
        await _send_body(agent, _deep(5000))  # a later frame: the peer
        answer = await agent.recv()
        assert answer["error"]["code"] == -32600
        assert "result" in await agent.request("initialize", INIT)


async def test_content_length_mistakes_do_not_desync_the_connection(home: Path) -> None:
    async with spawn_agent(home, framing="content-length") as agent:
        await agent.request("initialize", INIT)
        body = json.dumps({"jsonrpc": "2.0", "id": 50, "method": "session/list"}).encode()
        await agent.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body) - 1, body))
        assert (await agent.recv())["error"]["code"] == -32700  # the truncated body
        assert "result" in await agent.request("session/list", {})
        await agent.send_raw(b"Content-Length: 99999999999\r\n\r\n")
        assert (await agent.recv())["error"]["code"] == -32600  # over the cap
        assert "result" in await agent.request("session/list", {})
        body = json.dumps({"jsonrpc": "2.0", "id": 51, "method": "session/list"}).encode()
        await agent.send_raw(b"Content-Length: %d\n\n%s" % (len(body), body))  # LF-only
        assert (await agent.recv())["id"] == 51


def _write_then_text(tmp_path: Path) -> Path:
    write = {"tool_call": {"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}}
    return script(tmp_path / "s.json", [[write], [{"text": "carrying on"}]])


@pytest.mark.parametrize(
    "answer",
    [
        {"error": {"code": -32601, "message": "Method not found"}},
        {"result": {"outcome": "yes"}},
        {"result": {"outcome": {"outcome": "selected", "optionId": "never-offered"}}},
    ],
    ids=["error", "malformed", "unknown-option"],
)
async def test_an_odd_permission_answer_allows_nothing_and_the_turn_goes_on(
    home: Path, project: Path, tmp_path: Path, answer: dict[str, Any]
) -> None:
    async with spawn_agent(home, "--script", str(_write_then_text(tmp_path))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        rid = await agent.start_request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        )
        while True:
            frame = await agent.recv()
            if frame.get("method") == "session/request_permission":
                await agent.send({"jsonrpc": "2.0", "id": frame["id"], **answer})
                break
        resp = await agent.until_response(rid)
        assert resp["result"] == {"stopReason": "end_turn"}
    assert not (project / "x.txt").exists()
    assert tool_results(home, sid) == ["error [REJECTED]: prompt cancelled"]


def _rss_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc for RSS")
@pytest.mark.cold_start  # the memory measured is the spawned process's
def test_a_burst_of_requests_keeps_memory_flat(home: Path) -> None:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "acp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT}
    warm = {"jsonrpc": "2.0", "id": "warm", "method": "session/list", "params": {}}
    proc.stdin.write(json.dumps(init).encode() + b"\n" + json.dumps(warm).encode() + b"\n")
    proc.stdin.flush()
    while b'"warm"' not in proc.stdout.readline():
        pass
    idle = _rss_kb(proc.pid, "VmRSS")
    n = 20_000
    burst = b"".join(
        b'{"jsonrpc":"2.0","id":%d,"method":"session/list","params":{}}\n' % i for i in range(n)
    )
    stdin = proc.stdin
    writer = threading.Thread(target=lambda: (stdin.write(burst), stdin.flush()))
    writer.start()
    answered = 0
    while answered < n:
        line = proc.stdout.readline()
        assert line, "the agent stopped before answering the burst"
        answered += 1
    writer.join()
    peak = _rss_kb(proc.pid, "VmHWM")  # while it still runs: the high-water mark of the burst
    stdin.close()
    assert proc.stdout.read() == b""
    proc.stdout.close()
    assert proc.wait(timeout=30) == 0
    assert peak < 2 * idle, f"peak RSS {peak} kB against {idle} kB idle"


def test_private_data_is_private_whatever_the_umask(tmp_path: Path) -> None:
    home = tmp_path / "home"
    old = home / "spill" / "sess_old"
    old.mkdir(parents=True)
    (old / "result.txt").write_text("stale")
    past = time.time() - 8 * DAY
    os.utime(old / "result.txt", (past, past))
    os.utime(old, (past, past))
    fresh = home / "spill" / "sess_new"
    fresh.mkdir()
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        },
    ]
    done = subprocess.run(
        [sys.executable, "-m", "tether", "acp"],
        input=b"".join(json.dumps(f).encode() + b"\n" for f in frames),
        capture_output=True,
        env=env,
        umask=0,
        timeout=30,
        check=True,
    )
    assert len(done.stdout.splitlines()) >= 2
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("tether.db", "tether.db-wal"):
        path = home / name
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    assert stat.S_IMODE((home / "spill").stat().st_mode) == 0o700
    assert not old.exists() and fresh.exists()  # spill older than 7 days expires


async def test_initialize_off_the_fast_path_checks_the_version(home: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.request("initialize", INIT)
        for version in (-1, 10**11, "1"):
            resp = await agent.request("initialize", {"protocolVersion": version})
            assert resp["error"]["code"] == -32602, version
        assert (await agent.request("initialize", {"protocolVersion": 0}))["result"][
            "protocolVersion"
        ] == 1  # an older version is negotiated up, as ACP says


@pytest.mark.parametrize(
    "server",
    [
        {"name": "s", "command": "/bin/x", "args": "not a list", "env": []},
        {"name": "s", "command": 5, "args": [], "env": []},
        {"name": "s", "command": "/bin/x", "args": [], "env": [{"name": "A"}]},
        {"type": "http", "name": "h", "url": "http://x", "headers": {}},
    ],
)
async def test_mcp_servers_are_checked_field_by_field(
    home: Path, project: Path, server: dict[str, Any]
) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        resp = await agent.request("session/new", {"cwd": str(project), "mcpServers": [server]})
        assert resp["error"]["code"] == -32602
        assert "$.mcpServers[0]" in resp["error"]["message"]


async def test_an_empty_prompt_is_refused(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.request("session/prompt", {"sessionId": sid, "prompt": []})
        assert resp["error"]["code"] == -32602


async def test_in_code_mode_a_file_created_and_replaced_in_one_round_asks(
    home: Path, project: Path, tmp_path: Path
) -> None:
    first = {
        "tool_call": {
            "id": "a",
            "name": "write_file",
            "arguments": {"path": "n.txt", "content": "1"},
        }
    }
    again = {
        "tool_call": {
            "id": "b",
            "name": "write_file",
            "arguments": {"path": "n.txt", "content": "2", "overwrite": True},
        }
    }
    path = script(tmp_path / "s.json", [[first, again], [{"text": "ok"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        agent.permission_choice = "reject_once"
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        await agent.prompt(sid, "go")
        [req] = [f for f in agent.frames if f.get("method") == "session/request_permission"]
        assert req["params"]["toolCall"]["toolCallId"] == "b"
    assert (project / "n.txt").read_text() == "1"


async def test_a_prompt_is_stored_once(home: Path, project: Path, tmp_path: Path) -> None:
    big = "lorem ipsum " * 100_000  # 1.2 MB
    path = script(tmp_path / "s.json", [[{"text": "ok"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, big, timeout=30)
    db = apsw.Connection(str(home / "tether.db"))
    try:
        [(events,)] = db.execute(
            "SELECT SUM(LENGTH(body)) FROM events WHERE session_id=?", (sid,)
        ).fetchall()
        [(messages,)] = db.execute(
            "SELECT SUM(LENGTH(body)) FROM messages WHERE session_id=?", (sid,)
        ).fetchall()
    finally:
        db.close()
    assert isinstance(messages, int) and isinstance(events, int)
    assert messages > len(big) and events < 10_000
    from tether.engine.events import UserPrompted
    from tether.engine.sessions.store import Store

    store = Store(home / "tether.db")
    replayed = await store.events(sid)
    await store.close()
    prompt = next(e for e in replayed if isinstance(e, UserPrompted))
    assert prompt.parts[0].text == big  # type: ignore[union-attr]


def test_the_config_file_sets_how_long_spill_files_stay(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = tmp_path / "config.toml"
    config.write_text("[workspace]\nspill_days = 1\n")
    ages = {"two_days": 2.0, "half_a_day": 0.5}
    for name, days in ages.items():
        d = home / "spill" / name
        d.mkdir(parents=True)
        past = time.time() - days * DAY
        os.utime(d, (past, past))
    env = {
        **os.environ,
        "TETHER_HOME": str(home),
        "PYTHONPATH": str(REPO),
        "TETHER_CONFIG": str(config),
    }
    env.pop("TETHER_SPILL_DAYS", None)
    first = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
    list_ = {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}
    subprocess.run(
        [sys.executable, "-m", "tether", "acp"],
        input=b"".join(json.dumps(f).encode() + b"\n" for f in (first, list_)),
        capture_output=True,
        env=env,
        timeout=30,
        check=True,
    )
    assert not (home / "spill" / "two_days").exists()
    assert (home / "spill" / "half_a_day").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text("[workspace]\nspill_days = -3\n")
    from tether.engine.config.file import parse_config

    with pytest.raises(ConfigError, match=r":2: workspace.spill_days"):
        parse_config(bad.read_text(), bad)
