"""A session's private directory (`tether-sandbox-*` in the temporary directory: its commands'
TMPDIR, policies, launchers) goes with the session: when it closes, at the end of tether's
input, on SIGTERM and SIGHUP; a SIGKILLed tether's is swept by the next tether, which leaves a
live one's alone. Judged by the directory's listing, in a TMPDIR of the test's own, after
agents run and end the ways the test suite runs and ends them."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.inprocess import agent_in_memory
from tests.support.warm import Warm
from tether.tools import catalog

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform != "linux", reason="Linux sandboxes"),
]
ROUNDS = [[{"tool_call": {"id": "c1", "name": "run_argv", "arguments": {"argv": ["true"]}}}]]
ROUNDS += [[{"text": "ran"}]]


def _left(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("tether-sandbox-"))


@asynccontextmanager
async def _ran_a_command(
    home: Path, project: Path, tmp: Path, env: dict[str, str]
) -> AsyncIterator[tuple[AgentProcess, str]]:
    """A `tether acp` whose session ran a command (so its private directory exists)."""
    turn = script(home / "turn.json", ROUNDS)
    async with spawn_agent(home, "--script", str(turn), env={**env, "TMPDIR": str(tmp)}) as agent:
        await agent.initialize(terminal=False)
        sid = await agent.new_session(project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        assert (await agent.prompt(sid, "go"))["result"] == {"stopReason": "end_turn"}
        yield agent, sid


@pytest.mark.parametrize(("mechanism", "start"), [("bubblewrap", "cold"), ("landlock", "warm")])
async def test_no_private_directory_outlives_its_session(
    home: Path, project: Path, tmp_path: Path, shared_warm: Warm, mechanism: str, start: str
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TETHER_SANDBOX": mechanism, "TETHER_WARM": "0"}
    if start == "warm":
        shared_warm.start(home)
        env |= shared_warm.env
    async with _ran_a_command(home, project, tmp, env) as (agent, sid):
        assert len(_left(tmp)) == 1
        await agent.request("session/close", {"sessionId": sid})
        assert _left(tmp) == []  # while tether still runs
        await agent.close_input()
        assert await agent.wait_exit(15) == 0
    async with _ran_a_command(home, project, tmp, env) as (agent, _):
        await agent.close_input()  # the session was never closed
        assert await agent.wait_exit(15) == 0
    assert _left(tmp) == []
    for sig in (signal.SIGTERM, signal.SIGHUP):
        async with _ran_a_command(home, project, tmp, env) as (agent, _):
            os.kill(agent.proc.pid, sig)
            assert await agent.wait_exit(15) == -sig
        assert _left(tmp) == [], sig
    async with _ran_a_command(home, project, tmp, env) as (agent, _):
        killed = _left(tmp) if start == "cold" else []
        agent.proc.kill()
        assert await agent.wait_exit(15) == -signal.SIGKILL
    # Cold, nobody was there to remove it; warm, the worker hangs up and removes it, and its
    # launcher is seen dead only once it has (the server holds it).
    assert _left(tmp) == killed
    async with _ran_a_command(home, project, tmp, env) as (live, _):
        [kept] = _left(tmp)  # the killed one's swept, a live one's not
        async with _ran_a_command(home, project, tmp, env) as (another, _):
            assert kept in _left(tmp) and len(_left(tmp)) == 2
            await another.close_input()
            assert await another.wait_exit(15) == 0
        assert _left(tmp) == [kept]
        await live.close_input()
        assert await live.wait_exit(15) == 0
    assert _left(tmp) == []


async def test_an_agent_in_this_process_leaves_none(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    rounds = {"rounds": [{"events": r} for r in ROUNDS]}
    async with agent_in_memory(home, rounds, catalog()) as client:
        sid = await client.start(project, {})
        assert await client.prompt(sid, "go") == "end_turn"
        assert len(_left(tmp)) == 1
    assert _left(tmp) == []
