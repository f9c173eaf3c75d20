"""Edit tools: edit_replace (exact text) and edit_lineno (lines read with numbers this turn).

Both compute the new text when planned, so the permission card shows the diff, and again when
they run, from the file as it is then (an earlier call of the round may have changed it).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tether.engine.events import DiffOut
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities, FileStat
from tether.errors import ToolError
from tether.tools.text import load_text, split_lines
from tether.tools.tool_paths import display, named, path_card, regular_file, resolve


class _Edit(msgspec.Struct):
    full: Path
    old: str
    new: str
    summary: str
    line: int  # where the change starts, for the card's location


async def _target(ctx: Capabilities, path: str) -> tuple[Path, FileStat]:
    full = resolve(ctx, path, access="write")
    st = await regular_file(ctx, full, path)
    if st.links > 1:
        raise ToolError(
            "HARD_LINK",
            f"{path} has {st.links} hard links: editing it would change the same file under its "
            "other names, which may lie outside the project. Copy it to a new file and edit "
            "that instead.",
        )
    return full, st


def _plan(ctx: Capabilities, e: _Edit) -> CallPlan:
    plan = path_card(ctx, "Edit", "edit", e.full, line=e.line)
    plan.content = [DiffOut(str(e.full), e.new, e.old)]
    plan.confirm = True
    plan.scope = f"edit {e.full}"  # "always": edits of this file, never of its folder
    plan.grant_label = f"editing {display(ctx, e.full)}"
    plan.writes = [str(e.full)]
    return plan


def _describe(ctx: Capabilities, args: EditReplaceArgs | EditLinenoArgs) -> CallPlan:
    return named(f"Edit {args.path}", "edit", ctx, args.path)


async def _apply(ctx: Capabilities, e: _Edit) -> ToolOutput:
    await ctx.fs.write_text(e.full, e.new)
    ctx.reads.forget(e.full)
    return ToolOutput(e.summary, [DiffOut(str(e.full), e.new, e.old)])


# --- edit_replace ---------------------------------------------------------------------------


class EditReplaceArgs(ToolArgs):
    path: str
    old: str
    new: str
    max_replaces: int | None = None


@tool(kind="edit")
async def edit_replace(ctx: Capabilities, args: EditReplaceArgs) -> ToolOutput:
    """Replace exact text in a file: `old` (whitespace and indentation included) becomes `new`.

    Without max_replaces, `old` must occur exactly once: include enough surrounding lines to
    make it unique. The result says how many matches remain.

    Args:
        path: File path, relative to the project directory or absolute.
        old: The exact text to find; it must not be empty.
        new: The text to put in its place (empty to delete it).
        max_replaces: Replace up to this many matches, first to last (e.g. to rename throughout
            the file). When omitted, `old` must match exactly once.
    """
    return await _apply(ctx, await _replace(ctx, args))


edit_replace.described_by(_describe)


@edit_replace.planned_by
async def _plan_replace(ctx: Capabilities, args: EditReplaceArgs, mode: str) -> CallPlan:
    return _plan(ctx, await _replace(ctx, args))


async def _replace(ctx: Capabilities, args: EditReplaceArgs) -> _Edit:
    path, old, new, max_replaces = args.path, args.old, args.new, args.max_replaces
    if not old:
        raise ToolError("INVALID_ARGS", "old must not be empty; use write_file to create a file")
    if old == new:
        raise ToolError("INVALID_ARGS", "old and new are the same text: nothing would change")
    if max_replaces is not None and max_replaces < 1:
        raise ToolError("INVALID_ARGS", "max_replaces must be 1 or more")
    full, st = await _target(ctx, path)
    text = await load_text(ctx, full, path, st)
    if old not in text and "\r\n" in text and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")  # a CRLF file
    count = text.count(old)
    if count == 0:
        raise ToolError("EDIT_NOT_FOUND", f"old text not found in {path}{_near_miss(text, old)}")
    if max_replaces is None and count > 1:
        lines = _match_lines(text, old)
        raise ToolError(
            "EDIT_AMBIGUOUS",
            f"old text occurs {count} times in {path} (lines {lines}); include more surrounding "
            "text to make it unique, or pass max_replaces to replace several",
        )
    done = min(count, max_replaces or 1)
    first = text[: text.index(old)].count("\n") + 1
    summary = (
        f"edited {display(ctx, full)}: replaced {done} of {count} "
        f"match{'es' if count > 1 else ''} at line {first}"
        f"{'+' if done > 1 else ''}; {count - done} remain"
    )
    return _Edit(full, text, text.replace(old, new, done), summary, first)


def _match_lines(text: str, old: str, limit: int = 10) -> str:
    lines: list[str] = []
    start = text.find(old)
    while start >= 0 and len(lines) < limit:
        lines.append(str(text.count("\n", 0, start) + 1))
        start = text.find(old, start + 1)
    return ", ".join(lines)


def _near_miss(text: str, old: str) -> str:
    """A hint when `old` matches apart from whitespace: the model's usual mistake."""
    want = [line.strip() for line in old.strip("\n").split("\n")]
    lines = [line.strip() for line in text.split("\n")]
    for i in range(len(lines) - len(want) + 1):
        if lines[i : i + len(want)] == want:
            return (
                f"; the same lines with different indentation or spacing are at line {i + 1}: "
                "copy them exactly (read_file shows the text as it is)"
            )
    return "; read the file again and copy the text exactly"


