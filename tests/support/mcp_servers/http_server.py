"""A streamable-HTTP MCP server for the tests, served on 127.0.0.1 by uvicorn on a thread of
the test process (the same tools as the stdio server)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from tests.support.mcp_servers.tools import build


@contextmanager
def serving(name: str = "web") -> Iterator[str]:
    """Serve an MCP server; yields its URL. Leaving stops it (connections dropped)."""
    with serving_app(build(name).streamable_http_app()) as url:
        yield url


@contextmanager
def serving_app(app: Any) -> Iterator[str]:
    """Serve an ASGI app at `/mcp` on 127.0.0.1; yields its URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the MCP test server did not start")
            threading.Event().wait(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
