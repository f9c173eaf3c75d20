"""File tools: read_file, write_file, list_dir."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from tether.engine.events import DiffOut, Location, TextOut
from tether.engine.registry import CallPlan, ToolError, ToolOutput, tool
from tether.engine.seam import Capabilities, SeamError
from tether.tools.paths import display, resolve

READ_MAX_CHARS = 32_000
READ_HARD_MAX = 200_000
LIST_MAX_ENTRIES = 500


def _spill_root(ctx: Capabilities) -> list[Path]:
    directory = getattr(ctx.spill, "directory", None)
    return [directory] if isinstance(directory, Path) else []


@tool(kind="read", read_only=True, spill=False)
async def read_file(
    ctx: Capabilities,
    path: str,
    start_line: int = 1,
    end_line: int | None = None,
    line_numbers: bool = False,
    max_chars: int = READ_MAX_CHARS,
) -> ToolOutput:
    """Read a text file of the project (the editor's unsaved text when it has the file open).

    The output starts with a label `L{start}-{end} of {total}` naming the lines shown.

    Args:
        path: File path, relative to the project directory or absolute.
        start_line: First line to show, 1-based.
        end_line: Last line to show, inclusive; the end of the file when omitted.
        line_numbers: Prefix each line with its number and a tab.
        max_chars: At most this many characters are returned (up to 200000).
    """
    full = resolve(ctx, path, extra_roots=_spill_root(ctx))
    text = await ctx.fs.read_text(full)
    lines = text.splitlines()
    first = max(start_line, 1)
    last = min(end_line or len(lines), len(lines))
    shown, last = _clip(lines, first, last, min(max(max_chars, 1), READ_HARD_MAX), line_numbers)
    label = f"L{first}-{last} of {len(lines)}"
    if last < (end_line or len(lines)):
        label += f" (truncated; continue with start_line={last + 1})"
    return ToolOutput(f"{label}\n{shown}", [TextOut(f"{display(ctx, full)} {label}")])


def _clip(lines: list[str], first: int, last: int, budget: int, numbered: bool) -> tuple[str, int]:
    out: list[str] = []
    used = 0
    for n in range(first, last + 1):
        line = f"{n}\t{lines[n - 1]}" if numbered else lines[n - 1]
        if used + len(line) + 1 > budget and out:
            return "\n".join(out), n - 1
        out.append(line)
        used += len(line) + 1
    return "\n".join(out), last


@read_file.planned_by
async def _plan_read(ctx: Capabilities, args: object, mode: str) -> CallPlan:
    path = str(getattr(args, "path", ""))
    full = resolve(ctx, path, extra_roots=_spill_root(ctx))
    line = int(getattr(args, "start_line", 1) or 1)
    return CallPlan(
        title=f"Read {display(ctx, full)}",
        kind="read",
        locations=[Location(str(full), line)],
        scope=str(full),
        target=display(ctx, full),
    )


@read_file.described_by
def _describe_read(ctx: Capabilities, args: object) -> CallPlan:
    return _named("Read", "read", ctx, args)


def _named(verb: str, kind: str, ctx: Capabilities, args: object) -> CallPlan:
    """A card naming the call's path as written, before any check (for refused calls)."""
    path = str(getattr(args, "path", ""))
    full = ctx.cwd / path
    return CallPlan(title=f"{verb} {path}", kind=kind, locations=[Location(str(full))], target=path)


@tool(kind="edit")
async def write_file(
    ctx: Capabilities, path: str, content: str, overwrite: bool = False
) -> ToolOutput:
    """Create a text file, or replace an existing one when `overwrite` is true.

    Parent directories are created as needed. Replacing a file always asks the user first.

    Args:
        path: File path, relative to the project directory or absolute.
        content: The complete new text of the file.
        overwrite: Must be true to replace a file that already exists.
    """
    full = resolve(ctx, path)
    old = await _existing_text(ctx, full)
    if old == content:
        return ToolOutput(f"{display(ctx, full)} already has this content; nothing written")
    if old is not None and not overwrite:
        raise ToolError("FILE_EXISTS", f"{path} exists; pass overwrite=true to replace it")
    await ctx.fs.write_text(full, content)
    verb = "replaced" if old is not None else "created"
    return ToolOutput(
        f"{verb} {display(ctx, full)} ({len(content.encode())} bytes)",
        [DiffOut(str(full), content, old)],
    )


@write_file.planned_by
async def _plan_write(ctx: Capabilities, args: object, mode: str) -> CallPlan:
    path = str(getattr(args, "path", ""))
    content = str(getattr(args, "content", ""))
    full = resolve(ctx, path)
    old = await _existing_text(ctx, full)
    if old is not None and not getattr(args, "overwrite", False):
        raise ToolError("FILE_EXISTS", f"{path} exists; pass overwrite=true to replace it")
    unchanged = old == content
    verb = "Rewrite (unchanged)" if unchanged else "Replace" if old is not None else "Create"
    return CallPlan(
        title=f"{verb} {display(ctx, full)}",
        kind="edit",
        locations=[Location(str(full))],
        content=[DiffOut(str(full), content, old)],
        # Writing what is already there changes nothing: nobody needs to be asked.
        confirm=not unchanged and (old is not None or mode != "code"),
        waived_by_mode=not unchanged and old is None and mode == "code",
        scope=str(full.parent),
        writes=[str(full)],
        target=display(ctx, full),
    )


@write_file.described_by
def _describe_write(ctx: Capabilities, args: object) -> CallPlan:
    return _named("Write", "edit", ctx, args)


async def _existing_text(ctx: Capabilities, full: Path) -> str | None:
    if not await anyio.Path(full).exists():
        return None
    if await anyio.Path(full).is_dir():
        raise ToolError("IS_A_DIRECTORY", f"{full} is a directory")
    try:
        return await ctx.fs.read_text(full)
    except SeamError as exc:  # it exists but is no text: replacing it still asks and says so
        return f"({exc.message})\n"


@tool(kind="read", read_only=True)
async def list_dir(ctx: Capabilities, path: str = ".") -> ToolOutput:
    """List a directory of the project: one entry a line, directories end with `/`.

    Args:
        path: Directory path, relative to the project directory or absolute.
    """
    full = resolve(ctx, path)
    try:
        entries = await anyio.to_thread.run_sync(_entries, full)
    except FileNotFoundError:
        raise ToolError("FILE_NOT_FOUND", f"no such directory: {path}") from None
    except NotADirectoryError:
        raise ToolError("NOT_A_DIRECTORY", f"{path} is a file; use read_file") from None
    shown = entries[:LIST_MAX_ENTRIES]
    head = f"{display(ctx, full) or '.'}: {len(entries)} entries"
    if len(entries) > len(shown):
        head += f" (first {len(shown)} shown)"
    text = "\n".join([head, *shown])
    return ToolOutput(text, [TextOut(text)])


def _entries(directory: Path) -> list[str]:
    with os.scandir(directory) as it:
        items = [e.name + ("/" if e.is_dir() else "") for e in it]
    return sorted(items, key=lambda n: (not n.endswith("/"), n.lower()))


@list_dir.planned_by
async def _plan_list(ctx: Capabilities, args: object, mode: str) -> CallPlan:
    full = resolve(ctx, str(getattr(args, "path", ".")))
    return CallPlan(
        title=f"List {display(ctx, full) or '.'}",
        kind="read",
        locations=[Location(str(full))],
        scope=str(full),
        target=display(ctx, full) or ".",
    )


@list_dir.described_by
def _describe_list(ctx: Capabilities, args: object) -> CallPlan:
    return _named("List", "read", ctx, args)
