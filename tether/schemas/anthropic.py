"""Anthropic Messages API wire types (request and streamed events).

Message content blocks are built as plain dicts: they include provider blocks that must be echoed
back byte for byte (server-tool blocks, redacted thinking), which no closed Struct union can hold.
Streamed events decode into one wide Struct keyed by `type`, unknown fields ignored; the block of
`content_block_start` stays a dict for the same reason.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

# --- request ----------------------------------------------------------------------------------


class Message(msgspec.Struct):
    role: str
    content: list[dict[str, Any]]


class CacheControl(msgspec.Struct, tag_field="type", tag="ephemeral"):
    """A prompt-cache breakpoint: the request prefix up to here is cached (five minutes)."""


class Tool(msgspec.Struct, omit_defaults=True):
    name: str
    description: str
    input_schema: dict[str, Any]
    cache_control: CacheControl | UnsetType = UNSET


class WebSearchTool(msgspec.Struct, tag_field="type", tag="web_search_20250305"):
    """The API's own web search: the model calls it, the API runs it and answers with
    `server_tool_use` and `web_search_tool_result` blocks in the same response."""

    name: str = "web_search"
    max_uses: int = 5  # searches per request
    cache_control: CacheControl | UnsetType = UNSET


class SystemBlock(msgspec.Struct, tag_field="type", tag="text", omit_defaults=True):
    text: str
    cache_control: CacheControl | UnsetType = UNSET


class ThinkingEnabled(msgspec.Struct, tag_field="type", tag="enabled"):
    budget_tokens: int  # Claude 4.5 and earlier; DeepSeek ignores it


class ThinkingAdaptive(msgspec.Struct, tag_field="type", tag="adaptive", omit_defaults=True):
    display: str | UnsetType = UNSET  # "summarized": thinking text comes back readable


class ThinkingDisabled(msgspec.Struct, tag_field="type", tag="disabled"):
    pass


Thinking = ThinkingEnabled | ThinkingAdaptive | ThinkingDisabled


class OutputConfig(msgspec.Struct):
    effort: str  # low | medium | high | xhigh | max


class MessagesRequest(msgspec.Struct, omit_defaults=True):
    model: str
    max_tokens: int
    messages: list[Message] | msgspec.Raw  # Raw: encoded already (anthropic_history)
    stream: bool
    system: str | list[SystemBlock] | UnsetType = UNSET
    tools: list[Tool | WebSearchTool] | UnsetType = UNSET
    thinking: Thinking | UnsetType = UNSET
    output_config: OutputConfig | UnsetType = UNSET


# --- streamed events --------------------------------------------------------------------------


class Delta(msgspec.Struct):
    type: str | None = None
    text: str | None = None  # text_delta
    thinking: str | None = None  # thinking_delta
    signature: str | None = None  # signature_delta
    partial_json: str | None = None  # input_json_delta
    stop_reason: str | None = None  # message_delta
    stop_details: dict[str, Any] | None = None  # message_delta of a refusal


class Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class MessageStart(msgspec.Struct):
    usage: Usage | None = None


class ErrorBody(msgspec.Struct):
    type: str | None = None
    message: str | None = None


class StreamEvent(msgspec.Struct):
    type: str = ""
    index: int | None = None
    delta: Delta | None = None
    content_block: dict[str, Any] | None = None
    message: MessageStart | None = None
    usage: Usage | None = None  # message_delta
    error: ErrorBody | None = None
