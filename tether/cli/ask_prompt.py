"""The prompt of `tether ask` / `tether -p`: from the command line, from standard input when it is
piped or given as `-`, or both (piped input is context for the given prompt, as `cat log |
claude -p "explain"` does)."""

from __future__ import annotations

import os
import stat


class EmptyPrompt(Exception):
    """Nothing to ask: no prompt given, and nothing (but blanks) on standard input."""


def stdin_is_piped(fd: int = 0) -> bool:
    """A pipe or a file redirected in: input to read. A terminal, /dev/null, a socket or a closed
    descriptor is not (reading a terminal would wait for the user to type)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def read_prompt(given: str | None, fd: int = 0) -> str:
    """`given` ("-" or None: standard input only), with piped input after it as context."""
    piped = _read_all(fd) if stdin_is_piped(fd) else ""
    if given is None or given == "-":
        text = piped
    elif piped.strip():
        text = f"{given}\n\n{piped.rstrip()}"
    else:
        text = given
    if not text.strip():
        raise EmptyPrompt("the prompt is empty: give it as an argument or pipe it in")
    return text


def _read_all(fd: int) -> str:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")
