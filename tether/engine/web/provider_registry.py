"""Providers by name, selected by configuration. Selection never depends on the order providers
were registered: a configured name picks that provider; with no name configured, exactly one
registered provider is used and several are ambiguous (WEB_PROVIDER_AMBIGUOUS)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from tether.engine.web.types import FetchResult, SearchResults, Target
from tether.errors import WebError

P = TypeVar("P")


class SearchProvider(Protocol):
    @property
    def name(self) -> str: ...

    async def search(self, query: str, limit: int) -> SearchResults:
        """Up to about `limit` hits (more is allowed: the capability caps and flags them)."""
        ...


class FetchProvider(Protocol):
    @property
    def name(self) -> str: ...

    async def fetch(self, url: str, *, target: Target | None = None) -> FetchResult: ...


class ProviderRegistry:
    def __init__(self, *, search_hint: str = "", fetch_hint: str = "") -> None:
        self._search: dict[str, SearchProvider] = {}
        self._fetch: dict[str, FetchProvider] = {}
        self._absent: dict[str, str] = {}  # known providers that could not be registered
        self._hints = {"search": search_hint, "fetch": fetch_hint}

    def add_search(self, provider: SearchProvider) -> None:
        self._search[provider.name] = provider

    def add_fetch(self, provider: FetchProvider) -> None:
        self._fetch[provider.name] = provider

    def note_absent(self, name: str, why: str) -> None:
        """Record why a provider the configuration may name is not registered."""
        self._absent[name] = why

    def search_chain(self, names: Sequence[str] | None) -> tuple[list[SearchProvider], list[str]]:
        """The configured providers in fallback order, and why any configured one is missing.
        Raises WebError when none of them is there."""
        if names is None:
            return [_only("search", self._search, self._hints["search"])], []
        if not names:
            raise _unavailable("search", self._hints["search"])
        chain = [self._search[n] for n in names if n in self._search]
        missing = [self._missing(n, "search") for n in names if n not in self._search]
        if not chain:
            raise WebError("WEB_PROVIDER_CONFIGURED_MISSING", "; ".join(missing))
        return chain, missing

    def fetch_provider(self, names: Sequence[str] | None) -> FetchProvider:
        """The first configured fetch provider (None: the only registered one; []: none)."""
        if names is None:
            return _only("fetch", self._fetch, self._hints["fetch"])
        if not names:
            raise _unavailable("fetch", self._hints["fetch"])
        provider = self._fetch.get(names[0])
        if provider is None:
            raise WebError("WEB_PROVIDER_CONFIGURED_MISSING", self._missing(names[0], "fetch"))
        return provider

    def _missing(self, name: str, what: str) -> str:
        why = self._absent.get(name, "no provider of that name exists")
        return f"the configured web {what} provider {name!r} is not available: {why}"


def _only(what: str, providers: dict[str, P], hint: str) -> P:
    if not providers:
        raise _unavailable(what, hint)
    if len(providers) > 1:
        names = ", ".join(sorted(providers))
        raise WebError(
            "WEB_PROVIDER_AMBIGUOUS",
            f"several web {what} providers are available ({names}) and none is configured",
        )
    return next(iter(providers.values()))


def _unavailable(what: str, hint: str) -> WebError:
    text = f"no web {what} provider is configured"
    return WebError("WEB_PROVIDER_UNAVAILABLE", f"{text}; {hint}" if hint else text)
