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


class CallDiff:
    """A call's diff, worked out once (difflib takes a while on a large file: the caller runs
    `diffs_of` in a worker thread): each file it changes with its hunks, without headers."""

    __slots__ = ("files",)

    def __init__(self, req: ConfirmRequest) -> None:
        self.files = [(d, _hunks(d)) for d in req.content if isinstance(d, DiffOut)]

    @property
    def hunks(self) -> list[str]:
        return [line for _, hunks in self.files for line in hunks]


def diffs_of(batch: Sequence[ConfirmRequest]) -> list[CallDiff]:
    return [CallDiff(req) for req in batch]


def title_line(req: ConfirmRequest, diff: CallDiff) -> str:
    """The call as the user judges it at a glance: its title and its diff's size."""
    added = sum(1 for line in diff.hunks if line.startswith("+"))
    removed = sum(1 for line in diff.hunks if line.startswith("-"))
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


def review_text(diffs: Sequence[CallDiff]) -> str:
    """The calls' diffs as one unified diff with file headers; empty when they change nothing."""
    lines: list[str] = []
    for diff in diffs:
        for d, hunks in diff.files:
            if hunks:
                old = "/dev/null" if d.old_text is None else d.path
                lines += [f"--- {old}", f"+++ {d.path}", *hunks]
    return "\n".join(lines) + "\n" if lines else ""


def _hunks(d: DiffOut) -> list[str]:
    old = (d.old_text or "").splitlines()
    return list(difflib.unified_diff(old, d.new_text.splitlines(), lineterm=""))[2:]  # headers


def _clip(line: str) -> str:
    return line if len(line) <= LINE_WIDTH else line[: LINE_WIDTH - 1] + "…"
