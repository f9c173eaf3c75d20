"""What `tether lsp` tells the user outside a request's answer: notices and a prompt's answer as
`window/showMessage` (or `window/logMessage` for information), the transcript opened with
`window/showDocument`, and which clients get a prompt's answer as a message."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from tether.engine import events as ev
from tether.rpc.lsp.wire import Connection
from tether.rpc.rpc_error import ConnectionClosed, RpcError

log = logging.getLogger("tether.lsp")

RESULT, MESSAGE = "result", "message"  # how prompts are answered (`answer_mode`)
MESSAGE_CLIENTS = {"eglot"}  # `clientInfo.name`s (lowercased) answered with MESSAGE by default
ENDINGS = {
    "end_turn": "Done",
    "cancelled": "Cancelled",
    "max_tokens": "Stopped: the answer hit the output limit",
    "max_turn_requests": "Stopped: too many rounds",
    "refusal": "The model refused",
}


def answer_mode(params: dict[str, Any]) -> str:
    """RESULT or MESSAGE: `initializationOptions.answer`, else by `clientInfo.name`."""
    options = params.get("initializationOptions")
    chosen = options.get("answer") if isinstance(options, dict) else None
    if chosen in (RESULT, MESSAGE):
        return chosen
    info = params.get("clientInfo")
    name = info.get("name") if isinstance(info, dict) else None
    by_name = isinstance(name, str) and name.lower() in MESSAGE_CLIENTS
    return MESSAGE if by_name else RESULT


def answer_message(result: dict[str, Any], shows_documents: bool) -> str:
    """A finished prompt's answer as one message (for a client answered at once)."""
    stop, text = result["stopReason"], result["text"]
    if stop == "end_turn":
        message = f"tether: {text or 'Done'}"
    else:
        message = f"tether: {ENDINGS.get(stop, stop)}" + (f"\n{text}" if text else "")
    transcript = result.get("transcript")
    if transcript and not shows_documents:
        message += f"\nTranscript: {to_fs_path(transcript)}"
    return message


def say(conn: Connection, kind: types.MessageType, message: str) -> None:
    conn.notify(types.WINDOW_SHOW_MESSAGE, types.ShowMessageParams(type=kind, message=message))


def show_notice(conn: Connection, notice: ev.Notice) -> None:
    text = f"tether: {notice.title}" + (f"\n{notice.description}" if notice.description else "")
    if notice.severity == "info":
        params = types.LogMessageParams(type=types.MessageType.Info, message=text)
        conn.notify(types.WINDOW_LOG_MESSAGE, params)
        return
    kind = types.MessageType.Error if notice.severity == "error" else types.MessageType.Warning
    say(conn, kind, text)


async def show_document(conn: Connection, uri: str) -> None:
    params = types.ShowDocumentParams(uri=uri, take_focus=False)
    try:
        await conn.request(types.WINDOW_SHOW_DOCUMENT, params)
    except (RpcError, ConnectionClosed) as exc:
        log.info("the client did not show the transcript: %s", exc)
