"""OpenAI Responses API (`POST {base}/responses`, streamed).

History maps onto input items: user `message`s, and for each assistant round its `reasoning`
items, its text as an assistant `message`, then its `function_call`s, with the matching
`function_call_output`s after them, so one round's calls stay contiguous.

Reasoning round trip. OpenAI (`store: false`): a reasoning item comes back as its summary plus its
`encrypted_content`, kept in history as Reasoning(text=summary, signature=item id,
redacted=encrypted_content). DeepSeek (`deepseek=True`): every round of a request with tools must
return its reasoning as `reasoning_text` content — a missing item or an empty part is a 400 — so a
round that kept none sends a blank line. DeepSeek ends the stream at the terminal event without
`[DONE]`; both endings are accepted.

Reasoning items go back only when the request's own model reasons: after a switch from gpt-5 to
gpt-4.1 on one provider, OpenAI refuses the earlier rounds' reasoning items.
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
    ToolResultMessage,
    UserMessage,
    array,
    spliced,
)
from tether.engine.providers.base import (
    ChatRequest,
    Finish,
    OpaqueBlock,
    ReasoningBlock,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallDelta,
    Usage,
)
from tether.engine.providers.common import (
    HTTPProvider,
    data_url,
    encode,
    is_refused,
    model_reasons,
    openai_detail,
    tool_images,
)
from tether.engine.providers.retry import looks_transient
from tether.engine.providers.sse import SSEEvent, decode_data
from tether.errors import ProviderError
from tether.schemas import openai_responses as wire

_event_decoder = msgspec.json.Decoder(wire.StreamEvent)

_TEXT = "response.output_text.delta"
_THOUGHT = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
_TERMINAL = frozenset({"response.completed", "response.incomplete"})
WEB_SEARCH_CALL = "web_search_call"  # a hosted search's output item


class OpenAIResponses(HTTPProvider):
    """One model behind the OpenAI Responses API (OpenAI, or DeepSeek's responses convention)."""

    default_name = "openai"

    def _prepare(self, request: ChatRequest) -> tuple[str, bytes]:
        with_tools = bool(request.tools)
        key = (with_tools, self.model, self.name, self.deepseek, self.reasons, self.info.images)
        items = self._memo.join(
            request.messages, key, lambda m: _joined(self._items(m, with_tools)), is_refused
        )
        assert items is not None  # every message's items are its own
        body = wire.ResponsesRequest(
            model=self.model,
            input=HOLE,
            stream=True,
            max_output_tokens=request.max_output_tokens,
            instructions=request.system or UNSET,
            tools=self._tools(request) or UNSET,
        )
        self._reasoning_options(body, request.reasoning)
        return "/responses", spliced(encode(body), array(items))

    def _tools(self, request: ChatRequest) -> list[wire.FunctionTool | wire.WebSearchTool]:
        """The hosted web search first; a local tool of its name stays out (one name, one tool)."""
        hosted = self.info.hosted_tools
        tools: list[wire.FunctionTool | wire.WebSearchTool] = [
            wire.WebSearchTool() for name in hosted if name == "web_search"
        ]
        tools.extend(
            wire.FunctionTool(t.name, t.description, t.parameters, strict=False)
            for t in request.tools
            if t.name not in hosted
        )
        return tools

    def _reasoning_options(self, body: wire.ResponsesRequest, level: str | None) -> None:
        if self.deepseek:
            if level is not None:
                body.reasoning = wire.ReasoningParam(effort=level)
            return
        # Without server-side storage a reasoning item can only come back encrypted; ask for it
        # whenever the model reasons (asking a model that doesn't is a 400).
        body.store = False
        if level is not None:
            body.reasoning = wire.ReasoningParam(effort=level, summary="auto")
        if self.reasons:
            body.include = ["reasoning.encrypted_content"]

    def _items(self, m: Message, with_tools: bool) -> list[wire.InputItem]:
        if isinstance(m, UserMessage):
            return [wire.MessageItem("developer" if m.host else "user", _user_content(m))]
        if isinstance(m, ToolResultMessage):
            images = tool_images(self.info, m)
            if not images:
                return [wire.FunctionCallOutputItem(m.call_id, m.content)]
            parts = [wire.InputImage(data_url(p), openai_detail(p)) for p in images]
            return [wire.FunctionCallOutputItem(m.call_id, [wire.InputText(m.content), *parts])]
        return self._assistant(m, with_tools)

    def _assistant(self, m: AssistantMessage, with_tools: bool) -> list[wire.InputItem]:
        items: list[wire.InputItem] = []
        if m.text or m.tool_calls:  # a reasoning item without its following item is a 400
            items.extend(self._reasoning_items(m.reasoning, with_tools))
        items.extend(b for b in m.opaque if b.get("type") == WEB_SEARCH_CALL)
        if m.text:
            items.append(wire.MessageItem("assistant", m.text))
        items.extend(wire.FunctionCallItem(c.id, c.name, c.arguments) for c in m.tool_calls)
        return items

    def _reasoning_items(self, kept: list[Reasoning], with_tools: bool) -> list[wire.ReasoningItem]:
        if self.deepseek:
            text = "".join(r.text for r in kept)
            if not (text or with_tools):
                return []
            return [wire.ReasoningItem(summary=[], content=[wire.ReasoningText(text or "\n")])]
        if not self.reasons:
            return []
        return [
            wire.ReasoningItem(
                summary=[wire.SummaryText(r.text)] if r.text else [],
                id=r.signature or UNSET,
                encrypted_content=r.redacted or UNSET,
            )
            for r in kept
            # Only our own encrypted content means anything to the server; text alone does not.
            if r.redacted and r.origin == self.name
        ]

    @property
    def reasons(self) -> bool:
        """Whether this request's model reasons (and so takes reasoning items back)."""
        return model_reasons(self.info, self.model) or bool(self.info.reasoning_levels)

    def _decoder(self) -> _ResponsesDecoder:
        return _ResponsesDecoder(self.name, self.model)


def _joined(items: list[wire.InputItem]) -> bytes:
    """A message's items as they sit in the `input` array (b"" for none)."""
    return b",".join(encode(i) for i in items)


def _user_content(m: UserMessage) -> list[wire.InputText | wire.InputImage]:
    return [
        wire.InputImage(data_url(p)) if isinstance(p, ImagePart) else wire.InputText(p.text)
        for p in m.parts
    ]


class _ResponsesDecoder:
    """One attempt's stream state. Output items arrive one after another, so `_streamed` (did the
    current item stream any delta) tells whether its `done` event carries unseen text."""

    __slots__ = ("_calls", "_model", "_provider", "_refused", "_response", "_streamed", "done")

    done: bool

    def __init__(self, provider: str, model: str) -> None:
        self.done = False
        self._provider = provider
        self._model = model
        self._response: wire.Response | None = None
        self._calls = 0
        self._refused = False
        self._streamed = False

    def feed(self, event: SSEEvent) -> Sequence[StreamEvent] | None:
        if event.data == b"[DONE]":
            self.done = True  # `end` still insists on a terminal event before it
            return None
        ev = decode_data(_event_decoder, event, self._provider)
        kind = ev.type
        if kind == _TEXT:
            self._streamed = True
            return (TextDelta(ev.delta),) if isinstance(ev.delta, str) and ev.delta else None
        if kind in _THOUGHT:
            self._streamed = True
            return (ThoughtDelta(ev.delta),) if isinstance(ev.delta, str) and ev.delta else None
        return self._other(kind, ev)

    def _other(self, kind: str, ev: wire.StreamEvent) -> Sequence[StreamEvent] | None:
        if kind == "response.reasoning_summary_part.added" and ev.summary_index:
            return (ThoughtDelta("\n\n"),)  # separate summary parts as paragraphs
        if kind == "response.refusal.delta" and isinstance(ev.delta, str):
            self._refused = self._streamed = True
            return (TextDelta(ev.delta),)
        if kind == "response.output_item.done" and ev.item is not None:
            return self._item_done(ev.item)
        if kind in _TERMINAL:
            self._response = ev.response or wire.Response(status="completed")
            self.done = True
        elif kind == "response.failed":
            raise self._failed(ev.response.error if ev.response else None)
        elif kind == "error":
            raise self._failed(ev.error or wire.ErrorBody(ev.code, ev.message))
        return None

    def _item_done(self, item: wire.OutputItem) -> Sequence[StreamEvent] | None:
        streamed, self._streamed = self._streamed, False
        if item.type == "function_call":
            self._calls += 1
            call_id = item.call_id or item.id or f"call_{self._calls}"
            return (ToolCallDelta(call_id, item.name or "", item.arguments or ""),)
        if item.type == "reasoning":
            return self._reasoning_done(item, streamed)
        if item.type == WEB_SEARCH_CALL:  # the API searched: kept to go back with the round
            block = {"type": WEB_SEARCH_CALL, "id": item.id, "status": item.status}
            return (OpaqueBlock({**block, "action": item.action or {}}),)
        if item.type == "message" and not streamed:
            text = "".join(p.text or p.refusal or "" for p in item.content or ())
            return (TextDelta(text),) if text else None
        return None

    def _reasoning_done(self, item: wire.OutputItem, streamed: bool) -> list[StreamEvent]:
        summary = [p.text for p in item.summary or () if p.text]
        text = (
            "\n\n".join(summary) if summary else "".join(p.text or "" for p in item.content or ())
        )
        out: list[StreamEvent] = []
        if text and not streamed:
            out.append(ThoughtDelta(text))
        if text or item.encrypted_content:
            reasoning = Reasoning(
                text, item.id, item.encrypted_content, origin=self._provider, model=self._model
            )
            out.append(ReasoningBlock(reasoning))
        return out

    def end(self) -> Sequence[StreamEvent]:
        response = self._response
        if response is None:
            raise ProviderError(
                f"{self._provider}: stream ended before the response completed", retryable=True
            )
        out: list[StreamEvent] = []
        if response.usage is not None:
            out.append(_usage(response.usage))
        out.append(Finish(self._finish_reason(response)))
        return out

    def _finish_reason(self, response: wire.Response) -> FinishReason:
        if response.status == "incomplete":
            details = response.incomplete_details
            return "refusal" if details and details.reason == "content_filter" else "length"
        if self._calls:
            return "tool_calls"
        return "refusal" if self._refused else "stop"

    def _failed(self, error: wire.ErrorBody | None) -> ProviderError:
        code = error.code if error else None
        message = (error.message if error else None) or "unknown error"
        label = f"{code}: {message}" if code else message
        return ProviderError(
            f"{self._provider}: response failed: {label}", retryable=looks_transient(code)
        )


def _usage(u: wire.Usage) -> Usage:
    cached = u.input_tokens_details.cached_tokens if u.input_tokens_details else None
    reasoning = u.output_tokens_details.reasoning_tokens if u.output_tokens_details else None
    return Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cached_tokens=cached or 0,
        reasoning_tokens=reasoning or 0,
    )
