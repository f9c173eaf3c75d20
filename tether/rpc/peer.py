"""A JSON-RPC 2.0 peer usable in both directions over a FramedStream.

Incoming requests run concurrently, each in its own cancel scope (so `$/cancel_request` can stop
one and answer -32800): `Incoming`, the peer's `incoming`. Outgoing requests await their
responses and send `$/cancel_request` when the caller is cancelled: `Peer`, which also owns the
read loop and the end of input. All writes go through one writer task, in order, coalescing
bursts.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from itertools import count
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import msgspec
from anyio.abc import TaskGroup
from msgspec import UNSET, Raw

from tether.rpc.json_depth import MAX_DEPTH, too_deep
from tether.rpc.outbox import Outbox, OutboxClosed
from tether.rpc.rpc_error import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    ConnectionClosed,
    RpcError,
)
from tether.schemas.jsonrpc import CancelRequestParams, Envelope, ErrorObject, RequestId
from tether.transports.framing import FrameTooLarge
from tether.transports.streams import FramedStream

log = logging.getLogger("tether.rpc")

T = TypeVar("T")
RequestHandler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], Awaitable[None]]

_encode = msgspec.json.Encoder().encode
_envelope = msgspec.json.Decoder(Envelope)
_NO_PARAMS = b"{}"
_EMPTY_ARRAY = b"[]"
# Requests still running when the input ends get this long to answer before they are cancelled.
DRAIN_SECONDS = 10.0
_ABANDONED_MEMORY = 256  # ids of requests given up on, whose late answers are dropped quietly
# Requests handled at once; past it the peer stops reading (a burst cannot grow memory). Routes
# registered `bounded=False` (a turn, which may wait on the client's answers) do not count, so
# the responses they wait for can always be read.
MAX_IN_FLIGHT = 64


class Reply:
    """A handler result with work to do once the response is on its way (ACP wants some
    notifications strictly after a response, e.g. available_commands_update)."""

    __slots__ = ("after", "result")

    def __init__(self, result: Any, after: Callable[[], Awaitable[None]]) -> None:
        self.result = result
        self.after = after


class _Route:
    __slots__ = ("accept", "bounded", "decoder", "handler", "params_type")

    def __init__(
        self,
        handler: Callable[[Any], Awaitable[Any]],
        params_type: Any,
        accept: Callable[[Any], None] | None = None,
        bounded: bool = True,
    ) -> None:
        self.handler = handler
        self.accept = accept
        self.bounded = bounded
        self.params_type = params_type
        # Made at the method's first request: a front registers about twenty methods, and
        # making a decoder inspects its types (about 0.4 ms each, on every start's way).
        self.decoder: msgspec.json.Decoder[Any] | None = None

    def decode(self, raw: Raw | None) -> Any:
        data = bytes(raw) if raw is not None else _NO_PARAMS
        if self.params_type is None:
            return msgspec.json.decode(data)
        if self.decoder is None:
            self.decoder = msgspec.json.Decoder(self.params_type)
        if data.replace(b" ", b"") == _EMPTY_ARRAY:
            data = _NO_PARAMS  # Neovim's vim.json encodes an empty table `{}` as `[]`
        return self.decoder.decode(data)


class _Waiter:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: Raw | None = None
        self.error: ErrorObject | Exception | None = None


class Peer:
    def __init__(self, stream: FramedStream, *, name: str = "peer") -> None:
        self.stream = stream
        self.name = name
        self._pending: dict[int, _Waiter] = {}
        self._ids = count()
        self._outbox = Outbox()
        self._closed = False
        self._abandoned: dict[int, None] = {}  # insertion-ordered set, bounded
        self.incoming = Incoming(name, self._write)
        # Called once the input has ended, before waiting for running requests to answer
        # (the ACP agent ends its turns there, so their prompts answer `cancelled`).
        self.on_input_end: list[Callable[[], Awaitable[None]]] = []
        self.on_close: list[Callable[[], Awaitable[None]]] = []

    # --- registration ---------------------------------------------------------------------

    def on_request(
        self,
        method: str,
        handler: RequestHandler,
        params_type: Any = None,
        *,
        accept: Callable[[Any], None] | None = None,
        bounded: bool = True,
    ) -> None:
        """`params_type` (a msgspec type) decodes params; a mismatch answers -32602.

        `accept(params)` runs synchronously when the request is read, before any later frame
        (a notification that follows it, say) is looked at; raising RpcError refuses it. The
        handler then runs as its own task and, once accepted, always starts."""
        self.incoming.requests[method] = _Route(handler, params_type, accept, bounded)

    def on_notification(
        self, method: str, handler: NotificationHandler, params_type: Any = None
    ) -> None:
        self.incoming.notifications[method] = _Route(handler, params_type)

    # --- outgoing -------------------------------------------------------------------------

    async def notify(self, method: str, params: Any) -> None:
        await self._write(
            b'{"jsonrpc":"2.0","method":%s,"params":%s}' % (_encode(method), _encode(params))
        )

    async def notify_all(
        self,
        method: str,
        params: Iterable[bytes],
        around: tuple[bytes, bytes] = (b"", b""),
        chunk: int = 512,
    ) -> None:
        """Many notifications of one method, in order (a replay: thousands at once), each
        params object already encoded, between `around`'s prefix and suffix (what every one
        shares, such as a replay's session id)."""
        head = b'{"jsonrpc":"2.0","method":%s,"params":%s' % (_encode(method), around[0])
        tail = around[1] + b"}"
        batch: list[bytes] = []
        for p in params:
            batch.append(head + p + tail)
            if len(batch) >= chunk:
                await self._write_all(batch)
                batch = []
                await anyio.lowlevel.checkpoint()  # the writer sends it while the next is made
        if batch:
            await self._write_all(batch)

    async def _write_all(self, payloads: list[bytes]) -> None:
        try:
            await self._outbox.put_all(payloads)
        except OutboxClosed:
            raise ConnectionClosed(f"{self.name}: connection closed") from None

    async def request(
        self,
        method: str,
        params: Any,
        result_type: type[T] | Any = Any,
        *,
        withdraw: Callable[[], bool] | None = None,
    ) -> T:
        """Send a request and await its result. Raises RpcError for an error answer and
        ConnectionClosed when the other side is gone. A cancelled caller withdraws the request
        with `$/cancel_request` unless `withdraw()` says the other side answers it anyway (an
        ACP client answers its pending permission requests itself after `session/cancel`)."""
        if self._closed or self.incoming.input_ended:
            raise ConnectionClosed(f"{self.name}: connection closed")
        rid = next(self._ids)
        waiter = self._pending[rid] = _Waiter()
        try:
            await self._write(
                b'{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}'
                % (rid, _encode(method), _encode(params))
            )
            await waiter.done.wait()
        except anyio.get_cancelled_exc_class():
            if not waiter.done.is_set():
                self._abandon(rid)
                if not self._closed and (withdraw is None or withdraw()):
                    with anyio.CancelScope(shield=True):
                        await self.notify("$/cancel_request", {"requestId": rid})
            raise
        finally:
            self._pending.pop(rid, None)
        return self._outcome(waiter, result_type)

    def _abandon(self, rid: int) -> None:
        self._abandoned[rid] = None
        if len(self._abandoned) > _ABANDONED_MEMORY:
            del self._abandoned[next(iter(self._abandoned))]

    @staticmethod
    def _outcome(waiter: _Waiter, result_type: Any) -> Any:
        if isinstance(waiter.error, ErrorObject):
            raise RpcError(waiter.error.code, waiter.error.message, waiter.error.data)
        if waiter.error is not None:
            raise waiter.error
        raw = bytes(waiter.result) if waiter.result is not None else b"null"
        try:
            return msgspec.json.decode(raw, type=result_type)
        except msgspec.ValidationError as exc:
            raise RpcError(INTERNAL_ERROR, f"peer sent an invalid result: {exc}") from None

    async def _write(self, payload: bytes) -> None:
        try:
            await self._outbox.put(payload)
        except OutboxClosed:
            raise ConnectionClosed(f"{self.name}: connection closed") from None

    async def _writer(self, done: anyio.Event) -> None:
        try:
            await self._outbox.run(self.stream.send_payloads)
        finally:
            done.set()
        if self._outbox.broken:
            log.warning("%s: output closed; the client is gone", self.name)
            self._shutdown()

    # --- the read loop --------------------------------------------------------------------

    async def run(self) -> None:
        """Serve until the input ends or the output breaks. At the end of input every request
        already received is answered (the input-end hooks stop long work first), then queued
        frames are written and the close hooks run."""
        writer_done = anyio.Event()
        async with anyio.create_task_group() as tg:
            self.incoming.tg = tg
            tg.start_soon(self._writer, writer_done)
            try:
                while (frame := await self.stream.receive_frame()) is not None:
                    await self._receive(frame)
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                log.warning("%s: input failed", self.name)
            finally:
                with anyio.CancelScope(shield=True):
                    await self._drain()
                    self._shutdown()
                    for hook in self.on_close:
                        await hook()
                    with anyio.move_on_after(DRAIN_SECONDS):
                        await writer_done.wait()  # the writer flushes what is queued
                tg.cancel_scope.cancel()

    async def _drain(self) -> None:
        """The input has ended: nothing can answer our requests any more; let the requests
        we received finish (cancelled after DRAIN_SECONDS)."""
        self.incoming.input_ended = True
        for waiter in self._pending.values():
            waiter.error = ConnectionClosed(f"{self.name}: input ended")
            waiter.done.set()
        for hook in self.on_input_end:
            try:
                await hook()
            except Exception:
                log.exception("%s: input-end hook failed", self.name)
        if not self.incoming.running:
            return
        with anyio.move_on_after(DRAIN_SECONDS):
            await self.incoming.idle.wait()
        self.incoming.cancel_all()

    def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.incoming.cancel_all()
        for waiter in self._pending.values():
            waiter.error = ConnectionClosed(f"{self.name}: connection closed")
            waiter.done.set()
        self._outbox.close()

    async def _receive(self, frame: bytes | FrameTooLarge) -> None:
        if isinstance(frame, FrameTooLarge):
            await self.incoming.reply_error(
                None, INVALID_REQUEST, f"Frame of {frame.size} bytes exceeds the size limit"
            )
            return
        if too_deep(frame):
            await self.incoming.reply_error(
                None, INVALID_REQUEST, f"Invalid request: JSON nested deeper than {MAX_DEPTH}"
            )
            return
        try:
            msg = _envelope.decode(frame)
        except msgspec.ValidationError as exc:
            await self.incoming.reply_error(
                None, INVALID_REQUEST, _invalid_request_message(frame, exc)
            )
            return
        except msgspec.DecodeError as exc:
            await self.incoming.reply_error(None, PARSE_ERROR, f"Parse error: {exc}")
            return
        await self._dispatch(msg)

    async def _dispatch(self, msg: Envelope) -> None:
        if msg.jsonrpc != "2.0":
            rid = msg.id if msg.id is not UNSET else None
            await self.incoming.reply_error(
                rid, INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"'
            )
        elif msg.method is not UNSET:
            if msg.id is UNSET:
                await self.incoming.notification(msg.method, msg.params or None)
            else:
                await self.incoming.start_request(msg.id, msg.method, msg.params or None)
        elif msg.id is not UNSET and (msg.result is not UNSET or msg.error is not UNSET):
            self._resolve(msg)
        else:
            rid = msg.id if msg.id is not UNSET else None
            await self.incoming.reply_error(rid, INVALID_REQUEST, "Invalid request: no method")

    def _resolve(self, msg: Envelope) -> None:
        waiter = self._pending.get(msg.id) if isinstance(msg.id, int) else None
        if waiter is None:
            if isinstance(msg.id, int) and msg.id in self._abandoned:
                log.debug("%s: late answer to request %d, which was given up", self.name, msg.id)
            else:
                log.warning("%s: response to unknown request id %r", self.name, msg.id)
            return
        if msg.error is not UNSET:
            waiter.error = msg.error
        else:
            waiter.result = msg.result if msg.result is not UNSET else None
        waiter.done.set()


