"""`tether ask` on a real terminal: the permission request is answered at a prompt on a PTY."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.harness import REPO

pytestmark = pytest.mark.slow


def _read_until(fd: int, marker: bytes, timeout: float = 20) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        if time.monotonic() > deadline:
            raise AssertionError(f"no {marker!r} in {seen.decode(errors='replace')!r}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        seen += chunk
    return seen


def test_permission_is_asked_on_the_terminal(home: Path, project: Path) -> None:
    master, slave = pty.openpty()
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("TETHER_NONINTERACTIVE", None)
    cmd = [sys.executable, "-m", "tether", "ask", "--cwd", str(project), "tidy up"]
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    try:
        screen = _read_until(master, b"choose: ")
        assert b"[1] Allow" in screen and b"[3] Reject" in screen
        os.write(master, b"1\n")
        screen += _read_until(master, b"[stop: end_turn]")
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert b"? permission for Replace README.md: Allow" in screen
    assert "reviewed by the tether demo" in (project / "README.md").read_text()


def test_without_a_terminal_permission_is_refused(home: Path, project: Path) -> None:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "tether", "ask", "--cwd", str(project), "tidy up"]
    done = subprocess.run(
        cmd, stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=30, check=False
    )
    assert done.returncode == 3  # exit_codes.DENIED: a permission the turn needed, refused
    assert "Reject (no terminal to ask on)" in done.stderr.decode()
    assert "reviewed by the tether demo" not in (project / "README.md").read_text()
