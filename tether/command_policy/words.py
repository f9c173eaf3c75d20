"""A command line's words as the command-safety modules read them: the name a program is known
by, the line as the user is shown it, and options read through a getopt-like spec (flags as well
as options that take a value, so no option swallows the program)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Literal

import msgspec


def program_name(word: str) -> str:
    """A program as the denylist and the grants know it: basename, lower case, no `.exe`."""
    name = re.split(r"[\\/]", word)[-1].lower()
    for suffix in (".exe", ".cmd", ".bat", ".com"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def shell_join(argv: Sequence[str]) -> str:
    """The command line as a POSIX shell would need it typed (what the user is shown)."""
    return shlex.join(argv)


def word_at(args: Sequence[str], i: int) -> str:
    """The word at `i`, or an empty one past the end."""
    return args[i] if i < len(args) else ""


# --- getopt-like specs ---------------------------------------------------------------------

Carry = Literal["split", "shell"]  # `env -S` splits its value into words; `su -c` runs a shell


class Spec(msgspec.Struct, frozen=True):
    """How one program's options are spelled, and what its words mean to the scan."""

    flags: str = ""  # short options without a value
    values: str = ""  # short options taking a value (attached or the next word)
    attached: str = ""  # short options whose value can only be attached (`xargs -i{}`)
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    long_optional: frozenset[str] = frozenset()  # a value only when attached with `=`
    words: frozenset[str] = frozenset()  # whole words that are options (`env -`)
    numeric: bool = False  # `-N` is an option (`nice -10`)
    operands: int = 0  # words between the options and the program (`timeout DURATION`)
    assignments: bool = False  # NAME=VALUE words before the program (`env`)
    carries: tuple[tuple[str, Carry], ...] = ()  # options whose value is a command line
    no_program: frozenset[str] = frozenset()  # options after which nothing runs (`command -v`)
    detached: bool = False  # the program outlives the command (`nohup`, `setsid`)
    default: tuple[str, ...] = ()  # what runs when no program is given (`xargs` -> echo)
    module: frozenset[str] = frozenset()  # `uv run -m mod`: runs `python -m mod`
    plus: bool = False  # `+x` clusters are options too (shells)


def word_set(text: str) -> frozenset[str]:
    """Space-separated words, as a set (a spec's option names, a table's programs)."""
    return frozenset(text.split())


def long_options(names: str) -> frozenset[str]:
    """Long option names without their dashes (`"all quiet"`), as `--all`, `--quiet`."""
    return frozenset(f"--{n}" for n in names.split())


class Parsed(msgspec.Struct):
    """A wrapper's arguments read through its spec."""

    rest: int = 0  # index of the first word after the options (and operands)
    seen: list[tuple[str, str | None]] = msgspec.field(default_factory=list[tuple[str, str | None]])
    unknown: str | None = None  # the first option the spec does not know
    missing_value: str | None = None


def parse_options(spec: Spec, args: Sequence[str]) -> Parsed:
    """Read options up to the first non-option word (getopt with a leading `+`: no
    permutation, which is what every wrapper does)."""
    p = Parsed()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in spec.words:
            p.seen.append((a, None))
            i += 1
        elif a.startswith("--") and len(a) > 2:
            i = _long_option(spec, args, i, p)
        elif (a.startswith("-") or (spec.plus and a.startswith("+"))) and len(a) > 1:
            i = _short_cluster(spec, args, i, p)
        else:
            break
        if p.unknown or p.missing_value:
            p.rest = i
            return p
    p.rest = i
    return p


def _long_option(spec: Spec, args: Sequence[str], i: int, p: Parsed) -> int:
    name, eq, value = args[i].partition("=")
    if (name in spec.long_flags and not eq) or name in spec.long_optional:
        p.seen.append((name, value if eq else None))
        return i + 1
    if name in spec.long_values:
        if eq:
            p.seen.append((name, value))
            return i + 1
        if i + 1 >= len(args):
            p.missing_value = name
            return i + 1
        p.seen.append((name, args[i + 1]))
        return i + 2
    p.unknown = args[i]
    return i


def _short_cluster(spec: Spec, args: Sequence[str], i: int, p: Parsed) -> int:
    a = args[i]
    if spec.numeric and a[1:].lstrip("+-").isdigit():
        p.seen.append((a, None))
        return i + 1
    j = 1
    while j < len(a):
        c = a[j]
        if c in spec.attached:
            p.seen.append((f"-{c}", a[j + 1 :] or None))
            return i + 1
        if c in spec.values:
            if a[j + 1 :]:
                p.seen.append((f"-{c}", a[j + 1 :]))
                return i + 1
            if i + 1 >= len(args):
                p.missing_value = f"-{c}"
                return i + 1
            p.seen.append((f"-{c}", args[i + 1]))
            return i + 2
        if c in spec.flags:
            p.seen.append((f"{a[0]}{c}", None))
            j += 1
            continue
        p.unknown = a if j == 1 else f"-{c} (in {a})"
        return i
    return i + 1


# --- options read loosely: every dash word, whatever the program ---------------------------


def given_options(args: Sequence[str]) -> list[str]:
    """The words before `--` that look like options."""
    out: list[str] = []
    for a in args:
        if a == "--":
            break
        if a.startswith("-") and len(a) > 1:
            out.append(a)
    return out


def has_flag(options: list[str], flag: str) -> bool:
    """Whether `flag` was given: a long one as itself or with `=value`, a short one alone or
    inside a cluster (`-r` in `-rf`)."""
    if flag.startswith("--"):
        return any(o == flag or o.startswith(flag + "=") for o in options)
    return any(not o.startswith("--") and flag[1:] in o[1:] for o in options)
