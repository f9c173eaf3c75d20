"""Sans-IO framers: turn a byte stream into JSON-RPC frames and back.

NDJSON is ACP's framing (one JSON object per line). Content-Length is LSP's, spoken by clients such
as Neovim's `vim.lsp.rpc` and `vscode-jsonrpc`. `AutoFramer` picks one from the first byte seen.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (startup time)
if TYPE_CHECKING:
    from typing import Literal, Protocol

    FramingName = Literal["auto", "ndjson", "content-length"]

    class Framer(Protocol):
        def feed(self, data: bytes) -> list[Frame]: ...

        def finish(self) -> list[Frame]:
            """Frames left when the input ends (a final line without its newline)."""
            ...

        def encode(self, payload: bytes) -> bytes: ...


MAX_FRAME_BYTES = 64 * 1024 * 1024


class FrameTooLarge:
    """Marks a frame that exceeded the cap; it was dropped and the stream resynchronised."""

    def __init__(self, size: int) -> None:
        self.size = size


Frame = bytes | FrameTooLarge


class NdjsonFramer:
    def __init__(self, max_frame: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_frame
        self._skipping = 0  # bytes of an oversized line dropped so far

    def feed(self, data: bytes) -> list[Frame]:
        frames: list[Frame] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                self._absorb(data[start:], frames)
                return frames
            self._absorb(data[start:nl], frames)
            self._end_line(frames)
            start = nl + 1

    def _absorb(self, chunk: bytes, frames: list[Frame]) -> None:
        if self._skipping:
            self._skipping += len(chunk)
            return
        self._buf += chunk
        if len(self._buf) > self._max:
            self._skipping = len(self._buf)
            self._buf.clear()

    def _end_line(self, frames: list[Frame]) -> None:
        if self._skipping:
            frames.append(FrameTooLarge(self._skipping))
            self._skipping = 0
            return
        line = bytes(self._buf).strip()
        self._buf.clear()
        if line:
            frames.append(line)

    def finish(self) -> list[Frame]:
        frames: list[Frame] = []
        if self._buf or self._skipping:
            self._end_line(frames)
        return frames

    def encode(self, payload: bytes) -> bytes:
        return payload + b"\n"


class ContentLengthFramer:
    def __init__(self, max_frame: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_frame
        self._need: int | None = None  # body length once the header is parsed
        self._drop = 0  # bytes of an oversized body still to discard

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        frames: list[Frame] = []
        while self._step(frames):
            pass
        return frames

    def _step(self, frames: list[Frame]) -> bool:
        if self._drop:
            taken = min(self._drop, len(self._buf))
            del self._buf[:taken]
            self._drop -= taken
            return bool(self._buf) and not self._drop
        if self._need is None:
            return self._parse_header(frames)
        if len(self._buf) < self._need:
            return False
        frames.append(bytes(self._buf[: self._need]))
        del self._buf[: self._need]
        self._need = None
        return True

    def _parse_header(self, frames: list[Frame]) -> bool:
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buf) > 8192:  # no sane header is this long: resync on garbage
                frames.append(FrameTooLarge(len(self._buf)))
                self._buf.clear()
            return False
        header = bytes(self._buf[:end]).decode("ascii", "replace")
        del self._buf[: end + 4]
        length = _content_length(header)
        if length is None:
            frames.append(b"")  # a frame with no valid length: reported as a parse error
            return True
        if length > self._max:
            frames.append(FrameTooLarge(length))
            self._drop = length
            return True
        self._need = length
        return True

    def finish(self) -> list[Frame]:
        return []

    def encode(self, payload: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)


def _content_length(header: str) -> int | None:
    for line in header.split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


class AutoFramer:
    """Delegates to NDJSON or Content-Length, decided by the first non-blank byte of input."""

    def __init__(self, max_frame: int = MAX_FRAME_BYTES) -> None:
        self._max = max_frame
        self.chosen: Framer | None = None

    def feed(self, data: bytes) -> list[Frame]:
        if self.chosen is None:
            head = data.lstrip()
            if not head:
                return []
            self.chosen = (
                ContentLengthFramer(self._max)
                if head[:1] in (b"C", b"c")
                else NdjsonFramer(self._max)
            )
            data = head
        return self.chosen.feed(data)

    def finish(self) -> list[Frame]:
        return self.chosen.finish() if self.chosen else []

    def encode(self, payload: bytes) -> bytes:
        # Until the client has spoken we answer in ACP's own framing.
        return (self.chosen or _NDJSON).encode(payload)


_NDJSON = NdjsonFramer()


def make_framer(name: FramingName, max_frame: int = MAX_FRAME_BYTES) -> Framer:
    if name == "ndjson":
        return NdjsonFramer(max_frame)
    if name == "content-length":
        return ContentLengthFramer(max_frame)
    return AutoFramer(max_frame)
