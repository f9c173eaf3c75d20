"""`ctx.web`: the one object web tools call. It selects providers through the registry at call
time (so a missing or ambiguous provider is an error result, never a missing tool), asks search
providers in the configured fallback order, renders fetched HTML as Markdown and caps the text.

Aborting a call is anyio cancellation; `aclose` aborts the calls still running (WEB_ABORTED).
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio
from msgspec.structs import replace

from tether.engine.web.local_fetch import LocalFetcher
from tether.engine.web.provider_registry import ProviderRegistry
from tether.engine.web.types import (
    FetchResult,
    HttpRequest,
    HttpResponse,
    SearchResults,
    Target,
)
from tether.errors import WebError

T = TypeVar("T")
_HTML = frozenset({"text/html", "application/xhtml+xml"})


class WebCapability:
    def __init__(
        self,
        registry: ProviderRegistry,
        local: LocalFetcher,
        *,
        search: Sequence[str] | None = None,
        fetch: Sequence[str] | None = None,
    ) -> None:
        """`search`: provider names in fallback order (None: the only registered one).
        `fetch`: the fetch provider's name, as a list of one ([]: none; None: the only one)."""
        self.registry = registry
        self.local = local
        self._search = list(search) if search is not None else None
        self._fetch = list(fetch) if fetch is not None else None
        self._running: set[anyio.CancelScope] = set()
        self._closed = False

    # --- search ----------------------------------------------------------------------------

    async def search(self, query: str, *, max_results: int) -> SearchResults:
        return await self._guarded("the search", lambda: self._search_chain(query, max_results))

    async def _search_chain(self, query: str, max_results: int) -> SearchResults:
        providers, failures = self.registry.search_chain(self._search)
        errors: list[WebError] = []
        empty: SearchResults | None = None
        for provider in providers:
            try:
                found = await provider.search(query, max_results + 1)
            except WebError as exc:
                errors.append(exc)
                failures.append(f"{provider.name}: {exc.code}: {exc.message}")
                continue
            if found.hits or found.answer:
                return _capped(found, max_results)
            empty = empty or found
        if empty is not None:
            return SearchResults(provider=empty.provider)
        if len(errors) == 1 and len(failures) == 1:
            raise errors[0]
        raise WebError("WEB_PROVIDER_ERROR", "every search provider failed: " + "; ".join(failures))

    # --- fetch -----------------------------------------------------------------------------

    async def fetch(self, url: str, *, target: Target | None = None) -> FetchResult:
        return await self._guarded(f"fetching {url}", lambda: self._fetch_page(url, target))

    async def _fetch_page(self, url: str, target: Target | None) -> FetchResult:
        provider = self.registry.fetch_provider(self._fetch)
        page = await provider.fetch(url, target=target)
        body, kind = page.body, page.media_type
        if kind in _HTML:
            body = await _markdown(body, page.final_url)
            kind = "text/markdown"
        cap = self.local.limits.max_body_chars
        truncated = page.truncated or len(body) > cap
        return replace(page, body=body[:cap], media_type=kind, truncated=truncated)

    async def fetch_target(self, url: str) -> Target | None:
        try:
            provider = self.registry.fetch_provider(self._fetch)
        except WebError:
            return None  # fetch() reports it
        if provider is not self.local:
            return None
        return await self.local.check(url)

    # --- raw HTTP --------------------------------------------------------------------------

    async def http_target(self, url: str) -> Target:
        return await self.local.check(url)

    async def http(self, request: HttpRequest, *, target: Target | None = None) -> HttpResponse:
        what = f"{request.method} {request.url}"
        return await self._guarded(what, lambda: self.local.request(request, target=target))

    # --- lifecycle -------------------------------------------------------------------------

    async def _guarded(self, what: str, op: Callable[[], Awaitable[T]]) -> T:
        if self._closed:
            raise WebError("WEB_ABORTED", f"{what} was not started: web access is shut down")
        with anyio.CancelScope() as scope:
            self._running.add(scope)
            try:
                return await op()
            finally:
                self._running.discard(scope)
        raise WebError("WEB_ABORTED", f"{what} was aborted: web access is shutting down")

    async def aclose(self) -> None:
        self._closed = True
        for scope in list(self._running):
            scope.cancel()


async def _markdown(html: str, url: str) -> str:
    """The page as Markdown, on a worker thread; a cancelled call (a timeout) stops that thread's
    work too, instead of leaving it to finish a page nobody waits for."""
    from tether.engine.web.html_markdown import html_to_markdown  # the first page: not at start

    stop = threading.Event()
    try:
        return await anyio.to_thread.run_sync(
            html_to_markdown, html, url, stop, abandon_on_cancel=True
        )
    finally:
        stop.set()


def _capped(found: SearchResults, max_results: int) -> SearchResults:
    if len(found.hits) <= max_results:
        return found
    return replace(found, hits=found.hits[:max_results], capped=True)
