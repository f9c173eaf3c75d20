"""What the keyed search APIs (Exa, Perplexity) share, in the seed's words: one JSON POST with
the key, a non-2xx status (a redirect included) reported as the provider's own message or
`<Name> API error (HTTP <status>)`, a transport failure as `<Name> search request failed:
<error>`, and a body of the wrong shape as `<Name> returned an unprocessable response body:
<error>`, all WEB_PROVIDER_ERROR."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from tether.engine.web.remote import RemoteClient
from tether.errors import WebError

T = TypeVar("T")
R = TypeVar("R")


class KeyedSearchApi:
    def __init__(self, label: str, *, timeout: float, headers: dict[str, str]) -> None:
        self.label = label  # "Exa", "Perplexity": how the messages name the service
        self._http = RemoteClient(label.lower(), timeout=timeout, headers=headers)

    async def post(self, url: str, payload: dict[str, Any]) -> bytes:
        try:
            reply = await self._http.send("POST", url, content=msgspec.json.encode(payload))
        except WebError as exc:
            raise WebError(
                "WEB_PROVIDER_ERROR", f"{self.label} search request failed: {exc.message}"
            ) from None
        if not 200 <= reply.status < 300:
            raise WebError("WEB_PROVIDER_ERROR", self._status_message(reply.status, reply.body))
        return reply.body

    def _status_message(self, status: int, body: bytes) -> str:
        from tether.engine.providers.retry import error_message

        detail = error_message(body) if body.strip().startswith(b"{") else ""
        return detail or f"{self.label} API error (HTTP {status})"

    def decode(self, body: bytes, kind: type[T], mapper: Callable[[T], R]) -> R:
        """The body as `kind`, mapped inside the same guard: a well-formed body of the wrong
        shape is the provider's error, never an exception escaping the seam."""
        try:
            return mapper(msgspec.json.decode(body, type=kind))
        except (msgspec.DecodeError, msgspec.ValidationError, TypeError, ValueError) as exc:
            raise WebError(
                "WEB_PROVIDER_ERROR", f"{self.label} returned an unprocessable response body: {exc}"
            ) from None
