"""The first `session/new` answered before the engine loads (fast_session.py): the same answer
the engine gives, a session that works, and the normal path whenever anything differs."""

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

pytestmark = [pytest.mark.cold_start, pytest.mark.slow]  # the agent is the process spawned

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}


def _run(home: Path, frames: list[dict[str, Any]], *args: str, **env: str) -> list[dict[str, Any]]:
    full_env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO), **env}
    done = subprocess.run(
        [sys.executable, "-m", "tether", "acp", *args],
        input=b"".join(json.dumps(f).encode() + b"\n" for f in frames),
        capture_output=True,
        env=full_env,
        timeout=30,
        check=True,
    )
    out = [json.loads(line) for line in done.stdout.splitlines()]
    for frame in out:
        validate_agent_frame(frame, method="session/new" if frame.get("id") == 1 else None)
    return out


def _new(cwd: Path, **extra: Any) -> dict[str, Any]:
    params = {"cwd": str(cwd), "mcpServers": [], **extra}
    return {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": params}


def _fast(home: Path) -> int:
    log = (home / "logs" / "tether.log").read_text()
    return log.count("before the engine loaded")


def _answer(out: list[dict[str, Any]]) -> dict[str, Any]:
    result = dict(next(f for f in out if f.get("id") == 1)["result"])
    result.pop("sessionId")
    return result


def test_the_second_start_answers_the_same_before_the_engine(home: Path, project: Path) -> None:
    slow = _run(home, [INIT, _new(project)])
    assert _fast(home) == 0 and (home / "cache" / "new-session.json").exists()
    fast = _run(home, [INIT, _new(project)])
    assert _fast(home) == 1
    assert _answer(fast) == _answer(slow)
    sid = next(f for f in fast if f.get("id") == 1)["result"]["sessionId"]
    after = [f for f in fast if f.get("method") == "session/update"]
    assert after[0]["params"]["update"]["sessionUpdate"] == "available_commands_update"
    assert fast.index(after[0]) > fast.index(next(f for f in fast if f.get("id") == 1))
    load = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
    loaded = _run(
        home, [INIT, {"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": load}]
    )
    assert "result" in next(f for f in loaded if f.get("id") == 2)  # stored, though unlisted


def test_a_prompt_right_after_a_fast_session_runs(
    home: Path, project: Path, tmp_path: Path
) -> None:
    path = script(tmp_path / "s.json", [[{"text": "hello"}]])
    _run(home, [INIT, _new(project)], "--script", str(path))
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "acp", "--script", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INIT).encode() + b"\n" + json.dumps(_new(project)).encode() + b"\n")
    proc.stdin.flush()
    frames = [json.loads(proc.stdout.readline()) for _ in range(2)]
    sid = frames[1]["result"]["sessionId"]
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    request = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt}
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    rest: list[dict[str, Any]] = []
    while not any(f.get("id") == 2 for f in rest):
        rest.append(json.loads(proc.stdout.readline()))
    proc.stdin.close()
    proc.stdout.close()
    assert proc.wait(timeout=30) == 0
    assert next(f for f in rest if f.get("id") == 2)["result"] == {"stopReason": "end_turn"}
    assert _fast(home) == 1


def test_anything_different_takes_the_normal_path(home: Path, project: Path) -> None:
    _run(home, [INIT, _new(project)])
    server = {"name": "s", "command": "/bin/true", "args": [], "env": []}
    _run(home, [INIT, _new(project, mcpServers=[server])])
    _run(home, [INIT, _new(project, additionalDirectories=[str(project)])])
    _run(home, [INIT, _new(Path("relative"))])
    changed = _run(home, [INIT, _new(project)], TETHER_MODEL="demo:nope")
    assert _fast(home) == 0  # a new key: the answer is computed again (and cached)
    assert "result" in changed[-1] or any("result" in f for f in changed)
    _run(home, [INIT, _new(project)], TETHER_MODEL="demo:nope")
    assert _fast(home) == 1


def test_a_broken_cache_file_is_the_normal_path(home: Path, project: Path) -> None:
    _run(home, [INIT, _new(project)])
    cache = home / "cache" / "new-session.json"
    for garbage in ("{not json", "[]", '{"key": 1}', ""):
        cache.write_text(garbage)
        out = _run(home, [INIT, _new(project)])
        assert "sessionId" in next(f for f in out if f.get("id") == 1)["result"]
    assert _fast(home) == 0


def test_a_first_frame_that_is_not_an_object_gets_an_error_not_a_crash(
    home: Path, project: Path
) -> None:
    """A cached answer exists, and the frame after initialize merely mentions session/new (an
    array, a string): it is answered as bad input by the normal path; tether keeps serving."""
    _run(home, [INIT, _new(project)])
    full_env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    for odd in (b'["session/new"]', b'"session/new"', b'[{"method": "session/new"}]'):
        listed = {"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}}
        done = subprocess.run(
            [sys.executable, "-m", "tether", "acp"],
            input=json.dumps(INIT).encode()
            + b"\n"
            + odd
            + b"\n"
            + json.dumps(listed).encode()
            + b"\n",
            capture_output=True,
            env=full_env,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr.decode()
        out = [json.loads(line) for line in done.stdout.splitlines()]
        for frame in out:
            validate_agent_frame(frame)
        assert any(f.get("error", {}).get("code") == -32600 for f in out)
        assert "result" in next(f for f in out if f.get("id") == 3)
