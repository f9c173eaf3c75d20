"""Build `ctx.web` from the `[web]` configuration and the environment.

Each kind in the web provider registry (`tether.engine.web.web_kinds.WEB_KINDS`) is made when it
can work (a DeepSeek key, a SearXNG URL; the local fetcher always; Bing only when the
configuration lists it), and its reason noted when it cannot; the configuration's names select
among them at call time. So a configured provider that cannot work is an error result naming
what is missing (WEB_PROVIDER_CONFIGURED_MISSING), and no configured provider at all is
WEB_PROVIDER_UNAVAILABLE with the way to configure one: the tools are offered either way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

import msgspec

from tether.engine.config.model_kinds import DEEPSEEK_ENV
from tether.engine.web.capability import WebCapability
from tether.engine.web.local_fetch import LocalFetcher
from tether.engine.web.provider_registry import FetchProvider, ProviderRegistry, SearchProvider
from tether.engine.web.ssrf import Resolver, system_resolver
from tether.engine.web.web_kinds import (
    EXA_ENV,
    NO_FETCH,
    PERPLEXITY_ENV,
    SEARXNG_ENV,
    WEB_KINDS,
    WebKind,
    WebRole,
    WebSources,
)
from tether.schemas.web import WebConfig

if TYPE_CHECKING:
    import ssl

    from httpcore import AsyncNetworkBackend

SEARCH_HINT = (
    f"set {SEARXNG_ENV} to a SearXNG instance, or {DEEPSEEK_ENV.key}, {EXA_ENV} or "
    f"{PERPLEXITY_ENV} for DeepSeek's, Exa's or Perplexity's search, or name providers in the "
    "config file's [web] search_providers"
)
FETCH_HINT = 'set [web] fetch_provider = "local" (or "deepseek") in the config file'
Provider = SearchProvider | FetchProvider


class WebPlan(msgspec.Struct):
    """Which web providers can work, which cannot (and why), and the configured order."""

    local: LocalFetcher
    made: dict[tuple[WebRole, str], Provider] = msgspec.field(
        default_factory=dict[tuple[WebRole, str], Provider]
    )
    absent: dict[tuple[WebRole, str], str] = msgspec.field(
        default_factory=dict[tuple[WebRole, str], str]
    )
    search: list[str] = msgspec.field(default_factory=list[str])  # fallback order
    search_configured: bool = False  # the order is [web] search_providers, not derived
    fetch: list[str] = msgspec.field(default_factory=list[str])  # [] or one name

    def why_not(self, role: WebRole, name: str) -> str | None:
        """None when the provider can work, else why not."""
        if (role, name) in self.made:
            return None
        return self.absent.get((role, name), "no provider of that name exists")


def build_web(
    config: WebConfig | None = None,
    env: Mapping[str, str] | None = None,
    *,
    resolver: Resolver = system_resolver,
    network: AsyncNetworkBackend | None = None,
    tls: ssl.SSLContext | None = None,
) -> WebCapability:
    """`resolver` and `network` are the DNS and socket boundaries (tests observe them); `tls`
    the certificates the local fetcher trusts (tests bring their own CA)."""
    plan = plan_web(config, env, resolver=resolver, network=network, tls=tls)
    registry = ProviderRegistry(search_hint=SEARCH_HINT, fetch_hint=FETCH_HINT)
    for (role, _), provider in plan.made.items():
        # The registry entry's role says which protocol its provider speaks.
        if role == "search":
            registry.add_search(cast(SearchProvider, provider))
        else:
            registry.add_fetch(cast(FetchProvider, provider))
    for (_, name), why in plan.absent.items():
        registry.note_absent(name, why)
    return WebCapability(registry, plan.local, search=plan.search, fetch=plan.fetch)


def plan_web(
    config: WebConfig | None = None,
    env: Mapping[str, str] | None = None,
    *,
    resolver: Resolver = system_resolver,
    network: AsyncNetworkBackend | None = None,
    tls: ssl.SSLContext | None = None,
) -> WebPlan:
    """Make every registered kind the configuration allows (nothing is sent: providers connect
    when asked)."""
    config = config or WebConfig()
    env = os.environ if env is None else env
    local = LocalFetcher(config.local, resolver=resolver, network=network, tls=tls)
    sources = WebSources(config, env, local)
    plan = WebPlan(local)
    for key, kind in WEB_KINDS.items():
        if kind.listed_only and kind.name not in _listed(config, kind):
            continue
        made = kind.make(sources)
        if isinstance(made, str):
            plan.absent[key] = made
        else:
            plan.made[key] = made
    plan.search_configured = config.search_providers is not None
    plan.search = _search_order(config, plan)
    plan.fetch = [] if config.fetch_provider == NO_FETCH else [config.fetch_provider]
    return plan


def _listed(config: WebConfig, kind: WebKind) -> list[str]:
    if kind.role == "search":
        return config.search_providers or []
    return [config.fetch_provider]


def _search_order(config: WebConfig, plan: WebPlan) -> list[str]:
    if config.search_providers is not None:
        return list(config.search_providers)
    # Unconfigured: what the environment offers, in the registry's order.
    return [name for role, name in plan.made if role == "search"]
