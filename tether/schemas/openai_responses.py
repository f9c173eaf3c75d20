"""OpenAI Responses API wire types (request input items and streamed events).

Streamed events decode into one wide Struct keyed by `type`: every field optional, unknown fields
ignored, so a new event type is skipped instead of failing the stream.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

# --- request ----------------------------------------------------------------------------------


class InputText(msgspec.Struct, tag_field="type", tag="input_text"):
    text: str


class InputImage(msgspec.Struct, tag_field="type", tag="input_image"):
    image_url: str  # a data: URL
    detail: str = "auto"


class MessageItem(msgspec.Struct, tag_field="type", tag="message"):
    role: str
    content: str | list[InputText | InputImage]


class FunctionCallItem(msgspec.Struct, tag_field="type", tag="function_call"):
    call_id: str
    name: str
    arguments: str


class FunctionCallOutputItem(msgspec.Struct, tag_field="type", tag="function_call_output"):
    call_id: str
    output: str | list[InputText | InputImage]  # a list when the tool returned images


class SummaryText(msgspec.Struct, tag_field="type", tag="summary_text"):
    text: str


class ReasoningText(msgspec.Struct, tag_field="type", tag="reasoning_text"):
    text: str


class ReasoningItem(msgspec.Struct, tag_field="type", tag="reasoning", omit_defaults=True):
    summary: list[SummaryText]  # required by the API even when empty
    id: str | UnsetType = UNSET
    content: list[ReasoningText] | UnsetType = UNSET
    encrypted_content: str | UnsetType = UNSET


# A dict: an item the API made and takes back as it came (a hosted web search's call).
InputItem = MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem | dict[str, Any]


class FunctionTool(msgspec.Struct, tag_field="type", tag="function"):
    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool  # no default: the API defaults to strict, which rejects ordinary schemas


class WebSearchTool(msgspec.Struct, tag_field="type", tag="web_search"):
    """The API's own web search: it runs it and streams a `web_search_call` item."""


class ReasoningParam(msgspec.Struct, omit_defaults=True):
    effort: str | UnsetType = UNSET
    summary: str | UnsetType = UNSET


class ResponsesRequest(msgspec.Struct, omit_defaults=True):
    model: str
    input: list[InputItem] | msgspec.Raw  # Raw: the items encoded already (history.WireMemo)
    stream: bool
    max_output_tokens: int
    instructions: str | UnsetType = UNSET
    tools: list[FunctionTool | WebSearchTool] | UnsetType = UNSET
    reasoning: ReasoningParam | UnsetType = UNSET
    store: bool | UnsetType = UNSET
    include: list[str] | UnsetType = UNSET


# --- streamed events --------------------------------------------------------------------------


class Part(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    refusal: str | None = None


class OutputItem(msgspec.Struct):
    type: str | None = None
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    summary: list[Part] | None = None
    content: list[Part] | None = None
    encrypted_content: str | None = None
    status: str | None = None  # web_search_call
    action: dict[str, Any] | None = None  # web_search_call: the search it ran


class InputTokensDetails(msgspec.Struct):
    cached_tokens: int | None = None


class OutputTokensDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_tokens_details: InputTokensDetails | None = None
    output_tokens_details: OutputTokensDetails | None = None


class IncompleteDetails(msgspec.Struct):
    reason: str | None = None


class ErrorBody(msgspec.Struct):
    code: str | None = None
    message: str | None = None


class Response(msgspec.Struct):
    status: str | None = None
    usage: Usage | None = None
    incomplete_details: IncompleteDetails | None = None
    error: ErrorBody | None = None


class StreamEvent(msgspec.Struct):
    type: str = ""
    delta: Any = None  # a string for every delta event we read; kept wide for unknown events
    summary_index: int | None = None
    item: OutputItem | None = None
    response: Response | None = None
    code: str | None = None  # `error` events
    message: str | None = None
    error: ErrorBody | None = None  # the nested form some compatible servers send
