"""How a command call asks and runs: the one plan `run_argv`, `run_argv_batch` and `open_pty`
share, on top of `tether.command_policy`'s judgement.

In every mode a denylisted program is refused (by name, behind wrappers and aliases, and by
the file it runs). A known read-only invocation runs without asking. In `code` mode,
everything else runs without asking when the sandbox confines it; without a sandbox, or in
`ask` mode, the user is asked. A call may ask to run `unconfined` with a reason: that always
asks and is never covered by a grant. Whatever was decided, a command runs inside the sandbox
when there is one, unless it was allowed to run unconfined.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from tether.command_policy import Command, judge
from tether.command_policy import refuse_denylisted as _refuse
from tether.command_policy.decision import denylist
from tether.command_policy.program_path import resolve_program
from tether.engine.events import TextOut, ToolContent
from tether.engine.local.processes import command_environment
from tether.engine.registry import CallPlan
from tether.engine.sandbox.session_sandbox import Scope
from tether.engine.seam import Capabilities, CommandResult, Launcher
from tether.errors import CommandDenied, SandboxUnavailable, ToolError
from tether.tools.text import fence

__all__ = [
    "Command",
    "Launch",
    "confine",
    "plan_commands",
    "refuse_denylisted",
    "sandbox_note",
    "scope_of",
]


def refuse_denylisted(ctx: Capabilities, commands: Sequence[Command]) -> None:
    """DENIED for a command the denylist refuses, at plan time (nobody is asked) and again
    when it runs."""
    try:
        _refuse(ctx.command_denylist, commands)
    except CommandDenied as exc:
        raise ToolError(exc.code, exc.message) from None


def scope_of(ctx: Capabilities, *, tty: bool = False) -> Scope:
    """Where the session's commands may write, and what they must not read or run."""
    policy = ctx.policy
    writable = [*policy.roots, *(g.path for g in policy.grants if g.access == "write")]
    guarded = [g for g in policy.guarded if any(g.is_relative_to(w) for w in writable)]
    return Scope(
        writable=tuple(dict.fromkeys(writable)),
        path_denylist=tuple(policy.denylist),
        programs=denylist(ctx.command_denylist).whole_programs(),
        tty=tty,
        guarded=tuple(guarded),
    )


async def plan_commands(
    ctx: Capabilities,
    commands: Sequence[Command],
    mode: str,
    *,
    unconfined: bool,
    reason: str | None,
    notes: Sequence[str] = (),
    tty: bool = False,
) -> CallPlan:
    """The card, consent and grant of a call running `commands` (title and target are the
    caller's)."""
    try:
        decision = judge(commands, ctx.policy, ctx.command_denylist)
    except CommandDenied as exc:
        raise ToolError(exc.code, exc.message) from None
    if unconfined and not (reason or "").strip():
        raise ToolError(
            "INVALID_ARGS", "unconfined needs a reason: say what the sandbox prevents and why"
        )
    problem = await _sandbox_problem(ctx, tty)
    network = ctx.sandbox is not None and ctx.sandbox.network
    lines = [*notes, *(f"⚠ {r}" for r, _ in decision.dangers)]
    lines += _where_it_runs(unconfined, reason, problem, network)
    content: list[ToolContent] = [TextOut("\n".join(lines))] if lines else []
    content += [TextOut(fence(p)) for _, p in decision.dangers if p]
    confined = not unconfined and problem is None  # fully: uncommitted work protected too
    free = not unconfined and (decision.read_only or (mode == "code" and confined))
    grants = decision.grants
    return CallPlan(
        title="",
        kind="execute",
        content=content,
        confirm=not free,
        scope=", ".join(dict.fromkeys(g.scope for g in grants))
        + (" [unconfined]" if unconfined else ""),
        grant_label=", ".join(dict.fromkeys(g.label for g in grants)),
        grantable=not unconfined,
        waived_by_mode=free and not decision.read_only,
    )


async def _sandbox_problem(ctx: Capabilities, tty: bool) -> str | None:
    if ctx.sandbox is None:
        return "no sandbox in this session"
    return await ctx.sandbox.problem(scope_of(ctx, tty=tty))


