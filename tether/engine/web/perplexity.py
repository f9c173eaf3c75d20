"""Perplexity's Sonar (seed `dsh-web-search-perplexity`): `POST {base}/chat/completions`, the
query as the one user message, a bearer key. The generated answer is the search's answer; the
sources are the structured `search_results` (title, URL, snippet, date), or the URL-only
`citations` when the reply has no `search_results`. Sonar has no result-count control: the seam
caps the list.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tether.engine.web.keyed_search import KeyedSearchApi
from tether.engine.web.types import SearchHit, SearchResults

DEFAULT_BASE_URL = "https://api.perplexity.ai"
DEFAULT_MODEL = "sonar"


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message


class _Source(msgspec.Struct):
    url: str
    title: str | None = None
    snippet: str | None = None
    date: str | None = None


class _Reply(msgspec.Struct):
    choices: list[_Choice] = []
    search_results: list[_Source] | None = None
    citations: list[str] | None = None


class PerplexitySearch:
    name = "perplexity"

    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        model: str = DEFAULT_MODEL,
        max_tokens: int = 1024,
        search_recency: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.max_tokens = max_tokens
        self.search_recency = search_recency
        headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        headers["Content-Type"] = "application/json"
        self._api = KeyedSearchApi("Perplexity", timeout=timeout, headers=headers)

    async def search(self, query: str, limit: int) -> SearchResults:
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": [{"role": "user", "content": query}],
        }
        if self.search_recency is not None:
            payload["search_recency_filter"] = self.search_recency
        body = await self._api.post(self.url, payload)
        return self._api.decode(body, _Reply, self._results)

    def _results(self, reply: _Reply) -> SearchResults:
        answer = (reply.choices[0].message.content or "").strip() if reply.choices else ""
        if reply.search_results is not None:
            hits = [_hit(s) for s in reply.search_results if s.url.strip()]
        else:
            hits = [SearchHit(url=u.strip()) for u in reply.citations or [] if u.strip()]
        return SearchResults(hits, answer=answer, provider=self.name)


def _hit(source: _Source) -> SearchHit:
    return SearchHit(
        url=source.url.strip(),
        title=" ".join((source.title or "").split()),
        snippet=" ".join((source.snippet or "").split()),
        published_at=source.date or "",
    )
