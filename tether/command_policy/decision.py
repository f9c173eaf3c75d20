"""The judgement of one tool call's command lines, before anyone is asked: refused (the
denylist), known read-only (the allowlist), the card's warnings, and what an "always" answer
would cover. Pure: it looks at the command lines, the files their programs run and the
workspace's path policy, and runs nothing.

A command is judged by its whole invocation: its argv, the environment the call gives it (a
variable not known to be harmless makes it ask, and shows on the card: `environment.py`) and
its standard input (fed to a program that runs it, the input is code). Whether the call then
asks also depends on the session (its mode, whether its sandbox can confine the command):
`tools/command_gate.py` adds that and turns the decision into a card.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from tether.command_policy.words import shell_join
from tether.engine.seam import CommandDenylist
from tether.engine.workspace import Workspace
from tether.errors import CommandDenied

# The policy's parts (the scanner, the denylist, the allowlist, the dangers, the grant
# scopes: tables and regular expressions) are imported by the functions that judge, when a
# call first runs a command: a session that runs none, and every start, goes without them.
if TYPE_CHECKING:
    from tether.command_policy.denylist import Denylist
    from tether.command_policy.grant_scope import CommandGrant

INPUT_SHOWN = 4_000  # characters of a program's input the card shows when the input is code


class Command(msgspec.Struct, frozen=True):
    """One program line of a call, with what it is given: the variables the call sets, the
    text on its input, or the command line whose output it reads (a pipe)."""

    argv: list[str]
    cwd: Path
    env: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    stdin: bytes | None = None
    stdin_from: tuple[str, ...] = ()

    def feeds(self) -> str | None:
        """What the program reads and runs, when it runs its input (None otherwise)."""
        if self.stdin is None and not self.stdin_from:
            return None
        from tether.command_policy.interpreters import runs_its_input
        from tether.command_policy.scan import scan

        found = scan(self.argv, self.env)
        if not any(runs_its_input(inv.program) for inv in found.invocations):
            return None
        if self.stdin is not None:
            return self.stdin.decode("utf-8", "replace")
        return "| " + shell_join(self.stdin_from)


class Decision(msgspec.Struct, frozen=True):
    """`read_only`: every line is a known read-only invocation (it may run unasked even
    unconfined). `dangers`: the card's warnings, each a reason and the program text it is
    about. `grants`: what an "always" answer covers, one per line."""

    read_only: bool
    dangers: tuple[tuple[str, str], ...]
    grants: tuple[CommandGrant, ...]


@functools.lru_cache(maxsize=8)
def denylist(configured: CommandDenylist) -> Denylist:
    from tether.command_policy.denylist import Denylist

    return Denylist.from_config(configured.entries, builtin=configured.builtin)


def refuse_denylisted(configured: CommandDenylist, commands: Sequence[Command]) -> None:
    """CommandDenied for the first line the denylist refuses (at plan time, and again at run
    time)."""
    found = denylist(configured)
    for c in commands:
        hit = found.check(c.argv, c.env, c.cwd)
        if hit is not None:
            raise CommandDenied(hit.message())


def judge(commands: Sequence[Command], policy: Workspace, configured: CommandDenylist) -> Decision:
    """The decision on a call's command lines; CommandDenied when the denylist refuses one."""
    refuse_denylisted(configured, commands)
    dangers = tuple(dict.fromkeys(d for c in commands for d in _dangers(c)))
    readonly = [is_read_only(policy, c) for c in commands]
    grants = tuple(_grant(ro, c) for ro, c in zip(readonly, commands, strict=True))
    return Decision(read_only=all(readonly), dangers=dangers, grants=grants)


def is_read_only(policy: Workspace, c: Command) -> bool:
    """A known read-only invocation of a program installed outside the session's
    directories (a `ls` the project or an `env PATH` put first is not `ls`), given no
    variable that may change what it runs and no input it would run, whose file operands lie
    inside the session's directories."""
    from tether.command_policy.allowlist import read_only
    from tether.command_policy.environment import risky
    from tether.command_policy.operands import inside_session
    from tether.command_policy.program_path import resolve_program

    if risky(c.env) or c.feeds() is not None:
        return False
    program = resolve_program(c.argv[0], c.cwd, c.env) if c.argv else None
    if program is None or _writable_place(policy, program):
        return False
    return read_only(
        c.argv,
        lambda word: inside_session(policy, c.cwd, word),
        lambda word: os.path.isdir(c.cwd / os.path.expanduser(word)),
    )


def _dangers(c: Command) -> list[tuple[str, str]]:
    """The card's lines about one command: its programs, its environment, its input."""
    from tether.command_policy.danger import command_danger
    from tether.command_policy.environment import env_dangers

    found = command_danger(c.argv, c.env) + env_dangers(c.env)
    feeds = c.feeds()
    if feeds is not None and c.argv:
        prog = os.path.basename(c.argv[0])
        if c.stdin is not None:
            shown = feeds if len(feeds) <= INPUT_SHOWN else feeds[:INPUT_SHOWN] + "\n…"
            found.append((f"{prog} runs the code given on its input", f"{prog}'s input:\n{shown}"))
        else:
            found.append((f"{prog} runs what `{shell_join(c.stdin_from)}` prints", ""))
    return found


def _grant(readonly: bool, c: Command) -> CommandGrant:
    from tether.command_policy.grant_scope import command_grant

    return command_grant(c.argv, _class(readonly, c), env=c.env, feeds=c.feeds())


def _writable_place(policy: Workspace, path: Path) -> bool:
    places = [*policy.roots, *(g.path for g in policy.grants if g.access == "write")]
    places.append(Path(os.path.realpath("/tmp")))
    return any(path == p or path.is_relative_to(p) for p in places)


def _class(readonly: bool, c: Command) -> str:
    """What a grant for this command line covers: reading, writing, or running code."""
    from tether.command_policy.danger import command_danger
    from tether.command_policy.environment import risky

    if readonly:
        return "read-only"
    if risky(c.env) or c.feeds() is not None:
        return "runs code"  # the program, told by its environment or input what to run
    found = command_danger(c.argv)
    return "runs code" if any("runs " in r or "interpreter" in r for r, _ in found) else "writing"
