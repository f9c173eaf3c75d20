"""The terminal's line discipline around the chat's prompts. prompt_toolkit puts the terminal in
raw mode while it reads a line and puts back what it found; between its reads the chat keeps the
terminal from echoing or editing lines, so keys typed meanwhile (while the answer streams) wait,
unseen, for the next prompt, where a Ctrl-D on an empty line exits as it always does there.

Ctrl-C is a key between prompts too (a second one typed quickly still reaches the prompt that
counts it), and a signal only during a turn, where it cancels the turn without discarding what
was typed ahead."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def between_prompts(signals: bool) -> Iterator[None]:
    """No echo, no line editing; Ctrl-C a signal only when `signals` (a turn runs)."""
    try:
        import termios
    except ImportError:  # Windows: the console keeps its own modes
        yield
        return
    fd = sys.stdin.fileno()
    try:
        before = termios.tcgetattr(fd)
    except termios.error:  # not a terminal after all
        yield
        return
    during = list(before)
    lflag = before[3] & ~(termios.ICANON | termios.ECHO)
    lflag = (lflag | termios.ISIG | termios.NOFLSH) if signals else lflag & ~termios.ISIG
    during[3] = lflag
    termios.tcsetattr(fd, termios.TCSANOW, during)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, before)
