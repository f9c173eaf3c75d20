"""The provider-kind registry: one entry per kind of model provider, and one per kind of web
search or fetch provider. Everything else (the file's validation, the environment's providers,
base URLs, built-in models, the adapter a model opens with, which web providers exist and how
each is made) reads these tables, so adding a kind is adding an entry.

Adapters and web providers are imported when first made: a session on the demo model never
loads httpx.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tether.engine.config.builtin_models import ANTHROPIC, DEEPSEEK, OPENAI
from tether.schemas.config import ModelConfig
from tether.schemas.web import WebConfig

if TYPE_CHECKING:
    from tether.engine.providers.common import HTTPProvider
    from tether.engine.web.deepseek import DeepSeekWeb
    from tether.engine.web.local_fetch import LocalFetcher
    from tether.engine.web.provider_registry import FetchProvider, SearchProvider


# --- model providers --------------------------------------------------------------------------


@dataclass(frozen=True)
class EnvVars:
    """Variables that add a provider named like its kind, usable with no file at all. Either
    one adds it: a base URL alone is a server that wants no key (Ollama, llama.cpp, vLLM; or a
    gateway that adds credentials itself), so requests carry none."""

    key: str  # OPENAI_API_KEY
    base_url: str  # OPENAI_BASE_URL


@dataclass(frozen=True)
class ProviderKind:
    name: str  # what `kind = "..."` names in the file
    adapter: Callable[[], type[HTTPProvider]]  # the adapter class, imported when first used
    base_url: str  # the kind's public API
    models: Mapping[str, ModelConfig]  # built-in models; the first is the kind's default
    env: EnvVars | None = None
    deepseek: bool = False  # the API in DeepSeek's dialect (reasoning round trips, stream end)


def _chat() -> type[HTTPProvider]:
    from tether.engine.providers.openai_chat import OpenAIChat

    return OpenAIChat


def _responses() -> type[HTTPProvider]:
    from tether.engine.providers.openai_responses import OpenAIResponses

    return OpenAIResponses


def _messages() -> type[HTTPProvider]:
    from tether.engine.providers.anthropic import AnthropicMessages

    return AnthropicMessages


_OPENAI_URL = "https://api.openai.com/v1"
_DEEPSEEK_URL = "https://api.deepseek.com"
DEEPSEEK_ENV = EnvVars("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL")

# In order: the environment's providers are listed (and chosen from) in this order.
KINDS: dict[str, ProviderKind] = {
    k.name: k
    for k in (
        ProviderKind(
            "openai", _chat, _OPENAI_URL, OPENAI, EnvVars("OPENAI_API_KEY", "OPENAI_BASE_URL")
        ),
        ProviderKind("openai-responses", _responses, _OPENAI_URL, OPENAI),
        ProviderKind(
            "anthropic",
            _messages,
            "https://api.anthropic.com",
            ANTHROPIC,
            EnvVars("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        ),
        ProviderKind("deepseek", _chat, _DEEPSEEK_URL, DEEPSEEK, DEEPSEEK_ENV, deepseek=True),
        ProviderKind("deepseek-responses", _responses, _DEEPSEEK_URL, DEEPSEEK, deepseek=True),
        ProviderKind(
            "deepseek-anthropic", _messages, f"{_DEEPSEEK_URL}/anthropic", DEEPSEEK, deepseek=True
        ),
    )
}


def env_kinds() -> list[ProviderKind]:
    """The kinds the environment can add a provider of, in table order."""
    return [k for k in KINDS.values() if k.env is not None]


# --- web providers ----------------------------------------------------------------------------

WebRole = Literal["search", "fetch"]
SEARXNG_ENV = "TETHER_SEARXNG_URL"
NO_FETCH = "none"  # `fetch_provider = "none"`: web_fetch has no provider


@dataclass(frozen=True)
class WebSources:
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


@dataclass(frozen=True)
class WebKind:
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
        WebKind("bing", "search", _bing, listed_only=True),
        WebKind("local", "fetch", _local),
        WebKind("deepseek", "fetch", _deepseek),
    )
}


def web_kind_names(role: WebRole) -> list[str]:
    return [k.name for k in WEB_KINDS.values() if k.role == role]
