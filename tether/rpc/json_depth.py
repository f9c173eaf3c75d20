"""A bound on JSON nesting, checked on the raw bytes before any decoder sees them: a 2 KB frame
nested a thousand deep would otherwise exhaust the decoder's recursion (msgspec and the stdlib
`json` both raise RecursionError, which is no parse error they report). No imports: the first
`initialize` is checked with it before anything heavy is loaded."""

MAX_DEPTH = 128  # ACP messages nest about ten deep; tool inputs and _meta a few more


def too_deep(frame: bytes, limit: int = MAX_DEPTH) -> bool:
    """True when `frame` opens more than `limit` arrays/objects at once (outside strings)."""
    if frame.count(b"[") + frame.count(b"{") <= limit:
        return False  # the common case, decided at C speed
    depth = 0
    in_string = escaped = False
    for byte in frame:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return False
