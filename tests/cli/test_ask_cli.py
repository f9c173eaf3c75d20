"""`tether ask` behaves like a command-line tool: Ctrl-C on a real terminal cancels the turn,
a closed pipe ends it quietly, and files the agent cannot read as text get a proper ACP error."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.harness import REPO, script, slow_script, spawn_agent

pytestmark = [pytest.mark.cold_start, pytest.mark.slow]  # the agent is the process spawned

ASK = [sys.executable, "-m", "tether", "ask"]
# Runs a command as the leader of a new session whose controlling terminal is its stdin, so
# that the kernel sends Ctrl-C typed on that terminal to the command's whole process group.
ON_A_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("TETHER_NONINTERACTIVE", None)
    return env


def _read_until(fd: int, marker: bytes, timeout: float = 20) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise AssertionError(f"no {marker!r} in {seen.decode(errors='replace')!r}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the terminal was closed: everything has been read
            break
        if not chunk:
            break
        seen += chunk
    return seen


def _drain(fd: int) -> bytes:
    """The rest of a terminal's output, once every process using it has exited."""
    seen = b""
    while select.select([fd], [], [], 5)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: no process holds the terminal any more
            return seen
        if not chunk:
            return seen
        seen += chunk
    return seen


def _group_is_gone(pgid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _ctrl_c_on_a_terminal(home: Path, args: list[str], when: bytes) -> str:
    """Run `tether ask ARGS` on a real terminal, type Ctrl-C once `when` is on the screen, and
    return the screen after ask and its agent have exited."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", ON_A_TERMINAL, *ASK[1:], *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(home),
        start_new_session=True,
    )
    os.close(slave)
    try:
        screen = _read_until(master, when)
        os.write(master, b"\x03")  # as typed: SIGINT to ask and to the agent it spawned
        screen += _read_until(master, b"[stop: cancelled]")
        assert proc.wait(timeout=15) == 130
        assert _group_is_gone(proc.pid)  # the agent exited too
        screen += _drain(master)  # whatever either process wrote on its way out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)
    return screen.decode(errors="replace")


def test_ctrl_c_on_a_terminal_cancels_the_turn(home: Path, project: Path, tmp_path: Path) -> None:
    slow = slow_script(tmp_path / "slow.json")
    args = ["--script", str(slow), "--cwd", str(project), "take your time"]
    screen = _ctrl_c_on_a_terminal(home, args, b"working")
    assert "Traceback" not in screen and "KeyboardInterrupt" not in screen, screen
    assert screen.endswith("working^C\r\n[stop: cancelled]\r\n"), screen


def test_ctrl_c_at_the_permission_prompt(home: Path, project: Path) -> None:
    screen = _ctrl_c_on_a_terminal(home, ["--cwd", str(project), "tidy up"], b"choose: ")
    assert "Traceback" not in screen and "KeyboardInterrupt" not in screen, screen
    # The card the question was about is closed, on a line of its own, then the stop line.
    assert screen.endswith(
        "choose: ^C\r\n  ✗ write_file README.md — error [ABORTED]: the turn was cancelled\r\n"
        "[stop: cancelled]\r\n"
    ), screen
    assert "reviewed by the tether demo" not in (project / "README.md").read_text()


@pytest.mark.anyio
async def test_the_agent_ignores_sigint_and_stops_on_session_cancel(
    home: Path, project: Path, tmp_path: Path
) -> None:
    slow = slow_script(tmp_path / "slow.json")
    async with spawn_agent(home, "--script", str(slow)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        rid = await agent.start_turn(sid)
        agent.proc.send_signal(signal.SIGINT)
        await agent.notify("session/cancel", {"sessionId": sid})
        resp = await agent.until_response(rid)
        assert resp["result"] == {"stopReason": "cancelled"}
        await agent.close_input()
        await agent.drain()
        assert await agent.wait_exit() == 0


def test_a_closed_pipe_ends_the_run_quietly(home: Path, project: Path, tmp_path: Path) -> None:
    # A line every 50 ms for a minute: the next line after `head` exits finds the pipe closed.
    chatty = script(tmp_path / "chatty.json", [[{"text": "line\n"}, {"delay": 0.05}] * 1200])
    ask = " ".join([*ASK, "--script", str(chatty), "--cwd", str(project), "talk"])
    done = subprocess.run(
        ["bash", "-c", f'{ask} | head -1; echo "ask exit ${{PIPESTATUS[0]}}" >&2'],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=60,
    )
    assert done.stdout == "line\n"
    # nothing else but the session's id: no stop line, no traceback, no warning
    assert re.fullmatch(r"\[session: sess_\w+\]\nask exit 141\n", done.stderr), done.stderr


def test_unreadable_files_get_an_acp_error_and_calls_are_named(
    home: Path, project: Path, tmp_path: Path
) -> None:
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (project / "latin1.txt").write_bytes("caf\u00e9\n".encode("latin-1"))
    (project / "src").mkdir()

    def read(n: int, path: str) -> dict[str, object]:
        return {"tool_call": {"id": f"r{n}", "name": "read_file", "arguments": {"path": path}}}

    write = {"id": "w", "name": "write_file", "arguments": {"path": "notes.md", "content": "n\n"}}
    rounds = [
        [read(1, "logo.png"), read(2, "latin1.txt"), read(3, "src")],
        [{"tool_call": write}],
        [{"text": "done"}],
    ]
    path = script(tmp_path / "reads.json", rounds)
    cmd = [*ASK, "--yes", "--script", str(path), "--cwd", str(project), "read them"]
    done = subprocess.run(
        cmd, capture_output=True, text=True, env=_env(home), timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"  # the answer; the cards on stderr
    out = done.stderr
    assert "✗ read_file logo.png — " in out and "logo.png is a binary file (16 bytes)" in out
    assert "✗ read_file latin1.txt — " in out and "latin1.txt is not UTF-8 text" in out
    assert "✗ read_file src — " in out and "src is a directory" in out
    assert "✓ write_file notes.md" in out and "✓ completed" not in out
    assert (project / "notes.md").read_text() == "n\n"


def test_run_by_hand_on_a_terminal_ctrl_c_stops_the_agent(home: Path) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", ON_A_TERMINAL, "-m", "tether", "acp"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(home),
        start_new_session=True,
    )
    os.close(slave)
    try:
        init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
        os.write(master, init + b"\n")
        screen = _read_until(master, b'"agentInfo"')  # answered: the agent is serving
        os.write(master, b"\x03")
        assert proc.wait(timeout=15) == 130
        screen += _drain(master)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)
    assert b"Traceback" not in screen, screen


def test_a_round_prints_what_happened_to_every_call(
    home: Path, project: Path, tmp_path: Path
) -> None:
    def write(n: int, name: str) -> dict[str, object]:
        args = {"path": name, "content": f"{n}\n"}
        return {"tool_call": {"id": f"w{n}", "name": "write_file", "arguments": args}}

    path = script(tmp_path / "two.json", [[write(1, "a.md"), write(2, "b.md")], [{"text": "ok"}]])
    cmd = [*ASK, "--yes", "--script", str(path), "--cwd", str(project), "write two"]
    done = subprocess.run(
        cmd, capture_output=True, text=True, env=_env(home), timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    assert "      allowed: Create a.md\n      allowed: Create b.md\n" in done.stderr, done.stderr
