"""msgspec's validation messages in a TOML user's words: "Expected `int`, got `str` - at `$.a`"
becomes the key `a` and "expected an integer, got a string"."""

from __future__ import annotations

import re
from typing import Any, get_args

import msgspec

from tether.engine.config.toml_lines import Key

_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "object": "a table",
    "array": "an array",
}


def explain(message: str, tp: Any) -> tuple[Key, str]:
    """msgspec's message for a value of type `tp`, as the path below the value and a message:
    (("a",), "expected an integer, got a string")."""
    text, _, at = message.partition(" - at `$")
    where: Key = tuple(re.findall(r"\.([A-Za-z0-9_]+)", at))
    if m := re.fullmatch(r"Object contains unknown field `(.+)`", text):
        names = ", ".join(f.name for s in _structs(tp) for f in msgspec.structs.fields(s))
        return (*where, m[1]), f"unknown key (expected one of: {names})"
    if m := re.fullmatch(r"Invalid enum value (.+)", text):
        return where, invalid_value_text(m[1], _literals(tp))
    if m := re.fullmatch(r"Expected `([^`]+)`, got `([^`]+)`", text):
        wanted = [_TYPE_WORDS.get(t, t) for t in m[1].split(" | ") if t != "null"]
        return where, f"expected {' or '.join(wanted)}, got {_TYPE_WORDS.get(m[2], m[2])}"
    if text == "Expected `str` of length >= 1":
        return where, "must not be empty"
    if m := re.fullmatch(r"Expected `[^`]+` (.+)", text):
        return where, f"must be {m[1]}"
    return where, text.replace("`", "")


def invalid_value_text(shown: str, allowed: list[str]) -> str:
    return f"invalid value {shown} (expected one of: {', '.join(allowed)})"


def _structs(tp: Any) -> list[type[msgspec.Struct]]:
    """The Struct types a field's type allows (our schema nests one level at most)."""
    return [t for t in (tp, *get_args(tp)) if isinstance(t, type) and issubclass(t, msgspec.Struct)]


def _literals(tp: Any) -> list[str]:
    """The strings a Literal inside `tp` allows (looking through lists and options)."""
    found: list[str] = []
    pending: list[Any] = [tp]
    while pending:
        args = get_args(pending.pop())
        if args and all(isinstance(a, str) for a in args):
            found.extend(args)
        else:
            pending.extend(args)
    return found
