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

from tests.harness import REPO
from tether.rpc.startup import LOADED_AFTER_INITIALIZE

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
