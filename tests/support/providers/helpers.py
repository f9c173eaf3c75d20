"""Shared helpers for the provider tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from tether.engine.history import Message, TextPart, UserMessage
from tether.engine.providers.anthropic_adapter import AnthropicMessages
from tether.engine.providers.base import ChatRequest, ModelInfo, StreamEvent, ToolSpec
from tether.engine.providers.common import HTTPProvider
from tether.engine.providers.openai_chat_adapter import OpenAIChat
from tether.engine.providers.openai_responses_adapter import OpenAIResponses
from tether.engine.providers.retry import RetryPolicy

from . import wire
from .mock_llm_server import MockLLMServer

T = TypeVar("T")

FAST_RETRY = RetryPolicy(max_attempts=4, delays=(0.01, 0.02, 0.04), max_delay=0.2, jitter=0.0)

READ_FILE = ToolSpec(
    "read_file",
    "Read a text file",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def model_info(images: bool = False, reasoning: tuple[str, ...] = (), **kw: Any) -> ModelInfo:
    return ModelInfo(id="test:model", name="model", images=images, reasoning_levels=reasoning, **kw)


def request(
    messages: list[Message] | None = None,
    *,
    reasoning: str | None = None,
    tools: list[ToolSpec] | None = None,
    max_output_tokens: int = 4096,
) -> ChatRequest:
    return ChatRequest(
        system="You are terse.",
        messages=messages or [UserMessage([TextPart("hi")])],
        tools=[READ_FILE] if tools is None else tools,
        max_output_tokens=max_output_tokens,
        reasoning=reasoning,
    )


async def collect(llm: HTTPProvider, req: ChatRequest) -> list[StreamEvent]:
    return [event async for event in llm.stream(req)]


def of_type(events: list[StreamEvent], kind: type[T]) -> list[T]:
    return [e for e in events if isinstance(e, kind)]


@dataclass
class Kit:
    """One API as the shared tests see it: how to build its adapter and its streams."""

    name: str
    path: str
    make: Callable[..., HTTPProvider]
    text: Callable[[list[str]], wire.Chunks]  # a complete answer
    prefix: Callable[[list[str]], wire.Chunks]  # visible output, then no terminal event

    def adapter(self, server: MockLLMServer, client: httpx.AsyncClient, **kw: Any) -> HTTPProvider:
        kw.setdefault("info", model_info())
        kw.setdefault("retry", FAST_RETRY)
        return self.make(server.url + self.base, "sk-test", "test-model", client=client, **kw)

    @property
    def base(self) -> str:
        return "/v1" if self.path != "/v1/messages" else ""


KITS = [
    Kit("openai_chat", "/v1/chat/completions", OpenAIChat, wire.chat_text, wire.chat_prefix),
    Kit("responses", "/v1/responses", OpenAIResponses, wire.responses_text, wire.responses_prefix),
    Kit("anthropic", "/v1/messages", AnthropicMessages, wire.anthropic_text, wire.anthropic_prefix),
]
