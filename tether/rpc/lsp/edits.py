"""Text changes as LSP edits: the lines that differ between the editor's text and the new text,
as one `TextEdit` (common leading and trailing lines are left alone, so the editor keeps its
cursor, marks and folds there and one undo step reverts the change)."""

from __future__ import annotations

import re
from collections.abc import Callable

from lsprotocol import types

# LSP's line breaks: \n, \r\n and \r (not the other separators str.splitlines knows).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")

Units = Callable[[str], int]  # a string's length in the client's position encoding


def lines_of(text: str) -> list[str]:
    """The lines of `text`, each with its line break."""
    return _LINE.findall(text)


def line_edit(old: str, new: str, units: Units) -> types.TextEdit | None:
    """One edit turning `old` into `new` (None when they are equal)."""
    if old == new:
        return None
    a, b = lines_of(old), lines_of(new)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = _position(a, head, units)
    end = _position(a, len(a) - tail, units)
    return types.TextEdit(
        range=types.Range(start=start, end=end), new_text="".join(b[head : len(b) - tail])
    )


def _position(lines: list[str], index: int, units: Units) -> types.Position:
    """Where line `index` starts; for the index past the last line, the end of the text."""
    if index < len(lines) or not lines:
        return types.Position(line=index, character=0)
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return types.Position(line=len(lines), character=0)
    return types.Position(line=len(lines) - 1, character=units(last))


def fill_empty(text: str) -> types.TextEdit:
    """The edit that fills a new, empty document with `text`. Its range ends on the line after
    the last (clients clamp it to the end), as `line_edit` does at the end of a text: Neovim
    then knows the text's final line break stands for its buffer's end of line, instead of
    keeping its empty last line below the text."""
    start, end = types.Position(line=0, character=0), types.Position(line=1, character=0)
    return types.TextEdit(range=types.Range(start=start, end=end), new_text=text)
