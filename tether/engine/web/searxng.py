"""SearXNG's JSON search (`GET /search?q=...&format=json`): a self-hostable metasearch engine.

The instance must allow the JSON format (`search.formats` includes `json` in its settings.yml);
one that does not answers 403, reported as such.
"""

from __future__ import annotations

from typing import Any

from tether.engine.web.remote import RemoteClient
from tether.engine.web.types import SearchHit, SearchResults
from tether.errors import WebError


class SearxngSearch:
    name = "searxng"

    def __init__(
        self, url: str, *, timeout: float = 20.0, headers: dict[str, str] | None = None
    ) -> None:
        base = url.rstrip("/")
        self.url = base if base.endswith("/search") else f"{base}/search"
        self._http = RemoteClient("searxng", timeout=timeout, headers=headers)

    async def search(self, query: str, limit: int) -> SearchResults:
        params = {"q": query, "format": "json"}
        reply = await self._http.send("GET", self.url, params=params)
        if reply.status == 403:
            raise WebError(
                "WEB_PROVIDER_ERROR",
                f"searxng at {self.url} refused the JSON format (HTTP 403): enable `json` in "
                "its settings.yml search.formats",
            )
        if reply.status >= 400:
            raise WebError(
                "WEB_PROVIDER_ERROR", f"searxng HTTP {reply.status}: {reply.error_detail()}"
            )
        data = reply.json("searxng")
        if not isinstance(data, dict):
            raise WebError("WEB_PROVIDER_ERROR", "searxng answered JSON that is not an object")
        hits = [h for h in map(_hit, _list(data, "results")) if h is not None]
        return SearchResults(hits[:limit], answer=_answer(data), provider=self.name)


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _hit(item: Any) -> SearchHit | None:
    if not isinstance(item, dict):
        return None
    url = _text(item.get("url"))
    if not url:
        return None
    return SearchHit(
        url=url,
        title=_text(item.get("title")),
        snippet=_text(item.get("content")),
        published_at=_text(item.get("publishedDate")),
    )


def _answer(data: dict[str, Any]) -> str:
    """The first direct answer: a string in older SearXNG, `{"answer": ...}` in newer ones."""
    for item in _list(data, "answers"):
        text = _text(item.get("answer") if isinstance(item, dict) else item)
        if text:
            return text
    return ""
