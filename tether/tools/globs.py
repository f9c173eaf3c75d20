"""Globs (`src/**/*.{ts,tsx}`) as regular expressions over `/`-separated relative paths, built so
that matching one path costs about its length times the pattern's, whatever the model wrote.

A direct translation backtracks catastrophically: `*a*a*a*a*a*a*b` against a long file name, or
`**/**/**/**/**/**/**/**/x` against a deep path, keeps `re` busy for minutes, and `re` holds the
GIL, so the whole agent stalls. Here, as in fnmatch, the text between two `*`s takes its earliest
match in an atomic group (`(?>[^/]*?piece)`), and so does each run of segments between two `**`s:
with a star after it, the earliest match of a fixed-length piece is as good as any. `{a,b}`
alternatives are spelled out first, so that every piece has a fixed length, and each segment is
atomic, so no segment is tried twice for the same place.
"""

from __future__ import annotations

import re

from tether.errors import ToolError

GLOB_MAX_SPELLINGS = 256  # the `{a,b}` combinations one path segment may spell out
_STAR = "*"  # a token of its own; every other token is a regex for one character
_SEGMENT_END = "(?![^/])"  # the segment's text ends here: a `/` or the end follows
_DIRS = "(?:[^/]+/)*"  # what `**/` matches: no directory or several


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regular expression over `/`-separated relative paths (use `fullmatch`)."""
    pattern = pattern.strip()
    if not pattern:
        raise ToolError("INVALID_ARGS", "pattern must not be empty")
    if pattern.startswith("/"):
        raise ToolError("INVALID_ARGS", "pattern must be relative: pass the directory as `path`")
    segments = _collapse(pattern.removeprefix("./").split("/"))
    try:
        return re.compile(_path(segments, pattern))
    except re.error as exc:
        raise ToolError("INVALID_ARGS", f"bad glob pattern {pattern!r}: {exc}") from None


def _collapse(segments: list[str]) -> list[str]:
    """`**/**` matches what `**` does."""
    out: list[str] = []
    for seg in segments:
        if not (seg == "**" and out and out[-1] == "**"):
            out.append(seg)
    return out


def _path(segments: list[str], pattern: str) -> str:
    """The segments between two `**`s are a block; a block with a `**` after it takes its first
    place (atomic), the last block any place that ends the path."""
    out: list[str] = []
    block: list[str] = []
    lead: str | None = None  # how the block being built is entered: None (the start) or `**`
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg != "**":
            block.append(_segment(seg, pattern) + ("" if last else "/"))
            continue
        out.append(_block(lead, block, more=True))
        block, lead = [], "**"
        if last:
            out.append(".*")
    if block or lead is None:
        out.append(_block(lead, block, more=False))
    return "".join(out)


def _block(lead: str | None, block: list[str], *, more: bool) -> str:
    body = "".join(block)
    if lead is None:
        return body
    return f"(?>{_DIRS}?{body})" if more else f"{_DIRS}{body}"


def _segment(seg: str, pattern: str) -> str:
    alternatives = "|".join(_spelling(s) for s in _spellings(seg, pattern))
    return f"(?>(?:{alternatives}){_SEGMENT_END})"


def _spelling(tokens: tuple[str, ...]) -> str:
    """One brace-free spelling: `*`s split it into fixed-length pieces."""
    pieces: list[list[str]] = [[]]
    for t in tokens:
        if t != _STAR:
            pieces[-1].append(t)
        elif len(pieces) == 1 or pieces[-1]:  # `**` inside a segment is one `*`
            pieces.append([])
    if len(pieces) == 1:
        return "".join(pieces[0])
    first, *middle, end = ("".join(p) for p in pieces)
    return first + "".join(f"(?>[^/]*?{m})" for m in middle) + "[^/]*" + end


def _spellings(seg: str, pattern: str) -> list[tuple[str, ...]]:
    """The segment with each `{a,b}` spelled out, as tokens; duplicates dropped."""
    spellings: list[tuple[str, ...]] = [()]
    i = 0
    while i < len(seg):
        if seg[i] == "{" and "}" in seg[i:]:
            end = seg.index("}", i)
            options = [s for o in seg[i + 1 : end].split(",") for s in _spellings(o, pattern)]
            i = end + 1
        else:
            token, i = _token(seg, i)
            options = [(token,)]
        spellings = list(dict.fromkeys(s + o for s in spellings for o in options))
        if len(spellings) > GLOB_MAX_SPELLINGS:
            raise ToolError(
                "INVALID_ARGS",
                f"glob pattern {pattern!r} spells out over {GLOB_MAX_SPELLINGS} alternatives "
                "in one segment: use fewer {a,b} groups",
            )
    return spellings


def _token(seg: str, i: int) -> tuple[str, int]:
    """The token at `seg[i]` and the index after it."""
    c = seg[i]
    if c == "*":
        return _STAR, i + 1
    if c == "?":
        return "[^/]", i + 1
    if c == "[" and seg.find("]", i + 2) > 0:
        end = seg.find("]", i + 2)
        body = seg[i + 1 : end].replace("\\", "\\\\")
        body = "^" + body[1:] if body.startswith("!") else body
        return f"(?:(?!/)[{body}])", end + 1  # a class never matches the separator
    return re.escape(c), i + 1


_HINT_SAFE = re.compile(r"[\w.*?{},+@%=~ -]+")  # what reads the same in ripgrep's globs


def name_hint(pattern: str) -> str | None:
    """A glob on file names that every path `pattern` matches ends in (its last segment), for a
    search engine to narrow its walk with; None when that would not narrow it, or when the
    segment holds syntax another glob dialect may read differently (sets, nested braces)."""
    last = pattern.strip().rstrip("/").rpartition("/")[2]
    if not last or set(last) <= {"*"} or not _HINT_SAFE.fullmatch(last):
        return None
    depth = 0
    for c in last:
        depth += (c == "{") - (c == "}")
        if depth not in (0, 1):
            return None
    return last.replace("**", "*") if depth == 0 else None
