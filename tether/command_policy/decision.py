"""The judgement of one tool call's command lines, before anyone is asked: refused (the
denylist), known read-only (the allowlist), the card's warnings, and what an "always" answer
would cover. Pure: it looks at the command lines, the files their programs run and the
workspace's path policy, and runs nothing.

Whether the call then asks also depends on the session (its mode, whether its sandbox can
confine the command): `tools/command_gate.py` adds that and turns the decision into a card.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tether.command_policy.allowlist import read_only
from tether.command_policy.danger import command_danger
from tether.command_policy.denylist import Denylist
from tether.command_policy.grant_scope import CommandGrant, command_grant
from tether.command_policy.program_path import resolve_program
from tether.engine.sandbox.protect import HOME_SECRETS
from tether.engine.seam import CommandDenylist
from tether.engine.workspace import Workspace
from tether.errors import TetherError


@dataclass(frozen=True)
class Command:
    """One program line of a call, with what it is given."""

    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True)
class Decision:
    """`read_only`: every line is a known read-only invocation (it may run unasked even
    unconfined). `dangers`: the card's warnings, each a reason and the program text it is
    about. `grants`: what an "always" answer covers, one per line."""

    read_only: bool
    dangers: tuple[tuple[str, str], ...]
    grants: tuple[CommandGrant, ...]


class Denied(TetherError):
    """A command line the denylist refuses in every mode; nobody is asked."""

    def __init__(self, message: str) -> None:
        super().__init__("DENIED", message)


@functools.lru_cache(maxsize=8)
def denylist(configured: CommandDenylist) -> Denylist:
    return Denylist.from_config(configured.entries, builtin=configured.builtin)


def refuse_denylisted(configured: CommandDenylist, commands: Sequence[Command]) -> None:
    """Denied for the first line the denylist refuses (at plan time, and again at run time)."""
    found = denylist(configured)
    for c in commands:
        hit = found.check(c.argv, c.env, c.cwd)
        if hit is not None:
            raise Denied(hit.message())


def judge(commands: Sequence[Command], policy: Workspace, configured: CommandDenylist) -> Decision:
    """The decision on a call's command lines; Denied when the denylist refuses one."""
    refuse_denylisted(configured, commands)
    dangers = tuple(dict.fromkeys(p for c in commands for p in command_danger(c.argv)))
    readonly = [is_read_only(policy, c) for c in commands]
    grants = tuple(
        command_grant(c.argv, _class(ro, c)) for ro, c in zip(readonly, commands, strict=True)
    )
    return Decision(read_only=all(readonly), dangers=dangers, grants=grants)


def is_read_only(policy: Workspace, c: Command) -> bool:
    """A known read-only invocation of a program installed outside the session's
    directories (a `ls` the project or an `env PATH` put first is not `ls`)."""
    program = resolve_program(c.argv[0], c.cwd, c.env) if c.argv else None
    if program is None or _writable_place(policy, program):
        return False
    return read_only(c.argv, lambda word: _readable(policy, c.cwd, word))


def _writable_place(policy: Workspace, path: Path) -> bool:
    places = [*policy.roots, *(g.path for g in policy.grants if g.access == "write")]
    places.append(Path(os.path.realpath("/tmp")))
    return any(path == p or path.is_relative_to(p) for p in places)


def _readable(policy: Workspace, cwd: Path, word: str) -> bool:
    if not word or word.startswith("-"):
        return bool(word)
    lexical = Path(os.path.normpath(cwd / os.path.expanduser(word)))
    try:
        real = lexical.resolve()
    except (OSError, RuntimeError):
        return False
    home = Path(os.path.expanduser("~"))
    secrets = [home / s for s in HOME_SECRETS]
    for p in (lexical, real):
        if policy.denied_anywhere(p) is not None:
            return False
        if any(p == s or p.is_relative_to(s) for s in secrets):
            return False
    return True


def _class(readonly: bool, c: Command) -> str:
    """What a grant for this command line covers: reading, writing, or running code."""
    if readonly:
        return "read-only"
    found = command_danger(c.argv)
    return "runs code" if any("runs " in r or "interpreter" in r for r, _ in found) else "writing"
