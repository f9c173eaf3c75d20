"""An httpx client whose TCP connections go only to addresses an SSRF check approved.

httpx keeps the URL's host for the Host header and TLS SNI (so certificates are verified against
the name); the network backend below swaps the host for the checked address when it connects,
and refuses any host nobody checked. No environment proxy is used: it would defeat the pin.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any, cast

import httpcore
import httpx

from tether.engine.web.types import Target

if TYPE_CHECKING:
    from httpcore import AsyncNetworkBackend, AsyncNetworkStream


class UncheckedDestination(Exception):
    """A connection to a host:port no check approved (a bug, or a redirect nobody checked)."""


class PinnedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: AsyncNetworkBackend | None = None) -> None:
        # httpcore declares AnyIOBackend twice (a stand-in without anyio): pyright sees both.
        self._inner = inner or cast("AsyncNetworkBackend", httpcore.AnyIOBackend())
        self._targets: dict[tuple[str, int], Target] = {}

    def allow(self, target: Target) -> None:
        self._targets[(target.host, target.port)] = target

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncNetworkStream:
        # `localhost.` is `localhost`: the check saw the name without its root dot.
        target = self._targets.get((host.lower().rstrip("."), port))
        if target is None:
            raise UncheckedDestination(f"{host}:{port} was not checked")
        failure: Exception | None = None
        for address in target.addresses:
            try:
                return await self._inner.connect_tcp(
                    address.split("%", 1)[0], port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc  # the next address of the same checked host may answer
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncNetworkStream:
        raise UncheckedDestination("unix sockets are never used for web requests")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle takes milliseconds: once per process.
    return httpx.create_ssl_context(trust_env=False)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, backend: PinnedBackend, tls: ssl.SSLContext | None) -> None:
        tls = tls or _ssl_context()
        super().__init__(verify=tls, trust_env=False)
        # httpx builds its pool without a way to pass a network backend; ours replaces it.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=tls, max_connections=4, network_backend=backend
        )


def pinned_client(
    backend: PinnedBackend,
    *,
    timeout: float,
    user_agent: str,
    tls: ssl.SSLContext | None = None,
) -> httpx.AsyncClient:
    """`tls`: the certificates trusted (None: the usual CA bundle; tests bring their own CA)."""
    return httpx.AsyncClient(
        transport=_PinnedTransport(backend, tls),
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": user_agent},
    )
