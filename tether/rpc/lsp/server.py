"""The pygls language server and what it routes to the front: the commands, code actions,
document sync (pygls keeps the texts; the front hears of each change), progress cancellation,
`initialized` and `shutdown`; `workspace/didChangeConfiguration` is taken and left (the session's
settings come with `initializationOptions`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter

from tether import __version__
from tether.rpc.lsp.lsp_handshake import CANCEL, PROMPT, SLASH_NAMES
from tether.rpc.rpc_error import INTERNAL_ERROR

if TYPE_CHECKING:
    from tether.rpc.lsp.front import LspFront

log = logging.getLogger("tether.lsp")


class TetherLanguageServer(LanguageServer):
    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would show the user "Error in server: ..." for a malformed notification.
        log.warning("LSP error (%s): %s", getattr(source, "__name__", source), error)


def make_server() -> tuple[TetherLanguageServer, cattrs.Converter]:
    """The server, and the lsprotocol converter it types messages with (pygls's default)."""
    converter = default_converter()
    server = TetherLanguageServer(
        "tether",
        __version__,
        text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        converter_factory=lambda: converter,
    )
    return server, converter


def _slash(front: LspFront, name: str):
    """`tether.NAME ["args"]`: the prompt `/NAME args`, answered as a prompt is."""

    async def run(*arguments):
        return await front.prompt(*arguments, slash=name)

    return run


def register(server: LanguageServer, front: LspFront) -> None:
    """Each handler is a fresh function: pygls tags what it registers with attributes (a bound
    method takes none), and passes commands' raw JSON arguments through to an unannotated
    `*arguments` (an annotation would have it convert them, or inject the server)."""

    async def prompt(*arguments):
        return await front.prompt(*arguments)

    async def cancel(*arguments):
        return await front.cancel(*arguments)

    def code_action(params):
        try:
            return front.code_actions(params)
        except Exception as exc:  # answered without the traceback pygls would attach
            log.exception("code actions failed")
            raise JsonRpcException(f"Internal error: {exc}", INTERNAL_ERROR) from None

    def document_changed(params):
        front.document_changed(params)

    def progress_cancelled(params):
        front.tickets.progress_cancelled(params)

    def initialized(params):
        front.initialized()

    def configuration_changed(params):
        # Neovim and eglot send one as they connect; unhandled, pygls logs a warning for each.
        log.debug("workspace/didChangeConfiguration taken and left: %s", params.settings)

    async def shutdown(*args):
        try:
            await front.tickets.shutdown()
        except Exception as exc:
            log.exception("shutdown failed")
            raise JsonRpcException(f"Internal error: {exc}", INTERNAL_ERROR) from None

    server.command(PROMPT)(prompt)
    server.command(CANCEL)(cancel)
    for name in SLASH_NAMES:
        server.command(f"tether.{name}")(_slash(front, name))
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION)(code_action)
    for method in (
        types.TEXT_DOCUMENT_DID_OPEN,
        types.TEXT_DOCUMENT_DID_CHANGE,
        types.TEXT_DOCUMENT_DID_CLOSE,
    ):
        server.feature(method)(document_changed)
    server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)(progress_cancelled)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(configuration_changed)
    server.feature(types.SHUTDOWN)(shutdown)
