"""pygls's LSP protocol on tether's transport.

pygls dispatches messages, types them with lsprotocol (through lsprotocol's cattrs converter)
and runs the handlers; this connection owns the bytes around it: Content-Length frames with a
size cap, the output queue (`Output`, which pygls writes through), and the cases where pygls
alone would leave a client waiting or the server stuck (`Connection`). A frame that is not JSON
is answered -32700, an invalid request -32600, params that do not fit their type -32602 with what
is wrong; a malformed or error answer to one of our own
requests fails that request, never the connection; a late answer to a request we gave up on is
dropped quietly. `initialize` is answered here (the same answer as the fast path, which may
already have sent it), `exit` ends the connection instead of calling `sys.exit` from a handler,
and a `$/cancelRequest` naming a running prompt goes to the front, which ends the turn so the
prompt still answers (with `cancelled`). When the input ends, running turns are cancelled, every
request already read is answered (at most 10 s), and the output is flushed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from concurrent.futures import Future
from typing import Any, Protocol

import anyio
import anyio.lowlevel
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from tether.rpc.json_depth import too_deep
from tether.rpc.lsp.lsp_handshake import PROMPT, SLASH, LspHandshake, clean_params
from tether.rpc.lsp.pygls_internals import forget_request, is_pending, still_pending
from tether.rpc.rpc_error import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ConnectionClosed,
    RpcError,
)
from tether.transports.framing import FrameTooLarge
from tether.transports.streams import FramedStream

log = logging.getLogger("tether.lsp")

SERVER_NOT_INITIALIZED = -32002
ANSWER_WAIT = 10.0  # at the end of input, how long requests already read may take to answer

RequestId = int | str


class Hooks(Protocol):
    """What the connection tells the front, synchronously, as frames are read."""

    def accept(self, request_id: RequestId, params: types.ExecuteCommandParams) -> None:
        """A `tether.prompt` request was read (its handler has not started yet)."""
        ...

    def cancel_request(self, request_id: RequestId) -> bool:
        """A `$/cancelRequest`: True when it named a prompt, which the front then cancels."""
        ...

    async def input_ended(self) -> None:
        """The client is gone: running turns end."""
        ...


class Output:
    """The writer pygls writes through (synchronously, on the event loop), and the messages we
    build ourselves, in order with pygls's: one queue, which `run` sends to the stream."""

    def __init__(self, stream: FramedStream) -> None:
        self._stream = stream
        self._queue: list[bytes] = []
        self._queued = self._written = 0  # payloads handed to us / to the stream
        self._wake = anyio.Event()
        self._sent = anyio.Event()
        self.wrote = anyio.Event()  # set at each write once the input ended
        self._broken = False  # the output is closed: what is written is dropped
        self.closed = False  # the input ended: the end of input waits for answers

    def write(self, data: bytes) -> None:
        self._queue.append(data)
        self._queued += 1
        self._wake.set()
        if self.closed:  # the end of input waits for answers: this may be one
            self.wrote.set()
            self.wrote = anyio.Event()

    def close(self) -> None:
        pass  # the stream closes when the server stops

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            while self._queue:
                batch, self._queue = self._queue, []
                if not self._broken:
                    try:
                        await self._stream.send_payloads(batch)
                    except OSError as exc:
                        log.info("the client closed its input: %s", exc)
                        self._broken = True
                self._written += len(batch)
                self._sent.set()
                self._sent = anyio.Event()

    async def flush(self) -> None:
        target = self._queued
        while self._written < target:
            await self._sent.wait()

    def send(self, message: dict[str, Any]) -> None:
        """A message we build ourselves (errors, the `initialize` answer), in order with
        pygls's."""
        self.write(json.dumps(message, separators=(",", ":")).encode())

    def reply_error(self, request_id: RequestId | None, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error})


