"""Exa's search API (seed `dsh-web-search-exa`): `POST {base}/search` with highlight contents,
the key in `x-api-key`. Exa writes no answer: each result's first non-blank highlight is its
snippet, and a result without one is left out (there is nothing true to show for it).
`publishedDate` is the source's date. The caller's bound is sent as `numResults`; the seam
caps the list again.
"""

from __future__ import annotations

import msgspec

from tether.engine.web.keyed_search import KeyedSearchApi
from tether.engine.web.types import SearchHit, SearchResults

DEFAULT_BASE_URL = "https://api.exa.ai"
MAX_RESULTS = 100  # Exa's own bound on numResults


class _Result(msgspec.Struct):
    url: str
    title: str | None = None
    publishedDate: str | None = None
    highlights: list[str] | None = None


class _Reply(msgspec.Struct):
    results: list[_Result]


class ExaSearch:
    name = "exa"

    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        search_type: str = "auto",
        highlights_per_result: int = 1,
        timeout: float = 20.0,
    ) -> None:
        self.url = base_url.rstrip("/") + "/search"
        self.search_type = search_type
        self.highlights_per_result = highlights_per_result
        headers = {"x-api-key": api_key, "Accept": "application/json"}
        headers["Content-Type"] = "application/json"
        self._api = KeyedSearchApi("Exa", timeout=timeout, headers=headers)

    async def search(self, query: str, limit: int) -> SearchResults:
        payload = {
            "query": query,
            "type": self.search_type,
            "numResults": max(1, min(limit, MAX_RESULTS)),
            "contents": {"highlights": {"highlightsPerUrl": self.highlights_per_result}},
        }
        body = await self._api.post(self.url, payload)
        return self._api.decode(body, _Reply, self._results)

    def _results(self, reply: _Reply) -> SearchResults:
        hits = [h for h in map(_hit, reply.results) if h is not None]
        return SearchResults(hits, provider=self.name)


def _hit(result: _Result) -> SearchHit | None:
    snippet = next((" ".join(h.split()) for h in result.highlights or [] if h.strip()), "")
    if not snippet or not result.url.strip():
        return None
    return SearchHit(
        url=result.url.strip(),
        title=" ".join((result.title or "").split()),
        snippet=snippet,
        published_at=result.publishedDate or "",
    )
