"""What a third-party client is shown of a command in its terminal, and that the command still
runs where tether says: the `terminal/create` frames acpx, Toad and any other client receive
(`command`, `args`, `env`), with the client running them the way that client does
(tests/support/terminal_client.py), under bubblewrap, Landlock and no sandbox; confinement judged by the
file system afterwards. Zed's own replay is in tests/editors/test_editor_zed.py."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.inprocess import Client, agent_in_memory
from tests.support.stored import tool_results
from tests.support.terminal_client import TerminalServer
from tether.tools import catalog

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform != "linux", reason="the sandbox's launchers are Linux's"),
]
RUNS = {"acpx": "exec", "toad": "toad", "some-editor": "exec"}  # how each client starts it
LAUNCHER = r"/\S+/tether-sandbox-\w+/run/(?:sandboxed|unconfined)-\d+"


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": arguments}}


@asynccontextmanager
async def session(
    home: Path, project: Path, client: str, rounds: list[list[dict[str, Any]]], runs: str = ""
) -> AsyncIterator[tuple[Client, TerminalServer, str]]:
    """A session of `client` (its `clientInfo.name`) whose terminals run the way it runs them."""
    script = {"rounds": [{"events": r} for r in rounds]}
    async with agent_in_memory(home, script, catalog()) as agent, anyio.create_task_group() as tg:
        server = TerminalServer(runs or RUNS[client])
        server.register(agent.peer, tg)
        try:
            sid = await agent.start(project, {"terminal": True}, {"name": client, "version": "1"})
            assert await agent.prompt(sid, "go") == "end_turn"
            yield agent, server, sid
        finally:
            await server.aclose()
            tg.cancel_scope.cancel()


def creates(server: TerminalServer) -> list[dict[str, Any]]:
    return [p for m, p in server.calls if m == "terminal/create"]


def env_of(create: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in create["env"]}


def shown(client: str, create: dict[str, Any]) -> str:
    """The command line the client puts before the user: acpx's approval prompt and operation
    log (`toCommandLine`: the command, then each argument as JSON), Toad's card header
    (`Command.__str__`)."""
    if client == "acpx":
        return " ".join([create["command"], *(json.dumps(a) for a in create["args"])])
    return shlex.join([create["command"], *create["args"]]).strip("'")


def check_frame(client: str, create: dict[str, Any], argv: list[str], confined: bool) -> None:
    env = env_of(create)
    if client == "acpx":
        # The program by name, found first in a directory of tether's that holds a one-use
        # launcher named after it; the launcher is gone once the command ran.
        assert (create["command"], create["args"]) == (argv[0], argv[1:])
        first = Path(env["PATH"].split(os.pathsep)[0])
        assert re.fullmatch(r"/\S+/tether-sandbox-\w+/run/named-\w+", str(first))
        assert not first.exists()
        assert shown(client, create) == " ".join([argv[0], *map(json.dumps, argv[1:])])
    elif client == "toad":
        # One line for its shell: the launcher named by a variable, then the argv, quoted.
        var = "TETHER_SANDBOXED" if confined else "TETHER_UNCONFINED"
        assert create["command"] == f'"${var}" {shlex.join(argv)}' and create["args"] == []
        assert re.fullmatch(LAUNCHER, env[var])
        assert Path(env[var]).name.startswith("sandboxed-" if confined else "unconfined-")
        if shlex.join(argv) == " ".join(argv):  # (Toad's header mangles any quoted word)
            assert shown(client, create) == f'"${var}" {" ".join(argv)}'
    else:  # a client tether knows nothing of: the launcher by its path, then the argv
        assert re.fullmatch(LAUNCHER, create["command"]) and create["args"] == argv
        kind = "sandboxed-" if confined else "unconfined-"
        assert Path(create["command"]).name.startswith(kind)


@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock", "none"])
@pytest.mark.parametrize("client", list(RUNS))
async def test_the_client_is_shown_the_command_as_the_model_wrote_it(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch, mechanism: str, client: str
) -> None:
    monkeypatch.setenv("TETHER_SANDBOX", mechanism)
    argvs = [["ls", "-a"], ["printf", "%s|", "two words"], ["printenv", "PATH"]]
    rounds = [
        [call("run_argv", "c1", argv=argvs[0])],
        [call("run_argv_batch", "c2", nodes=[{"argv": argvs[1]}])],  # printf: a builtin too
        [call("run_argv", "c3", argv=argvs[2])],
        [{"text": "ok"}],
    ]
    async with session(home, project, client, rounds) as (_, server, sid):
        pass
    made = creates(server)
    assert len(made) == 3
    for create, argv in zip(made, argvs, strict=True):
        check_frame(client, create, argv, confined=mechanism != "none")
    listed, printed, path = tool_results(home, sid)
    assert listed.startswith("exit code 0\n") and "README.md" in listed
    assert "$ printf '%s|' 'two words'\nexit code 0\ntwo words|" in printed
    assert path == f"exit code 0\n{os.environ['PATH']}"  # the program's own, as it was


def unasked(result: str) -> str:
    """A tool result without the line saying the user allowed it."""
    return result.removeprefix("[approval] user (once)\n")


def plant(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock"])
@pytest.mark.parametrize("client", ["acpx", "toad"])
async def test_confinement_holds_whatever_the_client_shows(
    home: Path,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mechanism: str,
    client: str,
) -> None:
    """A `touch` shadowed by a program on the PATH, a script named by a path, a program
    named like a shell builtin (`kill`) and one whose name holds shell syntax: each runs in
    the sandbox. Outside the project nothing is written, no process outside is signalled,
    and no shell ever reads the program's name."""
    monkeypatch.setenv("TETHER_SANDBOX", mechanism)
    outside = tmp_path / "outside"
    outside.mkdir()
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    plant(bin_, "touch", 'echo planted touch ran\nexec /usr/bin/touch "$@"')
    plant(bin_, "say;cd ..;touch pwned", "echo said")
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    plant(project, "mk.sh", 'exec /usr/bin/touch "$1"')
    argvs = [
        ["touch", str(outside / "a")],
        ["./mk.sh", str(outside / "b")],
        ["kill", "-0", str(os.getpid())],
        ["say;cd ..;touch pwned"],
    ]
    rounds = [[call("run_argv", f"c{i}", argv=a)] for i, a in enumerate(argvs)]
    async with session(home, project, client, [*rounds, [{"text": "ok"}]]) as (_, server, sid):
        pass
    assert list(outside.iterdir()) == [] and not (tmp_path / "pwned").exists()
    touched, scripted, killed, said = map(unasked, tool_results(home, sid))
    assert "planted touch ran" in touched and not touched.startswith("exit code 0")
    assert not scripted.startswith("exit code 0")
    assert not killed.startswith("exit code 0")  # no builtin `kill` reached this process
    assert said == "exit code 0\nsaid"
    made = creates(server)
    check_frame(client, made[0], argvs[0], confined=True)
    check_frame(client, made[2], argvs[2], confined=True)
    if client == "acpx":  # no name to look up: a launcher that says what it is
        for create, argv in ((made[1], argvs[1]), (made[3], argvs[3])):
            assert (create["command"], create["args"]) == ("sandboxed", argv)
    else:
        check_frame(client, made[1], argvs[1], confined=True)
        check_frame(client, made[3], argvs[3], confined=True)


