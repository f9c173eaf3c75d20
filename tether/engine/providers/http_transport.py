"""How tether opens HTTP connections to model providers: one TLS context per process, made once
and off the event loop, for https providers only (a plain-http local server needs none: loading
the CA store costs about 25 ms, and making a client with its own context about 60 ms, on the
first prompt's path before); TCP_NODELAY on every socket, so a small request is never held back
waiting for the previous segment's acknowledgement."""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

    import httpx

_NO_DELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
_tls: ssl.SSLContext | None = None
_tls_lock = threading.Lock()


def tls_context() -> ssl.SSLContext:
    """The process's one verifying TLS context (the system's CA store, as httpx makes it)."""
    global _tls
    with _tls_lock:
        if _tls is None:
            import ssl

            import certifi  # httpx's own CA bundle, so verification is what httpx would do

            _tls = ssl.create_default_context(cafile=certifi.where())
        return _tls


def client(base_url: str, timeout: Any, **kwargs: Any) -> httpx.AsyncClient:
    """An AsyncClient for a provider at `base_url`."""
    import httpx

    https = base_url.lower().startswith("https:")
    transport = httpx.AsyncHTTPTransport(
        verify=tls_context() if https else False,  # http: no TLS is ever negotiated
        socket_options=_NO_DELAY,
    )
    return httpx.AsyncClient(timeout=timeout, transport=transport, **kwargs)


def warm() -> None:
    """Load httpx and what making a client loads (on a thread, before the first request)."""
    import httpx

    httpx.AsyncHTTPTransport(verify=False)
