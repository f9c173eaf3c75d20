"""Anthropic Messages (`POST {base}/v1/messages`, streamed); also DeepSeek's anthropic convention.

An assistant round goes back as: its thinking blocks (signed or redacted, only to the provider
and model that issued them), its opaque provider blocks (server-tool use and results,
untouched), its text, then its `tool_use` blocks. One round's tool results travel together in
the next user message, ahead of any text the user added. A refused exchange is left out.

Thinking: Claude 4.5 and earlier take a token budget (`thinking.budget_tokens`); later models think
adaptively and take an effort level (`output_config.effort`), and refuse a budget. DeepSeek
switches thinking with `thinking.type` (on by default), reads `output_config.effort` (high or
max), and wants every thinking block back, signed or not (a round without one gets an empty one).

Prompt caching (Anthropic only; DeepSeek caches by itself): breakpoints on the system prompt
(which caches the tools before it), the last message, and the previous user message, so each
round of a tool loop reads the prefix the round before it wrote (three of the API's four).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from tether.engine.history import (
    HOLE,
    AssistantMessage,
    ImagePart,
    Message,
    Reasoning,
    TextPart,
    ToolResultMessage,
    UserMessage,
    spliced,
)
from tether.engine.providers import thinking_refusals as refusals
from tether.engine.providers.anthropic_history import GroupedMemo
from tether.engine.providers.anthropic_stream import MessagesDecoder
from tether.engine.providers.base import ChatRequest, RetryNotice, StreamEvent
from tether.engine.providers.common import (
    REFUSED,
    HTTPProvider,
    encode,
    is_refused,
    parse_arguments,
    tool_images,
    without_refused,
)
from tether.errors import ProviderError
from tether.schemas import anthropic as wire

if TYPE_CHECKING:
    from tether.engine.providers.model_list import RemoteModel

API_VERSION = "2023-06-01"
# Thinking budget per reasoning level (tokens), for models that take one. The API's floor is 1024.
BUDGETS = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
    "max": 32768,
}
# Our levels as the API's effort values (it has no "minimal").
EFFORTS = {
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
    "max": "max",
}
# Claude models that take a thinking budget rather than an effort level: Claude 3.x and the
# Claude 4 models up to 4.5 (ids like claude-sonnet-4-5, claude-opus-4-1-20250805).
_BUDGET_MODELS = re.compile(r"^claude-(?:3|(?:opus|sonnet|haiku)-4(?:-[0-5])?(?:-\d{8})?$)")
_CACHE = wire.CacheControl()
_CACHEABLE = frozenset({"text", "image", "tool_use", "tool_result"})
_EMPTY_THINKING = {"type": "thinking", "thinking": "", "signature": ""}
# Opaque blocks that are no Messages content: our refusal mark, a Responses hosted search.
_NOT_MESSAGES_BLOCKS = frozenset({REFUSED, "web_search_call"})


class AnthropicMessages(HTTPProvider):
    """One model behind the Anthropic Messages API."""

    default_name = "anthropic"
    _anthropic_memo: GroupedMemo | None = None

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def _prepare(self, request: ChatRequest) -> tuple[str, bytes]:
        cache = not self.deepseek
        tools = self._tools(request)
        # DeepSeek thinks unless told not to, and then wants a thinking block in every round.
        pad = self.deepseek and request.reasoning != "none"
        key = (self.model, self.name, self.deepseek, self.info.images, pad)
        messages = self._grouped.messages(
            request.messages,
            key,
            lambda m: self._convert(m, pad),
            is_refused,
            _mark_messages if cache else None,
        )
        body = wire.MessagesRequest(
            model=self.model,
            max_tokens=request.max_output_tokens,
            messages=HOLE,
            stream=True,
            system=request.system or UNSET,
            tools=tools or UNSET,
        )
        self._thinking(body, request.reasoning, request.max_output_tokens)
        if cache:
            _mark_prefix(body, tools)
        return "/v1/messages", spliced(encode(body), messages)

    @property
    def _grouped(self) -> GroupedMemo:
        if self._anthropic_memo is None:
            self._anthropic_memo = GroupedMemo()
        return self._anthropic_memo

    def _tools(self, request: ChatRequest) -> list[wire.Tool | wire.WebSearchTool]:
        """The hosted tools first, then ours (the last gets the cache breakpoint); a local tool
        of a hosted tool's name stays out (the API refuses two tools of one name)."""
        hosted: list[wire.Tool | wire.WebSearchTool] = [
            wire.WebSearchTool() for name in self.info.hosted_tools if name == "web_search"
        ]
        taken = set(self.info.hosted_tools)
        local = [
            wire.Tool(t.name, t.description, t.parameters)
            for t in request.tools
            if t.name not in taken
        ]
        return [*hosted, *local]

    # --- thinking ------------------------------------------------------------------------

    @property
    def thinking_control(self) -> str:
        """ "budget" or "effort": as the API taught us, as configured, else judged by the id."""
        taught = refusals.learned(self._refusal_key)
        if taught in ("budget", "effort"):
            return taught
        if self.info.thinking:
            return self.info.thinking
        return "budget" if _BUDGET_MODELS.match(self.model) else "effort"

    @property
    def _refusal_key(self) -> refusals.Key:
        return (self.name, self.base_url, self.model)

    def _shape(self, level: str | None) -> refusals.Shape | None:
        """The thinking a request at `level` sends (None: none, or DeepSeek's, never refused)."""
        if level is None or self.deepseek:
            return None
        if level == "none":
            omitted = refusals.learned(self._refusal_key) == "omit"
            return None if omitted else "disabled"
        return "budget" if self.thinking_control == "budget" else "effort"

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        return self._stream_learning(request)

    async def _stream_learning(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """One retry with the thinking the model takes, when it refuses ours before anything
        streamed (a later failure has been seen already)."""
        shape, started = self._shape(request.reasoning), False
        try:
            async for event in super().stream(request):
                started = started or not isinstance(event, RetryNotice)
                yield event
            return
        except ProviderError as exc:
            fallback = None if started else refusals.fallback_for(shape, exc)
            if fallback is None:
                raise
        refusals.remember(self._refusal_key, fallback)
        try:
            async for event in super().stream(request):
                yield event
        except ProviderError as exc:
            if refusals.fallback_for(self._shape(request.reasoning), exc) is not None:
                refusals.forget(self._refusal_key)
            raise

    def _thinking(self, body: wire.MessagesRequest, level: str | None, max_output: int) -> None:
        if level is None:
            return  # the model's own default
        if level == "none":
            if refusals.learned(self._refusal_key) != "omit":  # always-on thinking refuses it
                body.thinking = wire.ThinkingDisabled()
        elif self.deepseek:
            # DeepSeek reads only the effort (high or max); the budget is required by the
            # Messages schema and ignored by DeepSeek.
            body.thinking = wire.ThinkingEnabled(BUDGETS["high"])
            body.output_config = wire.OutputConfig("max" if level in ("xhigh", "max") else "high")
        elif self.thinking_control == "effort":
            body.thinking = wire.ThinkingAdaptive(display="summarized")
            body.output_config = wire.OutputConfig(EFFORTS.get(level, "high"))
        else:
            budget = BUDGETS.get(level, BUDGETS["medium"])
            body.thinking = wire.ThinkingEnabled(budget)
            if body.max_tokens <= budget:  # the budget counts against max_tokens
                body.max_tokens = budget + max_output

    # --- history -------------------------------------------------------------------------

    def _messages(self, history: list[Message], level: str | None) -> list[wire.Message]:
        """The wire messages built whole (what the memo's encoding equals; the tests compare)."""
        pad = self.deepseek and level != "none"
        out: list[wire.Message] = []
        for m in without_refused(history):
            role, blocks = self._convert(m, pad)
            if not blocks:
                continue  # the API refuses empty content
            if out and out[-1].role == role:
                out[-1].content.extend(blocks)  # tool results + user text share one user turn
            else:
                out.append(wire.Message(role, blocks))
        return out

    def _convert(self, m: Message, pad: bool) -> tuple[str, list[dict[str, Any]]]:
        if isinstance(m, UserMessage):
            return "user", _user_blocks(m)
        if isinstance(m, ToolResultMessage):
            return "user", [_tool_result(m, tool_images(self.info, m))]
        return "assistant", self._assistant_blocks(m, pad)

    def _assistant_blocks(self, m: AssistantMessage, pad: bool) -> list[dict[str, Any]]:
        blocks = [b for r in m.reasoning if (b := self._thinking_block(r)) is not None]
        if pad and not blocks and (m.text or m.tool_calls):
            blocks.append(dict(_EMPTY_THINKING))
        blocks.extend(b for b in m.opaque if b.get("type") not in _NOT_MESSAGES_BLOCKS)
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
        if self.deepseek:
            return self._deepseek_thinking(r)
        # Unsigned, foreign or another model's thinking would be refused: only our own goes back.
        if r.origin != self.name or (r.model is not None and r.model != self.model):
            return None
        if r.redacted:
            return {"type": "redacted_thinking", "data": r.redacted}
        if r.signature:
            return {"type": "thinking", "thinking": r.text, "signature": r.signature}
        return None

    def _deepseek_thinking(self, r: Reasoning) -> dict[str, Any] | None:
        """DeepSeek takes its thinking back signed or not; it has no redacted thinking."""
        if r.redacted or not (r.text or r.signature):
            return None
        signature = r.signature if r.origin == self.name and r.signature else ""
        return {"type": "thinking", "thinking": r.text, "signature": signature}

    async def list_models(self) -> list[RemoteModel]:
        """Anthropic's `GET /v1/models`, every page."""
        from tether.engine.providers.model_list import anthropic_models

        headers = {**self._headers(), **self._extra_headers}
        return await anthropic_models(self._get_client(), self.base_url, headers, self.name)

    def _decoder(self) -> MessagesDecoder:
        return MessagesDecoder(self.name, self.model)


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


# --- prompt caching ------------------------------------------------------------------------


def _mark_prefix(body: wire.MessagesRequest, tools: list[wire.Tool | wire.WebSearchTool]) -> None:
    """One breakpoint after the stable prefix: the system prompt, else the last tool."""
    if isinstance(body.system, str):
        body.system = [wire.SystemBlock(body.system, cache_control=_CACHE)]
    elif tools:
        tools[-1].cache_control = _CACHE


def _mark_messages(messages: list[wire.Message]) -> None:
    """Breakpoints at the end of the last message (written for the next round) and of the user
    message before it (the end of the previous round's request, read back now)."""
    if not messages:
        return
    _mark_last_block(messages[-1])
    earlier = [m for m in messages[:-1] if m.role == "user"]
    if earlier:
        _mark_last_block(earlier[-1])


def _mark_last_block(message: wire.Message) -> None:
    """Mark the message's last block that takes a breakpoint (thinking blocks do not). The
    block is copied: opaque blocks belong to the stored history."""
    content = message.content
    for i in range(len(content) - 1, -1, -1):
        if content[i].get("type") in _CACHEABLE:
            content[i] = {**content[i], "cache_control": {"type": "ephemeral"}}
            return
