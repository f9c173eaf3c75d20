"""DeepSeek's Search and Fetch APIs: `POST /v1/tools/search` and `POST /v1/tools/fetch`, plain
JSON with one bearer key. A search answers in one request (no model round); a fetch reads a
public page from DeepSeek's network and returns it as Markdown, so no local SSRF check applies
and loopback or LAN targets are simply unreachable there.

Only successful requests are billed, so the statuses that mean "try again" (408, 429, 5xx) are
retried after 0.5 s and 1.0 s; 402 (balance) and every other 4xx are not.
"""

from __future__ import annotations

from typing import Any, TypeVar

import anyio
import msgspec

from tether.engine.web.remote import RemoteClient, RemoteReply
from tether.engine.web.ssrf import parse_url
from tether.engine.web.types import FetchResult, SearchHit, SearchResults, Target
from tether.errors import WebError

DEFAULT_BASE_URL = "https://api.deepseek.com"
SEARCH_PATH = "/v1/tools/search"
FETCH_PATH = "/v1/tools/fetch"
MAX_SEARCH_COUNT = 50
MAX_QUERY_CHARS = 128
MAX_FETCH_URL_CHARS = 8192
RETRY_DELAYS: tuple[float, ...] = (0.5, 1.0)
SNIPPET_FALLBACK_CHARS = 200
T = TypeVar("T")


class _Result(msgspec.Struct):
    title: str = ""
    url: str = ""
    snippet: str = ""
    summary: str = ""  # 600-800 characters "to be read by a model": the snippet's stand-in


class _SearchReply(msgspec.Struct):
    results: list[_Result] = []


class _FetchReply(msgspec.Struct):
    title: str = ""
    content: str = ""


def api_base_url(url: str) -> str:
    """The API root: a chat base URL's `/anthropic` convention suffix and `/v1` dropped."""
    base = url.rstrip("/")
    for suffix in ("/anthropic", "/v1"):
        base = base.removesuffix(suffix).rstrip("/")
    return base


class DeepSeekWeb:
    """One client for both endpoints; registered as the `deepseek` search and fetch provider."""

    name = "deepseek"

    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout: float = 20.0,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
    ) -> None:
        self.base_url = api_base_url(base_url)
        self.retry_delays = retry_delays
        headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        self._http = RemoteClient("deepseek", timeout=timeout, headers=headers)

    async def search(self, query: str, limit: int) -> SearchResults:
        if len(query) > MAX_QUERY_CHARS:
            raise WebError(
                "WEB_INVALID_QUERY",
                f"deepseek search queries are at most {MAX_QUERY_CHARS} characters "
                f"({len(query)} given)",
            )
        payload = {"query": query, "count": max(1, min(limit, MAX_SEARCH_COUNT))}
        reply = await self._post(SEARCH_PATH, payload, "search")
        parsed = _decode(reply, _SearchReply, "deepseek search")
        hits = [h for h in map(_hit, parsed.results) if h.url]
        return SearchResults(hits, provider=self.name)

    async def fetch(self, url: str, *, target: Target | None = None) -> FetchResult:
        parse_url(url, max_length=MAX_FETCH_URL_CHARS)  # refused before it costs a request
        reply = await self._post(FETCH_PATH, {"url": url}, "fetch")
        page = _decode(reply, _FetchReply, "deepseek fetch")
        return FetchResult(url, 200, page.content, "text/markdown", provider=self.name)

    async def _post(self, path: str, payload: dict[str, Any], what: str) -> RemoteReply:
        data = msgspec.json.encode(payload)
        url = self.base_url + path
        reply = await self._http.send("POST", url, content=data)
        for delay in self.retry_delays:
            if not _retryable(reply.status):
                break
            await anyio.sleep(delay)
            reply = await self._http.send("POST", url, content=data)
        if reply.status >= 400:
            raise WebError(
                "WEB_PROVIDER_ERROR",
                f"deepseek {what} HTTP {reply.status}: {reply.error_detail()}",
            )
        return reply


def _retryable(status: int) -> bool:
    return status in (408, 429) or status >= 500


def _decode(reply: RemoteReply, kind: type[T], what: str) -> T:
    try:
        return msgspec.json.decode(reply.body, type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise WebError(
            "WEB_PROVIDER_ERROR", f"{what} answered an unexpected shape: {exc}"
        ) from None


def _hit(result: _Result) -> SearchHit:
    snippet = _collapse(result.snippet) or _shorten(_collapse(result.summary))
    return SearchHit(url=result.url.strip(), title=_collapse(result.title), snippet=snippet)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _shorten(text: str) -> str:
    if len(text) <= SNIPPET_FALLBACK_CHARS:
        return text
    return text[: SNIPPET_FALLBACK_CHARS - 1].rstrip() + "…"
