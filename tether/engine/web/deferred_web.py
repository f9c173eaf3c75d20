"""`ctx.web` as the composition root hands it out: built from the `[web]` table and the
environment (engine/web/build.py) when a web tool first calls it, so a start loads none of the
web providers, the SSRF checks or the local fetcher until then."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.engine.web.capability import WebCapability
    from tether.engine.web.types import (
        FetchResult,
        HttpRequest,
        HttpResponse,
        SearchResults,
        Target,
    )
    from tether.schemas.web import WebConfig


class DeferredWeb:
    """A WebCapability made at its first use (the seam's `Web`)."""

    def __init__(self, config: WebConfig, env: Mapping[str, str]) -> None:
        self._config = config
        self._env = dict(env)
        self._web: WebCapability | None = None
        self._closed = False

    async def _built(self) -> WebCapability:
        if self._web is None:
            from tether.engine.web.build import build_web

            self._web = build_web(self._config, self._env)
            if self._closed:  # closed before its first use: it answers as a closed one does
                await self._web.aclose()
        return self._web

    async def search(self, query: str, *, max_results: int) -> SearchResults:
        return await (await self._built()).search(query, max_results=max_results)

    async def fetch(self, url: str, *, target: Target | None = None) -> FetchResult:
        return await (await self._built()).fetch(url, target=target)

    async def fetch_target(self, url: str) -> Target | None:
        return await (await self._built()).fetch_target(url)

    async def http_target(self, url: str) -> Target:
        return await (await self._built()).http_target(url)

    async def http(self, request: HttpRequest, *, target: Target | None = None) -> HttpResponse:
        return await (await self._built()).http(request, target=target)

    async def aclose(self) -> None:
        self._closed = True
        if self._web is not None:
            await self._web.aclose()
