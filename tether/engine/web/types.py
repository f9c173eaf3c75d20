"""What crosses the web seam: search hits, fetched pages, raw HTTP exchanges, checked targets.

Plain frozen dataclasses, no behaviour: tools read them, providers build them.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Reach = Literal["public", "loopback", "private network"]


class Target(msgspec.Struct, frozen=True):
    """Where a request to a URL's host connects, after the SSRF check: every address the host
    resolved to, in the resolver's order. Requests connect to these addresses only, so a second
    DNS answer can never redirect a checked request (no rebinding between check and connect)."""

    host: str  # ASCII (IDNA) host, lower case; IPv6 without brackets
    port: int
    addresses: tuple[str, ...]
    reach: Reach

    @property
    def host_port(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def needs_consent(self) -> bool:
        return self.reach != "public"


class SearchHit(msgspec.Struct, frozen=True):
    url: str
    title: str = ""
    snippet: str = ""
    published_at: str = ""


class SearchResults(msgspec.Struct, frozen=True):
    hits: list[SearchHit] = msgspec.field(default_factory=list[SearchHit])
    answer: str = ""  # a provider-owned direct answer, when the provider has one
    capped: bool = False  # the provider had more hits than the caller's bound
    provider: str = ""


class FetchResult(msgspec.Struct, frozen=True):
    final_url: str
    status: int
    body: str  # decoded text; HTML is rendered to Markdown by the capability
    media_type: str = "text/plain"  # without parameters, lower case
    truncated: bool = False  # the body was cut at the character cap
    provider: str = ""


class HttpRequest(msgspec.Struct, frozen=True):
    method: str
    url: str
    headers: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    body: bytes | None = None


class HttpResponse(msgspec.Struct, frozen=True):
    url: str  # the URL that answered, after redirects
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: str  # decoded text, or empty for a binary body
    media_type: str
    size: int  # body bytes received
    binary: bool = False
    truncated: bool = False  # the text was cut at the character cap
    redirects: list[str] = msgspec.field(default_factory=list[str])  # every URL before `url`
