"""Terminal output as text a model (and a tool card) can read: escape sequences removed, so
nothing a program printed can recolour, move or reset the user's terminal; carriage-return
redraws and backspaces applied; other control characters dropped."""

from __future__ import annotations

import re

_ESCAPES = re.compile(
    r"""
    \x1b\[[0-?]*[\x20-/]*[@-~]            # CSI: colours, cursor moves, clears, modes
  | \x9b[0-?]*[\x20-/]*[@-~]              # 8-bit CSI
  | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?    # OSC: titles, hyperlinks, clipboard
  | \x1b[PX^_][^\x1b]*(?:\x1b\\)?         # DCS, SOS, PM, APC strings
  | \x1b[\x20-/]+[0-~]                    # nF: charset selection (ESC ( B)
  | \x1b[0-~]                             # two-byte: ESC 7, ESC =, ESC c (full reset)
    """,
    re.VERBOSE,
)
_CONTROLS = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]")


def sanitize(text: str) -> str:
    text = _ESCAPES.sub("", text).replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(_redraw(line) for line in text.split("\n"))
    if "\b" in text:
        text = _backspaces(text)
    return _CONTROLS.sub("", text)


def _redraw(line: str) -> str:
    """A line redrawn after carriage returns (progress bars) reads as its last drawing."""
    parts = [p for p in line.split("\r") if p]
    return parts[-1] if parts else ""


def _backspaces(text: str) -> str:
    out: list[str] = []
    for ch in text:
        if ch == "\b":
            if out and out[-1] != "\n":
                out.pop()
        else:
            out.append(ch)
    return "".join(out)
