"""The `llm` seam: what the turn loop asks of a model, and what a model streams back."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Protocol

import msgspec

from tether.engine.history import FinishReason, Message, Reasoning


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool as the model sees it: name, description and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class ModelInfo(msgspec.Struct, frozen=True):
    id: str  # "provider:model" as the user picks it
    name: str
    context_window: int = 128_000
    max_output_tokens: int = 8_192
    images: bool = False
    reasoning_levels: tuple[str, ...] = ()
    default_reasoning: str | None = None
    # Prices per million tokens, when configured: usage_update then carries a cost.
    input_price: float | None = None
    output_price: float | None = None
    cached_input_price: float | None = None
    currency: str = "USD"
    # Wire details (see schemas.config.ModelConfig); None: the adapter decides from the id.
    reasons: bool | None = None
    max_tokens_param: str | None = None
    thinking: str | None = None
    kind: str | None = None  # the wire API when not the provider's (a model-kind override)
    hosted_tools: tuple[str, ...] = ()  # tools the provider runs itself (web_search)


class ChatRequest(msgspec.Struct, frozen=True):
    system: str
    messages: list[Message]
    tools: list[ToolSpec]
    max_output_tokens: int = 8_192
    reasoning: str | None = None  # effort level, when the model has one


# --- what a provider streams back, in order -------------------------------------------------


class TextDelta(msgspec.Struct, frozen=True):
    text: str


class ThoughtDelta(msgspec.Struct, frozen=True):
    text: str


class ToolCallDelta(msgspec.Struct, frozen=True):
    """A complete tool call, emitted once its arguments are fully assembled."""

    id: str
    name: str
    arguments: str


class ReasoningBlock(msgspec.Struct, frozen=True):
    """A finished reasoning block to keep in history (signature, redacted payload)."""

    reasoning: Reasoning


class OpaqueBlock(msgspec.Struct, frozen=True):
    """A provider block the engine must send back untouched with the round."""

    block: dict[str, Any]


class Usage(msgspec.Struct, frozen=True):
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False


class Finish(msgspec.Struct, frozen=True):
    reason: FinishReason


class RetryNotice(msgspec.Struct, frozen=True):
    """The provider is waiting before a retry; the user should see why."""

    attempt: int  # the attempt that follows the wait
    delay: float  # seconds left before it
    reason: str
    attempts: int = 0  # how many attempts the request may make in all (0: not said)


StreamEvent = (
    TextDelta
    | ThoughtDelta
    | ToolCallDelta
    | ReasoningBlock
    | OpaqueBlock
    | Usage
    | Finish
    | RetryNotice
)


class LLM(Protocol):
    """One configured model. `stream` yields StreamEvents and ends with exactly one Finish."""

    @property
    def info(self) -> ModelInfo: ...

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]: ...
