"""What a warm start costs in memory, against a cold one, once a session has run a turn: the
launcher that stands in for the worker holds nothing of Python (a shell), and the worker keeps
only the pages it changed of what its server loaded (PSS/USS from /proc/PID/smaps_rollup)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.harness import script
from tests.support.warm import INIT_LINE, Warm, worker_of

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="warm starts are Linux-only"),
    pytest.mark.slow,
]

LAUNCHER_MB = 1.0  # a shell waiting on a socket
# Of a cold start's own memory. 0.6 while a cold start loaded every tool module; deferred tools
# (issue 31) cut a cold start's own from about 30 MB to 24 MB while a worker stayed at 14 MB.
WORKER_SHARE = 0.65


def _own_mb(pid: int) -> float:
    """The memory only this process holds (USS: its private pages), in MB."""
    found = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith(("Private_Clean:", "Private_Dirty:")):
            found += int(line.split()[1])
    return found / 1024


@contextmanager
def _after_a_turn(env: dict[str, str], project: Path, turn: Path) -> Iterator[int]:
    """A `tether acp` whose session has run one scripted turn; its pid."""
    command = [sys.executable, "-m", "tether", "acp", "--script", str(turn)]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, stdin=pipe, stdout=pipe, env=env) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        new = {"cwd": str(project), "mcpServers": []}
        proc.stdin.write(INIT_LINE + _line(1, "session/new", new))
        proc.stdin.flush()
        sid = _result(proc, 1)["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        proc.stdin.write(_line(2, "session/prompt", prompt))
        proc.stdin.flush()
        assert _result(proc, 2) == {"stopReason": "end_turn"}
        try:
            yield proc.pid
        finally:
            proc.stdin.close()
            assert proc.wait(timeout=30) == 0


def _line(rid: int, method: str, params: object) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        + b"\n"
    )


def _result(proc: subprocess.Popen[bytes], rid: int) -> dict[str, object]:
    assert proc.stdout is not None
    for line in proc.stdout:
        frame = json.loads(line)
        if frame.get("id") == rid and "method" not in frame:
            return frame["result"]
    raise AssertionError(f"no answer to {rid}")


def test_a_warm_client_costs_a_fraction_of_a_cold_one(
    shared_warm: Warm, home: Path, project: Path, tmp_path: Path
) -> None:
    turn = script(tmp_path / "turn.json", [[{"text": "done"}]])
    server = shared_warm.start(home)
    env = {**os.environ, "TETHER_HOME": str(home), **shared_warm.env}
    with _after_a_turn(env, project, turn) as launcher:
        worker = worker_of(launcher, server)
        stand_in, kept = _own_mb(launcher), _own_mb(worker)
    with _after_a_turn({**env, "TETHER_WARM": "0"}, project, turn) as cold_start:
        cold = _own_mb(cold_start)
    assert stand_in <= LAUNCHER_MB, f"the launcher holds {stand_in:.1f} MB"
    assert kept <= WORKER_SHARE * cold, f"the worker holds {kept:.1f} MB, a cold start {cold:.1f}"
