"""The `terminal` seam backed by the client's `terminal/*` methods: the command runs in the
editor's own terminal (program and arguments, never one shell string), the tool card embeds
that terminal, and a timeout or a cancellation kills it (`terminal/kill`, then
`terminal/release`). What ACP terminals cannot do — standard input, pipelines — runs locally."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from tether.engine.local.processes import LocalTerminal, command_environment
from tether.engine.local.terminal_text import sanitize
from tether.engine.seam import CommandProgress, CommandResult, Overflow, SeamError, Stage
from tether.rpc.peer import Peer
from tether.rpc.rpc_error import ConnectionClosed, RpcError
from tether.schemas import acp

CLEANUP_TIMEOUT = 5.0  # how long kill + release may take when the client is slow or gone


def terminal_environment(env: dict[str, str]) -> dict[str, str]:
    """What a terminal is created with: the command environment and the call's variables,
    and every other variable of tether's own emptied. The editor starts the command with its
    own environment and these on top; an ACP client cannot be told to drop a variable, and
    tether's environment is the editor's (a key in it must not reach the command). A
    confined command's launcher keeps the command environment only, whatever the editor
    adds."""
    emptied = dict.fromkeys(os.environ, "")
    return {**emptied, **command_environment(), **env}


class ClientTerminal:
    def __init__(
        self,
        peer: Peer,
        session_id: str,
        local: LocalTerminal | None = None,
        *,
        through_shell: bool = False,
    ) -> None:
        self._peer = peer
        self._session = session_id
        self._local = local or LocalTerminal()
        # The client runs `command` and `args` joined with spaces through a shell (Zed does):
        # the argv then goes as one shell-quoted `command`, so the shell sees exactly it and
        # nothing of an argument is expanded, substituted or split.
        self._through_shell = through_shell

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
        terminal_id = await self._create(argv, cwd, env, output_limit)
        done = False
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
        ended = status or out.exit_status or acp.TerminalExitStatus()
        return CommandResult(
            exit_code=ended.exit_code,
            output=sanitize(out.output),
            truncated=out.truncated,
            terminal_id=terminal_id,
            signal=ended.signal,
            timed_out=status is None,
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

    async def _create(
        self, argv: list[str], cwd: Path, env: dict[str, str], output_limit: int
    ) -> str:
        command, args = (shlex.join(argv), []) if self._through_shell else (argv[0], argv[1:])
        params = acp.CreateTerminalRequest(
            session_id=self._session,
            command=command,
            args=args,
            env=[acp.EnvVariable(name=k, value=v) for k, v in terminal_environment(env).items()],
            cwd=str(cwd),
            output_byte_limit=output_limit,
        )
        try:
            created = await self._peer.request(
                "terminal/create", params, acp.CreateTerminalResponse
            )
        except RpcError as exc:
            raise SeamError(
                "CLIENT_TERMINAL_ERROR", f"the editor could not run {argv[0]}: {exc.message}"
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
