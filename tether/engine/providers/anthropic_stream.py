"""Decoding an Anthropic Messages event stream (also DeepSeek's anthropic convention).

Text and thinking pass straight through; a block's other payload (signature, tool input) is
assembled and emitted when the block stops. A refusal ends with the provider's `stop_details`
shown to the user and a mark on the round, so the next request leaves the exchange out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from tether.engine.history import FinishReason, Reasoning
from tether.engine.providers.base import (
    Finish,
    OpaqueBlock,
    ReasoningBlock,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    Usage,
)
from tether.engine.providers.common import encode, refusal_mark
from tether.engine.providers.retry import looks_transient
from tether.engine.providers.sse import SSEEvent, decode_data
from tether.errors import ProviderError
from tether.schemas import anthropic as wire

_event_decoder = msgspec.json.Decoder(wire.StreamEvent)
_json_decoder = msgspec.json.Decoder()

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "pause_turn": "pause",  # a long turn paused: the next request continues it
}
_RETRYABLE_ERRORS = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)


class _Block:
    """A content block being streamed: its start payload plus the fragments that followed."""

    __slots__ = ("parts", "signature", "start", "type")

    def __init__(self, start: dict[str, Any]) -> None:
        self.start = start
        self.type: str = start.get("type", "")
        self.parts: list[str] = []
        self.signature: str = start.get("signature") or ""


class MessagesDecoder:
    """One attempt's stream state: text and thinking pass straight through; a block's other
    payload (signature, tool input) is assembled and emitted when the block stops."""

    __slots__ = (
        "_blocks",
        "_calls",
        "_model",
        "_provider",
        "_stop_details",
        "_stop_reason",
        "_usage",
        "done",
    )

    done: bool

    def __init__(self, provider: str, model: str) -> None:
        self.done = False
        self._provider = provider
        self._model = model
        self._blocks: dict[int, _Block] = {}
        self._usage = wire.Usage()
        self._stop_reason: str | None = None
        self._stop_details: dict[str, Any] | None = None
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
                self._stop_details = ev.delta.stop_details
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
            reasoning = Reasoning(
                text, block.signature or None, origin=self._provider, model=self._model
            )
            return (ReasoningBlock(reasoning),)
        if kind == "redacted_thinking":
            data = start.get("data", "")
            reasoning = Reasoning("", redacted=data, origin=self._provider, model=self._model)
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
        reason = self._finish_reason()
        if reason == "refusal":
            return (*_refusal(self._stop_details), _usage(self._usage), Finish(reason))
        return (_usage(self._usage), Finish(reason))

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


def _refusal(details: dict[str, Any] | None) -> list[StreamEvent]:
    """What ends a refused round: the provider's explanation for the user (when it gave one) and
    the mark that keeps the exchange out of later requests."""
    out: list[StreamEvent] = []
    text = refusal_text(details)
    if text:
        out.append(TextDelta(text))
    out.append(OpaqueBlock(refusal_mark(details)))
    return out


def refusal_text(details: dict[str, Any] | None) -> str:
    if not details:
        return ""
    category, explanation = details.get("category"), details.get("explanation")
    if not (category or explanation):
        return ""
    what = f" ({str(category).replace('_', ' ')})" if category else ""
    why = f": {explanation}" if explanation else ""
    return (
        f"\n\nThe model declined to continue{what}{why}. This exchange is left out of what the "
        "model sees next; rephrase the request or move on to something else."
    )


def _usage(u: wire.Usage) -> Usage:
    cached = u.cache_read_input_tokens or 0
    return Usage(
        input_tokens=(u.input_tokens or 0) + cached + (u.cache_creation_input_tokens or 0),
        output_tokens=u.output_tokens or 0,
        cached_tokens=cached,
    )
