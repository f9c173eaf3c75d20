"""A stdio MCP server's pipes as the SDK's message streams, with a bound on a message's size.

The SDK's own stdio client splits the server's output by joining and re-splitting a growing
string: a 50 MB line costs quadratic time on the event loop, and tether never hears of the
server again. Here lines are cut out of a byte buffer in linear time, and a message over
MAX_MESSAGE bytes ends the connection with a reason the user is told (`problem`). The server
runs in a process group of its own, with the SDK's minimal environment plus its `env`; stopping
it closes its stdin, then terminates and kills the group, as the SDK does. POSIX only (Windows
keeps the SDK's client, which knows its job objects).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.abc
import mcp.types as mt
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from tether.errors import McpMessageTooLarge

MAX_MESSAGE = 8 * 1024 * 1024  # bytes of one message from a server
EXIT_GRACE = 2.0  # seconds to exit on its own once its stdin closes, then after SIGTERM


class StdioTransport(contextlib.AbstractAsyncContextManager[tuple[Any, Any]]):
    def __init__(
        self, command: str, args: list[str], env: dict[str, str], cwd: Path, errlog: TextIO
    ) -> None:
        self._argv = [command, *args]
        self._env = {**get_default_environment(), **env}
        self._cwd = cwd
        self._errlog = errlog
        self.problem: str | None = None  # why the connection ended, when it was us
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> tuple[Any, Any]:
        await self._stack.__aenter__()
        try:
            return await self._stack.enter_async_context(self._streams())
        except BaseException:
            await self._stack.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self._stack.__aexit__(*exc_info)

    @contextlib.asynccontextmanager
    async def _streams(self) -> AsyncIterator[tuple[Any, Any]]:
        process = await anyio.open_process(
            self._argv,
            env=self._env,
            cwd=self._cwd,
            stderr=self._errlog.fileno(),
            start_new_session=True,
        )
        to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, process, to_session)
                tg.start_soon(self._write, process, from_session, to_session)
                try:
                    yield from_server, to_server
                finally:
                    from_server.close()
                    to_server.close()
                    await _stop(process)
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                await process.aclose()

    async def _read(self, process: anyio.abc.Process, out: Any) -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with out:
            try:
                async for chunk in process.stdout:
                    start = len(buffer)
                    buffer += chunk
                    while (end := buffer.find(b"\n", start)) >= 0:  # linear: scan the new part
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        start = 0
                        if line.strip():
                            await out.send(_parse(line))
                    if len(buffer) > MAX_MESSAGE:
                        self.problem = (
                            f"it sent a message of over {MAX_MESSAGE // (1024 * 1024)} MB "
                            "(instructions or a tool list that large are not read)"
                        )
                        await out.send(McpMessageTooLarge(self.problem))
                        return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

    async def _write(self, process: anyio.abc.Process, messages: Any, reader: Any) -> None:
        assert process.stdin is not None
        try:
            async with messages:
                async for message in messages:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await reader.aclose()  # the server stopped reading: the session sees it end


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mt.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _stop(process: anyio.abc.Process) -> None:
    """stdin closed, a moment to exit, then SIGTERM and SIGKILL; whatever the server started
    in its group goes too, even when it exited on its own."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            _signal_group(process.pid, sig)
        with anyio.move_on_after(EXIT_GRACE):
            await process.wait()
            break
    _signal_group(process.pid, signal.SIGKILL)  # its children, if any are left


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