class Incoming:
    """The other side's requests and notifications, by their routes: each request runs as its
    own task in its own cancel scope (so `$/cancel_request` can stop one and answer -32800), at
    most MAX_IN_FLIGHT bounded ones at once, and is answered through `write`."""

    def __init__(self, name: str, write: Callable[[bytes], Awaitable[None]]) -> None:
        self.name = name
        self._write = write
        self.requests: dict[str, _Route] = {}
        self.notifications: dict[str, _Route] = {}
        self.running: dict[RequestId, anyio.CancelScope] = {}
        self.input_ended = False
        self.idle = anyio.Event()  # set when the input has ended and no request is running
        self._slots = anyio.Semaphore(MAX_IN_FLIGHT)
        self.tg: TaskGroup | None = None

    def cancel_all(self) -> None:
        for scope in self.running.values():
            scope.cancel()

    async def notification(self, method: str, params: Raw | None) -> None:
        if method == "$/cancel_request":
            self._cancel_incoming(params)
            return
        route = self.notifications.get(method)
        if route is None:
            log.debug("%s: ignoring notification %s", self.name, method)
            return
        try:
            await route.handler(route.decode(params))
        except (msgspec.ValidationError, RpcError) as exc:
            log.warning("%s: bad %s notification: %s", self.name, method, exc)
        except Exception:
            log.exception("%s: %s notification handler failed", self.name, method)

    def _cancel_incoming(self, params: Raw | None) -> None:
        try:
            target = msgspec.json.decode(bytes(params or b"{}"), type=CancelRequestParams)
        except msgspec.DecodeError:
            return
        scope = self.running.get(target.request_id)
        if scope is not None:
            scope.cancel()

    async def start_request(self, rid: RequestId, method: str, raw: Raw | None) -> None:
        assert self.tg is not None
        if rid in self.running:
            await self.reply_error(rid, INVALID_REQUEST, "Invalid request: duplicate id")
            return
        route = self.requests.get(method)
        if route is None:
            await self._write_quietly(
                _error_payload(rid, METHOD_NOT_FOUND, f"Method not found: {method}")
            )
            return
        try:
            params = route.decode(raw)
            if route.accept is not None:
                route.accept(params)
        except msgspec.DecodeError as exc:  # includes ValidationError, which names the field
            await self._write_quietly(_error_payload(rid, INVALID_PARAMS, f"Invalid params: {exc}"))
            return
        except RpcError as exc:
            await self._write_quietly(_error_payload(rid, exc.code, exc.message, exc.data))
            return
        if route.bounded:
            await self._slots.acquire()  # backpressure: no more reading until a slot frees
        scope = self.running[rid] = anyio.CancelScope()
        self.tg.start_soon(self._serve_request, rid, method, route, params, scope)

    async def _serve_request(
        self, rid: RequestId, method: str, route: _Route, params: Any, scope: anyio.CancelScope
    ) -> None:
        try:
            await self._handle(rid, method, route, params, scope)
        finally:
            if route.bounded:
                self._slots.release()

    async def _handle(
        self, rid: RequestId, method: str, route: _Route, params: Any, scope: anyio.CancelScope
    ) -> None:
        try:
            payload, after = _error_payload(rid, REQUEST_CANCELLED, "Request cancelled"), None
            with scope:
                payload, after = await self._call(rid, method, route, params)
            await self._write(payload)  # a cancelled handler leaves the -32800 answer in place
            if after is not None:
                await after()
        except ConnectionClosed:
            pass
        finally:
            self.running.pop(rid, None)
            if self.input_ended and not self.running:
                self.idle.set()

    async def _call(
        self, rid: RequestId, method: str, route: _Route, params: Any
    ) -> tuple[bytes, Any]:
        try:
            result = await route.handler(params)
        except msgspec.DecodeError as exc:  # a handler's own decoding of a params field
            return _error_payload(rid, INVALID_PARAMS, f"Invalid params: {exc}"), None
        except RpcError as exc:
            return _error_payload(rid, exc.code, exc.message, exc.data), None
        except ConnectionClosed:
            raise
        except Exception as exc:
            log.exception("%s: %s handler failed", self.name, method)
            first = str(exc).splitlines()[0] if str(exc) else ""
            message = f"Internal error: {type(exc).__name__}: {first}".rstrip(": ")
            return _error_payload(rid, INTERNAL_ERROR, message), None
        after = None
        if isinstance(result, Reply):
            result, after = result.result, result.after
        return b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (_encode(rid), _encode(result)), after

    async def reply_error(self, rid: RequestId, code: int, message: str) -> None:
        await self._write_quietly(_error_payload(rid, code, message))

    async def _write_quietly(self, payload: bytes) -> None:
        """Write an answer the read loop produced; a closed output just drops it."""
        try:
            await self._write(payload)
        except ConnectionClosed:
            pass


def _error_payload(rid: RequestId, code: int, message: str, data: Any = None) -> bytes:
    error = ErrorObject(code, message, data if data is not None else UNSET)
    return b'{"jsonrpc":"2.0","id":%s,"error":%s}' % (_encode(rid), _encode(error))


def _invalid_request_message(frame: bytes, exc: msgspec.ValidationError) -> str:
    if frame.lstrip()[:1] == b"[":
        return "Invalid request: batch requests are not supported"
    return f"Invalid request: {exc}"
