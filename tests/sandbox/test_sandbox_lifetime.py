"""Nothing a command started outlives tether: SIGTERM, SIGHUP, the end of input, SIGKILL and
`session/close` each stop the whole tree, detached children (`setsid`, double forks, without
tether's marker, ignoring SIGTERM) included, under bubblewrap, Landlock and none, cold and warm.
Judged by the process table (`/proc`), never by what tether says."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.processes import alive, carrying, probe_argv, probe_tokens
from tests.support.warm import Warm, worker_of
from tests.tools.test_acp_commands import call, prompt_params, serve_until, text_of, tool_update

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform != "linux", reason="reads /proc"),
]

# Starts a grandchild that leaves the session (setsid) after a double fork, then says ready and
# waits. Every process carries TOKEN on its command line, so this host can find them.
DETACHING = """
import os, subprocess, sys, time
token = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", token])
    os._exit(0)
subprocess.Popen(["setsid", sys.executable, "-c", "import time; time.sleep(600)", token])
time.sleep(0.5)
print("ready", flush=True)
time.sleep(600)
"""


def _argv(project: Path, token: str) -> list[str]:
    path = project / "detaching.py"
    path.write_text(DETACHING)
    return [sys.executable, str(path), token]


def _scripted(project: Path, tmp_path: Path, *, unconfined: bool) -> tuple[str, Path]:
    """A turn running the detaching program (unconfined: asked and allowed); its token."""
    token = f"tether-test-{uuid.uuid4().hex}"
    extra: dict[str, Any] = {"unconfined": True, "reason": "test"} if unconfined else {}
    rounds = [[call("run_argv", "c1", argv=_argv(project, token), **extra)], [{"text": "x"}]]
    return token, script(tmp_path / "s.json", rounds)


async def _start(agent: AgentProcess, project: Path) -> tuple[str, int]:
    await agent.initialize(terminal=False)
    sid = await agent.new_session(project)
    await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
    rid = await agent.start_request("session/prompt", prompt_params(sid))
    await serve_until(agent, tool_update("c1", lambda u: "ready" in text_of(u)))
    return sid, rid


async def _gone(token: str) -> list[int]:
    with anyio.move_on_after(5):
        while carrying(token):
            await anyio.sleep(0.05)
    return carrying(token)


@pytest.mark.parametrize("unconfined", [False, True], ids=["confined", "unconfined"])
async def test_a_hang_up_stops_every_command_tree(
    home: Path, project: Path, tmp_path: Path, unconfined: bool
) -> None:
    """SIGHUP (a terminal closing); SIGTERM and the end of input: the figure below. Unconfined
    here is a call allowed to run outside bubblewrap."""
    token, path = _scripted(project, tmp_path, unconfined=unconfined)
    async with spawn_agent(home, "--script", str(path)) as agent:
        await _start(agent, project)
        assert len(carrying(token)) >= 3  # the program and two detached grandchildren
        os.kill(agent.proc.pid, signal.SIGHUP)
        assert await agent.wait_exit(10) == -signal.SIGHUP  # it still dies of the signal
    assert await _gone(token) == []


async def test_closing_the_session_stops_the_command_tree(
    home: Path, project: Path, tmp_path: Path
) -> None:
    token, path = _scripted(project, tmp_path, unconfined=False)
    async with spawn_agent(home, "--script", str(path)) as agent:
        sid, rid = await _start(agent, project)
        close = await agent.start_request("session/close", {"sessionId": sid})
        await agent.until_response(close)
        assert (await agent.until_response(rid))["result"] == {"stopReason": "cancelled"}
        assert await _gone(token) == []  # while tether still runs


async def test_a_confined_command_s_children_end_with_it(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """In the sandbox's PID namespace, what a command left behind ends when it exits."""
    token = f"tether-test-{uuid.uuid4().hex}"
    leave = (
        "import subprocess, sys; "
        f"subprocess.Popen(['setsid', sys.executable, '-c', 'import time; time.sleep(600)', '{token}'])"
    )
    rounds = [[call("run_argv", "c1", argv=[sys.executable, "-c", leave])], [{"text": "x"}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize(terminal=False)
        sid = await agent.new_session(project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        assert (await agent.prompt(sid, "go"))["result"] == {"stopReason": "end_turn"}
        assert await _gone(token) == []  # tether is still running


# --- the whole figure: every kind of leftover, every mechanism, every ending, cold and warm ---

MECHANISMS = ("bubblewrap", "landlock", "none")


async def _until_written(agent: AgentProcess, pid_dir: Path, tokens: list[str]) -> None:
    """Serve the agent (its permission requests: `none` asks) until every probe process wrote
    its pid file."""
    with anyio.fail_after(60):
        while not all((pid_dir / f"{t}.pid").exists() for t in tokens):
            with anyio.move_on_after(0.1):
                frame = await agent.recv(60)
                if "method" in frame and "id" in frame:
                    await agent._answer(frame)


async def _end(agent: AgentProcess, ending: str, worker: int | None) -> None:
    """End tether: SIGTERM to the process the editor started, its input closed, or SIGKILL
    (warm: to the worker, the process that is tether; its launcher then dies the same way)."""
    if ending == "SIGTERM":
        os.kill(agent.proc.pid, signal.SIGTERM)
        assert await agent.wait_exit(15) == -signal.SIGTERM
    elif ending == "end of input":
        await agent.close_input()
        await agent.drain(15)
        assert await agent.wait_exit(15) == 0
    else:
        os.kill(worker or agent.proc.pid, signal.SIGKILL)
        assert await agent.wait_exit(15) == -signal.SIGKILL


async def _survivors(found: dict[str, list[int]], timeout: float = 10) -> dict[str, list[int]]:
    """The processes found before the end that still live (or were found again) after it."""

    def left() -> dict[str, list[int]]:
        now = {t: [p for p in pids if alive(p)] + carrying(t) for t, pids in found.items()}
        return {t: sorted(set(pids)) for t, pids in now.items() if pids}

    with anyio.move_on_after(timeout):
        while left():
            await anyio.sleep(0.05)
    survivors = left()
    for pid in {p for pids in survivors.values() for p in pids}:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # a failed test leaves nothing running
    return survivors


@pytest.mark.parametrize("start", ["cold", "warm"])
@pytest.mark.parametrize("ending", ["SIGTERM", "end of input", "SIGKILL"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_nothing_a_command_left_behind_outlives_tether(
    home: Path,
    project: Path,
    tmp_path: Path,
    shared_warm: Warm,
    mechanism: str,
    ending: str,
    start: str,
) -> None:
    """A PTY and a run_argv each leave a plain child, a detached one (setsid and a double
    fork), one detached without tether's marker and one that ignores SIGTERM: none lives on
    after tether ends (its pid file says it ran; /proc says it is gone)."""
    pid_dir = project / "pids"
    pid_dir.mkdir()
    prefix = f"tether-test-{uuid.uuid4().hex}"
    rounds = [
        [call("open_pty", "p1", argv=probe_argv(project, pid_dir, f"{prefix}-pty"))],
        [call("run_argv", "r1", argv=probe_argv(project, pid_dir, f"{prefix}-run"))],
        [{"text": "x"}],
    ]
    path = script(tmp_path / "s.json", rounds)
    env = {"TETHER_SANDBOX": mechanism}
    server = None
    if start == "warm":
        server = shared_warm.start(home)
        env |= shared_warm.env
    tokens = probe_tokens(f"{prefix}-pty") + probe_tokens(f"{prefix}-run")
    async with spawn_agent(home, "--script", str(path), env=env) as agent:
        await agent.initialize(terminal=False)
        sid = await agent.new_session(project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        await agent.start_request("session/prompt", prompt_params(sid))
        await _until_written(agent, pid_dir, tokens)
        found = {t: carrying(t) for t in tokens}
        assert all(found.values()), found
        worker = None if server is None else worker_of(agent.proc.pid, server)
        await _end(agent, ending, worker)
    assert await _survivors(found) == {}
