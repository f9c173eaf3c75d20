"""The model provider kinds: one entry per kind. Everything else (the file's validation, the
environment's providers, base URLs, built-in models, the adapter a model opens with) reads this
table, so adding a kind is adding an entry. (Web provider kinds: `engine/web/web_kinds.py`.)

Adapters are imported when first made: a session on the demo model never loads httpx.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from tether.engine.config.builtin_models import ANTHROPIC, DEEPSEEK, OPENAI
from tether.schemas.config import ModelConfig

if TYPE_CHECKING:
    from tether.engine.providers.common import HTTPProvider


# --- model providers --------------------------------------------------------------------------


class EnvVars(msgspec.Struct, frozen=True):
    """Variables that add a provider named like its kind, usable with no file at all. Either
    one adds it: a base URL alone is a server that wants no key (Ollama, llama.cpp, vLLM; or a
    gateway that adds credentials itself), so requests carry none."""

    key: str  # OPENAI_API_KEY
    base_url: str  # OPENAI_BASE_URL


class ProviderKind(msgspec.Struct, frozen=True):
    name: str  # what `kind = "..."` names in the file
    adapter: Callable[[], type[HTTPProvider]]  # the adapter class, imported when first used
    base_url: str  # the kind's public API
    models: Mapping[str, ModelConfig]  # built-in models; the first is the kind's default
    env: EnvVars | None = None
    deepseek: bool = False  # the API in DeepSeek's dialect (reasoning round trips, stream end)
    hosted_tools: bool = False  # whether the API runs hosted tools (web_search) itself


def _chat() -> type[HTTPProvider]:
    from tether.engine.providers.openai_chat_adapter import OpenAIChat

    return OpenAIChat


def _responses() -> type[HTTPProvider]:
    from tether.engine.providers.openai_responses_adapter import OpenAIResponses

    return OpenAIResponses


def _messages() -> type[HTTPProvider]:
    from tether.engine.providers.anthropic_adapter import AnthropicMessages

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
        ProviderKind("openai-responses", _responses, _OPENAI_URL, OPENAI, hosted_tools=True),
        ProviderKind(
            "anthropic",
            _messages,
            "https://api.anthropic.com",
            ANTHROPIC,
            EnvVars("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
            hosted_tools=True,
        ),
        ProviderKind("deepseek", _chat, _DEEPSEEK_URL, DEEPSEEK, DEEPSEEK_ENV, deepseek=True),
        ProviderKind("deepseek-responses", _responses, _DEEPSEEK_URL, DEEPSEEK, deepseek=True),
        # DeepSeek hosts a web search only on its Anthropic surface (the others ignore one).
        ProviderKind(
            "deepseek-anthropic",
            _messages,
            f"{_DEEPSEEK_URL}/anthropic",
            DEEPSEEK,
            deepseek=True,
            hosted_tools=True,
        ),
    )
}


def env_kinds() -> list[ProviderKind]:
    """The kinds the environment can add a provider of, in table order."""
    return [k for k in KINDS.values() if k.env is not None]


def hosted_issues(kind: str, tools: Sequence[str]) -> Iterator[str]:
    """Why `kind` cannot offer the hosted `tools` (nothing when it can)."""
    if tools and not KINDS[kind].hosted_tools:
        hosts = ", ".join(k.name for k in KINDS.values() if k.hosted_tools)
        yield f"kind {kind!r} runs no hosted tools (these do: {hosts})"
