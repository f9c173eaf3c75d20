"""A warm server of a test's own (tether/warm/fork_server.py): its directory, started by a first
`tether acp` as a user's first start does, stopped at the end; and reading the process tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_schema import validate_agent_frame
from tests.support.harness import REPO
from tether.warm.control import stop_servers

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
INIT_LINE = json.dumps(INIT).encode() + b"\n"


class Warm:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.env = {"TETHER_WARM": "1", "TETHER_WARM_DIR": str(base), "PYTHONPATH": str(REPO)}

    def launch(
        self, home: Path, data: bytes = b"", **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        """`tether acp` run to its end on `data`."""
        full = {**os.environ, "TETHER_HOME": str(home), **self.env, **env}
        command = [sys.executable, "-m", "tether", "acp"]
        return subprocess.run(
            command, input=data, capture_output=True, env=full, cwd=REPO, timeout=60
        )

    @contextmanager
    def initialized(
        self, home: Path, preexec_fn: Callable[[], None] | None = None, **env: str
    ) -> Iterator[subprocess.Popen[bytes]]:
        """A `tether acp` whose `initialize` was answered (checked against the schema), its
        input still open."""
        full = {**os.environ, "TETHER_HOME": str(home), **self.env, **env}
        command = [sys.executable, "-m", "tether", "acp"]
        pipe = subprocess.PIPE
        with subprocess.Popen(
            command, stdin=pipe, stdout=pipe, env=full, preexec_fn=preexec_fn
        ) as p:
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write(INIT_LINE)
            p.stdin.flush()
            answer = json.loads(p.stdout.readline())
            validate_agent_frame(answer, method="initialize")
            yield p

    def server(self, timeout: float = 60) -> int:
        """The running server's pid, waiting for it to listen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = list(self.base.glob("*.pid"))
            if pids and list(self.base.glob("*.sock")):
                text = pids[0].read_text().strip()
                if text:
                    return int(text)
            time.sleep(0.05)
        found = sorted(p.name for p in self.base.iterdir())
        raise AssertionError(f"no warm server listens in {self.base}: {found}")

    def start(self, home: Path) -> int:
        """The server, started by a first launch unless one already listens."""
        running = self.running()
        if running is not None:
            return running
        assert self.launch(home).returncode == 0
        return self.server()

    def running(self) -> int | None:
        for pid_file in self.base.glob("*.pid"):
            text = pid_file.read_text().strip()
            if text and alive(int(text)) and list(self.base.glob("*.sock")):
                return int(text)
        return None


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    """A warm server of the test's own (one it may retire, idle out or refuse)."""
    base = tmp_path / "warm"
    base.mkdir(mode=0o700)
    yield Warm(base)
    stop_servers(str(base), wait=30)


@pytest.fixture(scope="session")
def shared_warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warm]:
    """One warm server for the tests that only use it (each starting one costs a second)."""
    base = tmp_path_factory.mktemp("warm-shared")
    base.chmod(0o700)
    yield Warm(base)
    stop_servers(str(base), wait=30)


def answered_initialize(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    """The one frame a launch fed only `initialize` wrote, checked against the schema; the
    launch exited 0."""
    assert done.returncode == 0, done.stderr[-2000:]
    [line] = done.stdout.splitlines()
    answer = json.loads(line)
    validate_agent_frame(answer, method="initialize")
    assert answer["id"] == 0
    return answer


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def worker_of(launcher: int, server: int, timeout: float = 10) -> int:
    """The worker serving `launcher`: the server's child that holds the launcher's stdout (its
    stdin becomes the server's socket once it has handed over)."""
    want = os.readlink(f"/proc/{launcher}/fd/1")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in children(server):
            try:
                if _holds(pid, want):
                    return pid
            except OSError:
                continue
        time.sleep(0.02)
    raise AssertionError("no worker of the server holds the launcher's stdout")


def _holds(pid: int, target: str) -> bool:
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) == target:
                return True
        except OSError:
            continue
    return False
