"""Commands in the client's terminal (`clientCapabilities.terminal`): a test client serves
`terminal/*` for real, running the processes itself. The agent creates the terminal with a
program and its arguments, embeds it in the tool card before releasing it, and kills and
releases it on timeout and on cancellation."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.acp_schema import validate_agent_frame
from tests.support.inprocess import Client, agent_in_memory
from tests.support.stored import tool_results
from tests.support.terminal_client import TerminalServer
from tether.engine.sandbox.detect import detect
from tether.tools import catalog

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes"),
]
CAPS = {"terminal": True}


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": arguments}}


@asynccontextmanager
async def client_with_terminal(
    home: Path, rounds: list[list[dict[str, Any]]]
) -> AsyncIterator[tuple[Client, TerminalServer, list[tuple[str, Any]]]]:
    script = {"rounds": [{"events": r} for r in rounds]}
    log: list[tuple[str, Any]] = []  # terminal calls and session updates, in arrival order
    async with agent_in_memory(home, script, catalog()) as client, anyio.create_task_group() as tg:
        server = TerminalServer()
        server.register(client.peer, tg)
        server_calls = server.calls

        class Logged(list[tuple[str, dict[str, Any]]]):
            def append(self, item: tuple[str, dict[str, Any]]) -> None:
                log.append(("call", item[0]))
                super().append(item)

        server.calls = Logged(server_calls)

        async def on_update(params: dict[str, Any]) -> None:
            validate_agent_frame({"jsonrpc": "2.0", "method": "session/update", "params": params})
            client.updates.append(params["update"])
            log.append(("update", params["update"]))

        client.peer.on_notification("session/update", on_update)
        try:
            yield client, server, log
        finally:
            await server.aclose()
            tg.cancel_scope.cancel()


def card_updates(client: Client, call_id: str) -> list[dict[str, Any]]:
    return [u for u in client.updates if u.get("toolCallId") == call_id]


async def test_an_unconfined_command_s_launcher_says_so(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that names tether's launcher by what it is (tether.nvim, the VS Code extension)
    must not call an unconfined command sandboxed: its launcher is `unconfined-N`."""
    monkeypatch.setenv("TETHER_SANDBOX", "none")
    rounds = [[call("run_argv", "c1", argv=["true"])], [{"text": "ok"}]]
    async with client_with_terminal(home, rounds) as (client, server, _):
        sid = await client.start(project, CAPS)
        assert await client.prompt(sid, "go") == "end_turn"
    [(method, create)] = server.calls[:1]
    assert method == "terminal/create"
    assert create["command"].endswith("/run/unconfined-1") and create["args"] == ["true"]


async def test_a_command_runs_in_the_client_terminal(home: Path, project: Path) -> None:
    rounds = [
        [call("run_argv", "c1", argv=["printf", "a b\\n%s\\n", "two words"])],
        [{"text": "ok"}],
    ]
    async with client_with_terminal(home, rounds) as (client, server, log):
        sid = await client.start(project, CAPS)
        assert await client.prompt(sid, "go") == "end_turn"
    [(method, create)] = server.calls[:1]
    assert method == "terminal/create"
    # The program and its arguments as they are, never one shell string, in the sandbox: the
    # editor's terminal runs tether's one-use sandbox launcher, which runs the program.
    assert create["command"].endswith("/run/sandboxed-1") and detect().confines
    assert create["args"] == ["printf", "a b\\n%s\\n", "two words"]
    assert create["cwd"] == str(project) and create["outputByteLimit"] == 24_000
    assert server.methods() == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    terminal_id = server.terms and next(iter(server.terms))
    embedded = [
        i
        for i, (kind, item) in enumerate(log)
        if kind == "update"
        and item.get("toolCallId") == "c1"
        and {"type": "terminal", "terminalId": terminal_id} in (item.get("content") or [])
    ]
    released = log.index(("call", "terminal/release"))
    assert embedded and embedded[0] < released  # shown in the card before it is released
    final = card_updates(client, "c1")[-1]
    assert final["status"] == "completed"
    assert final["content"][0] == {"type": "terminal", "terminalId": terminal_id}
    start = card_updates(client, "c1")[0]
    assert (start["title"], start["kind"]) == ("printf 'a b\\n%s\\n' 'two words'", "execute")
    assert tool_results(home, sid)[0] == "exit code 0\na b\ntwo words"  # read-only: unasked


async def test_a_timeout_kills_then_releases_the_terminal(home: Path, project: Path) -> None:
    rounds = [[call("run_argv", "c1", argv=["sleep", "60"], timeout_seconds=0.5)], [{"text": "ok"}]]
    async with client_with_terminal(home, rounds) as (client, server, _):
        sid = await client.start(project, CAPS)
        assert await client.prompt(sid, "go") == "end_turn"
        [term] = server.terms.values()
        assert term.proc.returncode is not None and term.released
    assert server.methods() == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/output",
        "terminal/release",
    ]
    assert tool_results(home, sid)[0].startswith(
        "[approval] user (once)\ntimed out after 0.5 s: the command and what it started were killed"
    )