class Connection:
    def __init__(
        self,
        stream: FramedStream,
        server: LanguageServer,
        handshake: LspHandshake,
        converter: cattrs.Converter,
    ) -> None:
        self.server = server
        self.protocol = server.protocol
        self.converter = converter
        self.handshake = handshake
        self.hooks: Hooks | None = None
        self.exit_code: int | None = None  # set by `exit`
        self._stream = stream
        self.output = Output(stream)
        self._closed = False  # the input ended: new requests fail at once
        self._shutdown = False
        self._outgoing: dict[str, Future[Any]] = {}
        self._incoming: set[RequestId] = set()
        self._ids = itertools.count(1)
        self.protocol.set_writer(self.output, include_headers=False)

    # --- requests to the client -------------------------------------------------------------

    async def request(self, method: str, params: object) -> Any:
        """Send a request and await its (typed) result. RpcError when the client answers with
        an error or a malformed result; ConnectionClosed when it is gone. A cancelled caller
        withdraws the request with `$/cancelRequest`."""
        if self._closed:
            raise ConnectionClosed(f"the client is gone; {method} was not sent")
        rid = f"tether/{next(self._ids)}"
        future = self.protocol.send_request(method, params, msg_id=rid)
        self._outgoing[rid] = future
        try:
            return await asyncio.wrap_future(future)
        except JsonRpcException as exc:
            raise RpcError(exc.code, exc.message) from None
        except anyio.get_cancelled_exc_class():
            self.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=rid))
            raise

    def notify(self, method: str, params: object) -> None:
        self.protocol.notify(method, params)

    def _forget(self, rid: str) -> None:
        """pygls's bookkeeping of a request we stopped waiting for."""
        forget_request(self.protocol, rid)

    # --- serving ----------------------------------------------------------------------------

    async def run(self) -> int:
        """Serve until `exit` or the end of input; returns the process's exit code."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.output.run)
            if self.handshake.params is not None:  # answered before the event loop
                prime(self.protocol, self.converter, self.handshake.encoding, self.handshake.params)
            await self._read()
            await self._finish()
            tg.cancel_scope.cancel()
        return 0 if self.exit_code is None else self.exit_code

    async def _read(self) -> None:
        while self.exit_code is None:
            frame = await self._stream.receive_frame()
            if frame is None:
                return
            if isinstance(frame, FrameTooLarge):
                self.output.reply_error(
                    None,
                    INVALID_REQUEST,
                    f"Invalid request: a {frame.size}-byte frame is too large",
                )
            else:
                self._take(frame)
            await anyio.lowlevel.checkpoint()  # the handlers just started get to run

    async def _finish(self) -> None:
        self._closed = self.output.closed = True
        if self.hooks is not None:
            await self.hooks.input_ended()
        for rid, future in list(self._outgoing.items()):
            if not future.done():
                future.set_exception(ConnectionClosed("the client went away before answering"))
            self._forget(rid)
        self._outgoing.clear()
        with anyio.move_on_after(ANSWER_WAIT):
            while self._unanswered():
                await self.output.wrote.wait()
        await self.output.flush()

    def _track(self, rid: RequestId) -> None:
        if len(self._incoming) > 256:  # keep only the requests still unanswered
            self._incoming = still_pending(self.protocol, self._incoming)
        self._incoming.add(rid)

    def _unanswered(self) -> bool:
        return any(is_pending(self.protocol, rid) for rid in self._incoming)

    # --- one frame --------------------------------------------------------------------------

    def _take(self, frame: bytes) -> None:
        msg = self._parse(frame)
        if msg is None:
            return
        method = msg.get("method")
        log.debug("read %s %s", method or "answer", msg.get("id", ""))
        if method is None:
            self._on_answer(msg)
        elif "id" in msg:
            self._on_request(msg["id"], method, msg)
        else:
            self._on_notification(method, msg)

    def _parse(self, frame: bytes) -> dict[str, Any] | None:
        if too_deep(frame):
            self.output.reply_error(None, INVALID_REQUEST, "Invalid request: nested too deeply")
            return None
        try:
            msg = json.loads(frame)
        except (ValueError, RecursionError) as exc:
            self.output.reply_error(None, PARSE_ERROR, f"Parse error: {exc}")
            return None
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            rid = msg.get("id") if isinstance(msg, dict) else None
            self.output.reply_error(
                _valid_id(rid), INVALID_REQUEST, "Invalid request: not JSON-RPC 2.0"
            )
            return None
        method = msg.get("method")
        rid = msg.get("id")
        if (method is not None and not isinstance(method, str)) or (
            "id" in msg and _valid_id(rid) is None
        ):
            self.output.reply_error(
                _valid_id(rid), INVALID_REQUEST, "Invalid request: bad method or id"
            )
            return None
        return msg

    def _on_request(self, rid: RequestId, method: str, msg: dict[str, Any]) -> None:
        if method == types.INITIALIZE:
            self._initialize(rid, msg.get("params"))
            return
        if not self.handshake.done:
            self.output.reply_error(
                rid, SERVER_NOT_INITIALIZED, "the server is not initialized yet"
            )
            return
        if self._shutdown:
            self.output.reply_error(
                rid, INVALID_REQUEST, "Invalid request: the server is shutting down"
            )
            return
        typed = self._structure(msg, rid)
        if typed is None:
            return
        if method == types.SHUTDOWN:
            self._shutdown = True
        self._track(rid)
        if method == types.WORKSPACE_EXECUTE_COMMAND and self.hooks is not None:
            params: types.ExecuteCommandParams = typed.params
            if params.command == PROMPT or params.command in SLASH:
                self.hooks.accept(rid, params)
        self._handle(typed, rid)

    def _on_notification(self, method: str, msg: dict[str, Any]) -> None:
        if method == types.EXIT:
            self.exit_code = 0 if self._shutdown else 1
            return
        if not self.handshake.done:
            return  # LSP: notifications before initialize are dropped
        if method == types.CANCEL_REQUEST and self.hooks is not None:
            params = msg.get("params")
            target = _valid_id(params.get("id") if isinstance(params, dict) else None)
            if target is not None and self.hooks.cancel_request(target):
                return
        typed = self._structure_notification(msg)
        if typed is not None:
            self._handle(typed, None)

    def _on_answer(self, msg: dict[str, Any]) -> None:
        rid = msg.get("id")
        future = self._outgoing.pop(rid, None) if isinstance(rid, str) else None
        if future is None or not isinstance(rid, str):
            log.info("dropped an answer to no request of ours: id %r", rid)
            return
        if future.done():  # we gave up on it (cancelled): dropped quietly
            self._forget(rid)
            return
        try:
            typed: Any = self.protocol.structure_message(msg)
            self.protocol.handle_message(typed)
        except Exception as exc:
            self._forget(rid)
            if not future.done():
                why = _why(exc)
                future.set_exception(JsonRpcException(f"malformed answer: {why}", INTERNAL_ERROR))

    def _structure_notification(self, msg: dict[str, Any]) -> Any:
        """A notification sent without params (ts-lsp-client's `initialized`) is taken as one
        with `{}` when its type allows that; otherwise it is dropped as malformed."""
        if msg.get("params") is None:
            try:
                return self.protocol.structure_message({**msg, "params": {}})
            except Exception:
                pass
        return self._structure(msg, None)

    def _structure(self, msg: dict[str, Any], rid: RequestId | None) -> Any:
        """The message typed by pygls (lsprotocol types); None when its params do not fit
        (a request is answered -32602 saying why)."""
        try:
            return self.protocol.structure_message(msg)
        except Exception as exc:
            why = _why(exc)
            if rid is not None:
                self.output.reply_error(rid, INVALID_PARAMS, f"Invalid params: {why}")
            else:
                log.warning("dropped a malformed %s notification: %s", msg.get("method"), why)
            return None

    def _handle(self, typed: Any, rid: RequestId | None) -> None:
        try:
            self.protocol.handle_message(typed)
        except Exception:
            log.exception("handling %s failed", getattr(typed, "method", "?"))
            if rid is not None and rid in self._incoming:
                self._incoming.discard(rid)
                self.output.reply_error(rid, INTERNAL_ERROR, "Internal error")

    # --- initialize -------------------------------------------------------------------------

    def _initialize(self, rid: RequestId, raw: object) -> None:
        if self.handshake.done:
            self.output.reply_error(
                rid, INVALID_REQUEST, "Invalid request: initialize was already called"
            )
            return
        params = clean_params(raw)
        if params is None:
            self.output.reply_error(
                rid, INVALID_PARAMS, f"Invalid params: {initialize_problem(self.converter, raw)}"
            )
            return
        result = self.handshake.answer(params)
        self.output.send({"jsonrpc": "2.0", "id": rid, "result": result})
        prime(self.protocol, self.converter, self.handshake.encoding, params)


def initialize_problem(converter: cattrs.Converter, raw: object) -> str:
    """What is wrong with an `initialize` request's params, in cattrs' words."""
    try:
        converter.structure(raw, types.InitializeParams)
    except Exception as exc:
        return _why(exc)
    return "capabilities must be an object, rootUri and rootPath strings, workspaceFolders a list"


def prime(
    protocol: Any, converter: cattrs.Converter, encoding: str, params: dict[str, Any]
) -> None:
    """Give pygls the `initialize` we answered: the client's capabilities, the workspace
    and its open documents, in the position encoding the answer announced."""
    try:
        typed = converter.structure(params, types.InitializeParams)
    except Exception as exc:
        log.warning("client capabilities not understood; assuming none: %s", _why(exc))
        typed = types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=params.get("rootUri"),
            root_path=params.get("rootPath"),
        )
    typed.capabilities.general = types.GeneralClientCapabilities(position_encodings=[encoding])
    steps = protocol.lsp_initialize(typed)
    try:
        while True:
            next(steps)
    except StopIteration:
        pass


def _valid_id(rid: object) -> RequestId | None:
    return rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None


def _why(exc: BaseException) -> str:
    """What cattrs found wrong, in its own words (`required field missing @ $.params.x`)."""
    cause = exc.__cause__ if isinstance(exc, JsonRpcException) and exc.__cause__ else exc
    if isinstance(cause, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(cause))
    return str(cause) or type(cause).__name__
