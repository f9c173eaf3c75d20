"""Build `ctx.web` from the `[web]` configuration and the environment.

Providers are registered when they can work (a DeepSeek key, a SearXNG URL; the local fetcher
always; Bing only when the configuration lists it); the configuration's names select among
them at call time. So a configured provider that cannot work is an error result naming what is
missing (WEB_PROVIDER_CONFIGURED_MISSING), and no configured provider at all is
WEB_PROVIDER_UNAVAILABLE with the way to configure one: the tools are offered either way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tether.engine.web.capability import WebCapability
from tether.engine.web.local_fetch import LocalFetcher
from tether.engine.web.registry import ProviderRegistry
from tether.engine.web.ssrf import Resolver, system_resolver
from tether.schemas.web import FetchProviderName, SearchProviderName, WebConfig

if TYPE_CHECKING:
    from httpcore import AsyncNetworkBackend

SEARXNG_ENV = "TETHER_SEARXNG_URL"
DEEPSEEK_KEY_ENV = "DEEPSEEK_API_KEY"
DEEPSEEK_BASE_ENV = "DEEPSEEK_BASE_URL"
SEARCH_HINT = (
    f"set {SEARXNG_ENV} to a SearXNG instance or {DEEPSEEK_KEY_ENV} for DeepSeek's Search API, "
    "or name providers in the config file's [web] search_providers"
)
FETCH_HINT = 'set [web] fetch_provider = "local" (or "deepseek") in the config file'


def build_web(
    config: WebConfig | None = None,
    env: Mapping[str, str] | None = None,
    *,
    resolver: Resolver = system_resolver,
    network: AsyncNetworkBackend | None = None,
) -> WebCapability:
    """`resolver` and `network` are the DNS and socket boundaries (tests observe them)."""
    config = config or WebConfig()
    env = os.environ if env is None else env
    registry = ProviderRegistry(search_hint=SEARCH_HINT, fetch_hint=FETCH_HINT)
    local = LocalFetcher(config.local, resolver=resolver, network=network)
    registry.add_fetch(local)
    timeout = config.search_timeout_ms / 1000

    key_env = config.deepseek.api_key_env or DEEPSEEK_KEY_ENV
    key = config.deepseek.api_key or env.get(key_env)
    if key:
        from tether.engine.web.deepseek import DEFAULT_BASE_URL, DeepSeekWeb

        base = config.deepseek.base_url or env.get(DEEPSEEK_BASE_ENV) or DEFAULT_BASE_URL
        deepseek = DeepSeekWeb(key, base, timeout=min(timeout, 20.0))
        registry.add_search(deepseek)
        registry.add_fetch(deepseek)
    else:
        registry.note_absent("deepseek", f"{key_env} is not set")

    searxng_url = config.searxng.url or env.get(SEARXNG_ENV)
    if searxng_url:
        from tether.engine.web.searxng import SearxngSearch

        searxng = SearxngSearch(searxng_url, timeout=timeout, headers=config.searxng.headers)
        registry.add_search(searxng)
    else:
        registry.note_absent("searxng", f"{SEARXNG_ENV} is not set and [web.searxng] has no url")

    if "bing" in (config.search_providers or []):
        from tether.engine.web.bing import BingRss

        bing = BingRss(config.bing.url, timeout=timeout)
        registry.add_search(bing)

    return WebCapability(
        registry,
        local,
        search=_search_order(config, key is not None and key != "", searxng_url),
        fetch=_fetch_name(config.fetch_provider),
    )


def _search_order(config: WebConfig, deepseek: bool, searxng: str | None) -> list[str]:
    if config.search_providers is not None:
        return list[str](config.search_providers)
    # Unconfigured: what the environment offers, the self-hosted instance first.
    derived: list[SearchProviderName] = []
    if searxng:
        derived.append("searxng")
    if deepseek:
        derived.append("deepseek")
    return list[str](derived)


def _fetch_name(name: FetchProviderName) -> list[str]:
    return [] if name == "none" else [name]
