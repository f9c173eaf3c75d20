"""The web provider kinds: one entry per kind of search or fetch provider, and how each is made
from the `[web]` table and the environment. The file's validation, `ctx.web`'s build and
`tether doctor` read this table, so adding a kind is adding an entry. Providers are imported
when first made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

import msgspec

from tether.engine.config.model_kinds import DEEPSEEK_ENV
from tether.schemas.web import WebConfig

if TYPE_CHECKING:
    from tether.engine.web.deepseek import DeepSeekWeb
    from tether.engine.web.local_fetch import LocalFetcher
    from tether.engine.web.provider_registry import FetchProvider, SearchProvider

WebRole = Literal["search", "fetch"]
SEARXNG_ENV = "TETHER_SEARXNG_URL"
EXA_ENV = "EXA_API_KEY"  # the seed's default for Exa's key
PERPLEXITY_ENV = "PERPLEXITY_API_KEY"  # and for Perplexity's
NO_FETCH = "none"  # `fetch_provider = "none"`: web_fetch has no provider


class WebSources(msgspec.Struct, frozen=True):
    """What a web provider is made from: the `[web]` table, the environment, and the local
    fetcher (made once; it also serves raw HTTP)."""

    config: WebConfig
    env: Mapping[str, str]
    local: LocalFetcher

    @property
    def search_timeout(self) -> float:
        return self.config.search_timeout_ms / 1000


# The provider, or why it cannot work (shown to the model and by `tether doctor`).
WebMaker = Callable[[WebSources], "SearchProvider | FetchProvider | str"]


class WebKind(msgspec.Struct, frozen=True):
    name: str  # what `search_providers` / `fetch_provider` name
    role: WebRole
    make: WebMaker
    # Made only when the configuration names it, and never part of the order derived from the
    # environment (Bing's RSS: brittle, so opt-in).
    listed_only: bool = False


def _searxng(src: WebSources) -> SearchProvider | str:
    url = src.config.searxng.url or src.env.get(SEARXNG_ENV)
    if not url:
        return f"{SEARXNG_ENV} is not set and [web.searxng] has no url"
    from tether.engine.web.searxng import SearxngSearch

    headers = src.config.searxng.headers
    return SearxngSearch(url, timeout=src.search_timeout, headers=headers)


def _deepseek(src: WebSources) -> DeepSeekWeb | str:
    """Search and fetch alike: `[web.deepseek]`, else the DeepSeek provider's variables."""
    settings = src.config.deepseek
    key_env = settings.api_key_env or DEEPSEEK_ENV.key
    key = settings.api_key or src.env.get(key_env)
    if not key:
        return f"{key_env} is not set"
    from tether.engine.web.deepseek import DEFAULT_BASE_URL, DeepSeekWeb

    base = settings.base_url or src.env.get(DEEPSEEK_ENV.base_url) or DEFAULT_BASE_URL
    return DeepSeekWeb(key, base, timeout=min(src.search_timeout, 20.0))


def _exa(src: WebSources) -> SearchProvider | str:
    settings = src.config.exa
    key_env = settings.api_key_env or EXA_ENV
    key = settings.api_key or src.env.get(key_env)
    if not key:
        return f"{key_env} is not set"
    from tether.engine.web.exa import DEFAULT_BASE_URL, ExaSearch

    return ExaSearch(
        key,
        settings.base_url or DEFAULT_BASE_URL,
        search_type=settings.search_type,
        highlights_per_result=settings.highlights_per_result,
        timeout=src.search_timeout,
    )


def _perplexity(src: WebSources) -> SearchProvider | str:
    settings = src.config.perplexity
    key_env = settings.api_key_env or PERPLEXITY_ENV
    key = settings.api_key or src.env.get(key_env)
    if not key:
        return f"{key_env} is not set"
    from tether.engine.web.perplexity import DEFAULT_BASE_URL, PerplexitySearch

    return PerplexitySearch(
        key,
        settings.base_url or DEFAULT_BASE_URL,
        model=settings.model,
        max_tokens=settings.max_tokens,
        search_recency=settings.search_recency,
        timeout=src.search_timeout,
    )


def _bing(src: WebSources) -> SearchProvider:
    from tether.engine.web.bing import BingRss

    return BingRss(src.config.bing.url, timeout=src.search_timeout)


def _local(src: WebSources) -> FetchProvider:
    return src.local


# In order: with no `search_providers`, the usable search kinds are asked in this order.
WEB_KINDS: dict[tuple[WebRole, str], WebKind] = {
    (k.role, k.name): k
    for k in (
        WebKind("searxng", "search", _searxng),
        WebKind("deepseek", "search", _deepseek),
        WebKind("exa", "search", _exa),
        WebKind("perplexity", "search", _perplexity),
        WebKind("bing", "search", _bing, listed_only=True),
        WebKind("local", "fetch", _local),
        WebKind("deepseek", "fetch", _deepseek),
    )
}


def web_kind_names(role: WebRole) -> list[str]:
    return [k.name for k in WEB_KINDS.values() if k.role == role]
