"""The HTTP clients the providers' sessions share: one per provider, with the provider's
timeouts, made on first use and closed with the catalog."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

    from tether.engine.config.resolve import Provider

DEFAULT_TIMEOUT = 600.0  # seconds; a slow model may think for minutes between deltas
DEFAULT_CONNECT_TIMEOUT = 10.0


def http_timeout(provider: Provider) -> float | httpx.Timeout:
    t = provider.timeout
    if t is None or isinstance(t, float | int):
        return DEFAULT_TIMEOUT if t is None else float(t)
    import httpx

    return httpx.Timeout(t.read or DEFAULT_TIMEOUT, connect=t.connect or DEFAULT_CONNECT_TIMEOUT)


class HttpClients:
    """One HTTP client per provider, made on first use (inside the running event loop) and
    shared by its sessions: connections are reused, and `aclose` closes them all when the
    agent stops."""

    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._lock = threading.Lock()

    def get(self, provider: Provider) -> httpx.AsyncClient:
        with self._lock:  # made on a thread before the first prompt, or by the first request
            client = self._clients.get(provider.name)
            if client is None:
                from tether.engine.providers import http_transport

                client = http_transport.client(provider.base_url, http_timeout(provider))
                self._clients[provider.name] = client
        return client

    def opened(self) -> list[httpx.AsyncClient]:
        return list(self._clients.values())

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
