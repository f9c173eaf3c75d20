"""A loopback HTTP/1.1 server for web tests: scripted routes (pages, redirects, huge, slow and
binary bodies, odd charsets), every request recorded. Real sockets on 127.0.0.1 only, served by
a thread, so the code under test shares nothing with it but TCP.

    with PageServer() as site:
        site.route("/a", Page(body=b"<p>hi</p>", type="text/html"))
        site.url("/a")  # http://127.0.0.1:PORT/a
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Page:
    """One response. `chunks` stream with chunked encoding (no Content-Length); with `stall`
    the server sends the first chunk only and then waits for the client to leave (a slow body);
    `PageServer.closed` is set when it has."""

    body: bytes = b""
    status: int = 200
    type: str | None = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict[str, str])
    chunks: list[bytes] | None = None
    stall: bool = False
    length: int | None = None  # a Content-Length to declare instead of the real one


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes


Route = Page | Callable[[Seen], Page]


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client dropping a kept-alive connection is not news


class PageServer:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Seen] = []
        self.connections = 0
        self.closed = threading.Event()  # set when a stalled response's client went away
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                server.connections += 1
                super().setup()

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                parts = urlsplit(self.path)
                seen = Seen(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                server.requests.append(seen)
                route = server.routes.get(parts.path)
                page = Page(b"not found", 404) if route is None else route
                page = page(seen) if callable(page) else page
                server._respond(self, page)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    def route(self, path: str, page: Route) -> None:
        self.routes[path] = page

    def __enter__(self) -> PageServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _respond(self, h: BaseHTTPRequestHandler, page: Page) -> None:
        h.send_response(page.status)
        if page.type is not None:
            h.send_header("Content-Type", page.type)
        for name, value in page.headers.items():
            h.send_header(name, value)
        if page.chunks is None:
            h.send_header("Content-Length", str(page.length or len(page.body)))
            h.end_headers()
            h.wfile.write(page.body)
            return
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for chunk in page.chunks:
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                h.wfile.flush()
                if page.stall:
                    self._await_close(h)
                    return
            h.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.closed.set()

    def _await_close(self, h: BaseHTTPRequestHandler) -> None:
        try:
            while h.rfile.read(1):
                pass
        except OSError:
            pass
        self.closed.set()
