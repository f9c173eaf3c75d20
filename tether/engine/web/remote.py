"""The HTTP client remote providers share: bounded response bodies, transport failures turned
into WebError.

Remote endpoints are the operator's configuration (a search API, a SearXNG instance), not URLs
the model chose, so no SSRF check applies to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from tether.errors import WebError

if TYPE_CHECKING:
    pass

MAX_REMOTE_BYTES = 5_000_000


@dataclass(frozen=True)
class RemoteReply:
    status: int
    body: bytes

    def json(self, what: str) -> object:
        try:
            return msgspec.json.decode(self.body)
        except msgspec.DecodeError:
            raise WebError("WEB_PROVIDER_ERROR", f"{what} answered malformed JSON") from None

    def error_detail(self) -> str:
        from tether.engine.providers.retry import error_message

        return error_message(self.body) or "no detail"


class RemoteClient:
    """A client per request: searches are occasional, and nothing is left open to close when
    the process ends (the capability lives as long as the agent)."""

    def __init__(self, name: str, *, timeout: float, headers: dict[str, str] | None = None):
        self.name = name
        self._timeout = timeout
        self._headers = headers or {}

    async def send(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, str] | None = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> RemoteReply:
        import httpx

        timeout = httpx.Timeout(self._timeout, connect=min(self._timeout, 10.0))
        try:
            async with (
                httpx.AsyncClient(timeout=timeout, headers=self._headers) as client,
                client.stream(method, url, params=params, content=content, headers=headers) as resp,
            ):
                body = bytearray()
                async for chunk in resp.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_REMOTE_BYTES:
                        raise WebError(
                            "WEB_PROVIDER_ERROR",
                            f"{self.name} answered more than {MAX_REMOTE_BYTES} bytes",
                        )
                return RemoteReply(resp.status_code, bytes(body))
        except httpx.HTTPError as exc:
            raise WebError(
                "WEB_PROVIDER_ERROR", f"{self.name} is unreachable: {type(exc).__name__}: {exc}"
            ) from exc
