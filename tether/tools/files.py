"""File tools: read_file, write_file, list_dir, view_image."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Literal

from tether.engine.events import DiffOut, TextOut
from tether.engine.history import ImagePart
from tether.engine.images import IMAGE_MAX_BYTES, image_type
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import TEXT_MAX_BYTES, Capabilities, DirEntry, FileStat
from tether.errors import SeamError, ToolError
from tether.tools.text import (
    LINE_MAX_CHARS,
    SNIFF_BYTES,
    Window,
    check_text,
    load_text,
    stream_window,
    window_of,
)
from tether.tools.tool_paths import (
    display,
    existing,
    named,
    path_card,
    regular_file,
    resolve,
    spill_root,
)

READ_MAX_CHARS = 32_000
READ_HARD_MAX = 200_000
LIST_MAX_ENTRIES = 500


class ReadFileArgs(ToolArgs):
    path: str
    start_line: int = 1
    end_line: int | None = None
    with_lineno: bool = False
    max_chars: int = READ_MAX_CHARS


@tool(kind="read", read_only=True, spill=False)
async def read_file(ctx: Capabilities, args: ReadFileArgs) -> ToolOutput:
    """Read a text file of the project (the editor's unsaved text when it has the file open).

    The output starts with a label `L{start}-{end} of {total}` naming the lines shown. Lines
    longer than 2000 characters are cut. Images and other binary files are refused (use
    view_image for images).

    Args:
        path: File path, relative to the project directory or absolute.
        start_line: First line to show, 1-based.
        end_line: Last line to show, inclusive; the end of the file when omitted.
        with_lineno: Prefix each line with its number and a tab. Lines read this way may be
            changed with edit_lineno during this turn.
        max_chars: At most this many characters are returned (up to 200000).
    """
    path, start_line, end_line = args.path, args.start_line, args.end_line
    if start_line < 1:
        raise ToolError("INVALID_ARGS", "start_line must be 1 or more")
    if end_line is not None and end_line < start_line:
        raise ToolError("INVALID_ARGS", f"end_line ({end_line}) is before start_line")
    full = resolve(ctx, path, extra_roots=spill_root(ctx))
    budget = min(max(args.max_chars, 1), READ_HARD_MAX)
    st = await ctx.fs.stat(full)
    if st is None:  # not on disk: an editor may still hold it, as a new unsaved buffer
        win = window_of(await _unsaved(ctx, full, path), start_line, end_line, budget)
    else:
        st = await regular_file(ctx, full, path)
        await check_text(ctx, full, path, st)
        if st.size <= TEXT_MAX_BYTES:
            win = window_of(await ctx.fs.read_text(full), start_line, end_line, budget)
        else:
            win = await stream_window(ctx, full, st.size, start_line, end_line, budget)
    if win.total and start_line > win.total:
        raise ToolError(
            "INVALID_ARGS", f"start_line={start_line} is past the end of {path} ({win.total} lines)"
        )
    body, shown = _render(win, budget, args.with_lineno)
    last = start_line + len(shown) - 1
    label = _label(win, last, end_line, shown)
    if args.with_lineno and st is not None:
        ctx.reads.record(full, st.stamp, {n: t for n, (t, cut) in shown.items() if not cut})
    return ToolOutput(f"{label}\n{body}", [TextOut(f"{display(ctx, full)} {label}")])


async def _unsaved(ctx: Capabilities, full: Path, path: str) -> str:
    try:
        return await ctx.fs.read_text(full)
    except SeamError as exc:
        if exc.code == "FILE_NOT_FOUND":
            raise ToolError("FILE_NOT_FOUND", f"no such file or directory: {path}") from None
        raise


def _render(win: Window, budget: int, numbered: bool) -> tuple[str, dict[int, tuple[str, bool]]]:
    """The lines that fit the budget; a first line alone over it is cut to fit."""
    out: list[str] = []
    shown: dict[int, tuple[str, bool]] = {}
    used = 0
    for i, line in enumerate(win.lines):
        n = win.first + i
        prefix = f"{n}\t" if numbered else ""
        limit = LINE_MAX_CHARS
        if not out and len(prefix) + min(len(line), limit) + 1 > budget:
            limit = max(budget - len(prefix) - 1, 1)
        elif used + len(prefix) + min(len(line), limit) + 1 > budget:
            break
        cut = win.full_lengths[i] > limit
        text = line[:limit]
        out.append(prefix + text + (f" [… line cut after {limit} chars]" if cut else ""))
        shown[n] = (text, cut)
        used += len(out[-1]) + 1
        if limit < LINE_MAX_CHARS:
            break
    return "\n".join(out), shown


def _label(win: Window, last: int, end_line: int | None, shown: dict[int, tuple[str, bool]]) -> str:
    if win.total == 0:
        return "L0-0 of 0 (empty file)"
    label = f"L{win.first}-{last} of {win.total}"
    wanted = win.total if end_line is None else min(end_line, win.total)
    if last < wanted:
        label += f" (truncated; continue with start_line={last + 1})"
    cut = [n for n, (_, c) in shown.items() if c]
    if cut:
        label += f" (line{'s' if len(cut) > 1 else ''} {', '.join(map(str, cut[:5]))} cut)"
    return label


@read_file.planned_by
async def _plan_read(ctx: Capabilities, args: ReadFileArgs, mode: str) -> CallPlan:
    full = resolve(ctx, args.path, extra_roots=spill_root(ctx))
    return path_card(ctx, "Read", "read", full, line=args.start_line or 1)


@read_file.described_by
def _describe_read(ctx: Capabilities, args: ReadFileArgs) -> CallPlan:
    return named(f"Read {args.path}", "read", ctx, args.path)


class WriteFileArgs(ToolArgs):
    path: str
    content: str
    overwrite: bool = False


@tool(kind="edit")
async def write_file(ctx: Capabilities, args: WriteFileArgs) -> ToolOutput:
    """Create a text file, or replace an existing one when `overwrite` is true.

    Parent directories are created as needed. Replacing a file always asks the user first.
    To change part of a file, prefer edit_replace or edit_lineno.

    Args:
        path: File path, relative to the project directory or absolute.
        content: The complete new text of the file.
        overwrite: Must be true to replace a file that already exists.
    """
    full = resolve(ctx, args.path, access="write")
    old, unchanged = await _old_text(ctx, full, args)
    content = args.content
    if unchanged:
        return ToolOutput(f"{display(ctx, full)} already has this content; nothing written")
    await ctx.fs.write_text(full, content)
    ctx.reads.forget(full)
    verb = "replaced" if old is not None else "created"
    return ToolOutput(
        f"{verb} {display(ctx, full)} ({len(content.encode())} bytes)",
        [DiffOut(str(full), content, old)],
    )


@write_file.planned_by
async def _plan_write(ctx: Capabilities, args: WriteFileArgs, mode: str) -> CallPlan:
    full = resolve(ctx, args.path, access="write")
    old, unchanged = await _old_text(ctx, full, args)
    verb = "Rewrite (unchanged)" if unchanged else "Replace" if old is not None else "Create"
    plan = path_card(ctx, verb, "edit", full)
    plan.content = [DiffOut(str(full), args.content, old)]
    # Writing what is already there changes nothing: nobody needs to be asked.
    plan.confirm = not unchanged and (old is not None or mode != "code")
    plan.waived_by_mode = not unchanged and old is None and mode == "code"
    # "Always" covers this operation on this file, as the option says: never the folder, and
    # creating a file is not replacing one.
    replacing = old is not None
    plan.scope = f"{'replace' if replacing else 'create'} {full}"
    plan.grant_label = f"{'replacing' if replacing else 'creating'} {display(ctx, full)}"
    plan.writes = [str(full)]
    return plan


@write_file.described_by
def _describe_write(ctx: Capabilities, args: WriteFileArgs) -> CallPlan:
    return named(f"Write {args.path}", "edit", ctx, args.path)


async def _old_text(ctx: Capabilities, full: Path, args: WriteFileArgs) -> tuple[str | None, bool]:
    """The text a write would replace (None: a new file) and whether it equals the new
    content; refuses what must not be replaced."""
    path, content, overwrite = args.path, args.content, args.overwrite
    st = await ctx.fs.stat(full)
    if st is None:
        return None, False
    if st.kind == "dir":
        raise ToolError("IS_A_DIRECTORY", f"{path} is a directory")
    st = await regular_file(ctx, full, path)
    if not overwrite and st.size != len(content.encode()):
        raise ToolError("FILE_EXISTS", f"{path} exists; pass overwrite=true to replace it")
    try:
        old = await load_text(ctx, full, path, st)
    except (ToolError, SeamError) as exc:
        if exc.code not in ("BINARY_FILE", "FILE_TOO_LARGE"):
            raise
        old = f"({exc.message})\n"  # no text to show: replacing it still asks, and says why
    if old == content:
        return old, True
    if not overwrite:
        raise ToolError("FILE_EXISTS", f"{path} exists; pass overwrite=true to replace it")
    _single_link(path, st)
    return old, False


def _single_link(path: str, st: FileStat) -> None:
    if st.links > 1:
        raise ToolError(
            "HARD_LINK",
            f"{path} has {st.links} hard links: writing it would change the same file under its "
            "other names, which may lie outside the project. Copy it to a new file and edit "
            "that instead.",
        )


class ListDirArgs(ToolArgs):
    path: str = "."


@tool(kind="read", read_only=True)
async def list_dir(ctx: Capabilities, args: ListDirArgs) -> ToolOutput:
    """List a directory of the project: one entry a line, directories end with `/`.

    Args:
        path: Directory path, relative to the project directory or absolute.
    """
    full = resolve(ctx, args.path)
    st = await existing(ctx, full, args.path)
    if st.kind != "dir":
        raise ToolError("NOT_A_DIRECTORY", f"{args.path} is a file; use read_file")
    entries = sorted(
        (_entry_name(e) for e in await ctx.fs.list_dir(full)),
        key=lambda n: (not n.endswith("/"), n.lower()),
    )
    shown = entries[:LIST_MAX_ENTRIES]
    head = f"{display(ctx, full)}: {len(entries)} entries"
    if len(entries) > len(shown):
        head += f" (first {len(shown)} shown)"
    text = "\n".join([head, *shown])
    return ToolOutput(text, [TextOut(text)])


def _entry_name(e: DirEntry) -> str:
    if e.kind == "dir" or e.target == "dir":
        return e.name + "/"
    if e.kind == "other" or (e.kind == "symlink" and e.target not in ("file", "dir")):
        return f"{e.name} (not a regular file)"
    return e.name


@list_dir.planned_by
async def _plan_list(ctx: Capabilities, args: ListDirArgs, mode: str) -> CallPlan:
    return path_card(ctx, "List", "read", resolve(ctx, args.path))


@list_dir.described_by
def _describe_list(ctx: Capabilities, args: ListDirArgs) -> CallPlan:
    return named(f"List {args.path}", "read", ctx, args.path)


class ViewImageArgs(ToolArgs):
    path: str
    detail: Literal["auto", "low", "high", "original"] = "auto"


@tool(kind="read", read_only=True, spill=False)
async def view_image(ctx: Capabilities, args: ViewImageArgs) -> ToolOutput:
    """Look at an image file of the project (PNG, JPEG, GIF or WebP), for models that see images.

    Args:
        path: Image path, relative to the project directory or absolute.
        detail: How closely to look: auto, low, high or original resolution.
    """
    path, detail = args.path, args.detail
    model = ctx.llm.info if ctx.llm is not None else None
    if model is None or not model.images:
        name = model.id if model is not None else "this session's model"
        raise ToolError(
            "IMAGES_UNSUPPORTED",
            f"the model {name} does not accept images, so view_image cannot show {path}",
        )
    full = resolve(ctx, path)
    st = await regular_file(ctx, full, path)
    mime = image_type(await ctx.fs.read_bytes(full, max_bytes=SNIFF_BYTES))
    if mime is None:
        raise ToolError("NOT_AN_IMAGE", f"{path} is not a PNG, JPEG, GIF or WebP image")
    if st.size > IMAGE_MAX_BYTES:
        raise ToolError(
            "FILE_TOO_LARGE",
            f"{path} has {st.size} bytes; images over {IMAGE_MAX_BYTES} bytes are not sent",
        )
    data = await ctx.fs.read_bytes(full, max_bytes=IMAGE_MAX_BYTES)
    image = ImagePart(base64.b64encode(data).decode(), mime, None if detail == "auto" else detail)
    text = f"{display(ctx, full)}: {mime} image, {len(data)} bytes (shown to you below)"
    return ToolOutput(text, [TextOut(text)], images=[image])


@view_image.planned_by
async def _plan_view(ctx: Capabilities, args: ViewImageArgs, mode: str) -> CallPlan:
    return path_card(ctx, "View", "read", resolve(ctx, args.path))


@view_image.described_by
def _describe_view(ctx: Capabilities, args: ViewImageArgs) -> CallPlan:
    return named(f"View {args.path}", "read", ctx, args.path)
