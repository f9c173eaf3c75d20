"""OpenAI-compatible chat completions (`POST {base}/chat/completions`, streamed).

Also serves DeepSeek's OpenAI convention (`deepseek=True`): thinking mode refuses any request
whose earlier assistant rounds lack `reasoning_content`, so every assistant message carries it
("" when the round kept none) and the kept reasoning text goes back verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from msgspec import UNSET

from tether.engine.history import (
    HOLE,
    AssistantMessage,
    FinishReason,
    ImagePart,
    Message,
    Reasoning,
    TextPart,
    ToolResultMessage,
    UserMessage,
    array,
    prompt_text,
    spliced,
)
from tether.engine.providers.base import (
    ChatRequest,
    Finish,
    ReasoningBlock,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from tether.engine.providers.common import (
    HTTPProvider,
    data_url,
    encode,
    is_openai_api,
    is_refused,
    model_reasons,
    openai_detail,
    tool_images,
    without_refused,
)
from tether.engine.providers.retry import looks_transient
from tether.engine.providers.sse import SSEEvent, decode_data
from tether.errors import ProviderError
from tether.schemas import openai_chat as wire

_chunk_decoder = msgspec.json.Decoder(wire.ChatChunk)

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "refusal",
}


class OpenAIChat(HTTPProvider):
    """One model behind an OpenAI-compatible chat completions endpoint."""

    default_name = "openai"

    def _prepare(self, request: ChatRequest) -> tuple[str, bytes]:
        key = (self.model, self.name, self.deepseek, self.info.images)
        known = self._memo.join(
            request.messages, key, self._encoded, is_refused, lambda m: not self._images(m)
        )
        body = wire.ChatRequest(
            model=self.model,
            messages=HOLE if known is not None else self._messages(request),
            stream=True,
            stream_options=wire.StreamOptions(include_usage=True),
            tools=[_tool(t) for t in request.tools] if request.tools else UNSET,
        )
        if self.token_limit_param() == "max_completion_tokens":
            body.max_completion_tokens = request.max_output_tokens
        else:
            body.max_tokens = request.max_output_tokens
        self._reasoning_options(body, request.reasoning)
        if known is None:  # a tool's pictures follow its round: built whole (as it was)
            return "/chat/completions", encode(body)
        system = encode(wire.SystemMessage(request.system)) if request.system else b""
        return "/chat/completions", spliced(encode(body), array(known, system))

    def _encoded(self, m: Message) -> bytes:
        converted = self._message(m)
        return b"" if converted is None else encode(converted)

    def _images(self, m: Message) -> bool:
        return isinstance(m, ToolResultMessage) and bool(tool_images(self.info, m))

    def _messages(self, request: ChatRequest) -> list[wire.Message]:
        messages: list[wire.Message] = []
        if request.system:
            messages.append(wire.SystemMessage(request.system))
        images: list[wire.UserContent] = []
        for m in without_refused(request.messages):
            if images and not isinstance(m, ToolResultMessage):
                messages.append(wire.UserMessage(images))
                images = []
            converted = self._message(m)
            if converted is not None:
                messages.append(converted)
            if isinstance(m, ToolResultMessage):
                images += _tool_images(m, tool_images(self.info, m))
        if images:
            messages.append(wire.UserMessage(images))
        return messages

    def token_limit_param(self) -> str:
        """`max_completion_tokens` for OpenAI's own API and for reasoning models, which refuse
        the deprecated `max_tokens`; `max_tokens` for other servers (and DeepSeek), which may
        not know the newer name. The model's config decides when it says."""
        if self.info.max_tokens_param:
            return self.info.max_tokens_param
        if self.deepseek:
            return "max_tokens"
        if is_openai_api(self.base_url) or model_reasons(self.info, self.model):
            return "max_completion_tokens"
        return "max_tokens"

    def _reasoning_options(self, body: wire.ChatRequest, level: str | None) -> None:
        if level is None:
            return
        if self.deepseek:
            # DeepSeek switches thinking with its own flag; "none" turns it off.
            body.thinking = wire.Thinking("disabled" if level == "none" else "enabled")
            if level != "none":
                body.reasoning_effort = level
        else:
            body.reasoning_effort = level

    def _message(self, m: Message) -> wire.Message | None:
        if isinstance(m, UserMessage):
            if m.host:  # tether's own instruction (a reminder), where every server takes one
                return wire.SystemMessage(prompt_text(m.parts))
            return wire.UserMessage(_user_content(m))
        if isinstance(m, ToolResultMessage):
            return wire.ToolMessage(m.call_id, m.content)
        return self._assistant(m)

    def _assistant(self, m: AssistantMessage) -> wire.AssistantMessage | None:
        reasoning = "".join(r.text for r in m.reasoning)
        if not (m.text or m.tool_calls or (self.deepseek and reasoning)):
            return None  # a round that kept nothing: some servers refuse an empty message
        calls = [
            wire.ToolCall(c.id, wire.FunctionCall(c.name, c.arguments or "{}"))
            for c in m.tool_calls
        ]
        return wire.AssistantMessage(
            content=m.text or (None if calls else ""),
            tool_calls=calls or UNSET,
            reasoning_content=reasoning if self.deepseek else UNSET,
        )

    def _decoder(self) -> _ChatDecoder:
        return _ChatDecoder(self.name)


def _tool(t: ToolSpec) -> wire.FunctionTool:
    return wire.FunctionTool(wire.FunctionDef(t.name, t.description, t.parameters))