@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock"])
async def test_a_client_that_looks_elsewhere_is_told_and_then_given_the_launcher(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mechanism: str
) -> None:
    """A client that calls itself acpx but looks programs up in its own PATH runs the real
    `ls`, outside the sandbox: the launcher never ran, so tether says so in the result, and
    from then on names the launcher by its path, which any client runs."""
    monkeypatch.setenv("TETHER_SANDBOX", mechanism)
    outside = tmp_path / "outside"
    outside.mkdir()
    rounds = [
        [call("run_argv", "c1", argv=["ls"])],
        [call("run_argv", "c2", argv=["touch", str(outside / "x")])],
        [{"text": "ok"}],
    ]
    async with session(home, project, "acpx", rounds, runs="own-path") as (_, server, sid):
        pass
    listed, touched = map(unasked, tool_results(home, sid))
    first = listed.split("\n", 1)[0]
    assert first.startswith("exit code 0 ⚠ the editor did not start tether's launcher"), first
    assert "README.md" in listed
    assert not touched.startswith("exit code 0") and "⚠" not in touched
    made = creates(server)
    assert (made[0]["command"], made[0]["args"]) == ("ls", [])
    assert re.fullmatch(LAUNCHER, made[1]["command"])
    assert made[1]["args"] == ["touch", str(outside / "x")]
    assert list(outside.iterdir()) == []


async def test_a_shell_client_that_drops_the_variable_runs_nothing_and_is_told(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Toad-shaped client that ignores the agent's `env`: the variable naming the launcher is
    unset, the shell runs an empty name, which is nothing; tether says the launcher did not
    start and from then on sends the launcher's path, the whole line still quoted word by
    word for the client's shell."""
    monkeypatch.setenv("TETHER_SANDBOX", "landlock")
    outside = tmp_path / "outside"
    outside.mkdir()
    target = str(outside / "two words")
    rounds = [
        [call("run_argv", "c1", argv=["touch", str(outside / "x")])],
        [call("run_argv", "c2", argv=["touch", target])],
        [{"text": "ok"}],
    ]
    async with session(home, project, "toad", rounds, runs="toad-bare") as (_, server, sid):
        # The launcher that never ran is gone (a pending one would keep its placeholders).
        skipped = Path(env_of(creates(server)[0])["TETHER_SANDBOXED"])
        assert skipped.parent.is_dir() and not skipped.exists()
    first, second = map(unasked, tool_results(home, sid))
    assert first.startswith("exit code 127 ⚠ the editor did not start tether's launcher"), first
    assert not second.startswith("exit code 0") and "⚠" not in second
    made = creates(server)
    assert made[0]["command"] == f'"$TETHER_SANDBOXED" touch {outside / "x"}'
    launcher, *words = shlex.split(made[1]["command"])
    assert re.fullmatch(LAUNCHER, launcher) and words == ["touch", target]
    assert made[1]["args"] == [] and list(outside.iterdir()) == []
