"""An incremental server-sent events parser, sans-IO: feed it bytes, get complete events back.

Follows the WHATWG event-stream rules that matter to LLM APIs: LF, CRLF or CR line ends (a CRLF may
be split across two reads), `:` comment lines, multi-line `data` joined with LF, one optional space
after the colon, `id` / `retry` ignored. Data stays bytes so msgspec decodes it without a copy.
"""

from __future__ import annotations

from typing import NamedTuple, TypeVar

import msgspec

from tether.errors import ProviderError

T = TypeVar("T")

# A line this long without a line end is not SSE; refuse it instead of buffering without bound.
MAX_LINE = 16 * 1024 * 1024


class SSEEvent(NamedTuple):
    event: str  # "message" when the stream names none
    data: bytes


class SSEParser:
    """Turns byte chunks into events. `provider` names the source in error messages."""

    __slots__ = ("_data", "_event", "_provider", "_tail")

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._tail = b""  # an unfinished line (and a held-back CR) from the last chunk
        self._data: list[bytes] = []
        self._event = "message"

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse `chunk`; return the events it completed, in order."""
        buf = self._tail + chunk if self._tail else chunk
        held_cr = False
        if b"\r" in buf:
            # A CR at the very end may be the first half of a CRLF: decide on the next chunk.
            held_cr = buf.endswith(b"\r")
            if held_cr:
                buf = buf[:-1]
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        tail = lines.pop()
        if len(tail) > MAX_LINE:
            raise ProviderError(
                f"{self._provider}: malformed event stream: a line exceeds {MAX_LINE} bytes"
            )
        self._tail = tail + b"\r" if held_cr else tail
        return self._lines(lines)

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch an event whose lines all arrived but whose blank line did not."""
        tail, self._tail = self._tail, b""
        # A held CR ended a line; anything else unterminated was cut off and is dropped.
        lines = [tail[:-1], b""] if tail.endswith(b"\r") else [b""]
        return self._lines(lines)

    def _lines(self, lines: list[bytes]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        for line in lines:
            if not line:
                if self._data:
                    data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
                    events.append(SSEEvent(self._event, data))
                    self._data = []
                self._event = "message"
            elif line[0] != 0x3A:  # ":" starts a comment (keep-alive pings)
                self._field(line)
        return events

    def _field(self, line: bytes) -> None:
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            try:
                self._event = value.decode()
            except UnicodeDecodeError:
                raise ProviderError(
                    f"{self._provider}: malformed event stream: event name is not UTF-8"
                ) from None


def decode_data(decoder: msgspec.json.Decoder[T], event: SSEEvent, provider: str) -> T:
    """Decode one event's JSON payload, turning a bad payload into a ProviderError that shows it."""
    try:
        return decoder.decode(event.data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        shown = event.data[:200].decode(errors="replace")
        raise ProviderError(f"{provider}: malformed stream data ({exc}): {shown!r}") from None
