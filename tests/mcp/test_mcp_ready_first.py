"""The config's MCP servers are ready before `tether ask`'s first model request, within a
bounded wait: the first request offers their tools, so a first call to one of them runs.

A real stdio MCP server that does not serve until the test opens its gate; the test opens it
at the first of two events: the agent says it waits for the server (the fix), or the model
server receives a request (the race, as before: that request went out without the tool)."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest

from tests.support.harness import REPO
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.providers.wire import chat_call, chat_text

pytestmark = pytest.mark.slow

ECHO = REPO / "tests" / "support" / "mcp_servers" / "echo_stdio.py"


def _config(path: Path, url: str, gate: Path) -> Path:
    path.write_text(
        f'[providers.p]\nkind = "openai"\nbase_url = "{url}"\napi_key = "sk-test-0123456789abcdef"\n'
        'builtin_models = false\n\n[models."p:m"]\ncontext_window = 64000\n\n'
        '[defaults]\nmodel = "p:m"\n\n'
        f'[mcp_servers.echo]\ncommand = "{sys.executable}"\n'
        f'args = ["{ECHO}", "--gate", "{gate}"]\n'
    )
    return path


def _lines(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


def _open_the_gate_when_asked(
    proc: subprocess.Popen[str], server: MockLLMServer, gate: Path
) -> list[str]:
    """Open the gate at the first of: the agent's word that it waits, or a model request;
    then the agent's whole output, once it exited with 0."""
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    reader = threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    while not gate.exists():
        try:
            seen.append(lines.get(timeout=0.05))
        except queue.Empty:
            assert proc.poll() is None, "".join(seen)
        if server.posts or any("Waiting for MCP servers" in x for x in seen):
            gate.touch()
    assert proc.wait(timeout=60) == 0
    reader.join(timeout=10)
    while not lines.empty():
        seen.append(lines.get())
    return seen


def test_the_first_request_offers_the_servers_tools(
    home: Path, project: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    with MockLLMServer() as server:
        server.script(
            "/chat/completions",
            Reply(chunks=chat_call("mcp__echo__peek", {"text": "hi"})),
            Reply(chunks=chat_text(["done"])),
        )
        env = {**os.environ, "PYTHONPATH": str(REPO), "TETHER_HOME": str(home)}
        env["TETHER_CONFIG"] = str(_config(tmp_path / "config.toml", server.url, gate))
        with subprocess.Popen(
            [sys.executable, "-m", "tether", "ask", "--yes", "--cwd", str(project), "look"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        ) as proc:
            seen = _open_the_gate_when_asked(proc, server, gate)
        bodies = [r.json() for r in server.posts]
        bodies = [r.json() for r in server.posts]
    output = "".join(seen)
    offered = [t["function"]["name"] for t in bodies[0].get("tools", [])]
    assert "mcp__echo__peek" in offered, output
    assert "peeked at 'hi'" in str(bodies[1]["messages"][-1]), output
