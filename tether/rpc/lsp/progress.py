"""A turn as LSP work-done progress: `window/workDoneProgress/create` (unless the client gave a
token with the command), `$/progress` begin, reports of the latest line or the running tool (at
most one per REPORT_INTERVAL, the newest winning), end. The progress is cancellable; cancelling
it cancels the turn (the front maps the token to it).

A client without work-done progress (eglot 1.9 announces none) gets a few `window/showMessage`
notifications of type Log instead, which it shows in its message area: the turn's start, each
tool as it starts running, the end (`MessageProgress`)."""

from __future__ import annotations

import logging

import anyio
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tether.rpc.lsp.wire import Connection
from tether.rpc.rpc_error import ConnectionClosed, RpcError

log = logging.getLogger("tether.lsp")

REPORT_INTERVAL = 0.1  # seconds: at most ~10 reports a second
MAX_MESSAGE = 100  # characters of a report (clients show one status line)

Token = int | str


class TurnProgress:
    def __init__(self, server: LanguageServer, token: Token) -> None:
        self._progress = server.work_done_progress
        self.token = token
        self._latest = ""
        self._shown = ""
        self._last = 0.0
        self._wake = anyio.Event()
        self._scope = anyio.CancelScope()

    @classmethod
    async def start(
        cls, conn: Connection, token: Token, *, create: bool, title: str, message: str
    ) -> TurnProgress | None:
        """Begin the progress (after creating the token when asked to); None when the client
        refused the token."""
        if create:
            params = types.WorkDoneProgressCreateParams(token=token)
            try:
                await conn.request(types.WINDOW_WORK_DONE_PROGRESS_CREATE, params)
            except (RpcError, ConnectionClosed) as exc:
                log.info("no progress for this turn: %s", exc)
                return None
        progress = cls(conn.server, token)
        begin = types.WorkDoneProgressBegin(title=title, cancellable=True, message=_line(message))
        progress._progress.begin(token, begin)
        return progress

    def report(self, message: str) -> None:
        self._latest = _line(message)
        self._wake.set()

    async def run(self) -> None:
        """Send the newest report, at most one per REPORT_INTERVAL, until the end."""
        with self._scope:
            await self._reports()

    async def _reports(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            wait = self._last + REPORT_INTERVAL - anyio.current_time()
            if wait > 0:
                await anyio.sleep(wait)
            if self._latest and self._latest != self._shown:
                self._shown = self._latest
                self._last = anyio.current_time()
                self._progress.report(self.token, types.WorkDoneProgressReport(message=self._shown))

    def end(self, message: str) -> None:
        self._scope.cancel()
        self._progress.end(self.token, types.WorkDoneProgressEnd(message=_line(message)))
        self._progress.tokens.pop(self.token, None)


class MessageProgress:
    """A turn's progress as sparse `window/showMessage` (type Log) notifications."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def start(self, prompt: str) -> None:
        self._say(f"working: {_line(prompt.splitlines()[0] if prompt else '')}")

    def tool(self, title: str) -> None:
        self._say(f"Running: {_line(title)}")

    def end(self, message: str) -> None:
        self._say(_line(message))

    def _say(self, text: str) -> None:
        params = types.ShowMessageParams(type=types.MessageType.Log, message=f"tether: {text}")
        self._conn.notify(types.WINDOW_SHOW_MESSAGE, params)


def _line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 1] + "…"
