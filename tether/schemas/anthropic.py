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


class Tool(msgspec.Struct):
    name: str
    description: str
    input_schema: dict[str, Any]


class Thinking(msgspec.Struct, tag_field="type", tag="enabled"):
    budget_tokens: int


class MessagesRequest(msgspec.Struct, omit_defaults=True):
    model: str
    max_tokens: int
    messages: list[Message]
    stream: bool
    system: str | UnsetType = UNSET
    tools: list[Tool] | UnsetType = UNSET
    thinking: Thinking | UnsetType = UNSET


# --- streamed events --------------------------------------------------------------------------


class Delta(msgspec.Struct):
    type: str | None = None
    text: str | None = None  # text_delta
    thinking: str | None = None  # thinking_delta
    signature: str | None = None  # signature_delta
    partial_json: str | None = None  # input_json_delta
    stop_reason: str | None = None  # message_delta


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
