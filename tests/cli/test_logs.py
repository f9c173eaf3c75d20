"""Logs go to a rotating file in the state directory at the level asked for; stdout carries
frames only and stderr stays quiet unless a level was asked for."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import pytest

from tests.support.harness import REPO, AgentProcess, agent_command, script
from tether.logs import RotatingLog, log_path


@asynccontextmanager
async def agent_with_stderr(
    home: Path, *args: str, env: dict[str, str]
) -> AsyncIterator[AgentProcess]:
    full = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    full.pop("TETHER_LOG_LEVEL", None)
    proc = await anyio.open_process(
        agent_command(*args), env={**full, **env}, cwd=REPO, stderr=subprocess.PIPE
    )
    try:
        yield AgentProcess(proc, "ndjson")
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.aclose()


async def one_turn(home: Path, project: Path, tmp_path: Path, *args: str, **env: str) -> str:
    """Run a session with one turn and an unknown notification (logged at DEBUG); the harness
    parses and validates every line of stdout as a frame. Returns the agent's stderr."""
    model = script(tmp_path / "hi.json", [[{"text": "hi"}]])
    async with agent_with_stderr(home, "--script", str(model), *args, env=env) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.notify("tether/unknown_notification", {})
        assert (await agent.prompt(sid, "hello"))["result"]["stopReason"] == "end_turn"
        await agent.close_input()
        await agent.drain()
        assert await agent.wait_exit() == 0
        assert agent.proc.stderr is not None
        return await read_all(agent.proc.stderr)


async def read_all(stream: anyio.abc.ByteReceiveStream) -> str:
    chunks: list[bytes] = []
    with anyio.fail_after(5):
        try:
            while True:
                chunks.append(await stream.receive())
        except anyio.EndOfStream:
            pass
    return b"".join(chunks).decode()


@pytest.mark.slow
@pytest.mark.anyio
async def test_default_logs_to_the_file_only(home: Path, project: Path, tmp_path: Path) -> None:
    stderr = await one_turn(home, project, tmp_path)
    assert stderr == ""
    log = log_path({"TETHER_HOME": str(home)})
    assert log == home / "logs" / "tether.log"
    text = log.read_text()
    assert " acp[" in text and " INFO tether.acp: tether " in text
    assert "ignoring notification" not in text  # DEBUG is below the default level
    assert (log.stat().st_mode & 0o777, log.parent.stat().st_mode & 0o777) == (0o600, 0o700)


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_level_flag_is_applied_and_copied_to_stderr(
    home: Path, project: Path, tmp_path: Path
) -> None:
    stderr = await one_turn(home, project, tmp_path, "--log-level", "debug")
    line = "DEBUG tether.rpc: acp: ignoring notification tether/unknown_notification"
    assert line in (home / "logs" / "tether.log").read_text()
    assert line in stderr


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_level_variable_and_an_unknown_level(
    home: Path, project: Path, tmp_path: Path
) -> None:
    log = home / "logs" / "tether.log"
    await one_turn(home, project, tmp_path, TETHER_LOG_LEVEL="warning")
    assert not log.exists() or " INFO " not in log.read_text()
    await one_turn(home, project, tmp_path, "--log-level", "loud")
    text = log.read_text()
    assert "unknown log level 'loud' (expected one of: DEBUG, INFO, WARNING" in text
    assert " INFO tether.acp: tether " in text  # and INFO applies


def _record(n: int) -> logging.LogRecord:
    return logging.LogRecord(
        "tether.test", logging.INFO, __file__, 1, f"line {n:04} " + "x" * 40, None, None
    )


def test_the_file_rotates_and_every_writer_follows(tmp_path: Path) -> None:
    path = tmp_path / "tether.log"
    one, two = RotatingLog(path, 500, 2), RotatingLog(path, 500, 2)  # two processes' handlers
    try:
        for n in range(60):
            (one if n % 2 else two).emit(_record(n))
    finally:
        one.close()
        two.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["tether.log", "tether.log.1", "tether.log.2"]
    for name in files:
        assert (tmp_path / name).stat().st_size <= 500 + 60  # one record past the limit at most
    newest = (tmp_path / "tether.log").read_text().splitlines()
    older = (tmp_path / "tether.log.1").read_text().splitlines()
    # Records stay in order across the files: nobody kept writing into a rotated file.
    assert older[-1] < newest[0] and newest[-1].startswith("line 0059")


@pytest.mark.slow
def test_doctor_names_the_log_file(home: Path) -> None:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "tether", "doctor"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    assert f"log file     {home / 'logs' / 'tether.log'}\n" in done.stdout
    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(done.stdout)["log_file"] == str(home / "logs" / "tether.log")