# --- edit_lineno ----------------------------------------------------------------------------


class EditLinenoArgs(ToolArgs):
    path: str
    start_line: int
    end_line: int
    new: str


@tool(kind="edit")
async def edit_lineno(ctx: Capabilities, args: EditLinenoArgs) -> ToolOutput:
    """Replace lines start_line..end_line (1-based, inclusive) of a file with `new`.

    Only lines you read with read_file(with_lineno=true) during this turn can be replaced, and
    only while the file is unchanged since. To insert without replacing, pass
    end_line = start_line - 1. Any write or edit of the file needs a new numbered read before
    the next edit_lineno, as line numbers move.

    Args:
        path: File path, relative to the project directory or absolute.
        start_line: First line to replace, 1-based.
        end_line: Last line to replace, inclusive (start_line - 1 inserts before start_line).
        new: The new lines (empty to delete the range).
    """
    return await _apply(ctx, await _by_lines(ctx, args))


edit_lineno.described_by(_describe)


@edit_lineno.planned_by
async def _plan_lines(ctx: Capabilities, args: EditLinenoArgs, mode: str) -> CallPlan:
    return _plan(ctx, await _by_lines(ctx, args))


async def _by_lines(ctx: Capabilities, args: EditLinenoArgs) -> _Edit:
    path, start, end, new = args.path, args.start_line, args.end_line, args.new
    if start < 1 or end < start - 1:
        raise ToolError(
            "INVALID_ARGS",
            "need 1 <= start_line <= end_line + 1 (end_line = start_line - 1 inserts)",
        )
    full, st = await _target(ctx, path)
    record = ctx.reads.get(full)
    if record is None:
        raise ToolError(
            "NOT_READ",
            f"read {path} with read_file(with_lineno=true) first: edit_lineno changes only lines "
            "read with line numbers this turn",
        )
    if record.stamp != st.stamp:
        raise ToolError(
            "FILE_CHANGED", f"{path} changed since you read it; read it again with with_lineno"
        )
    text = await load_text(ctx, full, path, st)
    lines = split_lines(text)
    if end > len(lines) or start > len(lines) + 1:
        raise ToolError(
            "INVALID_ARGS", f"{path} has {len(lines)} lines; lines {start}-{end} do not exist"
        )
    _check_seen(path, record.lines, lines, start, end)
    cr = "\r" if lines and lines[0].endswith("\r") else ""  # keep a CRLF file CRLF
    added = [line + cr for line in split_lines(new.replace("\r\n", "\n"))] if new else []
    result = [*lines[: start - 1], *added, *lines[end:]]
    ends = text.endswith("\n") if text else True
    new_text = "\n".join(result) + ("\n" if result and ends else "")
    removed = end - start + 1
    summary = (
        f"edited {display(ctx, full)}: lines {start}-{end} ({removed} lines) replaced by "
        f"{len(added)} lines; later lines moved by {len(added) - removed:+d}. Read the file "
        "again with with_lineno before another edit_lineno."
    )
    return _Edit(full, text, new_text, summary, start)


def _check_seen(path: str, seen: dict[int, int], lines: list[str], start: int, end: int) -> None:
    """Every line replaced was shown (uncut) and still reads the same. An insertion needs the
    line before it (or, at the top, the first line), an empty file nothing."""
    wanted = list(range(start, end + 1)) or ([start - 1] if start > 1 else [1] if lines else [])
    unseen = [n for n in wanted if n not in seen]
    if unseen:
        read = _ranges(sorted(seen)) or "none"
        raise ToolError(
            "NOT_READ",
            f"lines {_ranges(unseen)} of {path} were not read with line numbers this turn "
            f"(read: {read}); read them with read_file(with_lineno=true) first",
        )
    changed = [n for n in wanted if hash(lines[n - 1].removesuffix("\r")) != seen[n]]
    if changed:
        raise ToolError(
            "FILE_CHANGED",
            f"lines {_ranges(changed)} of {path} changed since you read them; read them again",
        )


def _ranges(numbers: list[int]) -> str:
    out: list[str] = []
    for n in numbers:
        if out and out[-1].split("-")[-1] == str(n - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        else:
            out.append(str(n))
    return ", ".join(out[:8]) + (" …" if len(out) > 8 else "")