def _where_it_runs(
    unconfined: bool, reason: str | None, problem: str | None, network: bool
) -> list[str]:
    if unconfined:
        return [f"⚠ runs OUTSIDE the sandbox, with your permissions: {reason}"]
    if problem is not None and problem.startswith("uncommitted work"):
        return [f"⚠ runs in the sandbox, but {problem}"]
    if problem is not None:
        return [f"⚠ runs unconfined, with your permissions ({problem})"]
    net = "with network" if network else "no network"
    return [f"runs in the sandbox: writes only in the project (not uncommitted work); {net}"]


class Launch(NamedTuple):
    """What to start: the argv, the variables to start it with (on top of the command
    environment), whether it runs in the sandbox, and the launcher the argv starts through
    (None: the argv is the command itself)."""

    argv: list[str]
    env: dict[str, str]
    confined: bool
    launcher: Launcher | None = None


async def confine(
    ctx: Capabilities,
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    *,
    unconfined: bool,
    tty: bool = False,
) -> Launch:
    """What to start: inside the sandbox unless the call was allowed to run unconfined (or
    the machine has no sandbox, in which case the plan asked); unconfined, still under the
    launcher that ends what it starts with it and with tether. The call's own variables are
    set past the launcher, which runs unconfined, never on it."""
    if ctx.sandbox is None:
        return Launch(argv, env, confined=False)
    if resolve_program(argv[0], cwd, env) is None:  # said here, not by the launcher's exec
        raise ToolError(
            "COMMAND_NOT_FOUND", f"{argv[0]}: no such program (looked in PATH and {cwd})"
        )
    base = command_environment()
    if unconfined or not (await ctx.sandbox.ready()).confines:
        started = await ctx.sandbox.unconfined(argv, base=base, env=env)
        return _launch(started, argv, confined=False)
    try:
        scope = scope_of(ctx, tty=tty)
        wrapped = await ctx.sandbox.wrap(argv, cwd=cwd, scope=scope, base=base, env=env)
        return _launch(wrapped, argv, confined=True)
    except SandboxUnavailable as exc:
        raise ToolError(
            "SANDBOX_UNAVAILABLE",
            f"{exc}; the command did not run. Ask to run it with unconfined=true and a reason "
            "(the user is asked).",
        ) from None


def _launch(started: list[str], argv: list[str], *, confined: bool) -> Launch:
    """`started` is `[launcher, *argv]`, or (no launcher where none can run: not Linux,
    unconfined) the argv itself, after a confined `env` setting the call's variables."""
    if started[1:] == argv:
        return Launch(started, {}, confined, Launcher(Path(started[0]), list(argv), confined))
    return Launch(started, {}, confined)


_REFUSALS = re.compile(
    r"Read-only file system|Permission denied|Operation not permitted|EROFS|EACCES"
)
# Without network, a connection fails these ways (loopback included: the sandbox has its own).
_NO_NETWORK = re.compile(
    r"Network is unreachable|Connection refused|Temporary failure in name resolution|"
    r"Could not resolve host|Name or service not known|getaddrinfo|ENETUNREACH|ECONNREFUSED"
)


def sandbox_note(ctx: Capabilities, result: CommandResult, *, unconfined: bool) -> str:
    """A line for a failed confined command whose output looks like the sandbox refused it."""
    if unconfined or ctx.sandbox is None or not ctx.sandbox.confines:
        return ""
    if result.exit_code == 0 and not result.signal:
        return ""
    seen = _REFUSALS.search(result.output)
    if seen is None and not ctx.sandbox.network:
        seen = _NO_NETWORK.search(result.output)
    if seen is None:
        return ""
    net = "" if ctx.sandbox.network else " and opens no network connection"
    return (
        f"[sandbox] this command ran confined: it may write only in the project (not its "
        f"uncommitted work or .git) and the private $TMPDIR{net}; {seen.group(0)!r} above may be "
        "the sandbox refusing it. If it must do this, call again with unconfined=true and a "
        "reason (the user is asked)."
    )