async def test_cancel_kills_and_releases_the_terminal(home: Path, project: Path) -> None:
    rounds = [[call("run_argv", "c1", argv=["sleep", "60"])], [{"text": "never"}]]
    stops: list[str] = []
    async with client_with_terminal(home, rounds) as (client, server, _):
        sid = await client.start(project, CAPS)

        async def turn() -> None:
            stops.append(await client.prompt(sid, "go"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            await server.started.wait()
            await client.peer.notify("session/cancel", {"sessionId": sid})
        assert stops == ["cancelled"]
        assert server.methods()[-2:] == ["terminal/kill", "terminal/release"]
        [term] = server.terms.values()
        assert term.released
        with anyio.fail_after(5):  # the client's kill takes a moment to land
            await term.exited.wait()
    assert tool_results(home, sid)[0] == "error [ABORTED]: the turn was cancelled"


async def test_stdin_and_pipes_run_locally(home: Path, project: Path) -> None:
    rounds = [
        [
            call("run_argv", "c1", argv=["sort"], stdin="b\na\n"),
            call(
                "run_argv_batch",
                "c2",
                nodes=[
                    {"argv": ["printf", "x\\ny\\n"], "pipe": {"argv": ["wc", "-l"]}},
                    {"argv": ["echo", "in", "a", "terminal"]},
                ],
            ),
        ],
        [{"text": "ok"}],
    ]
    async with client_with_terminal(home, rounds) as (client, server, _):
        client.choice = "allow"  # two calls: one question for the round, "allow all 2"
        sid = await client.start(project, CAPS)
        assert await client.prompt(sid, "go") == "end_turn"
    # ACP terminals take no input and run one program: only the last node used one.
    creates = [p for m, p in server.calls if m == "terminal/create"]
    assert [c["args"] for c in creates] == [["echo", "in", "a", "terminal"]]
    sorted_, batch = tool_results(home, sid)
    assert sorted_ == "exit code 0\na\nb"  # read-only commands: nobody was asked
    assert "$ printf 'x\\ny\\n' | wc -l\nexit code 0 (pipeline: 0 | 0)\n2" in batch
    assert "$ echo in a terminal\nexit code 0\nin a terminal" in batch
    final = card_updates(client, "c2")[-1]
    assert [c["type"] for c in final["content"]] == ["terminal", "content"]


async def test_a_client_that_fails_to_start_the_command(home: Path, project: Path) -> None:
    rounds = [[call("run_argv", "c1", argv=["no-such-program-x"])], [{"text": "ok"}]]
    async with client_with_terminal(home, rounds) as (client, _, __):
        sid = await client.start(project, CAPS)
        assert await client.prompt(sid, "go") == "end_turn"
    [result] = tool_results(home, sid)
    assert result.startswith("error [COMMAND_NOT_FOUND]: no-such-program-x: no such program")


async def test_a_missing_program_is_said_by_tether_unconfined_too(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unconfined, the editor runs tether's lifetime launcher, which would find no program:
    tether says so before, as for a confined command."""
    monkeypatch.setenv("TETHER_SANDBOX", "none")
    rounds = [[call("run_argv", "c1", argv=["no-such-program-x"])], [{"text": "ok"}]]
    async with client_with_terminal(home, rounds) as (client, server, __):
        sid = await client.start(project, CAPS)
        assert await client.prompt(sid, "go") == "end_turn"
    [result] = tool_results(home, sid)
    assert result.startswith("error [COMMAND_NOT_FOUND]: no-such-program-x: no such program")
    assert "terminal/create" not in server.methods()


async def test_an_editor_that_cannot_create_the_terminal(home: Path, project: Path) -> None:
    rounds = [[call("run_argv", "c1", argv=["echo", "x"])], [{"text": "ok"}]]
    async with client_with_terminal(home, rounds) as (client, server, __):
        server.refuse = "no terminal for you"
        sid = await client.start(project, CAPS)
        assert await client.prompt(sid, "go") == "end_turn"
    [result] = tool_results(home, sid)
    assert result.startswith("error [CLIENT_TERMINAL_ERROR]: the editor could not run ")
    assert result.endswith(": no terminal for you")


@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock", "none"])
async def test_a_key_in_the_editors_environment_reaches_no_command(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch, mechanism: str
) -> None:
    """The editor's terminal runs with the editor's environment (here: this process's, as
    tether's own is); a provider key in it reaches neither a confined nor an unconfined
    command, and the request that creates the terminal does not carry it."""
    key = "sk-ant-in-the-editor-7a7a"
    monkeypatch.setenv("WORK_ANTHROPIC_KEY", key)
    monkeypatch.setenv("TETHER_SANDBOX", mechanism)
    rounds = [
        [call("run_argv", "c1", argv=["printenv", "WORK_ANTHROPIC_KEY"])],
        [call("run_argv", "c2", argv=["env"])],
        [{"text": "ok"}],
    ]
    async with client_with_terminal(home, rounds) as (client, server, _):
        sid = await client.start(project, CAPS)
        assert await client.prompt(sid, "go") == "end_turn"
    creates = [p for m, p in server.calls if m == "terminal/create"]
    assert len(creates) == 2 and key not in str(creates)
    printed, listed = tool_results(home, sid)
    # Confined, the launcher dropped it; unconfined, the editor was told to empty it (an
    # ACP client cannot be told to unset a variable).
    assert printed in ("exit code 1\n(no output)", "exit code 0\n(no output)"), printed
    assert "PATH=" in listed and key not in listed, listed
