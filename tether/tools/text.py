"""Text files as tools see them: what is text at all, a bounded window of lines (read from the
editor when the file is small, streamed from disk when it is not), and whole text for edits."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tether.engine.registry import ToolError
from tether.engine.seam import TEXT_MAX_BYTES, Capabilities, FileStat

SNIFF_BYTES = 8192
LINE_MAX_CHARS = 2000  # a longer line is cut (minified code, data on one line)
STREAM_CHUNK = 1024 * 1024

_IMAGES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(head: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, GIF or WebP from its first bytes."""
    for magic, mime in _IMAGES:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_binary(head: bytes) -> bool:
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the sniff window is still text.
        return exc.start < len(head) - 4
    return False


async def check_text(ctx: Capabilities, full: Path, shown: str, st: FileStat) -> None:
    """Refuse images (view_image shows them) and other binary files."""
    head = await ctx.fs.read_bytes(full, max_bytes=SNIFF_BYTES)
    mime = image_type(head)
    if mime is not None:
        raise ToolError(
            "NOT_TEXT", f"{shown} is an image ({mime}, {st.size} bytes); look at it with view_image"
        )
    if is_binary(head):
        raise ToolError(
            "NOT_TEXT", f"{shown} is a binary file ({st.size} bytes), not text; it is not shown"
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


@dataclass
class Window:
    """The lines of a read, each cut to the line bound, and the file's line count."""

    first: int
    lines: list[str] = field(default_factory=list[str])
    full_lengths: list[int] = field(default_factory=list[int])
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
    win = Window(first, unit="bytes")
    keep_bytes = 4 * (LINE_MAX_CHARS + 1)
    used = 0
    line_no, cur, cur_len = 1, bytearray(), 0
    offset = 0
    while offset < size:
        chunk = await ctx.fs.read_bytes(full, offset=offset, max_bytes=STREAM_CHUNK)
        if not chunk:
            break
        offset += len(chunk)
        pos = 0
        while pos <= len(chunk):
            nl = chunk.find(b"\n", pos)
            end = nl if nl >= 0 else len(chunk)
            wanted = line_no >= first and (last is None or line_no <= last) and used <= budget
            if wanted and len(cur) < keep_bytes:
                cur += chunk[pos : min(end, pos + keep_bytes - len(cur))]
            cur_len += end - pos
            if nl < 0:
                break
            if wanted:
                used += _keep(win, cur, cur_len)
            line_no, cur, cur_len, pos = line_no + 1, bytearray(), 0, nl + 1
    if cur_len:
        if line_no >= first and (last is None or line_no <= last) and used <= budget:
            _keep(win, cur, cur_len)
        line_no += 1
    win.total = line_no - 1
    return win


def _keep(win: Window, raw: bytearray, length: int) -> int:
    line = bytes(raw).decode("utf-8", "replace").removesuffix("\r")
    cut = line[: LINE_MAX_CHARS + 1]
    win.lines.append(cut)
    # A line kept whole has its length in chars; one cut while reading only in bytes.
    win.full_lengths.append(len(line) if len(raw) >= length else length)
    return min(len(cut), LINE_MAX_CHARS) + 1
