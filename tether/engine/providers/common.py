"""What the HTTP adapters share: the client and its timeouts, the image gate, the stream entry."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import msgspec

from tether.engine.history import (
    AssistantMessage,
    ImagePart,
    Message,
    SeenPrefix,
    ToolResultMessage,
    UserMessage,
    WireMemo,
)
from tether.engine.providers import http_transport
from tether.engine.providers.base import ChatRequest, ModelInfo, StreamEvent
from tether.engine.providers.retry import (
    Endpoint,
    RetryPolicy,
    Send,
    StreamDecoder,
    stream_with_retry,
)
from tether.errors import ProviderError

if TYPE_CHECKING:
    from tether.engine.providers.model_list import RemoteModel

# Connecting should be quick; reading waits for a slow model between deltas.
CONNECT_TIMEOUT = 10.0

_encoder = msgspec.json.Encoder()

# Ids of models known to reason (OpenAI o-series, gpt-5 and later), also behind a gateway prefix
# ("openai/gpt-5"). A ModelInfo's `reasons` overrides the guess.
_REASONING_ID = re.compile(r"(?:^|/)(?:o[1-9]|gpt-[5-9])(?:\b|[.-])")


def model_reasons(info: ModelInfo, model: str) -> bool:
    """Whether `model` is a reasoning model: as configured, else judged by its id."""
    if info.reasons is not None:
        return info.reasons
    return _REASONING_ID.search(model) is not None


def is_openai_api(base_url: str) -> bool:
    """Whether the URL is OpenAI's own API (not a compatible server)."""
    return urlsplit(base_url).hostname == "api.openai.com"


def check_images(info: ModelInfo, messages: list[Message]) -> None:
    """Refuse a request that carries images to a model that cannot see them, before sending."""
    if info.images:
        return
    for m in messages:
        if isinstance(m, UserMessage) and any(isinstance(p, ImagePart) for p in m.parts):
            raise ProviderError(f"model {info.id} does not accept images")


def tool_images(info: ModelInfo, m: ToolResultMessage) -> list[ImagePart]:
    """The pictures of a tool result a model is sent: none for a model without images (the
    session may have switched to it after the tool ran)."""
    return m.images if info.images else []


def openai_detail(part: ImagePart) -> str:
    """OpenAI's `detail` knows low, high and auto; "original" asks for the most there is."""
    return {"low": "low", "high": "high", "original": "high"}.get(part.detail or "", "auto")


# An assistant round the provider refused carries this block (with the provider's
# `stop_details`): it stays in the stored history, and no request sends that exchange again.
REFUSED = "tether.refused"


def refusal_mark(details: dict[str, Any] | None) -> dict[str, Any]:
    return {"type": REFUSED, "stop_details": details}


def is_refused(m: Message) -> bool:
    return isinstance(m, AssistantMessage) and any(b.get("type") == REFUSED for b in m.opaque)


def without_refused(history: list[Message]) -> list[Message]:
    """`history` less every refused exchange: the refused round and everything back to the user
    prompt that led to it. Continuing with it in context keeps getting refusals."""
    if not any(is_refused(m) for m in history):
        return history
    kept: list[Message] = []
    exchange = 0  # where, in `kept`, the current exchange's user prompt sits
    for m in history:
        if isinstance(m, UserMessage):
            exchange = len(kept)
        if is_refused(m):
            del kept[exchange:]
            continue
        kept.append(m)
    return kept


def data_url(part: ImagePart) -> str:
    return f"data:{part.mime_type};base64,{part.data}"


def make_timeout(timeout: float | httpx.Timeout) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        return timeout
    return httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout))


def parse_arguments(arguments: str) -> dict[str, Any]:
    """A tool call's raw argument text as an object, for APIs that want JSON rather than text.

    Invalid or non-object text becomes {}: the engine already answered that call with an error,
    and the API would refuse the whole request over it.
    """
    try:
        value: Any = msgspec.json.decode(arguments) if arguments else {}
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class HTTPProvider:
    """Base of the streaming adapters: owns (or borrows) the httpx client and runs requests.

    Subclasses build the request (`_prepare`) and the per-attempt stream decoder (`_decoder`).
    """

    default_name = "http"

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        info: ModelInfo,
        timeout: float | httpx.Timeout = 600.0,
        client: httpx.AsyncClient | None = None,
        *,
        deepseek: bool = False,
        retry: RetryPolicy | None = None,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
        settings: str = "",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.settings = settings  # where the URL and key are set, named when it is unreachable
        self.api_key = api_key
        self.model = model
        # DeepSeek speaks each API with its own conventions (reasoning round trips, stream end).
        self.deepseek = deepseek
        self.name = name or ("deepseek" if deepseek else self.default_name)
        self.retry = retry or RetryPolicy()
        self._info = info
        self._timeout = make_timeout(timeout)
        self._client = client
        self._owns_client = client is None
        self._extra_headers = dict(headers or {})
        self._memo = WireMemo()  # the history's encoded items, for the next request
        self._checked = SeenPrefix()  # the messages `check_images` passed

    @property
    def info(self) -> ModelInfo:
        return self._info

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Stream one round. Errors (images refused included) surface while iterating; closing
        the generator (`contextlib.aclosing`) or cancelling the task closes the connection."""
        return stream_with_retry(
            lambda: self._sender(request),
            self._decoder,
            provider=self.name,
            policy=self.retry,
            where=Endpoint(self.base_url, self.settings),
        )

    def _sender(self, request: ChatRequest) -> Send:
        key = (self._info.images, self._info.id)
        check_images(self._info, self._checked.new(request.messages, key))
        self._checked.passed(request.messages, key)
        path, body = self._prepare(request)
        url = self.base_url + path
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            **self._headers(),
            **self._extra_headers,
        }
        client = self._get_client()
        timeout = self._timeout

        def send() -> AbstractAsyncContextManager[httpx.Response]:
            return client.stream("POST", url, content=body, headers=headers, timeout=timeout)

        return send

    async def list_models(self) -> list[RemoteModel]:
        """The chat models the provider lists (`GET {base}/models`); ProviderError when the
        listing fails."""
        from tether.engine.providers.model_list import openai_models

        headers = {**self._headers(), **self._extra_headers}
        return await openai_models(self._get_client(), self.base_url, headers, self.name)

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = http_transport.client(self.base_url, self._timeout)
        return self._client

    # --- per API ---

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _prepare(self, request: ChatRequest) -> tuple[str, bytes]:
        """The request path (under base_url) and the encoded JSON body."""
        raise NotImplementedError

    def _decoder(self) -> StreamDecoder:
        raise NotImplementedError


def encode(value: Any) -> bytes:
    return _encoder.encode(value)