def _tool_images(m: ToolResultMessage, images: list[ImagePart]) -> list[wire.UserContent]:
    """A tool message carries text only: its images follow the round's tool messages as a user
    message (one placed between them would break the call/result sequence)."""
    if not images:
        return []
    label = wire.TextContent(f"The image returned by {m.name} (call {m.call_id}):")
    return [
        label,
        *(wire.ImageContent(wire.ImageURL(data_url(p), openai_detail(p))) for p in images),
    ]


def _user_content(m: UserMessage) -> str | list[wire.UserContent]:
    parts = m.parts
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text  # the plain form every compatible server accepts
    content: list[wire.UserContent] = []
    for p in parts:
        if isinstance(p, ImagePart):
            content.append(wire.ImageContent(wire.ImageURL(data_url(p))))
        else:
            content.append(wire.TextContent(p.text))
    return content


class _Call:
    __slots__ = ("args", "id", "name")

    def __init__(self, call_id: str | None) -> None:
        self.id = call_id or ""
        self.name = ""
        self.args: list[str] = []


class _ChatDecoder:
    """One attempt's stream state: deltas pass straight through; calls, usage and the finish
    reason are collected and emitted at the end."""

    __slots__ = (
        "_by_index",
        "_calls",
        "_finish",
        "_provider",
        "_reasoning",
        "_refused",
        "_usage",
        "done",
    )

    done: bool

    def __init__(self, provider: str) -> None:
        self.done = False
        self._provider = provider
        self._finish: str | None = None
        self._usage: wire.Usage | None = None
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._reasoning: list[str] = []
        self._refused = False

    def feed(self, event: SSEEvent) -> Sequence[StreamEvent] | None:
        if event.data == b"[DONE]":
            self.done = True
            return None
        chunk = decode_data(_chunk_decoder, event, self._provider)
        if chunk.usage is not None:
            self._usage = chunk.usage
        if chunk.error is not None:
            raise self._stream_error(chunk.error)
        if not chunk.choices:
            return None  # the usage-only chunk after the last choice
        choice = chunk.choices[0]
        if choice.finish_reason:
            self._finish = choice.finish_reason
        delta = choice.delta
        if delta is None:
            return None
        if (
            delta.reasoning_content is None
            and delta.reasoning is None
            and delta.tool_calls is None
            and delta.refusal is None
        ):
            # The hot path: a plain text delta.
            return (TextDelta(delta.content),) if delta.content else None
        return self._mixed(delta)

    def _mixed(self, delta: wire.Delta) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        thought = delta.reasoning_content or delta.reasoning
        if thought:
            self._reasoning.append(thought)
            out.append(ThoughtDelta(thought))
        if delta.content:
            out.append(TextDelta(delta.content))
        if delta.refusal:
            self._refused = True
            out.append(TextDelta(delta.refusal))
        if delta.tool_calls:
            for fragment in delta.tool_calls:
                self._merge(fragment)
        return out

    def _merge(self, fragment: wire.ChunkToolCall) -> None:
        call = self._slot(fragment)
        fn = fragment.function
        if fn is not None:
            if fn.name and not call.name:
                call.name = fn.name
            if fn.arguments:
                call.args.append(fn.arguments)

    def _slot(self, fragment: wire.ChunkToolCall) -> _Call:
        """The call a fragment continues. Fragments merge by index; a new id under a used index
        starts a new call (servers that number every call 0), and without an index a fragment
        continues the last call unless it brings a new id."""
        fid, index = fragment.id, fragment.index
        if index is None:
            last = self._calls[-1] if self._calls else None
            if last is not None and (not fid or fid == last.id):
                return last
            return self._new_call(fid)
        call = self._by_index.get(index)
        if call is None or (fid and call.id and fid != call.id):
            call = self._by_index[index] = self._new_call(fid)
        elif fid and not call.id:
            call.id = fid
        return call

    def _new_call(self, call_id: str | None) -> _Call:
        call = _Call(call_id)
        self._calls.append(call)
        return call

    def end(self) -> Sequence[StreamEvent]:
        if not self.done and self._finish is None:
            raise ProviderError(
                f"{self._provider}: stream ended before the response completed", retryable=True
            )
        if self._finish == "insufficient_system_resource":  # DeepSeek gave up mid-answer
            raise ProviderError(
                f"{self._provider}: the server ran out of resources mid-answer", retryable=True
            )
        out: list[StreamEvent] = []
        if self._reasoning:
            out.append(ReasoningBlock(Reasoning("".join(self._reasoning))))
        for n, call in enumerate(self._calls):
            out.append(ToolCallDelta(call.id or f"call_{n}", call.name, "".join(call.args)))
        if self._usage is not None:
            out.append(_usage(self._usage))
        out.append(Finish(self._finish_reason()))
        return out

    def _finish_reason(self) -> FinishReason:
        reason = _FINISH.get(self._finish or "stop", "stop")
        if reason == "stop" and self._calls:
            return "tool_calls"  # some servers say "stop" after calling tools
        if reason == "stop" and self._refused:
            return "refusal"
        return reason

    def _stream_error(self, error: wire.ErrorBody) -> ProviderError:
        message = error.message or "unknown error"
        return ProviderError(
            f"{self._provider}: stream error: {message}",
            retryable=looks_transient(error.type, error.code),
        )


def _usage(u: wire.Usage) -> Usage:
    cached = u.prompt_tokens_details.cached_tokens if u.prompt_tokens_details else None
    if cached is None:
        cached = u.prompt_cache_hit_tokens
    details = u.completion_tokens_details
    return Usage(
        input_tokens=u.prompt_tokens or 0,
        output_tokens=u.completion_tokens or 0,
        cached_tokens=cached or 0,
        reasoning_tokens=(details.reasoning_tokens or 0) if details else 0,
    )
