"""A warm server's life, judged by its effects: it is stopped by a request over its socket (never
by a signal to whatever pid a file names), a SIGTERM retires it with its files removed, a
launcher killed with SIGKILL is seen dead only once its worker (and what it ran, and every
connection it held) is gone, and one server serves every nice level, each worker at its
launcher's."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.warm import INIT, Warm, alive, answered_initialize, wait_gone, worker_of
from tether.warm.control import stop_servers

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="warm starts are Linux-only"),
    pytest.mark.slow,
]


def _lines(*frames: dict[str, object]) -> bytes:
    return b"".join(json.dumps(f).encode() + b"\n" for f in frames)


def _files(base: Path) -> list[str]:
    return sorted(p.name for p in base.iterdir() if p.suffix in (".sock", ".pid", ".lock"))


def test_a_stop_request_stops_the_server_not_what_its_pid_file_names(
    warm: Warm, home: Path
) -> None:
    server = warm.start(home)
    [pid_file] = warm.base.glob("*.pid")
    with subprocess.Popen(["sleep", "300"]) as bystander:
        try:
            pid_file.write_text(f"{bystander.pid}\n")  # a pid file that names another process
            assert stop_servers(str(warm.base), wait=20) == [server]
            assert not alive(server) and alive(bystander.pid)
        finally:
            bystander.kill()
    assert _files(warm.base) == []  # its socket, pid file and lock went with it


def test_stopping_a_server_that_is_gone_removes_its_files(warm: Warm, home: Path) -> None:
    server = warm.start(home)
    os.kill(server, signal.SIGKILL)
    assert wait_gone(server)
    assert _files(warm.base) != []
    assert stop_servers(str(warm.base)) == []
    assert _files(warm.base) == []


def test_a_sigtermed_server_retires_its_files_at_once_and_its_workers_end_as_they_would(
    warm: Warm, home: Path
) -> None:
    server = warm.start(home)
    with warm.initialized(home) as proc:
        assert proc.stdin is not None
        worker = worker_of(proc.pid, server)
        os.kill(server, signal.SIGTERM)
        _wait(lambda: _files(warm.base) == [], "the retiring server's files removed")
        assert alive(server) and alive(worker)  # the worker serves on, its server waits for it
        answered_initialize(warm.launch(home, _lines(INIT)))  # served cold; starts a successor
        successor = warm.server()
        assert successor != server
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0  # the exit code still came back
    assert wait_gone(server) and alive(successor)


def test_an_idle_sigtermed_server_exits_with_nothing_left(warm: Warm, home: Path) -> None:
    server = warm.start(home)
    os.kill(server, signal.SIGTERM)
    assert wait_gone(server)
    assert _files(warm.base) == []


class _Provider:
    """A loopback "model" that accepts connections and never answers: what a worker holds."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.connections: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.asked = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            if b"POST" in conn.recv(65536):
                self.asked.set()

    def open_connections(self) -> list[socket.socket]:
        """The connections whose other end has not closed (read without waiting)."""
        found = []
        for conn in self.connections:
            conn.setblocking(False)
            try:
                while conn.recv(65536):
                    pass
            except BlockingIOError:
                found.append(conn)
        return found

    def close(self) -> None:
        self.listener.close()
        for conn in self.connections:
            conn.close()


@contextmanager
def _provider() -> Iterator[_Provider]:
    provider = _Provider()
    try:
        yield provider
    finally:
        provider.close()


