"""Nothing a command started outlives tether: SIGTERM, SIGHUP, the end of input and
`session/close` each stop the whole tree, detached children (`setsid`, double forks) included,
confined or not. Judged by the process table (`/proc`), never by what tether says."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.harness import AgentProcess, script, spawn_agent
from tests.processes import carrying
from tests.test_acp_commands import call, prompt_params, serve_until, text_of, tool_update

pytestmark = [
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
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
async def test_a_signal_to_tether_stops_every_command_tree(
    home: Path, project: Path, tmp_path: Path, sig: signal.Signals, unconfined: bool
) -> None:
    token, path = _scripted(project, tmp_path, unconfined=unconfined)
    async with spawn_agent(home, "--script", str(path)) as agent:
        await _start(agent, project)
        assert len(carrying(token)) >= 3  # the program and two detached grandchildren
        os.kill(agent.proc.pid, sig)
        assert await agent.wait_exit(10) == -sig  # it still dies of the signal
    assert await _gone(token) == []


@pytest.mark.parametrize("unconfined", [False, True], ids=["confined", "unconfined"])
async def test_the_end_of_input_stops_every_command_tree(
    home: Path, project: Path, tmp_path: Path, unconfined: bool
) -> None:
    token, path = _scripted(project, tmp_path, unconfined=unconfined)
    async with spawn_agent(home, "--script", str(path)) as agent:
        await _start(agent, project)
        await agent.close_input()
        await agent.drain(10)
        assert await agent.wait_exit(10) == 0
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
