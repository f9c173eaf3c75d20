"""Key markers for `write_pty_keys`: `<c-c>`, `<esc>`, `<up*3>`, `<m-x>`, `<c-s-f5>`, `\\xHH`,
turned into the bytes an xterm sends. Text between markers is typed as it is. An unknown
marker is an error, never typed."""

from __future__ import annotations

import re

_MARKER = re.compile(r"<([^<>\s]+)>|\\x([0-9A-Fa-f]{2})")
_REPEAT = re.compile(r"^(.*)\*(\d+)$")
MAX_REPEAT = 100

_PLAIN: dict[str, bytes] = {
    "enter": b"\r",
    "return": b"\r",
    "cr": b"\r",
    "nl": b"\n",
    "tab": b"\t",
    "esc": b"\x1b",
    "escape": b"\x1b",
    "space": b" ",
    "bs": b"\x7f",
    "backspace": b"\x7f",
    "lt": b"<",
    "gt": b">",
}
# Keys with an xterm CSI form: (final byte, number) -> CSI [number;mod] final.
_CURSOR: dict[str, str] = {
    "up": "A",
    "down": "B",
    "right": "C",
    "left": "D",
    "home": "H",
    "end": "F",
}
_TILDE: dict[str, int] = {
    "insert": 2,
    "ins": 2,
    "delete": 3,
    "del": 3,
    "pageup": 5,
    "pgup": 5,
    "pagedown": 6,
    "pgdn": 6,
    "f5": 15,
    "f6": 17,
    "f7": 18,
    "f8": 19,
    "f9": 20,
    "f10": 21,
    "f11": 23,
    "f12": 24,
}
_SS3: dict[str, str] = {"f1": "P", "f2": "Q", "f3": "R", "f4": "S"}
_CTRL_PUNCT: dict[str, int] = {"@": 0, "[": 27, "\\": 28, "]": 29, "^": 30, "_": 31}


class UnknownKey(ValueError):
    """A marker that names no key: the message says which and what is accepted."""


def encode_keys(keys: str) -> bytes:
    """The bytes `keys` types; raises UnknownKey for an unknown marker."""
    out = bytearray()
    pos = 0
    for m in _MARKER.finditer(keys):
        out += keys[pos : m.start()].encode("utf-8")
        if m.group(2) is not None:
            out.append(int(m.group(2), 16))
        else:
            out += _marker(m.group(1))
        pos = m.end()
    out += keys[pos:].encode("utf-8")
    return bytes(out)


def _marker(body: str) -> bytes:
    count = 1
    rep = _REPEAT.match(body)
    if rep:
        body, count = rep.group(1), int(rep.group(2))
        if not 1 <= count <= MAX_REPEAT:
            raise UnknownKey(f"<{body}*{count}>: repeat 1 to {MAX_REPEAT} times")
    return key_bytes(body) * count


def key_bytes(name: str) -> bytes:
    """One key, with optional modifiers `c-` (ctrl), `m-` / `a-` (alt), `s-` (shift)."""
    key, mods = name, set[str]()
    while len(key) > 2 and key[1] == "-" and key[0].lower() in "cmas":
        mods.add("m" if key[0].lower() == "a" else key[0].lower())
        key = key[2:]
    if len(key) > 1:
        key = key.lower()
    elif not mods:
        raise UnknownKey(f"<{name}> is not a key (type plain text as it is): {_HELP}")
    ctrl, alt, shift = "c" in mods, "m" in mods, "s" in mods
    mod = 1 + shift + 2 * alt + 4 * ctrl
    if key in _CURSOR:
        final = _CURSOR[key]
        return f"\x1b[1;{mod}{final}".encode() if mod > 1 else f"\x1b[{final}".encode()
    if key in _TILDE:
        n = _TILDE[key]
        return f"\x1b[{n};{mod}~".encode() if mod > 1 else f"\x1b[{n}~".encode()
    if key in _SS3:
        final = _SS3[key]
        return f"\x1b[1;{mod}{final}".encode() if mod > 1 else f"\x1bO{final}".encode()
    if key == "tab" and shift and not (ctrl or alt):
        return b"\x1b[Z"
    data = _plain_key(name, key, ctrl, shift) if len(key) > 1 else _char(name, key, ctrl, shift)
    return b"\x1b" + data if alt else data


def _plain_key(name: str, key: str, ctrl: bool, shift: bool) -> bytes:
    if key not in _PLAIN:
        raise UnknownKey(f"<{name}> is not a key: {_HELP}")
    if ctrl and key == "space":
        return b"\x00"
    if ctrl or shift:
        raise UnknownKey(f"<{name}>: a terminal sends nothing distinct for that combination")
    return _PLAIN[key]


def _char(name: str, ch: str, ctrl: bool, shift: bool) -> bytes:
    if shift:
        ch = ch.upper()
    if not ctrl:
        return ch.encode("utf-8")
    if ch.isascii() and ch.isalpha():
        return bytes([ord(ch.lower()) & 0x1F])
    if ch in _CTRL_PUNCT:
        return bytes([_CTRL_PUNCT[ch]])
    if ch == "?":
        return b"\x7f"
    raise UnknownKey(f"<{name}>: there is no control code for {ch!r}")


_HELP = (
    "use <enter>, <tab>, <esc>, <space>, <bs>, <up>/<down>/<left>/<right>, <home>, <end>, "
    "<pgup>, <pgdn>, <ins>, <del>, <f1>..<f12>, <lt> for a literal '<', a key with modifiers "
    "c- (ctrl), m- (alt), s- (shift) such as <c-c>, <m-x> or <c-s-f5>, a repeat such as "
    "<up*3>, or \\xHH for one byte"
)
