"""A scripted LLM HTTP server for provider tests and benches: real sockets on 127.0.0.1.

It speaks just enough HTTP/1.1 (keep-alive, Content-Length request bodies, chunked responses) to
serve each API's wire format from scripted replies, and records what it received. It runs its own
asyncio loop in a background thread, so the client under test shares nothing with it but TCP.

Like the real APIs, it refuses a request body its vendor's published schema refuses (400
`invalid_request_error`, see `vendor_schema.py`); every such refusal is also kept in
`schema_errors`, and leaving the `with` block fails the test when there is one. A valid body
the real API still refuses (`vendor_rules.py`: `max_tokens` to a reasoning model, ...) gets the
same 400 with the vendor's own message, and is kept in `rule_errors`.

    with MockLLMServer() as server:
        server.script("/chat/completions", Reply(chunks=[sse({...}), DONE]))
        ... point an adapter at server.url ...
        server.requests[0].json()   # the body the adapter sent
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .vendor_schema import Dialect

DONE = b"data: [DONE]\n\n"


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event carrying `data` as JSON."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


@dataclass
class Reply:
    """One scripted response.

    `chunks` are written one per HTTP chunk, in order; a float in their place pauses that many
    seconds. `end` says how the body finishes: "close" ends it properly, "cut" drops the
    connection without the final chunk, "hold" keeps it open until the client goes away (the
    server then sets `MockLLMServer.disconnected`). `body` (with Content-Length) replaces the
    chunked stream, for error replies. `delay` waits before the status line.
    """

    status: int = 200
    chunks: list[bytes | float] = field(default_factory=list)
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    end: Literal["close", "cut", "hold"] = "close"
    delay: float = 0.0
    gate: threading.Event | None = None  # wait for it (at most 60 s) before answering


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    """An error status with the common `{"error": {"message": ...}}` JSON body."""
    body = json.dumps({"error": {"message": message, "type": "test_error"}}).encode()
    return Reply(status=status, body=body, headers=headers or {})


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


_REASONS = {200: "OK", 400: "Bad Request", 408: "Request Timeout", 429: "Too Many Requests"}


class MockLLMServer:
    def __init__(self, *, dialect: Dialect = "openai", validate: bool = True) -> None:
        self.dialect: Dialect = dialect  # "deepseek": allow DeepSeek's documented extensions
        self.validate = validate
        self.schema_errors: list[str] = []
        self.rule_errors: list[str] = []
        self.requests: list[Recorded] = []
        self.disconnected = threading.Event()  # a "hold" reply saw its client leave
        self.received = threading.Event()  # some request has arrived
        self.first_body_byte_at: float | None = None  # perf_counter() of the first body write
        self._replies: dict[str, deque[Reply]] = {}
        # Answers what nothing scripted answers (a long conversation decides per request).
        self.responder: Callable[[Recorded], Reply] | None = None
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def posts(self) -> list[Recorded]:
        """The requests for a model's answer (model-list GETs left out)."""
        return [r for r in self.requests if r.method == "POST"]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, path: str, *replies: Reply) -> None:
        """Queue replies for `path` (with or without its query), served first in first out. An
        unscripted request gets 599."""
        with self._lock:
            self._replies.setdefault(path, deque()).extend(replies)

    def start(self) -> MockLLMServer:
        self._thread = threading.Thread(target=self._run, name="mock-llm-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(5):
            raise RuntimeError("mock LLM server did not start")
        return self

    def stop(self) -> None:
        """Stop listening and drop every connection; calling it again does nothing."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._loop = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> MockLLMServer:
        return self.start()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.stop()
        if exc_type is None and self.schema_errors:
            raise AssertionError(
                "request bodies the vendor's schema refuses:\n" + "\n".join(self.schema_errors)
            )

    # --- server thread ---

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        writers: set[asyncio.StreamWriter] = set()
        tasks: set[asyncio.Task[None]] = set()  # the loop holds tasks weakly

        def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if self._stop is None or self._stop.is_set():  # accepted as the server stops
                writer.close()
                return
            writers.add(writer)  # closed at the stop even if its task never got to run
            task = asyncio.get_running_loop().create_task(self._connection(reader, writer))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        server = await asyncio.start_server(accepted, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            for task in list(tasks):  # only ours: asyncio's own accept tasks, cancelled before
                task.cancel()  # they run, would drop their accepted socket unclosed
            for _ in range(3):  # accepts already under way finish (and are closed at once)
                await asyncio.sleep(0)
            for writer in writers:
                writer.close()
            await asyncio.sleep(0)  # the transports' close callbacks run before the loop ends

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection should end."""
        request = await self._read_request(reader)
        if request is None:
            return False
        self.requests.append(request)
        self.received.set()
        reply = self._refusal(request) or self._next_reply(request)
        if reply.gate is not None:
            await asyncio.get_running_loop().run_in_executor(None, reply.gate.wait, 60)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.body is not None:
            await self._write_whole(writer, reply)
            return True
        return await self._write_stream(reader, writer, reply)

    async def _read_request(self, reader: asyncio.StreamReader) -> Recorded | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None  # the client closed an idle keep-alive connection
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return Recorded(method, path, headers, body)

    def _refusal(self, request: Recorded) -> Reply | None:
        """A 400 for a body the vendor refuses (its schema, then its documented rules)."""
        if not self.validate:
            return None
        from .vendor_rules import refusal
        from .vendor_schema import api_of, problems

        api = api_of(request.method, request.path)
        if api is None:
            return None
        try:
            body = request.json()
        except ValueError as exc:
            body, found = None, [f"(body): not JSON: {exc}"]
        else:
            found = problems(api, body, self.dialect)
        if found or body is None:
            self.schema_errors.append(f"{request.method} {request.path}: {found[0]}")
            return _invalid(f"invalid request body: {found[0]}")
        message = refusal(api, body, self.dialect)
        if message is None:
            return None
        self.rule_errors.append(message)
        return _invalid(message)

    def _next_reply(self, request: Recorded) -> Reply:
        path = request.path
        with self._lock:
            queue = self._replies.get(path) or self._replies.get(path.split("?", 1)[0])
            if queue:
                return queue.popleft()
        if self.responder is not None:
            return self.responder(request)
        body = json.dumps({"error": {"message": f"no scripted reply for {path}"}}).encode()
        return Reply(status=599, body=body)

    def _status_line(self, reply: Reply) -> bytes:
        reason = _REASONS.get(reply.status, "Error" if reply.status >= 400 else "OK")
        return f"HTTP/1.1 {reply.status} {reason}\r\n".encode()

    async def _write_whole(self, writer: asyncio.StreamWriter, reply: Reply) -> None:
        assert reply.body is not None
        headers = {"content-type": "application/json", **reply.headers}
        head = self._status_line(reply) + _headers(
            {**headers, "content-length": str(len(reply.body))}
        )
        writer.write(head + reply.body)
        await writer.drain()

    async def _write_stream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: Reply
    ) -> bool:
        headers = {"content-type": "text/event-stream", **reply.headers}
        writer.write(
            self._status_line(reply) + _headers({**headers, "transfer-encoding": "chunked"})
        )
        for piece in reply.chunks:
            if not isinstance(piece, bytes):  # a pause
                await writer.drain()
                await asyncio.sleep(piece)
                continue
            if self.first_body_byte_at is None:
                self.first_body_byte_at = time.perf_counter()
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await writer.drain()
        if reply.end == "cut":
            writer.transport.abort()  # no final chunk: the client sees a truncated body
            return False
        if reply.end == "hold":
            await self._await_disconnect(reader)
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _await_disconnect(self, reader: asyncio.StreamReader) -> None:
        try:
            while await reader.read(65536):
                pass
        except ConnectionError:
            pass
        self.disconnected.set()


def _invalid(message: str) -> Reply:
    body = json.dumps({"error": {"type": "invalid_request_error", "message": message}})
    return Reply(status=400, body=body.encode())


def _headers(headers: dict[str, str]) -> bytes:
    return "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode() + b"\r\n"
