"""The engine's chat-shaped conversation history, independent of any wire API.

Provider adapters translate these messages into their API's request format; the store keeps them
as JSON so a resumed session sends the model exactly what it saw before.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
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
    """`message_chars`, remembered per message (messages are immutable), and the running total
    of the last list sized: the next request's history, that list and a few new messages, costs
    one list comparison and the new messages, not a walk through the whole history."""

    def __init__(self) -> None:
        self._sizes: dict[int, tuple[Message, int]] = {}  # the message kept: its id stays its
        self._last: list[Message] = []
        self._totals: list[int] = [0]  # _totals[i]: the size of _last[:i]

    def total(self, messages: list[Message]) -> int:
        k = common_prefix(self._last, messages)
        if k == len(messages) == len(self._last):
            return self._totals[k]
        sizes = self._sizes
        if len(sizes) > 4 * len(messages) + 4096:
            sizes.clear()  # shortened copies made for past requests: not worth keeping
        totals = self._totals
        del totals[k + 1 :]
        out = totals[k]
        for m in messages[k:]:
            known = sizes.get(id(m))
            if known is None or known[0] is not m:
                known = sizes[id(m)] = (m, message_chars(m))
            out += known[1]
            totals.append(out)
        self._last = list(messages)
        return out


# --- the history's wire form, encoded once --------------------------------------------------
#
# An adapter keeps each message's encoded items from the last request, and the next request
# (which carries the same history plus the newest messages) encodes only what is new. Messages
# are immutable, so a message that is the same object (or equal) encodes the same; the history
# is append-only between a compaction, an undo or an edit, each of which gives a list that
# differs from the last one somewhere: everything from there is encoded again. What an encoding
# depends on besides the message (the model, whether the request has tools) is the `key`:
# another key encodes everything again. (Here, not in a module of its own: it is on the way to
# the first chunk, whose modules are counted.)


def common_prefix(before: list[Message], now: list[Message]) -> int:
    """How many leading messages `now` shares with `before`. The usual case, `now` extending
    `before`, is one list comparison (identity first, at C speed)."""
    n = min(len(before), len(now))
    if before[:n] == now[:n]:
        return n
    same = list(map(operator.eq, before[:n], now[:n]))
    return same.index(False)


class WireMemo:
    """Each message's encoded part (`b",item,item"`, or `b""` for a message that sends none) for
    the last list encoded; `join` gives the JSON array of all of them."""

    __slots__ = ("_drops", "_key", "_odd", "_parts", "_sent")

    def __init__(self) -> None:
        self._sent: list[Message] = []
        self._parts: list[bytes] = []
        self._key: Hashable = None
        self._drops: list[tuple[int, int]] = []  # exchanges blanked: (its prompt, the refusal)
        self._odd: list[int] = []  # messages whose items depend on their neighbours

    def join(
        self,
        messages: list[Message],
        key: Hashable,
        one: Callable[[Message], bytes],
        refused: Callable[[Message], bool],
        alone: Callable[[Message], bool] | None = None,
    ) -> list[bytes] | None:
        """The pieces of the JSON array of `messages`' items (see `array`): `one(m)` gives a
        message's items, comma-joined (b"" for none). A `refused(m)` message drops its exchange
        (from the user prompt before it), as `common.without_refused` does. None when a message
        is not `alone(m)` (its items depend on its neighbours): the caller builds that request
        whole."""
        k = self._sync(messages, key)
        sent, parts = self._sent, self._parts
        for m in messages[k:]:
            sent.append(m)
            if refused(m):
                parts.append(b"")
                self._drop_exchange(len(sent) - 1)
                continue
            if alone is not None and not alone(m):
                self._odd.append(len(sent) - 1)
            body = one(m)
            parts.append(b"," + body if body else b"")
        self._key = key
        if self._odd:
            return None
        return parts

    def _sync(self, messages: list[Message], key: Hashable) -> int:
        """Keep what `messages` shares with the last list; how much that is."""
        k = common_prefix(self._sent, messages) if key == self._key else 0
        for start, end in self._drops:
            if end >= k:  # the refusal is gone: its exchange is sent again
                k = min(k, start)
        self._drops = [d for d in self._drops if d[1] < k]
        self._odd = [i for i in self._odd if i < k]
        del self._sent[k:], self._parts[k:]
        return k

    def _drop_exchange(self, end: int) -> None:
        """Blank the parts from the last user prompt at or before `end` up to it."""
        at = end
        while at > 0 and not isinstance(self._sent[at], UserMessage):
            at -= 1
        for i in range(at, end + 1):
            self._parts[i] = b""
        self._drops.append((at, end))


# Where a body's array goes: a body is encoded with HOLE in its place (a NUL byte, which JSON
# text never holds unescaped), and the array's pieces are joined into it: the body is copied
# once, not once per step (a long session's request is nearly a megabyte).
HOLE = msgspec.Raw(b"\0")


def array(parts: list[bytes], lead: bytes = b"") -> list[bytes]:
    """The pieces of a JSON array: `lead` (one item, or none) and `parts`, each of which is
    empty or starts with a comma."""
    if lead:
        return [b"[", lead, *parts, b"]"]
    first = next((i for i, p in enumerate(parts) if p), len(parts))
    if first == len(parts):
        return [b"[]"]
    return [b"[", parts[first][1:], *parts[first + 1 :], b"]"]


def spliced(encoded: bytes, pieces: list[bytes]) -> bytes:
    """`encoded` (a body holding HOLE once) with `pieces` in the hole."""
    head, _, tail = encoded.partition(b"\0")
    return b"".join([head, *pieces, tail])


class SeenPrefix:
    """Which leading messages a whole-history check has already passed, so the next request
    checks only the new ones (`check_images`)."""

    __slots__ = ("_key", "_seen")

    def __init__(self) -> None:
        self._seen: list[Message] = []
        self._key: Hashable = None

    def new(self, messages: list[Message], key: Hashable) -> list[Message]:
        """The messages not yet checked under `key`; call `passed` once they pass."""
        k = common_prefix(self._seen, messages) if key == self._key else 0
        return messages[k:]

    def passed(self, messages: list[Message], key: Hashable) -> None:
        self._seen, self._key = list(messages), key
