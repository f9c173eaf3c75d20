"""/undo: the file changes of a turn, reverted. The pipeline keeps each file's content from
before the turn first wrote it (a pre-image); `/undo` shows the way back as diff cards, asks,
and restores. A second `/undo` goes one more turn back.

Pre-images are text read through `ctx.fs` (so an editor's unsaved buffer is what comes back).
A file that cannot be read as text, or is over the size limit, is named as not undoable.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec

from tether.engine.events import (
    DiffOut,
    Event,
    Location,
    TextOut,
    ToolContent,
    ToolFinished,
    ToolStarted,
)
from tether.engine.seam import Capabilities, ConfirmRequest
from tether.errors import SeamError

MAX_PRE_IMAGE = 1 << 20  # bytes of text kept per file
MAX_TURNS = 20  # turns that can be undone

Emit = Callable[[Event], Awaitable[None]]


class PreImage(msgspec.Struct, frozen=True):
    path: str
    before: str | None  # None: the file did not exist


class TurnChanges(msgspec.Struct):
    files: list[PreImage] = []
    not_undoable: list[str] = []  # written, but no text pre-image could be kept

    def seen(self, path: str) -> bool:
        return path in self.not_undoable or any(f.path == path for f in self.files)


async def remember(ctx: Capabilities, changes: TurnChanges, paths: list[str]) -> None:
    """Keep the pre-image of each path not yet written this turn (before the write)."""
    for path in paths:
        if changes.seen(path):
            continue
        image = await _pre_image(ctx, Path(path))
        if image is None:
            changes.not_undoable.append(path)
        else:
            changes.files.append(image)


async def _pre_image(ctx: Capabilities, path: Path) -> PreImage | None:
    try:
        stat = await ctx.fs.stat(path)
        if stat is None:
            return PreImage(str(path), None)
        if stat.kind != "file" or stat.size > MAX_PRE_IMAGE:
            return None
        return PreImage(str(path), await ctx.fs.read_text(path))
    except (OSError, SeamError, UnicodeDecodeError):
        return None


def push(stack: list[TurnChanges], changes: TurnChanges) -> None:
    if changes.files or changes.not_undoable:
        stack.append(changes)
        del stack[:-MAX_TURNS]


class _Revert(msgspec.Struct, frozen=True):
    path: str
    before: str | None  # what to restore; None: the turn created the file, so it goes
    current: str | None

    @property
    def diff(self) -> DiffOut:
        return DiffOut(self.path, self.before or "", self.current)


async def undo_last(stack: list[TurnChanges], ctx: Capabilities, emit: Emit) -> str:
    """Revert the newest turn's changes, with the user's consent; the reply to show."""
    if not stack:
        return "Nothing to undo: no earlier turn of this session changed files."
    changes = stack[-1]
    images = sorted(changes.files, key=lambda i: i.path)
    reverts = [r for image in images if (r := await _way_back(ctx, image)) is not None]
    if not reverts:
        stack.pop()
        return "The last turn's files are already as they were before it; nothing to undo."
    call_id = f"undo_{uuid.uuid4().hex[:12]}"
    names = ", ".join(_name(r) for r in reverts)
    title = f"Undo the last turn: {names}"
    diffs: list[ToolContent] = [r.diff for r in reverts]
    locations = [Location(r.path) for r in reverts]
    await emit(ToolStarted(call_id, None, title, "edit", {"undo": names}, locations, diffs))
    request = ConfirmRequest(call_id, "undo", title, "edit", {}, "", diffs, locations, names)
    [decision] = await ctx.approval.confirm([request], None)
    if decision.verdict != "allow":
        await emit(ToolFinished(call_id, "failed", [TextOut("Not undone: not allowed")]))
        return "Undo cancelled: nothing was changed."
    outcomes = [(r, await _revert(ctx, r)) for r in reverts]
    stack.pop()
    done = [_name(r) for r, e in outcomes if e is None]
    failed = [f"{_name(r)} ({e.code}: {e.message})" for r, e in outcomes if e is not None]
    status = "completed" if done else "failed"
    await emit(
        ToolFinished(call_id, status, [*diffs, *[TextOut(f"not undone: {f}") for f in failed]])
    )
    kept = ", ".join(changes.not_undoable)
    reply = f"Undone: {', '.join(done)}." if done else "Nothing was undone."
    if failed:
        reply += f" Not undone: {'; '.join(failed)}."
    return reply + (f" Not undone (no text copy was kept): {kept}." if kept else "")


async def _revert(ctx: Capabilities, r: _Revert) -> SeamError | None:
    """Restore one file; the error that stopped it (a path swapped for a symlink since, ...)."""
    try:
        if r.before is None:
            await ctx.fs.delete(Path(r.path), permanent=True)  # it did not exist before
        else:
            await ctx.fs.write_text(Path(r.path), r.before)
    except SeamError as exc:
        return exc
    return None


def _name(r: _Revert) -> str:
    name = os.path.basename(r.path)
    return f"{name} (delete)" if r.before is None else name


async def _way_back(ctx: Capabilities, image: PreImage) -> _Revert | None:
    now = await _pre_image(ctx, Path(image.path))
    current = now.before if now is not None else None
    if now is not None and current == image.before:
        return None  # already as it was
    return _Revert(image.path, image.before, current)
