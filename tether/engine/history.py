"""The engine's chat-shaped conversation history, independent of any wire API.

Provider adapters translate these messages into their API's request format; the store keeps them
as JSON so a resumed session sends the model exactly what it saw before.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class TextPart(msgspec.Struct, tag="text", frozen=True):
    text: str


class ImagePart(msgspec.Struct, tag="image", frozen=True, omit_defaults=True):
    data: str  # base64
    mime_type: str
    detail: str | None = None  # how closely to look (low, high, original), when a tool asked


UserPart = TextPart | ImagePart


def prompt_text(parts: list[UserPart]) -> str:
    """A prompt's text (its images left out)."""
    return "\n".join(p.text for p in parts if isinstance(p, TextPart)).strip()


class ToolCall(msgspec.Struct, frozen=True):
    """A call the model asked for. `arguments` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str


class Reasoning(msgspec.Struct, frozen=True):
    """Model reasoning kept for the round trip (Anthropic signatures, DeepSeek reasoning)."""

    text: str
    signature: str | None = None
    redacted: str | None = None  # opaque redacted-thinking payload
    # The provider (adapter name) that issued signature / redacted: those payloads are only valid
    # when sent back to it, so a session that switches models keeps the text alone.
    origin: str | None = None
    # The model that produced it: some APIs take a reasoning payload back only from that model.
    model: str | None = None


class UserMessage(msgspec.Struct, tag="user", frozen=True, omit_defaults=True):
    parts: list[UserPart]
    # Written by tether, not the user (a reminder): sent as the API's developer or system
    # message where it has one in mid-conversation, as user content elsewhere.
    host: bool = False


class AssistantMessage(msgspec.Struct, tag="assistant", frozen=True):
    text: str = ""
    reasoning: list[Reasoning] = []
    tool_calls: list[ToolCall] = []
    # Provider-specific blocks passed back untouched (e.g. Anthropic server-tool blocks).
    opaque: list[dict[str, Any]] = []


class ToolResultMessage(msgspec.Struct, tag="tool", frozen=True, omit_defaults=True):
    call_id: str
    name: str
    content: str
    is_error: bool = False
    images: list[ImagePart] = []  # pictures a tool returned (view_image), after the text


Message = UserMessage | AssistantMessage | ToolResultMessage

# "pause": the provider paused a long turn (Anthropic's `pause_turn`); sent back as it is, the
# round goes on.
FinishReason = Literal["stop", "tool_calls", "length", "refusal", "pause"]

history_encoder = msgspec.json.Encoder()


def message_chars(m: Message) -> int:
    """A message's size as a request carries it, in characters (an image counts 1,000)."""
    if isinstance(m, UserMessage):
        return sum(len(p.text) if isinstance(p, TextPart) else 1000 for p in m.parts)
    if isinstance(m, AssistantMessage):
        reasoning = sum(len(r.text) for r in m.reasoning)
        return len(m.text) + reasoning + sum(len(c.arguments) + len(c.name) for c in m.tool_calls)
    return len(m.content) + 1000 * len(m.images)


class MessageSizes:
    """`message_chars`, remembered per message (messages are immutable), so sizing a long
    history for every request costs a lookup per message, not a walk through its text."""

    def __init__(self) -> None:
        self._sizes: dict[int, tuple[Message, int]] = {}  # the message kept: its id stays its

    def total(self, messages: list[Message]) -> int:
        sizes = self._sizes
        if len(sizes) > 4 * len(messages) + 4096:
            sizes.clear()  # shortened copies made for past requests: not worth keeping
        out = 0
        for m in messages:
            known = sizes.get(id(m))
            if known is None or known[0] is not m:
                known = sizes[id(m)] = (m, message_chars(m))
            out += known[1]
        return out
