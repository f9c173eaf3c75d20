"""Where each key of a TOML document is written: tomllib reports lines for syntax errors only,
and a config error the user cannot find is half an error message.

The scan understands table headers, dotted keys, quoted keys, and skips the inside of multi-line
strings and arrays. It runs on text tomllib has already accepted, so it need not judge syntax.
"""

from __future__ import annotations

import json
import re

Key = tuple[str, ...]

_KEY_PART = re.compile(r"""\s*(?:([A-Za-z0-9_-]+)|"((?:[^"\\]|\\.)*)"|'([^']*)')\s*""")
_BASIC_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def index_keys(text: str) -> dict[Key, int]:
    """Every key path (and each of its prefixes) -> the 1-based line where it first appears."""
    index: dict[Key, int] = {}
    table: Key = ()
    value = _ValueScan()
    for number, line in enumerate(text.splitlines(), 1):
        if value.open:
            value.feed(line)  # still inside a multi-line string or array
            continue
        header = _header(line)
        if header is not None:
            table = header
            _record(index, table, number)
            continue
        parsed = _dotted_key(line, 0)
        if parsed is not None and line.startswith("=", parsed[1]):
            _record(index, table + parsed[0], number)
            value.feed(line[parsed[1] + 1 :])
    return index


def line_of(index: dict[Key, int], key: Key) -> int | None:
    """The line of `key`, else of its nearest enclosing key (an inline table, a table header)."""
    for end in range(len(key), 0, -1):
        found = index.get(key[:end])
        if found is not None:
            return found
    return None


def _record(index: dict[Key, int], key: Key, number: int) -> None:
    for end in range(1, len(key) + 1):
        index.setdefault(key[:end], number)


def _header(line: str) -> Key | None:
    stripped = line.lstrip()
    if not stripped.startswith("["):
        return None
    start = 2 if stripped.startswith("[[") else 1
    parsed = _dotted_key(stripped, start)
    if parsed is None or not stripped.startswith("]", parsed[1]):
        return None
    return parsed[0]


def _dotted_key(text: str, pos: int) -> tuple[Key, int] | None:
    """The dotted key at text[pos:] and the position after it, or None."""
    parts: list[str] = []
    while True:
        m = _KEY_PART.match(text, pos)
        if m is None:
            return None
        bare, basic, literal = m.groups()
        parts.append(
            bare if bare is not None else _unescape(basic) if basic is not None else literal
        )
        pos = m.end()
        if not text.startswith(".", pos):
            return tuple(parts), pos
        pos += 1


def _unescape(basic: str) -> str:
    try:
        value = json.loads(f'"{basic}"')  # TOML's basic-string escapes are JSON's, near enough
    except ValueError:
        return basic
    return value if isinstance(value, str) else basic


class _ValueScan:
    """Follows a value across lines: open while a multi-line string or a bracket is unclosed."""

    def __init__(self) -> None:
        self.quote: str | None = None  # the delimiter of an open multi-line string
        self.depth = 0  # open [ and {

    @property
    def open(self) -> bool:
        return self.quote is not None or self.depth > 0

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            if self.quote is not None:
                end = text.find(self.quote, i)
                if end < 0:
                    return
                i, self.quote = end + 3, None
                continue
            i = self._step(text, i)

    def _step(self, text: str, i: int) -> int:
        """Consume one token outside any multi-line string; returns the next position."""
        c = text[i]
        if c == "#":
            return len(text)
        if text.startswith(('"""', "'''"), i):
            self.quote = text[i : i + 3]
            return i + 3
        if c == '"':
            m = _BASIC_STRING.match(text, i)
            return m.end() if m else len(text)
        if c == "'":
            end = text.find("'", i + 1)
            return len(text) if end < 0 else end + 1
        if c in "[{":
            self.depth += 1
        elif c in "]}":
            self.depth -= 1
        return i + 1
