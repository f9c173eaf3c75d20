"""OpenAI-compatible chat completions wire types (requests and streamed chunks).

Requests are encoded from these Structs; optional fields are UNSET and left off the wire.
Chunks are decoded with every field optional and unknown fields ignored, because compatible
servers (DeepSeek, vLLM, llama.cpp, OpenRouter) each add or omit a few.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

# --- request ----------------------------------------------------------------------------------


class TextContent(msgspec.Struct, tag_field="type", tag="text"):
    text: str


class ImageURL(msgspec.Struct, omit_defaults=True):
    url: str  # a data: URL; remote URLs are never sent
    detail: str = "auto"


class ImageContent(msgspec.Struct, tag_field="type", tag="image_url"):
    image_url: ImageURL


UserContent = TextContent | ImageContent


class FunctionCall(msgspec.Struct):
    name: str
    arguments: str


class ToolCall(msgspec.Struct, tag_field="type", tag="function"):
    id: str
    function: FunctionCall


class SystemMessage(msgspec.Struct, tag_field="role", tag="system"):
    content: str


class UserMessage(msgspec.Struct, tag_field="role", tag="user"):
    content: str | list[UserContent]


class AssistantMessage(msgspec.Struct, tag_field="role", tag="assistant", omit_defaults=True):
    content: str | None  # no default: null is sent when the round only called tools
    tool_calls: list[ToolCall] | UnsetType = UNSET  # an empty list is a 400 on OpenAI
    reasoning_content: str | UnsetType = UNSET  # DeepSeek thinking mode round trip


class ToolMessage(msgspec.Struct, tag_field="role", tag="tool"):
    tool_call_id: str
    content: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class FunctionDef(msgspec.Struct):
    name: str
    description: str
    parameters: dict[str, Any]


class FunctionTool(msgspec.Struct, tag_field="type", tag="function"):
    function: FunctionDef


class StreamOptions(msgspec.Struct):
    include_usage: bool


class Thinking(msgspec.Struct):
    type: str  # DeepSeek: "enabled" | "disabled"


class ChatRequest(msgspec.Struct, omit_defaults=True):
    model: str
    messages: list[Message] | msgspec.Raw  # Raw: the messages encoded already (history.WireMemo)
    stream: bool
    stream_options: StreamOptions
    max_tokens: int | UnsetType = UNSET  # what compatible servers read
    max_completion_tokens: int | UnsetType = UNSET  # OpenAI's own API, reasoning models
    tools: list[FunctionTool] | UnsetType = UNSET
    reasoning_effort: str | UnsetType = UNSET
    thinking: Thinking | UnsetType = UNSET


# --- streamed chunks --------------------------------------------------------------------------


class ChunkFunction(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class ChunkToolCall(msgspec.Struct):
    index: int | None = None  # some servers omit it for single calls
    id: str | None = None
    function: ChunkFunction | None = None


class Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None  # DeepSeek, Qwen
    reasoning: str | None = None  # vLLM, OpenRouter
    refusal: str | None = None
    tool_calls: list[ChunkToolCall] | None = None


class Choice(msgspec.Struct):
    delta: Delta | None = None
    finish_reason: str | None = None


class PromptTokensDetails(msgspec.Struct):
    cached_tokens: int | None = None


class CompletionTokensDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: PromptTokensDetails | None = None
    completion_tokens_details: CompletionTokensDetails | None = None
    prompt_cache_hit_tokens: int | None = None  # DeepSeek's name for cached prompt tokens


class ErrorBody(msgspec.Struct):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class ChatChunk(msgspec.Struct):
    choices: list[Choice] | None = None
    usage: Usage | None = None
    error: ErrorBody | None = None  # some servers report a failure inside the stream
