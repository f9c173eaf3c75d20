"""Input that ends right after the requests: everything already received is answered (a running
turn ends `cancelled`), then the agent exits. Scripts and headless harnesses rely on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_schema import validate_agent_frame
from tests.support.harness import REPO, script

pytestmark = pytest.mark.slow

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def _run(home: Path, frames: list[Any], *args: str) -> list[dict[str, Any]]:
    """Pipe the frames into `tether acp`, close its input, and read every frame it writes."""
    data = b"".join((f if isinstance(f, bytes) else json.dumps(f).encode()) + b"\n" for f in frames)
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "tether", "acp", *args],
        input=data,
        capture_output=True,
        env=env,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    out = [json.loads(line) for line in done.stdout.splitlines()]
    for frame in out:
        validate_agent_frame(frame)
    return out


def _answers(frames: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {f["id"]: f for f in frames if "method" not in f}


def test_every_request_sent_before_the_end_is_answered(home: Path, project: Path) -> None:
    new = {"cwd": str(project), "mcpServers": []}
    out = _run(
        home,
        [
            INIT,
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new},
            {"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}},
        ],
    )
    answers = _answers(out)
    assert set(answers) == {1, 2, 3}
    assert "sessionId" in answers[2]["result"]
    assert answers[3]["result"]["sessions"] == []  # nothing said yet: not listed


def test_a_lone_bad_frame_is_answered(home: Path) -> None:
    [answer] = _run(home, [b"{}"])
    assert answer["id"] is None and answer["error"]["code"] == -32600


def test_a_turn_running_at_the_end_answers_cancelled(
    home: Path, project: Path, tmp_path: Path
) -> None:
    slow = script(tmp_path / "slow.json", [[{"text": "working"}, {"delay": 60}]])
    new = {"cwd": str(project), "mcpServers": []}
    frames: list[Any] = [INIT, {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new}]
    out = _run_interleaved(home, frames, "--script", str(slow))
    assert _answers(out)[3]["result"] == {"stopReason": "cancelled"}


def _run_interleaved(home: Path, frames: list[Any], *args: str) -> list[dict[str, Any]]:
    """Send the frames, wait for session/new's answer, send a prompt for that session, then
    end the input immediately."""
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "acp", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
    proc.stdin.flush()
    out: list[dict[str, Any]] = []
    while not any(f.get("id") == 2 for f in out):
        out.append(json.loads(proc.stdout.readline()))
    session_id = next(f for f in out if f.get("id") == 2)["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    request = {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt}
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.close()  # the input ends right after the prompt
    out += [json.loads(line) for line in proc.stdout.read().splitlines()]
    proc.stdout.close()
    assert proc.wait(timeout=30) == 0
    for frame in out:
        validate_agent_frame(frame)
    return out


def test_empty_params_sent_as_an_array_are_an_empty_object(home: Path) -> None:
    """Neovim's vim.json encodes an empty Lua table as `[]`."""
    out = _run(home, [INIT, {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": []}])
    assert _answers(out)[2]["result"] == {"sessions": []}
