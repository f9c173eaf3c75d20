"""Bing's RSS results (`GET https://www.bing.com/search?q=...&format=rss`): no key, each `<item>`
carries a title, a link, a description and a date. Brittle and SEO-heavy, so it is offered only
when the configuration lists it (`search_providers = [..., "bing"]`), never by default.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from email.utils import parsedate_to_datetime

from tether.engine.web.remote import RemoteClient
from tether.engine.web.types import SearchHit, SearchResults
from tether.errors import WebError

DEFAULT_URL = "https://www.bing.com/search"


class BingRss:
    name = "bing"

    def __init__(self, url: str = DEFAULT_URL, *, timeout: float = 20.0) -> None:
        self.url = url
        self._http = RemoteClient("bing", timeout=timeout)

    async def search(self, query: str, limit: int) -> SearchResults:
        reply = await self._http.send("GET", self.url, params={"q": query, "format": "rss"})
        if reply.status >= 400:
            raise WebError("WEB_PROVIDER_ERROR", f"bing HTTP {reply.status}")
        return SearchResults(parse_rss(reply.body)[:limit], provider=self.name)


def parse_rss(document: bytes) -> list[SearchHit]:
    try:
        root = ET.fromstring(document)  # expat >= 2.4 refuses entity-expansion bombs
    except ET.ParseError as exc:
        raise WebError("WEB_PROVIDER_ERROR", f"bing answered malformed RSS: {exc}") from None
    hits: list[SearchHit] = []
    for item in root.iter("item"):
        url = _text(item, "link")
        if url:
            hits.append(
                SearchHit(
                    url=url,
                    title=_text(item, "title"),
                    snippet=_text(item, "description"),
                    published_at=_date(_text(item, "pubDate")),
                )
            )
    return hits


def _text(item: ET.Element, tag: str) -> str:
    return " ".join((item.findtext(tag) or "").split())


def _date(value: str) -> str:
    """RFC 822 dates as ISO dates (`2025-01-31`); anything unparseable as it came."""
    if not value:
        return ""
    try:
        return parsedate_to_datetime(value).date().isoformat()
    except (TypeError, ValueError):
        return value
