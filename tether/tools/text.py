"""Text files as tools see them: what is text at all, a bounded window of lines (read from the
editor when the file is small, streamed from disk when it is not), and whole text for edits."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from tether.engine.images import image_type
from tether.engine.seam import TEXT_MAX_BYTES, Capabilities, FileStat
from tether.errors import SeamError, ToolError

SNIFF_BYTES = 8192
LINE_MAX_CHARS = 2000  # a longer line is cut (minified code, data on one line)
STREAM_CHUNK = 1024 * 1024


def is_binary(head: bytes, size: int) -> bool:
    return b"\0" in head or _bad_utf8(head, size) is not None


def _bad_utf8(head: bytes, size: int) -> int | None:
    """Where the head stops being UTF-8; a character cut by the end of a head that is not the
    whole file is still text."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut = exc.reason == "unexpected end of data" and len(head) < size
        return None if cut else exc.start
    return None


async def check_text(ctx: Capabilities, full: Path, shown: str, st: FileStat) -> None:
    """Refuse images (view_image shows them) and other binary files."""
    head = await ctx.fs.read_bytes(full, max_bytes=SNIFF_BYTES)
    mime = image_type(head)
    if mime is not None:
        raise SeamError(
            "BINARY_FILE",
            f"{shown} is a binary file ({st.size} bytes): an image ({mime}); look at it with "
            "view_image",
        )
    if b"\0" in head:
        raise SeamError(
            "BINARY_FILE", f"{shown} is a binary file ({st.size} bytes); read_file reads text only"
        )
    bad = _bad_utf8(head, st.size)
    if bad is not None:
        raise SeamError(
            "BINARY_FILE",
            f"{shown} is not UTF-8 text (byte {bad} of {st.size}); read_file reads UTF-8 text only",
        )


async def load_text(ctx: Capabilities, full: Path, shown: str, st: FileStat) -> str:
    """The whole text of a file to edit (the editor's buffer when it serves `fs`)."""
    if st.size > TEXT_MAX_BYTES:
        raise ToolError(
            "FILE_TOO_LARGE",
            f"{shown} has {st.size} bytes; files over {TEXT_MAX_BYTES} bytes are not edited "
            "by these tools",
        )
    await check_text(ctx, full, shown, st)
    return await ctx.fs.read_text(full)


def split_lines(text: str) -> list[str]:
    """Lines without their `\\n` (a `\\r` stays: the file's newline style is kept on edits)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class Window(msgspec.Struct):
    """The lines of a read, each cut to the line bound, and the file's line count."""

    first: int
    lines: list[str] = msgspec.field(default_factory=list[str])
    full_lengths: list[int] = msgspec.field(default_factory=list[int])
    total: int = 0
    unit: str = "chars"  # of full_lengths: a line cut while streaming is only known in bytes


def window_of(text: str, first: int, last: int | None, budget: int) -> Window:
    lines = split_lines(text)
    stop = len(lines) if last is None else min(last, len(lines))
    win = Window(first, total=len(lines))
    used = 0
    for line in lines[first - 1 : stop]:
        line = line.removesuffix("\r")
        win.lines.append(line[: LINE_MAX_CHARS + 1])
        win.full_lengths.append(len(line))
        used += min(len(line), LINE_MAX_CHARS) + 1
        if used > budget:
            break
    return win


async def stream_window(
    ctx: Capabilities, full: Path, size: int, first: int, last: int | None, budget: int
) -> Window:
    """A window of a file too large to load: read in chunks, keep only the window's lines (each
    cut), count every line. Memory stays within a few chunks whatever the file's size."""
    win = Window(first)
    scan = _Scan(win, first, last, budget)
    offset = 0
    ends_with_newline = True
    while offset < size:
        chunk = await ctx.fs.read_bytes(full, offset=offset, max_bytes=STREAM_CHUNK)
        if not chunk:
            break
        offset += len(chunk)
        ends_with_newline = chunk.endswith(b"\n")
        scan.feed(chunk)
    if scan.cur_len:  # a last line without a newline, in the window
        scan.keep()
        ends_with_newline = True
    partial = offset > 0 and not ends_with_newline  # one more line, past the window
    win.total = scan.line_no if partial else scan.line_no - 1
    return win


class _Scan:
    """Line bookkeeping over chunks: the lines before and after the window are only counted."""

    def __init__(self, win: Window, first: int, last: int | None, budget: int) -> None:
        self.win, self.first, self.last, self.budget = win, first, last, budget
        self.line_no = 1  # the line the next byte belongs to
        self.cur = bytearray()  # the head of the window line being read
        self.cur_len = 0
        self.used = 0

    def _in_window(self) -> bool:
        n = self.line_no
        return (
            self.first <= n and (self.last is None or n <= self.last) and self.used <= self.budget
        )

    def feed(self, chunk: bytes) -> None:
        pos = 0
        while pos < len(chunk):
            if not self._in_window():
                if self.line_no >= self.first:  # past the window: count the rest
                    self.line_no += chunk.count(b"\n", pos)
                    return
                pos = self._skip(chunk, pos)
                continue
            nl = chunk.find(b"\n", pos)
            end = nl if nl >= 0 else len(chunk)
            room = 4 * (LINE_MAX_CHARS + 1) - len(self.cur)
            if room > 0:
                self.cur += chunk[pos : min(end, pos + room)]
            self.cur_len += end - pos
            if nl < 0:
                return
            self.keep()
            pos = nl + 1

    def _skip(self, chunk: bytes, pos: int) -> int:
        """Past the lines before the window: the position after them, or the chunk's end."""
        wanted = self.first - self.line_no
        if chunk.count(b"\n", pos) < wanted:
            self.line_no += chunk.count(b"\n", pos)
            return len(chunk)
        for _ in range(wanted):
            pos = chunk.index(b"\n", pos) + 1
        self.line_no = self.first
        return pos

    def keep(self) -> None:
        self.used += _keep(self.win, self.cur, self.cur_len)
        self.line_no += 1
        self.cur, self.cur_len = bytearray(), 0


def _keep(win: Window, raw: bytearray, length: int) -> int:
    line = bytes(raw).decode("utf-8", "replace").removesuffix("\r")
    cut = line[: LINE_MAX_CHARS + 1]
    win.lines.append(cut)
    # A line kept whole has its length in chars; one cut while reading only in bytes.
    win.full_lengths.append(len(line) if len(raw) >= length else length)
    return min(len(cut), LINE_MAX_CHARS) + 1


def fence(text: str) -> str:
    """Text in a Markdown code block whose fence no line of it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{bar}\n{text.rstrip(chr(10))}\n{bar}"
