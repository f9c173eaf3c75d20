"""The YAML subset a `SKILL.md` header uses, read without a YAML library: `key: value` lines
(plain, 'single' or "double" quoted scalars, a plain scalar continued on more-indented lines),
block scalars (`|`, `>`, with `-` / `+`), one level of nested mapping (`metadata:`) and lists
(`[a, b]` or `- a` lines). Anything else is a FrontmatterError naming the line, so a header a
real YAML parser would read differently is reported rather than guessed at."""

from __future__ import annotations

import re

import msgspec

Value = str | list[str] | dict[str, str]

_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*))?$")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "r": "\r", "0": "\0"}


class FrontmatterError(ValueError):
    """The header is missing or is not the YAML subset skills use."""


class Document(msgspec.Struct, frozen=True):
    fields: dict[str, Value]
    body: str  # the Markdown after the header


def split(text: str) -> Document:
    """The header's fields and the body of a `SKILL.md`."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    if not text.startswith("---\n"):
        raise FrontmatterError("SKILL.md must start with a YAML frontmatter block (`---`)")
    end = re.search(r"^---[ \t]*$", text[4:], re.M)
    if end is None:
        raise FrontmatterError("the frontmatter block is not closed (a line `---`)")
    header = text[4 : 4 + end.start()]
    body = text[4 + end.end() :].lstrip("\n")
    return Document(parse(header, first_line=2), body)


def parse(header: str, first_line: int = 1) -> dict[str, Value]:
    """The top-level mapping of the header (errors name lines from `first_line`)."""
    lines = header.split("\n")
    out: dict[str, Value] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if _blank(line):
            i += 1
            continue
        at = i + first_line
        if line[0] in " \t":
            raise FrontmatterError(f"line {at}: unexpected indentation")
        m = _KEY.match(line.rstrip())
        if m is None:
            raise FrontmatterError(f"line {at}: expected `key: value`")
        key, rest = m.group(1), _strip_comment(m.group(2) or "")
        if key in out:
            raise FrontmatterError(f"line {at}: `{key}` is given twice")
        block, i = _indented(lines, i + 1)
        out[key] = _value(rest, block, at)
    return out


def _value(rest: str, block: list[str], line_no: int) -> Value:
    if rest[:1] in ("|", ">"):
        return _block_scalar(rest, block, line_no)
    if not rest:
        if not block:
            return ""
        if block[0].lstrip().startswith("- ") or block[0].strip() == "-":
            return _block_list(block, line_no)
        return _mapping(block, line_no)
    if rest.startswith("["):
        return _flow_list(" ".join([rest, *(b.strip() for b in block)]), line_no)
    if rest[0] in "'\"":
        return _quoted(" ".join([rest, *(b.strip() for b in block)]), line_no)
    if rest[0] in "{&*!%@`":
        raise FrontmatterError(f"line {line_no}: this YAML form is not supported here")
    return " ".join([rest, *(_strip_comment(b.strip()) for b in block if b.strip())])


def _indented(lines: list[str], start: int) -> tuple[list[str], int]:
    """The lines after a key that belong to its value (indented, or blank between them)."""
    end = start
    while end < len(lines) and (lines[end][:1] in (" ", "\t") or not lines[end].strip()):
        end += 1
    block = lines[start:end]
    while block and not block[-1].strip():
        block.pop()
    return block, start + len(block)


def _block_scalar(indicator: str, block: list[str], line_no: int) -> str:
    style, chomp = indicator[0], indicator[1:].strip()
    if chomp not in ("", "-", "+"):
        raise FrontmatterError(f"line {line_no}: block scalar indicator {indicator!r}")
    indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
    rows = [b[indent:] for b in block]
    text = "\n".join(rows)
    if style == ">":  # folded: a paragraph's lines join with a space, a blank line is a break
        text = re.sub(r"\n(\n+)", r"\1", re.sub(r"(?<=\S)\n(?=\S)", " ", text))
    if chomp == "-":
        return text
    return text + "\n" if text else text


def _mapping(block: list[str], line_no: int) -> dict[str, str]:
    indent = len(block[0]) - len(block[0].lstrip())
    out: dict[str, str] = {}
    for row in block:
        if _blank(row):
            continue
        m = _KEY.match(row[indent:].rstrip())
        if m is None or len(row) - len(row.lstrip()) != indent:
            raise FrontmatterError(f"near line {line_no}: expected `key: value` in a mapping")
        value = _strip_comment(m.group(2) or "")
        out[m.group(1)] = _quoted(value, line_no) if value[:1] in ("'", '"') else value
    return out


def _block_list(block: list[str], line_no: int) -> list[str]:
    items: list[str] = []
    for row in block:
        item = row.strip()
        if _blank(row):
            continue
        if not item.startswith("-"):
            raise FrontmatterError(f"near line {line_no}: expected `- item` in a list")
        value = _strip_comment(item[1:].strip())
        items.append(_quoted(value, line_no) if value[:1] in ("'", '"') else value)
    return items


def _flow_list(text: str, line_no: int) -> list[str]:
    text = _strip_comment(text)
    if not text.endswith("]"):
        raise FrontmatterError(f"line {line_no}: a `[` list is not closed")
    inner = text[1:-1].strip()
    items = [i.strip() for i in inner.split(",")] if inner else []
    return [_quoted(i, line_no) if i[:1] in ("'", '"') else i for i in items if i]


def _quoted(text: str, line_no: int) -> str:
    quote = text[0]
    end = _closing(text, quote)
    if end is None or _strip_comment(text[end + 1 :].strip()):
        raise FrontmatterError(f"line {line_no}: a quoted value is not closed properly")
    inner = text[1:end]
    if quote == "'":
        return inner.replace("''", "'")
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), inner)


def _closing(text: str, quote: str) -> int | None:
    i = 1
    while i < len(text):
        if quote == '"' and text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i
        i += 1
    return None


def _strip_comment(text: str) -> str:
    """A plain value without its trailing ` # comment`."""
    if text.startswith("#"):
        return ""
    return re.split(r"\s+#", text, maxsplit=1)[0].rstrip() if text[:1] not in "'\"" else text


def _blank(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")
