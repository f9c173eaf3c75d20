"""Opening a provider's model: the adapter its kind names, with the provider's URL, key,
headers and timeout."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tether.engine.config.http_clients import HttpClients, http_timeout
from tether.engine.config.model_kinds import KINDS

if TYPE_CHECKING:
    import httpx

    from tether.engine.config.resolve import Provider
    from tether.engine.providers.base import LLM, ModelInfo
    from tether.engine.providers.common import HTTPProvider
    from tether.engine.providers.retry import RetryPolicy


def make_adapter(
    provider: Provider,
    model: str,
    info: ModelInfo,
    *,
    client: httpx.AsyncClient | None = None,
    retry: RetryPolicy | None = None,
    timeout: float | httpx.Timeout | None = None,
) -> HTTPProvider:
    """The adapter for the model's wire API, its provider's unless the model names another
    kind (without `client`, it makes and owns its own)."""
    kind = KINDS[info.kind or provider.kind]
    return kind.adapter()(
        _base_url(provider, kind.name),
        provider.api_key,
        model,
        info,
        http_timeout(provider) if timeout is None else timeout,
        client,
        deepseek=kind.deepseek,
        retry=retry,
        name=provider.name,
        headers=provider.headers,
        settings=settings_hint(provider),
    )


def settings_hint(provider: Provider) -> str:
    """Where the provider's base URL and key come from, for a failure to reach it: the
    settings to check (`[providers.p] base_url` and `api_key_env`, or OPENAI_BASE_URL and
    OPENAI_API_KEY)."""
    env = KINDS[provider.kind].env
    if provider.origin == "environment" and env is not None:
        url, table = env.base_url, ""
    else:
        table = f"[providers.{provider.name}]"
        url = f"{table} base_url"
    source = provider.key_source
    if source.startswith("env "):
        key = f"the key variable {source.removeprefix('env ')}"
    elif source == "config":
        key = f"the key {table} api_key"
    elif table:
        key = f"no key ({table} api_key_env)"
    else:
        key = f"no key (the key variable {env.key if env else 'none'})"
    return f"the base URL setting {url}; {key}"


def _base_url(provider: Provider, kind: str) -> str:
    """A model of another kind goes to that kind's public API when the provider uses its own
    kind's (DeepSeek's Anthropic surface lives under /anthropic); a URL the user set stays."""
    if kind != provider.kind and provider.base_url == KINDS[provider.kind].base_url:
        return KINDS[kind].base_url
    return provider.base_url


def model_factory(
    provider: Provider, info: ModelInfo, clients: HttpClients, retry: RetryPolicy | None = None
) -> Callable[[], LLM]:
    """Opens `info` on the provider's shared client."""
    model = info.id.partition(":")[2]
    return lambda: make_adapter(provider, model, info, client=clients.get(provider), retry=retry)
