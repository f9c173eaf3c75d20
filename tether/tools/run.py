"""run_argv: one program with its arguments, no shell. It runs through `ctx.terminal`: a client
terminal when the editor offers one, else a local process; the card streams its output."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec

from tether.command_policy.words import shell_join
from tether.engine.events import TextOut, ToolContent
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import Capabilities, CommandResult
from tether.tools.command_args import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    check_argv,
    check_env,
    check_timeout,
    command_cwd,
)
from tether.tools.command_gate import (
    Command,
    confine,
    plan_commands,
    refuse_denylisted,
    sandbox_note,
)
from tether.tools.command_output import (
    OUTPUT_LIMIT,
    CardProgress,
    output_card,
    raw_result,
    result_text,
    status_line,
    terminal_card,
)
from tether.tools.text import fence
from tether.tools.tool_paths import display


class _Command(msgspec.Struct):
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stdin: bytes | None
    timeout: float


class RunArgvArgs(ToolArgs):
    argv: list[str]
    cwd: str | None = None
    stdin: str | None = None
    env: dict[str, str] | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT
    unconfined: bool = False
    reason: str | None = None


def _command(ctx: Capabilities, args: RunArgvArgs) -> _Command:
    stdin = args.stdin
    return _Command(
        argv=check_argv(args.argv),
        cwd=command_cwd(ctx, args.cwd),
        env=check_env(args.env),
        stdin=stdin.encode("utf-8") if isinstance(stdin, str) else None,
        timeout=check_timeout(
            args.timeout_seconds, DEFAULT_TIMEOUT, MAX_TIMEOUT, "timeout_seconds"
        ),
    )


@tool(kind="execute", timeout=MAX_TIMEOUT + 60)
async def run_argv(ctx: Capabilities, args: RunArgvArgs) -> ToolOutput:
    """Run one program with its arguments; returns its exit code and its output (stdout and
    stderr as they arrived; long output keeps its head and tail).

    There is no shell: give the program and each argument as separate strings, and expect no
    pipes, redirections, globs, `&&` or `$VAR` expansion. Use run_argv_batch for ordered steps
    and pipes; several run_argv calls in one step may run in parallel. Invoke the target
    command directly instead of wrapping it in `bash -c` / `python -c` / `node -e`: an
    interpreter always asks the user first, and a dedicated tool (read_file, ...) is better
    when one does the job. Denylisted commands (sudo, rm -rf /, shutdown, ...) are refused.

    Commands run in a sandbox where the machine has one: they may write only in the project
    (not its uncommitted work or .git) and a private $TMPDIR, and reach no network unless the
    session allows it. When the sandbox is what stops a command, call again with
    `unconfined: true` and a `reason`; that always asks the user.

    Args:
        argv: The program and its arguments, one string each, e.g. ["pytest", "-q", "tests"].
        cwd: Working directory, relative to the project directory (the default).
        stdin: Text written to the program's standard input, which is then closed; without
            it the program reads an empty input.
        env: Extra environment variables, e.g. {"RUST_LOG": "debug"}.
        timeout_seconds: Seconds before the program, and everything it started, is killed.
        unconfined: Run outside the sandbox (asks the user every time; give `reason`).
        reason: Why the command must run unconfined: what the sandbox stops it from doing.
    """
    cmd = await anyio.to_thread.run_sync(_command, ctx, args)
    refuse_denylisted(ctx, [Command(cmd.argv, cmd.cwd, cmd.env)])
    started = await confine(ctx, cmd.argv, cmd.cwd, cmd.env, unconfined=args.unconfined)
    progress = CardProgress(ctx.report, prefix=f"$ {shell_join(cmd.argv)}\n")
    result = await progress.around(
        lambda: ctx.terminal.run(
            started.argv,
            cwd=cmd.cwd,
            env=started.env,
            timeout=cmd.timeout,
            output_limit=OUTPUT_LIMIT,
            stdin=cmd.stdin,
            progress=progress,
            overflow=lambda: ctx.spill.reserve(f"run_argv-{ctx.call_id}-output"),
            launcher=started.launcher,
        )
    )
    text = result_text(result, cmd.timeout)
    note = sandbox_note(ctx, result, unconfined=args.unconfined)
    card = _card(shell_join(cmd.argv), result, status_line(result, cmd.timeout), note)
    text = f"{text}\n{note}" if note else text
    return ToolOutput(text, card, raw_output=raw_result(result))


def _card(command: str, result: CommandResult, status: str, note: str) -> list[ToolContent]:
    """The client's terminal; else the command, its output's tail and how it ended (and the
    sandbox's note when the sandbox may be what stopped it)."""
    if result.terminal_id is not None:
        return terminal_card([result.terminal_id], result, status)
    card: list[ToolContent] = [TextOut(fence(output_card(command, result, status)))]
    return [*card, TextOut(note)] if note else card


@run_argv.planned_by
async def _plan_run(ctx: Capabilities, args: RunArgvArgs, mode: str) -> CallPlan:
    cmd = await anyio.to_thread.run_sync(_command, ctx, args)
    plan = await plan_commands(
        ctx,
        [Command(cmd.argv, cmd.cwd, cmd.env, stdin=cmd.stdin)],
        mode,
        unconfined=args.unconfined,
        reason=args.reason,
        notes=_where(ctx, cmd.cwd, cmd.env, cmd.stdin),
    )
    plan.title = plan.target = shell_join(cmd.argv)
    return plan


@run_argv.described_by
def _describe_run(ctx: Capabilities, args: RunArgvArgs) -> CallPlan:
    return CallPlan(title=shell_join(args.argv), kind="execute", target=shell_join(args.argv))


def _where(ctx: Capabilities, cwd: Path, env: dict[str, str], stdin: bytes | None) -> list[str]:
    notes: list[str] = []
    if cwd != ctx.cwd:
        notes.append(f"in {display(ctx, cwd)}")
    if env:
        notes.append("with " + " ".join(shell_join([f"{k}={v}"]) for k, v in env.items()))
    if stdin is not None:
        notes.append(f"with {len(stdin):,} bytes on its input")
    return notes
