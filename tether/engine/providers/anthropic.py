"""Anthropic Messages (`POST {base}/v1/messages`, streamed); also DeepSeek's anthropic convention.

An assistant round goes back as: its thinking blocks (signed or redacted, only to the provider
that issued them), its opaque provider blocks (server-tool use and results, untouched), its text,
then its `tool_use` blocks. One round's tool results travel together in the next user message,
ahead of any text the user added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from tether.engine.history import (
    AssistantMessage,
    FinishReason,
    ImagePart,
    Message,
    Reasoning,
    TextPart,
    ToolResultMessage,
    UserMessage,
)
from tether.engine.providers.base import (
    ChatRequest,
    Finish,
    OpaqueBlock,
    ProviderError,
    ReasoningBlock,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    Usage,
)
from tether.engine.providers.common import HTTPProvider, encode, parse_arguments, tool_images
from tether.engine.providers.retry import looks_transient
from tether.engine.providers.sse import SSEEvent, decode_data
from tether.schemas import anthropic as wire

API_VERSION = "2023-06-01"
# Thinking budget per reasoning level (tokens). The API's floor is 1024.
BUDGETS = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
    "max": 32768,
}

_event_decoder = msgspec.json.Decoder(wire.StreamEvent)
_json_decoder = msgspec.json.Decoder()

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}
_RETRYABLE_ERRORS = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)


class AnthropicMessages(HTTPProvider):
    """One model behind the Anthropic Messages API."""

    default_name = "anthropic"

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def _prepare(self, request: ChatRequest) -> tuple[str, bytes]:
        body = wire.MessagesRequest(
            model=self.model,
            max_tokens=request.max_output_tokens,
            messages=self._messages(request.messages),
            stream=True,
            system=request.system or UNSET,
            tools=[wire.Tool(t.name, t.description, t.parameters) for t in request.tools] or UNSET,
        )
        level = request.reasoning
        if level is not None and level != "none":
            budget = BUDGETS.get(level, BUDGETS["medium"])
            body.thinking = wire.Thinking(budget)
            if body.max_tokens <= budget:  # the budget counts against max_tokens
                body.max_tokens = budget + request.max_output_tokens
        return "/v1/messages", encode(body)

    def _messages(self, history: list[Message]) -> list[wire.Message]:
        out: list[wire.Message] = []
        for m in history:
            role, blocks = self._convert(m)
            if not blocks:
                continue  # the API refuses empty content
            if out and out[-1].role == role:
                out[-1].content.extend(blocks)  # tool results + user text share one user turn
            else:
                out.append(wire.Message(role, blocks))
        return out

    def _convert(self, m: Message) -> tuple[str, list[dict[str, Any]]]:
        if isinstance(m, UserMessage):
            return "user", _user_blocks(m)
        if isinstance(m, ToolResultMessage):
            return "user", [_tool_result(m, tool_images(self.info, m))]
        return "assistant", self._assistant_blocks(m)

    def _assistant_blocks(self, m: AssistantMessage) -> list[dict[str, Any]]:
        blocks = [b for r in m.reasoning if (b := self._thinking_block(r)) is not None]
        blocks.extend(m.opaque)
        if m.text:
            blocks.append({"type": "text", "text": m.text})
        for c in m.tool_calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": c.id,
                    "name": c.name,
                    "input": parse_arguments(c.arguments),
                }
            )
        return blocks

    def _thinking_block(self, r: Reasoning) -> dict[str, Any] | None:
        # Unsigned or foreign thinking would be refused: only our own signed blocks go back.
        if r.origin != self.name:
            return None
        if r.redacted:
            return {"type": "redacted_thinking", "data": r.redacted}
        if r.signature:
            return {"type": "thinking", "thinking": r.text, "signature": r.signature}
        return None

    def _decoder(self) -> _MessagesDecoder:
        return _MessagesDecoder(self.name)


def _user_blocks(m: UserMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for p in m.parts:
        if isinstance(p, ImagePart):
            source = {"type": "base64", "media_type": p.mime_type, "data": p.data}
            blocks.append({"type": "image", "source": source})
        elif p.text:  # an empty text block is a 400
            blocks.append({"type": "text", "text": p.text})
    return blocks


def _tool_result(m: ToolResultMessage, images: list[ImagePart]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.call_id}
    if images:
        block["content"] = _user_blocks(UserMessage([TextPart(m.content), *images]))
    elif m.content:
        block["content"] = m.content
    if m.is_error:
        block["is_error"] = True
    return block


class _Block:
    """A content block being streamed: its start payload plus the fragments that followed."""

    __slots__ = ("parts", "signature", "start", "type")

    def __init__(self, start: dict[str, Any]) -> None:
        self.start = start
        self.type: str = start.get("type", "")
        self.parts: list[str] = []
        self.signature: str = start.get("signature") or ""


class _MessagesDecoder:
    """One attempt's stream state: text and thinking pass straight through; a block's other
    payload (signature, tool input) is assembled and emitted when the block stops."""

    __slots__ = ("_blocks", "_calls", "_provider", "_stop_reason", "_usage", "done")

    done: bool

    def __init__(self, provider: str) -> None:
        self.done = False
        self._provider = provider
        self._blocks: dict[int, _Block] = {}
        self._usage = wire.Usage()
        self._stop_reason: str | None = None
        self._calls = 0

    def feed(self, event: SSEEvent) -> Sequence[StreamEvent] | None:
        ev = decode_data(_event_decoder, event, self._provider)
        kind = ev.type
        if kind == "content_block_delta" and ev.delta is not None:
            delta = ev.delta
            if delta.type == "text_delta":
                return (TextDelta(delta.text),) if delta.text else None
            return self._delta(ev.index or 0, delta)
        if kind == "content_block_start" and ev.content_block is not None:
            return self._start(ev.index or 0, ev.content_block)
        if kind == "content_block_stop":
            block = self._blocks.pop(ev.index or 0, None)
            return self._stop(block) if block is not None else None
        return self._message_event(kind, ev)

    def _message_event(self, kind: str, ev: wire.StreamEvent) -> None:
        if kind == "message_start" and ev.message is not None and ev.message.usage is not None:
            self._usage = ev.message.usage
        elif kind == "message_delta":
            if ev.delta is not None and ev.delta.stop_reason:
                self._stop_reason = ev.delta.stop_reason
            if ev.usage is not None:
                self._merge_usage(ev.usage)
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            raise self._error(ev.error)

    def _merge_usage(self, later: wire.Usage) -> None:
        # message_delta carries the output count; newer servers repeat the input counts too.
        u = self._usage
        self._usage = wire.Usage(
            input_tokens=later.input_tokens if later.input_tokens is not None else u.input_tokens,
            output_tokens=later.output_tokens
            if later.output_tokens is not None
            else u.output_tokens,
            cache_read_input_tokens=later.cache_read_input_tokens or u.cache_read_input_tokens,
            cache_creation_input_tokens=(
                later.cache_creation_input_tokens or u.cache_creation_input_tokens
            ),
        )

    def _start(self, index: int, start: dict[str, Any]) -> Sequence[StreamEvent] | None:
        block = self._blocks[index] = _Block(start)
        # Some servers put the first text in the start event instead of a delta.
        if block.type == "text" and start.get("text"):
            return (TextDelta(start["text"]),)
        if block.type == "thinking" and start.get("thinking"):
            block.parts.append(start["thinking"])
            return (ThoughtDelta(start["thinking"]),)
        return None

    def _delta(self, index: int, delta: wire.Delta) -> Sequence[StreamEvent] | None:
        block = self._blocks.get(index)
        if block is None:
            return None
        if delta.type == "thinking_delta" and delta.thinking:
            block.parts.append(delta.thinking)
            return (ThoughtDelta(delta.thinking),)
        if delta.type == "signature_delta" and delta.signature:
            block.signature += delta.signature
        elif delta.type == "input_json_delta" and delta.partial_json:
            block.parts.append(delta.partial_json)
        return None  # citations and anything newer: nothing to show

    def _stop(self, block: _Block) -> Sequence[StreamEvent] | None:
        kind, start = block.type, block.start
        if kind == "text":
            return None
        if kind == "thinking":
            text = "".join(block.parts)
            reasoning = Reasoning(text, block.signature or None, origin=self._provider)
            return (ReasoningBlock(reasoning),)
        if kind == "redacted_thinking":
            reasoning = Reasoning("", redacted=start.get("data", ""), origin=self._provider)
            return (ReasoningBlock(reasoning),)
        if kind == "tool_use":
            self._calls += 1
            call_id = start.get("id") or f"call_{self._calls}"
            return (ToolCallDelta(call_id, start.get("name", ""), self._arguments(block)),)
        # Server-tool blocks and any type we don't know go back exactly as they came.
        if block.parts:
            start = {**start, "input": self._input(block)}
        return (OpaqueBlock(start),)

    def _arguments(self, block: _Block) -> str:
        if block.parts:
            return "".join(block.parts)
        start_input = block.start.get("input")
        return encode(start_input).decode() if start_input else "{}"

    def _input(self, block: _Block) -> Any:
        try:
            return _json_decoder.decode("".join(block.parts))
        except msgspec.DecodeError:
            raise ProviderError(
                f"{self._provider}: malformed input for a {block.type} block"
            ) from None

    def end(self) -> Sequence[StreamEvent]:
        if not self.done and self._stop_reason is None:
            raise ProviderError(
                f"{self._provider}: stream ended before the response completed", retryable=True
            )
        return (_usage(self._usage), Finish(self._finish_reason()))

    def _finish_reason(self) -> FinishReason:
        reason = _FINISH.get(self._stop_reason or "end_turn", "stop")
        return "tool_calls" if reason == "stop" and self._calls else reason

    def _error(self, error: wire.ErrorBody | None) -> ProviderError:
        etype = error.type if error else None
        message = (error.message if error else None) or "unknown error"
        retryable = etype in _RETRYABLE_ERRORS or looks_transient(etype)
        return ProviderError(
            f"{self._provider} stream error: {etype or 'error'}: {message}", retryable=retryable
        )


def _usage(u: wire.Usage) -> Usage:
    cached = u.cache_read_input_tokens or 0
    return Usage(
        input_tokens=(u.input_tokens or 0) + cached + (u.cache_creation_input_tokens or 0),
        output_tokens=u.output_tokens or 0,
        cached_tokens=cached,
    )