def test_a_killed_launcher_is_seen_dead_only_once_its_worker_and_its_connections_are_gone(
    shared_warm: Warm, home: Path, project: Path, tmp_path: Path
) -> None:
    """As with a process serving in-process: when the launcher's parent has reaped it after a
    SIGKILL, its worker is gone and no connection the worker held to a server is still open
    (the test suite's servers met such connections after their stop)."""
    config = tmp_path / "config.toml"
    with _provider() as provider:
        config.write_text(
            f'[providers.p]\nkind = "openai"\nbase_url = "{provider.url}"\n'
            'api_key = "sk-test-0123456789abcdef"\nbuiltin_models = false\n\n'
            '[models."p:m"]\ncontext_window = 64000\n\n[defaults]\nmodel = "p:m"\n'
        )
        server = shared_warm.start(home)
        with shared_warm.initialized(home, TETHER_CONFIG=str(config)) as proc:
            assert proc.stdin is not None
            worker = worker_of(proc.pid, server)
            new = {"cwd": str(project), "mcpServers": []}
            proc.stdin.write(_lines({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                     "params": new}))  # fmt: skip
            proc.stdin.flush()
            sid = _answer(proc, 1)["result"]["sessionId"]
            prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
            proc.stdin.write(_lines({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                                     "params": prompt}))  # fmt: skip
            proc.stdin.flush()
            assert provider.asked.wait(30), "the worker never asked the model"
            proc.kill()
            proc.wait(timeout=30)
            # Right as the launcher is reaped, without waiting for anything more:
            assert not alive(worker)
            assert provider.open_connections() == []
        assert alive(server)


def _answer(proc: subprocess.Popen[bytes], rid: int) -> dict[str, Any]:
    assert proc.stdout is not None
    for line in proc.stdout:
        frame = json.loads(line)
        if frame.get("id") == rid and "method" not in frame:
            return frame
    raise AssertionError(f"no answer to {rid}")


def test_one_server_serves_every_nice_level_each_worker_at_its_launchers(
    warm: Warm, home: Path
) -> None:
    server = warm.start(home)
    for level in (5, 10):
        with warm.initialized(home, preexec_fn=_niced(level)) as proc:
            assert proc.stdin is not None
            worker = worker_of(proc.pid, server)
            assert _nice(worker) == _nice(proc.pid) == os.getpriority(os.PRIO_PROCESS, 0) + level
            proc.stdin.close()
            assert proc.wait(timeout=20) == 0
    assert len(list(warm.base.glob("*.sock"))) == 1


def test_a_launcher_at_a_better_priority_than_its_server_s_gets_it(warm: Warm, home: Path) -> None:
    """A server started by a niced launcher either takes a better priority itself (when allowed)
    or retires for a successor started by the launcher that wants it: that launcher's agent runs
    at its own nice level, and from then on one server serves both levels."""
    env = {**os.environ, "TETHER_HOME": str(home), **warm.env}
    command = [sys.executable, "-m", "tether", "acp"]
    niced = subprocess.run(command, input=b"", env=env, preexec_fn=lambda: os.nice(10), timeout=60)
    assert niced.returncode == 0
    first = warm.server()
    assert _nice(first) == os.getpriority(os.PRIO_PROCESS, 0) + 10
    with warm.initialized(home) as proc:
        assert proc.stdin is not None
        assert _nice(_agent_of(proc.pid, warm)) == os.getpriority(os.PRIO_PROCESS, 0)
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0
    _wait(lambda: warm.running() is not None, "a server listening")
    servers = set()
    for level in (0, 10, 0):
        with warm.initialized(home, preexec_fn=_niced(level)) as proc:
            assert proc.stdin is not None
            worker = worker_of(proc.pid, warm.server())
            assert _nice(worker) == os.getpriority(os.PRIO_PROCESS, 0) + level
            servers.add(_parent(worker))
            proc.stdin.close()
            assert proc.wait(timeout=20) == 0
    assert len(servers) == 1 and len(list(warm.base.glob("*.sock"))) == 1


def _niced(level: int) -> Callable[[], None]:
    def nice() -> None:
        os.nice(level)

    return nice


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _agent_of(launcher: int, warm: Warm) -> int:
    """The process that serves the launcher: its worker (the server holds a launcher it serves
    from before it forks the worker), or the launcher itself (cold)."""
    status = Path(f"/proc/{launcher}/status").read_text()
    if "TracerPid:\t0\n" in status:
        return launcher
    return worker_of(launcher, warm.server())


def _nice(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def _wait(ready: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"not seen: {what}"
        time.sleep(0.02)
