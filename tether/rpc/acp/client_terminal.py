"""The `terminal` seam backed by the client's `terminal/*` methods: the command runs in the
editor's own terminal (program and arguments, never one shell string), the tool card embeds
that terminal, and a timeout or a cancellation kills it (`terminal/kill`, then
`terminal/release`). What ACP terminals cannot do — standard input, pipelines — runs locally.

A command starts through its one-use launcher (engine/sandbox/), and clients show the user what
`terminal/create` carries, so the launcher is named the way the client runs `command`
(`TerminalForm`): by the program's own name where the client looks that up in the PATH it is
given (acpx), through a variable on a shell line where the client runs one (Zed, Toad), and by
its path anywhere else (any client runs a path). A launcher that did not start means the client
ran something else: the result says so, and the client gets launchers by their path from then
on."""

from __future__ import annotations

import os
import re
import shlex
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import anyio

from tether.engine.local.processes import LocalTerminal, command_environment
from tether.engine.local.terminal_text import sanitize
from tether.engine.sandbox import named_launchers
from tether.engine.seam import CommandProgress, CommandResult, Launcher, Overflow, Stage
from tether.errors import SeamError
from tether.rpc.acp.acp_handshake import Handshake
from tether.rpc.peer import Peer
from tether.rpc.rpc_error import ConnectionClosed, RpcError
from tether.schemas import acp

CLEANUP_TIMEOUT = 5.0  # how long kill + release may take when the client is slow or gone
_POSIX_SHELLS = frozenset({"sh", "ash", "dash", "bash", "zsh", "ksh", "ksh93", "mksh", "yash"})
# A program name a client may look up as it is (a leading dash would read as an option).
_BARE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@%,=-]*")


class TerminalForm:
    """How one client starts a terminal's `command` and `args`, and so how tether names a
    command's launcher to it.

    `shell`: the client joins them with spaces, unquoted, into one line for a POSIX shell (Zed:
    `/bin/sh -i -c "(command args) </dev/null"`, after its Python toolchain's activation script
    put the project's venv first on PATH; Toad: `$SHELL -c "command"` when `command` holds a
    space). tether then sends one line, every word quoted, and names the launcher there by a
    variable: a path, so no PATH, function, builtin or activated venv is consulted, and an
    unset variable is an empty name that runs nothing. Otherwise the client starts the program
    itself.

    `by_name`: the client looks a bare `command` up in the PATH of the `env` it is given (acpx:
    Node's child_process.spawn with `env`), so the launcher can carry the program's own name,
    first on that PATH.

    `named`: tether names the launcher by a variable (shell) or the program's name (by name)
    rather than by its path; off for a client tether knows nothing of (any client runs a
    path), and from the first launcher a client skipped on."""

    __slots__ = ("named", "shell")

    def __init__(self, *, shell: bool = False, by_name: bool = False) -> None:
        self.shell = shell
        self.named = shell or by_name


def client_form(name: object, shell: str | None) -> TerminalForm:
    """The form of the client called `name` (its `clientInfo.name`); `shell`: the user's
    `$SHELL` (Toad's, which started tether with its environment)."""
    client = name.strip().lower() if isinstance(name, str) else ""
    if client == "zed":
        return TerminalForm(shell=True)
    if client == "toad":  # a variable as the command: POSIX shells only (fish refuses one)
        posix = os.path.basename(shell or "sh") in _POSIX_SHELLS
        return TerminalForm(shell=posix)
    return TerminalForm(by_name=client == "acpx")


_forms: weakref.WeakKeyDictionary[Handshake, TerminalForm] = weakref.WeakKeyDictionary()


def terminal_form(handshake: Handshake) -> TerminalForm:
    """The form for the client of this connection (kept while the connection lives)."""
    form = _forms.get(handshake)
    if form is None:
        name = (handshake.client_info or {}).get("name")
        form = _forms[handshake] = client_form(name, os.environ.get("SHELL"))
    return form


class _Shown(NamedTuple):
    """What `terminal/create` carries of a command: `command`, `args`, variables on top of
    the environment, and the directory of a named launcher (removed after)."""

    command: str
    args: list[str]
    env: dict[str, str]
    named: Path | None = None


def terminal_environment(env: dict[str, str]) -> dict[str, str]:
    """What a terminal is created with: the command environment and the call's variables,
    and every other variable of tether's own emptied. The editor starts the command with its
    own environment and these on top; an ACP client cannot be told to drop a variable, and
    tether's environment is the editor's (a key in it must not reach the command). A
    confined command's launcher keeps the command environment only, whatever the editor
    adds."""
    emptied = dict.fromkeys(os.environ, "")
    return {**emptied, **command_environment(), **env}


def _settle(shown: _Shown, launcher: Launcher | None) -> bool:
    """After the client is done with the terminal: the named launcher's directory goes; True
    when the launcher never started (the client ran something else, or nothing)."""
    if shown.named is not None:
        named_launchers.forget(shown.named)
    return launcher is not None and not named_launchers.settle(launcher.path)


