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
    """LSP-style frames. Forgiving where clients and accidents differ: LF-only header lines are
    accepted, a header block is searched for its last `Content-Length:` (junk before it, such as
    the rest of a body that declared one byte too few, is skipped), and a declared length over
    the cap is reported and skipped by resynchronising at the next header, never by swallowing
    that many bytes of later input."""

    def __init__(self, max_frame: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_frame
        self._need: int | None = None  # body length once the header is parsed
        self._skipping = False  # past an oversized header: discard until the next header

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        frames: list[Frame] = []
        while self._step(frames):
            pass
        return frames

    def _step(self, frames: list[Frame]) -> bool:
        if self._skipping:
            return self._resync()
        if self._need is None:
            return self._parse_header(frames)
        if len(self._buf) < self._need:
            return False
        frames.append(bytes(self._buf[: self._need]))
        del self._buf[: self._need]
        self._need = None
        return True

    def _resync(self) -> bool:
        """Drop input up to the next `Content-Length:` header; False until one is seen."""
        at = _find_header(self._buf, 0)
        if at < 0:
            keep = len(_HEADER) - 1  # a header split across reads must survive
            del self._buf[: max(0, len(self._buf) - keep)]
            return False
        del self._buf[:at]
        self._skipping = False
        return True

    def _parse_header(self, frames: list[Frame]) -> bool:
        end, sep = _header_end(self._buf)
        if end < 0:
            if len(self._buf) > MAX_HEADER_BYTES:  # no sane header is this long
                frames.append(FrameTooLarge(len(self._buf)))
                self._skipping = True
                return True
            return False
        header = bytes(self._buf[:end])
        del self._buf[: end + sep]
        length = _content_length(header)
        if length is None:
            frames.append(b"")  # a frame with no valid length: reported as a parse error
            return True
        if length > self._max:
            frames.append(FrameTooLarge(length))
            self._skipping = True
            return True
        self._need = length
        return True

    def finish(self) -> list[Frame]:
        return []

    def encode(self, payload: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)


MAX_HEADER_BYTES = 8192
_HEADER = b"content-length:"


def _header_end(buf: bytearray) -> tuple[int, int]:
    """(index, separator length) of the blank line ending a header block, CRLF or LF-only."""
    crlf, lf = buf.find(b"\r\n\r\n"), buf.find(b"\n\n")
    if crlf >= 0 and (lf < 0 or crlf < lf):
        return crlf, 4
    return (lf, 2) if lf >= 0 else (-1, 0)


def _find_header(buf: bytearray, start: int) -> int:
    return bytes(buf).lower().find(_HEADER, start)


def _content_length(header: bytes) -> int | None:
    """The value of the block's last Content-Length line (junk before it is ignored)."""
    lower = header.lower()
    at = lower.rfind(_HEADER)
    if at < 0:
        return None
    value = lower[at + len(_HEADER) :].split(b"\n", 1)[0].strip()
    return int(value) if value.isdigit() else None


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
