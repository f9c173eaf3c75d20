"""The model's Python `re` pattern in ripgrep's dialect (Rust's `regex`), or the reason it
cannot be: Rust's engine never backtracks, so it has no look-around, backreferences, atomic
groups, possessive quantifiers or conditionals. Such a pattern runs on the Python engine.

What both read but spell differently is rewritten (`\\Z` is `\\z`; a `{` that `re` takes
literally and a `[` inside a set are escaped); what Rust reads differently (set operations
`&&`, `--`, `~~`; verbose mode; ASCII or locale flags; comments) goes to the Python engine too.
Anything else ripgrep refuses to parse is caught when it runs, and the search is done in Python.
"""

from __future__ import annotations

import importlib
import re
import warnings
from typing import Any

from tether.engine.local.line_regex import regex_source

# `re`'s own parser (no stubs): what a pattern is made of, as `re` reads it.
sre: Any = importlib.import_module("re._constants")
sre_parse: Any = importlib.import_module("re._parser")

_UNSUPPORTED: dict[Any, str] = {
    sre.ASSERT: "look-around",
    sre.ASSERT_NOT: "look-around",
    sre.GROUPREF: "a backreference",
    sre.GROUPREF_EXISTS: "a conditional group",
    sre.ATOMIC_GROUP: "an atomic group",
    sre.POSSESSIVE_REPEAT: "a possessive quantifier",
}
_PYTHON_FLAGS = re.VERBOSE | re.ASCII | re.LOCALE
_SET_OPERATIONS = ("&&", "--", "~~")  # inside `[...]`: literal in `re`, set operations in Rust


def rust_pattern(pattern: str) -> tuple[str | None, str]:
    """(the pattern for ripgrep, "") or (None, the construct ripgrep cannot run). The pattern
    must compile with `re`."""
    if "(?#" in pattern:
        return None, "a comment"
    sets = _set_bodies(pattern)
    for op in _SET_OPERATIONS:
        if op in sets:
            return None, f"`{op}` in a set"
    with warnings.catch_warnings():  # `re` warned of what it reads oddly when it compiled
        warnings.simplefilter("ignore")
        parsed = sre_parse.parse(pattern)
    if parsed.state.flags & _PYTHON_FLAGS:
        return None, "verbose, ASCII or locale mode"
    why = _construct(parsed)
    if why:
        return None, why
    return _end_of_text(regex_source(pattern)), ""


def _construct(items: Any) -> str:
    """The first construct in a parsed pattern that Rust's dialect lacks, or ""."""
    for op, av in items:
        if op in _UNSUPPORTED:
            return _UNSUPPORTED[op]
        if op == sre.LITERAL and av == ord("\n"):
            return "a newline (lines are matched one by one)"
        if op == sre.SUBPATTERN and (av[1] | av[2]) & _PYTHON_FLAGS:
            return "verbose, ASCII or locale mode"
        for sub in _children(op, av):
            why = _construct(sub)
            if why:
                return why
    return ""


def _children(op: Any, av: Any) -> list[Any]:
    if op == sre.SUBPATTERN:
        return [av[3]]
    if op == sre.BRANCH:
        return list(av[1])
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        return [av[2]]
    return []


def _set_bodies(pattern: str) -> str:
    """The text inside the pattern's `[...]` sets, run together."""
    out: list[str] = []
    inside = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        step = 2 if c == "\\" else 1
        if inside:
            if c == "]":
                inside = False
            else:
                out.append(pattern[i : i + step])
        elif c == "[":
            inside = True
            i += 1
            i += pattern.startswith("^", i)
            i += pattern.startswith("]", i)  # first in the set: a literal
            continue
        i += step
    return "".join(out)


def _end_of_text(pattern: str) -> str:
    """`\\Z` (the end, in `re`) as Rust spells it, `\\z`."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            pair = pattern[i : i + 2]
            out.append("\\z" if pair == "\\Z" else pair)
            i += 2
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)