class ClientTerminal:
    def __init__(
        self,
        peer: Peer,
        session_id: str,
        local: LocalTerminal | None = None,
        *,
        form: TerminalForm | None = None,
    ) -> None:
        self._peer = peer
        self._session = session_id
        self._local = local or LocalTerminal()
        self._form = form or TerminalForm()

    async def run(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        timeout: float,
        output_limit: int,
        stdin: bytes | None = None,
        progress: CommandProgress | None = None,
        overflow: Overflow | None = None,
        launcher: Launcher | None = None,
    ) -> CommandResult:
        if stdin is not None:  # terminal/create takes no input
            return await self._local.run(
                argv,
                cwd=cwd,
                env=env,
                timeout=timeout,
                output_limit=output_limit,
                stdin=stdin,
                progress=progress,
                overflow=overflow,
            )
        shown = await anyio.to_thread.run_sync(self._shown, argv, launcher)
        try:
            terminal_id = await self._create(shown, cwd, env, output_limit)
        except BaseException:
            _settle(shown, launcher)
            raise
        done = skipped = False
        try:
            if progress is not None:
                await progress.terminal(terminal_id)  # embedded before it is ever released
            status: acp.WaitForTerminalExitResponse | None = None
            with anyio.move_on_after(timeout):
                status = await self._call(
                    "terminal/wait_for_exit", terminal_id, acp.WaitForTerminalExitResponse
                )
            if status is None:
                await self._call("terminal/kill", terminal_id, acp.Empty)
            out = await self._call("terminal/output", terminal_id, acp.TerminalOutputResponse)
            done = True
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT):
                await self._cleanup(terminal_id, kill=not done)
            skipped = _settle(shown, launcher)
        if skipped:  # the client ran something else: from now on, the launcher by its path
            self._form.named = False
        ended = status or out.exit_status or acp.TerminalExitStatus()
        return CommandResult(
            exit_code=ended.exit_code,
            output=sanitize(out.output),
            truncated=out.truncated,
            terminal_id=terminal_id,
            signal=ended.signal,
            timed_out=status is None,
            launcher_skipped=skipped,
        )

    async def run_pipeline(
        self,
        stages: Sequence[Stage],
        *,
        stdin: bytes | None,
        timeout: float,
        output_limit: int,
        progress: CommandProgress | None = None,
        overflow: Overflow | None = None,
    ) -> CommandResult:
        # An ACP terminal runs one program; a pipe between two needs local processes.
        return await self._local.run_pipeline(
            stages,
            stdin=stdin,
            timeout=timeout,
            output_limit=output_limit,
            progress=progress,
            overflow=overflow,
        )

    def _shown(self, argv: list[str], launcher: Launcher | None) -> _Shown:
        """(On a worker thread: a named launcher is a file to write.)"""
        form = self._form
        if launcher is not None and form.named and form.shell:
            var = "TETHER_SANDBOXED" if launcher.confined else "TETHER_UNCONFINED"
            line = f'"${var}" {shlex.join(launcher.program)}'
            return _Shown(line, [], {var: str(launcher.path)})
        if form.shell:  # quoted whole: the shell sees exactly the argv, nothing expanded
            return _Shown(shlex.join(argv), [], {})
        if launcher is not None and form.named:
            program = launcher.program
            bare = _BARE.fullmatch(program[0]) is not None
            name = program[0] if bare else "sandboxed" if launcher.confined else "unconfined"
            head, args = (program[:1], program[1:]) if bare else ([], program)
            path = command_environment().get("PATH", os.defpath)
            named = named_launchers.named(launcher.path, name, head, path)
            return _Shown(name, args, {"PATH": f"{named}{os.pathsep}{path}"}, named)
        return _Shown(argv[0], argv[1:], {})

    async def _create(
        self, shown: _Shown, cwd: Path, env: dict[str, str], output_limit: int
    ) -> str:
        variables = {**terminal_environment(env), **shown.env}
        params = acp.CreateTerminalRequest(
            session_id=self._session,
            command=shown.command,
            args=shown.args,
            env=[acp.EnvVariable(name=k, value=v) for k, v in variables.items()],
            cwd=str(cwd),
            output_byte_limit=output_limit,
        )
        try:
            created = await self._peer.request(
                "terminal/create", params, acp.CreateTerminalResponse
            )
        except RpcError as exc:
            raise SeamError(
                "CLIENT_TERMINAL_ERROR", f"the editor could not run {shown.command}: {exc.message}"
            ) from None
        return created.terminal_id

    async def _call(self, method: str, terminal_id: str, result_type: Any) -> Any:
        params = acp.TerminalRequest(session_id=self._session, terminal_id=terminal_id)
        try:
            return await self._peer.request(method, params, result_type)
        except RpcError as exc:
            raise SeamError(
                "CLIENT_TERMINAL_ERROR", f"the editor's terminal failed ({method}): {exc.message}"
            ) from None

    async def _cleanup(self, terminal_id: str, *, kill: bool) -> None:
        """Kill (when the command may still run) and release, whatever the client says: a
        client that is gone or answers with an error must not keep the turn waiting."""
        for method in (("terminal/kill",) if kill else ()) + ("terminal/release",):
            try:
                await self._call(method, terminal_id, acp.Empty)
            except (SeamError, ConnectionClosed):
                pass
