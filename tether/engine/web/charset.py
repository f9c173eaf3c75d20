"""Bytes to text for a fetched body: a byte-order mark, then the Content-Type header's charset,
then the document's own declaration (`<meta charset>`, `<?xml encoding?>`), then detection
(valid UTF-8, else charset-normalizer's best guess). A label Python does not know is skipped,
not fatal: the next source decides."""

from __future__ import annotations

import codecs
import re

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: its BOM starts the same way
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# What browsers mean by these labels (WHATWG Encoding): windows-1252, a superset.
_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "us-ascii": "cp1252", "ascii": "cp1252"}
_META = re.compile(rb"<meta[^>]+?charset\s*=\s*[\"']?\s*([A-Za-z0-9_:.\-]+)", re.IGNORECASE)
_XML_DECL = re.compile(rb"^\s*<\?xml[^>]+encoding\s*=\s*[\"']([A-Za-z0-9_.\-]+)[\"']")
_PRESCAN_BYTES = 4096
_NOT_CHARSETS = frozenset({"idna", "punycode", "raw-unicode-escape", "unicode-escape", "undefined"})


def decode(body: bytes, *, header_charset: str | None, markup: bool) -> str:
    """`markup`: the body is HTML or XML, whose first bytes may declare the encoding."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body.decode(name, errors="replace")
    for label in (header_charset, _declared(body) if markup else None):
        name = _codec(label)
        if name is not None:
            return body.decode(name, errors="replace")
    return _detect(body)


def _declared(body: bytes) -> str | None:
    head = body[:_PRESCAN_BYTES]
    m = _XML_DECL.match(head) or _META.search(head)
    return m.group(1).decode("ascii") if m else None


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    label = _ALIASES.get(label, label)
    try:
        info = codecs.lookup(label)
    except LookupError:
        return None
    # Python also calls transforms codecs (rot13, zlib, base64) and host-name encodings (idna,
    # punycode): no page is written in those; a label naming one is skipped like an unknown one.
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARSETS:
        return None
    return info.name


def _detect(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes  # imported on the rare undeclared non-UTF-8 body

    best = from_bytes(body).best()
    name = _codec(best.encoding) if best is not None else None
    return body.decode(name or "cp1252", errors="replace")
