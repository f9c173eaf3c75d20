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
    """The adapter for `provider`'s wire API (without `client`, it makes and owns its own)."""
    kind = KINDS[provider.kind]
    return kind.adapter()(
        provider.base_url,
        provider.api_key,
        model,
        info,
        http_timeout(provider) if timeout is None else timeout,
        client,
        deepseek=kind.deepseek,
        retry=retry,
        name=provider.name,
        headers=provider.headers,
    )


def model_factory(
    provider: Provider, info: ModelInfo, clients: HttpClients, retry: RetryPolicy | None = None
) -> Callable[[], LLM]:
    """Opens `info` on the provider's shared client."""
    model = info.id.partition(":")[2]
    return lambda: make_adapter(provider, model, info, client=clients.get(provider), retry=retry)
