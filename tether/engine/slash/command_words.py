"""Which prompts are slash commands, and what an unknown one answers.

A prompt is a command when its first word is `/NAME` and NAME has a command's shape: a letter
or digit, then letters, digits, `-`, `_` or `:` (at most 64; MCP prompts are
`mcp__server__prompt`). A path (`/usr/bin is odd`: another `/`, or a `.`) never is. An offered
command runs. A NAME no command has answers "unknown command" with the near names (difflib)
instead of reaching the model, when the prompt is that one word alone (`/stauts`) or when NAME
is close to a command's (`/moed code`); otherwise the prompt is prose that starts with a slash
word (`/tmp is full`) and goes to the model."""

from __future__ import annotations

import re

SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_:-]{0,63}")
NEAR_CUTOFF = 0.75  # difflib's ratio for a near name: `stauts` ~ `status`, `moed` ~ `mode`
NEAR_MAX = 3


def command_word(text: str) -> tuple[str, str] | None:
    """(NAME, the rest) when `text` starts with `/NAME` of a command's shape; else None."""
    if not text.startswith("/"):
        return None
    word, _, rest = text[1:].partition(" ")
    word, newline, more = word.partition("\n")
    if newline:
        rest = f"{more} {rest}" if rest else more
    if SHAPE.fullmatch(word) is None:
        return None
    return word, rest.strip()


def near(name: str, names: list[str]) -> list[str]:
    """The command names close to `name`, closest first."""
    import difflib  # (only for a name no command has)

    return difflib.get_close_matches(name, names, n=NEAR_MAX, cutoff=NEAR_CUTOFF)


def unknown_reply(name: str, rest: str, names: list[str]) -> str | None:
    """What `/name` answers when no command has that name: None when the prompt is prose for
    the model (more words, and no command's name is near)."""
    close = near(name, names)
    if rest and not close:
        return None
    text = f"Unknown command `/{name}`."
    if close:
        text += " Did you mean " + " or ".join(f"`/{c}`" for c in close) + "?"
    return text + " `/help` lists the commands."
