"""What an "always allow" answer about a command covers: the program with its subcommand (and
the wrappers in front of it), and the class of what it does — never the whole program.

`git status` (read-only) and `git checkout` (writing) are two grants; a grant for `python3
--version` does not cover `python3 -c ...`, and inline code is granted for that exact code only.
So are the environment variables that may change what runs (each with its value: another value
is another grant) and the input given to a program that runs it (`sh` reading a script).
The card names the grant exactly as it is recorded ("Always allow `git checkout` (writing)").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from tether.command_policy.environment import env_words, risky, value_digest
from tether.command_policy.interpreters import interpreter_family
from tether.command_policy.scan import GIT_OPTIONS
from tether.command_policy.words import parse_options, program_name
from tether.command_policy.wrappers import REMOTE_CLIENTS, shell_options, unwrap, wrapper_key

MAX_DEPTH = 8
# Programs whose first word (after their global options) is a subcommand with its own meaning.
_SUBCOMMAND_TEXT = (
    "git npm pnpm yarn bun deno cargo go docker podman kubectl helm uv pip pip3 poetry pdm "
    "hatch gh glab apt apt-get brew conda mamba dotnet rustup terraform systemctl journalctl "
    "nix make just gradle mvn bundle gem composer mix flutter dart swift"
)
SUBCOMMANDS = frozenset(_SUBCOMMAND_TEXT.split(" "))


class CommandGrant(msgspec.Struct, frozen=True):
    scope: str  # what is recorded and matched: `git status [read-only]`
    label: str  # what the card says: "`git status`" or "`git checkout` (writing)"


def command_grant(
    argv: Sequence[str],
    klass: str,
    *,
    env: Mapping[str, str] | None = None,
    feeds: str | None = None,
) -> CommandGrant:
    """`klass`: "read-only", "writing" or "runs code" (see `command_class`); `env`: the
    variables the call sets; `feeds`: what the program reads on its input and runs (the text
    given, or the command line piped into it), None when its input is not code."""
    words = _words(tuple(argv))
    extra = env_words(env or {})
    shown = " ".join(words)
    scope = " ".join([*extra, shown, *(["<", value_digest(feeds)] if feeds is not None else [])])
    label = f"`{shown}`"
    if extra:
        label += f" with {', '.join(risky(env or {}))} as given"
    if feeds is not None:
        label += " with this input"
    label = label if klass == "read-only" else f"{label} ({klass})"
    return CommandGrant(f"{scope} [{klass}]", label)


def _words(argv: tuple[str, ...]) -> list[str]:
    """The wrappers (with the variables they set that may change what runs), the program and
    what names its use: a subcommand, a script, a module, or a digest of inline code."""
    parts: list[str] = []
    current = argv
    for _ in range(MAX_DEPTH):
        if not current or not current[0]:
            break
        key = wrapper_key(current)
        if key is None:
            return parts + _program(current)
        parts.append(key)
        found = unwrap(current, key)
        parts += env_words(found.env)
        if found.inner is None:
            break
        current = found.inner
    return parts


def _program(argv: tuple[str, ...]) -> list[str]:
    prog, args = program_name(argv[0]), list(argv[1:])
    if prog == "git":
        parsed = parse_options(GIT_OPTIONS, args)
        rest = args[parsed.rest :]
        configured = [n for n, _ in parsed.seen if n in ("-c", "--config-env", "--exec-path")]
        return [prog, *sorted(set(configured)), *rest[:1]]
    if prog in SUBCOMMANDS:
        sub = next((a for a in args if not a.startswith("-")), None)
        return [prog, sub] if sub else [prog]
    if prog in REMOTE_CLIENTS:
        host = next((a for a in args if not a.startswith("-")), "")
        return [prog, host]
    family = interpreter_family(prog)
    if family is not None:
        return [prog, *_what_it_runs(argv, family)]
    return [prog]


def _what_it_runs(argv: tuple[str, ...], family: str) -> list[str]:
    args = list(argv[1:])
    if family == "shell":
        parsed, has_c = shell_options(argv)
        operands = argv[1 + parsed.rest :]
        if has_c and operands:
            return ["-c", _digest(operands[0])]
        return list(operands[:1])
    for i, a in enumerate(args):
        if a in ("-c", "-e", "-E", "-r", "--eval", "-p", "--print") and i + 1 < len(args):
            return [a, _digest(args[i + 1])]
        if a == "-m" and i + 1 < len(args):
            return ["-m", args[i + 1]]
        if not a.startswith("-"):
            return [a]
    return list(args[:1])


def _digest(code: str) -> str:
    return value_digest(code)
