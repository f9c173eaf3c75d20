"""The Messages API's `messages` array, encoded once (as history.WireMemo does for the other
APIs): consecutive messages of one role travel as one wire message, and the prompt cache's
breakpoints sit on the last wire message and the user one before it, so each history message
keeps its blocks and their encoding, which opens a wire message where the role changes; the
wire messages from the marked user one on are built whole for each request."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from tether.engine.history import Message, UserMessage, common_prefix
from tether.engine.providers.common import encode
from tether.schemas import anthropic as wire

Blocks = list[dict[str, Any]]
Convert = Callable[[Message], tuple[str, Blocks]]


class GroupedMemo:
    """Per history message: its role and blocks (none: it sends nothing, or its exchange was
    refused) and its encoded part (`]},{"role":..,"content":[` where it opens a wire message,
    else `,`, then its blocks)."""

    __slots__ = ("_blocks", "_drops", "_key", "_parts", "_roles", "_sent")

    def __init__(self) -> None:
        self._sent: list[Message] = []
        self._roles: list[str] = []
        self._blocks: list[Blocks] = []
        self._parts: list[bytes] = []
        self._key: Hashable = None
        self._drops: list[tuple[int, int]] = []

    def messages(
        self,
        history: list[Message],
        key: Hashable,
        convert: Convert,
        refused: Callable[[Message], bool],
        mark: Callable[[list[wire.Message]], None] | None,
    ) -> list[bytes]:
        """The pieces of the encoded `messages` array (history.spliced puts them in a body);
        `mark` sets the cache breakpoints on wire messages (on the last one and the user one
        before it)."""
        self._sync(history, key)
        for m in history[len(self._sent) :]:
            self._sent.append(m)
            if refused(m):
                self._add("", [])
                self._drop_exchange(len(self._sent) - 1)
            else:
                self._add(*convert(m))
        self._key = key
        start = self._marked_from() if mark is not None else len(self._sent)
        tail = self._whole(start)
        if mark is not None:
            mark(tail)
        rest = encode(tail)[1:-1]
        parts = self._parts
        first = next((i for i in range(start) if parts[i]), start)
        if first == start:
            return [b"[", rest, b"]"]
        # the first part opens with `]},`; the head's last wire message is closed after it
        head = [parts[first][3:], *parts[first + 1 : start], b"]}"]
        return [b"[", *head, b"," if rest else b"", rest, b"]"]

    def _sync(self, history: list[Message], key: Hashable) -> None:
        k = common_prefix(self._sent, history) if key == self._key else 0
        for start, end in self._drops:
            if end >= k:  # the refusal is gone: its exchange is sent again
                k = min(k, start)
        self._drops = [d for d in self._drops if d[1] < k]
        for kept in (self._sent, self._roles, self._blocks, self._parts):
            del kept[k:]

    def _add(self, role: str, blocks: Blocks) -> None:
        self._roles.append(role if blocks else "")
        self._blocks.append(blocks)
        self._parts.append(self._part(len(self._parts), role, blocks))

    def _part(self, at: int, role: str, blocks: Blocks) -> bytes:
        if not blocks:
            return b""
        encoded = b",".join(encode(b) for b in blocks)
        if self._role_before(at) == role:
            return b"," + encoded
        return b']},{"role":' + encode(role) + b',"content":[' + encoded

    def _role_before(self, at: int) -> str:
        for i in range(at - 1, -1, -1):
            if self._roles[i]:
                return self._roles[i]
        return ""

    def _drop_exchange(self, end: int) -> None:
        """Blank the messages from the last user prompt at or before `end` up to it."""
        at = end
        while at > 0 and not isinstance(self._sent[at], UserMessage):
            at -= 1
        for i in range(at, end + 1):
            self._roles[i], self._blocks[i], self._parts[i] = "", [], b""
        self._drops.append((at, end))

    def _opens(self, i: int) -> bool:
        return bool(self._roles[i]) and self._role_before(i) != self._roles[i]

    def _marked_from(self) -> int:
        """Where the wire message that starts the breakpoints' part begins: the user one
        before the last one, else the last one."""
        starts = (i for i in range(len(self._sent) - 1, -1, -1) if self._opens(i))
        last = next(starts, len(self._sent))
        return next((i for i in starts if self._roles[i] == "user"), last)

    def _whole(self, start: int) -> list[wire.Message]:
        out: list[wire.Message] = []
        for role, blocks in zip(self._roles[start:], self._blocks[start:], strict=True):
            if not role:
                continue
            if out and out[-1].role == role:
                out[-1].content.extend(blocks)
            else:
                out.append(wire.Message(role, list(blocks)))
        return out
