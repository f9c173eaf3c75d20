"""The simple commands of a shell script (`sh -c` text, a remote command line, a git `!alias`),
as words, and the command substitutions inside a word: what the scan follows into a script."""

from __future__ import annotations

import re
import shlex

from tether.command_policy.words import word_set

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_KEYWORDS = word_set("if then else elif fi do done while until ! { } time coproc esac in")
_SKIP_COMMANDS = frozenset({"for", "case", "select", "function", "[[", "]]", "((", "))"})
_PUNCT = ";&|()<>\n"


def split_script(script: str) -> list[list[str]]:
    """The simple commands of a shell script, as words (operators, redirections, keywords and
    leading assignments removed). Raises ValueError when the quoting does not parse."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=_PUNCT)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # a `#` inside a word must not hide the next line's command
    tokens = list(lexer)
    commands: list[list[str]] = [[]]
    skip_next = False
    for i, token in enumerate(tokens):
        if _is_operator(token):
            is_redirect = ("<" in token or ">" in token) and not ({"(", ")"} & set(token))
            skip_next = is_redirect
            if not is_redirect or set(token) & set(";|\n") or "&&" in token:
                commands.append([])
            continue
        if skip_next:
            skip_next = False
            continue
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token.isdigit() and _is_operator(following) and set(following) & set("<>"):
            continue  # the `2` of `2>&1`
        commands[-1].append(token)
    return [c for c in (simple_command(c) for c in commands) if c]


def _is_operator(token: str) -> bool:
    return bool(token) and all(ch in _PUNCT for ch in token)


def simple_command(words: list[str]) -> list[str]:
    """A simple command's words without leading keywords and assignments; none for a
    compound command the scan does not follow (`for`, `case`, `[[ ]]`)."""
    while words and (words[0] in _KEYWORDS or ASSIGNMENT.match(words[0])):
        words = words[1:]
    if words and words[0] in _SKIP_COMMANDS:
        return []
    return words


def substitutions(word: str) -> list[str]:
    """The command substitutions inside a word: `$(...)` and backquotes (even quoted ones:
    the scan cannot tell which quotes the shell saw, so it looks at every one)."""
    found: list[str] = []
    i = 0
    while i < len(word):
        if word.startswith("$(", i):
            depth, j = 1, i + 2
            while j < len(word) and depth:
                depth += {"(": 1, ")": -1}.get(word[j], 0)
                j += 1
            found.append(word[i + 2 : j - 1] if depth == 0 else word[i + 2 :])
            i = j
        elif word[i] == "`":
            j = word.find("`", i + 1)
            found.append(word[i + 1 : j] if j > 0 else word[i + 1 :])
            i = len(word) if j < 0 else j + 1
        else:
            i += 1
    return found
