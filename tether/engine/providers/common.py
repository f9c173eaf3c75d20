"""What the HTTP adapters share: the client and its timeouts, the image gate, the stream entry."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import msgspec

from tether.engine.history import ImagePart, Message, ToolResultMessage, UserMessage
from tether.engine.providers.base import ChatRequest, ModelInfo, ProviderError, StreamEvent
from tether.engine.providers.retry import RetryPolicy, Send, StreamDecoder, stream_with_retry

# Connecting should be quick; reading waits for a slow model between deltas.
CONNECT_TIMEOUT = 10.0

_encoder = msgspec.json.Encoder()


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
    ) -> None:
        self.base_url = base_url.rstrip("/")
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
            lambda: self._sender(request), self._decoder, provider=self.name, policy=self.retry
        )

    def _sender(self, request: ChatRequest) -> Send:
        check_images(self._info, request.messages)
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

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout)
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
