"""What a provider says it serves: `GET {base}/models` (OpenAI, DeepSeek and every compatible
server: vLLM, llama.cpp, Ollama, OpenRouter) or Anthropic's paginated `GET {base}/v1/models`.

Only chat models are kept (an OpenAI account also lists embedding, speech and image models).
Limits come along where the server states them: Anthropic's `max_input_tokens` / `max_tokens`
and capabilities, vLLM's `max_model_len`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import httpx
import msgspec

from tether.engine.providers.retry import error_message, read_bounded
from tether.errors import ProviderError

# Anthropic pages hold up to 1000 models; more pages than this means a server that loops.
MAX_PAGES = 10
# A listing is small and nobody waits on it: a server this slow is treated as not answering.
LIST_TIMEOUT = httpx.Timeout(15.0, connect=5.0)
_NOT_CHAT = re.compile(
    r"embed|whisper|tts|dall-e|davinci|babbage|moderation|realtime|transcribe|sora"
    r"|(?:^|[-/])image|rerank",
    re.IGNORECASE,
)


class RemoteModel(msgspec.Struct, frozen=True):
    """One model as the provider lists it; None where the listing says nothing."""

    id: str
    name: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    images: bool | None = None
    reasoning_levels: tuple[str, ...] = ()
    thinking: str | None = None  # Anthropic: "effort" or "budget"


# --- wire shapes (decoded leniently: compatible servers add and omit fields) ---------------


class _OpenAIModel(msgspec.Struct):
    id: str
    max_model_len: int | None = None  # vLLM


class _OpenAIList(msgspec.Struct):
    data: list[_OpenAIModel] = []


class _Supported(msgspec.Struct):
    supported: bool = False


class _Effort(msgspec.Struct):
    supported: bool = False
    low: _Supported | None = None
    medium: _Supported | None = None
    high: _Supported | None = None
    xhigh: _Supported | None = None
    max: _Supported | None = None


class _ThinkingTypes(msgspec.Struct):
    adaptive: _Supported | None = None
    enabled: _Supported | None = None


class _Thinking(msgspec.Struct):
    supported: bool = False
    types: _ThinkingTypes | None = None


class _Capabilities(msgspec.Struct):
    effort: _Effort | None = None
    thinking: _Thinking | None = None
    image_input: _Supported | None = None


class _AnthropicModel(msgspec.Struct):
    id: str
    display_name: str | None = None
    max_input_tokens: int | None = None
    max_tokens: int | None = None
    capabilities: _Capabilities | None = None


class _AnthropicPage(msgspec.Struct):
    data: list[_AnthropicModel] = []
    has_more: bool = False
    last_id: str | None = None


_openai_list = msgspec.json.Decoder(_OpenAIList)
_anthropic_page = msgspec.json.Decoder(_AnthropicPage)


async def openai_models(
    client: httpx.AsyncClient, base_url: str, headers: Mapping[str, str], provider: str
) -> list[RemoteModel]:
    """`GET {base}/models`, OpenAI's shape."""
    body = await _get(client, f"{base_url}/models", headers, provider)
    listing = _decode(_openai_list, body, provider)
    return [
        RemoteModel(m.id, context_window=m.max_model_len)
        for m in listing.data
        if is_chat_model(m.id)
    ]


async def anthropic_models(
    client: httpx.AsyncClient, base_url: str, headers: Mapping[str, str], provider: str
) -> list[RemoteModel]:
    """`GET {base}/v1/models`, every page (`after_id` = the last id of the page before)."""
    found: list[RemoteModel] = []
    params: dict[str, str] = {"limit": "1000"}
    for _ in range(MAX_PAGES):
        body = await _get(client, f"{base_url}/v1/models", headers, provider, params)
        page = _decode(_anthropic_page, body, provider)
        found += [_anthropic(m) for m in page.data if is_chat_model(m.id)]
        if not page.has_more or not page.last_id:
            break
        params = {"limit": "1000", "after_id": page.last_id}
    return found


def is_chat_model(model_id: str) -> bool:
    return _NOT_CHAT.search(model_id) is None


def _anthropic(m: _AnthropicModel) -> RemoteModel:
    caps = m.capabilities
    levels: tuple[str, ...] = ()
    thinking: str | None = None
    if caps is not None and caps.effort is not None and caps.effort.supported:
        effort = caps.effort
        levels = tuple(
            name
            for name in ("low", "medium", "high", "xhigh", "max")
            if (s := getattr(effort, name)) is not None and s.supported
        )
        thinking = "effort"
    elif caps is not None and caps.thinking is not None and caps.thinking.supported:
        levels, thinking = ("none", "low", "medium", "high"), "budget"
    images = caps.image_input.supported if caps and caps.image_input else None
    return RemoteModel(
        m.id,
        name=m.display_name,
        context_window=m.max_input_tokens,
        max_output_tokens=m.max_tokens,
        images=images,
        reasoning_levels=levels,
        thinking=thinking,
    )


async def _get(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    provider: str,
    params: Mapping[str, str] | None = None,
) -> bytes:
    try:
        response = await client.get(url, headers=dict(headers), params=params, timeout=LIST_TIMEOUT)
    except httpx.HTTPError as exc:
        detail = str(exc) or type(exc).__name__
        raise ProviderError(f"{provider}: listing models failed: {detail}") from exc
    if response.status_code >= 400:
        body = await read_bounded(response)
        message = error_message(body) or response.reason_phrase
        raise ProviderError(f"{provider} HTTP {response.status_code}: {message}")
    return response.content


def _decode(decoder: msgspec.json.Decoder[Any], body: bytes, provider: str) -> Any:
    try:
        return decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ProviderError(f"{provider}: unexpected model list ({exc})") from None
