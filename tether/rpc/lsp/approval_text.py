"""An approval question as the text an LSP client shows (`window/showMessageRequest`'s message):
each call's title (what it edits or runs, with its diff's size), what its card says besides (where
a command runs, what is dangerous about it), and its diff's hunks, so the change is read before it
is decided. The diff in a question is bounded (DIFF_LINES); the whole of it goes to a review
document (`review_text`), which the question then names."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from tether.engine.events import DiffOut, TextOut
from tether.engine.seam import ConfirmRequest

DIFF_LINES = 60  # lines of diff a question carries, all its calls together
LINE_WIDTH = 200  # characters of one line of it


def title_line(req: ConfirmRequest) -> str:
    """The call as the user judges it at a glance: its title and its diff's size."""
    added = removed = 0
    for d in _diffs(req):
        for line in _hunks(d):
            if line.startswith("+"):
                added += 1
            elif line.startswith("-"):
                removed += 1
    return f"{req.title} (+{added} -{removed})" if added or removed else req.title


def details(req: ConfirmRequest) -> list[str]:
    """What the call's card says besides its diff (a command's sandbox, its dangers)."""
    lines = [line for c in req.content if isinstance(c, TextOut) for line in c.text.splitlines()]
    return [line for line in lines if line.strip().strip("`")]  # no blanks, no fence bars


class DiffBudget:
    """The diff lines a question may still carry, and how many it left out."""

    def __init__(self) -> None:
        self.shown = 0
        self.cut = 0

    def take(self, lines: list[str]) -> list[str]:
        shown = lines[: DIFF_LINES - self.shown]
        self.shown += len(shown)
        self.cut += len(lines) - len(shown)
        return [_clip(line) for line in shown]

    def end(self, review: str | None, question: str) -> list[str]:
        """The question's last lines: what was left out and where the whole diff is, then,
        after a diff, the question again (clients append their prompt's `: ` to the last line,
        which would otherwise be a line of the diff, and may show only the end)."""
        if not self.shown:  # no diff
            return []
        where = f" (the whole diff: {review})" if review else ""
        cut = [f"… {self.cut} more lines of the diff{where}"] if self.cut else []
        return [*cut, question]


def call_diff(req: ConfirmRequest) -> list[str]:
    """The call's hunks, without file headers (its title names the file)."""
    return [line for d in _diffs(req) for line in _hunks(d)]


def review_text(batch: Sequence[ConfirmRequest]) -> str:
    """The batch's diffs as one unified diff with file headers; empty when it has none."""
    lines: list[str] = []
    for req in batch:
        for d in _diffs(req):
            old = "/dev/null" if d.old_text is None else d.path
            lines += [f"--- {old}", f"+++ {d.path}", *_hunks(d)]
    return "\n".join(lines) + "\n" if lines else ""


def _diffs(req: ConfirmRequest) -> list[DiffOut]:
    return [c for c in req.content if isinstance(c, DiffOut)]


def _hunks(d: DiffOut) -> list[str]:
    old = (d.old_text or "").splitlines()
    return list(difflib.unified_diff(old, d.new_text.splitlines(), lineterm=""))[2:]  # headers


def _clip(line: str) -> str:
    return line if len(line) <= LINE_WIDTH else line[: LINE_WIDTH - 1] + "…"
