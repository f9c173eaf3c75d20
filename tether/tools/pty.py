"""PTY tools: interactive programs (a REPL, a debugger, a TUI, an ssh session) that the model
drives by reading their screen output and typing into them, through `ctx.pty`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from tether.command_policy.words import shell_join
from tether.engine.events import TextOut
from tether.engine.registry import CallPlan, ToolArgs, ToolOutput, tool
from tether.engine.seam import AskField, Capabilities, PtyRead, Ptys
from tether.errors import SeamError, ToolError

if TYPE_CHECKING:
    from tether.tools.limit_ask import Raise
from tether.tools.ask import ASK_TIMEOUT
from tether.tools.command_args import check_argv, check_env, check_timeout, command_cwd
from tether.tools.command_gate import Command, confine, plan_commands, refuse_denylisted
from tether.tools.pty_keys import UnknownKey, encode_keys
from tether.tools.text import fence

READ_LIMIT = 16_000  # characters one read returns (head and tail)
READ_TIMEOUT_UNTIL = 10.0
READ_TIMEOUT_PLAIN = 2.0
MAX_READ_TIMEOUT = 600.0


def _host(ctx: Capabilities) -> Ptys:
    if ctx.pty is None:
        raise ToolError("PTY_UNAVAILABLE", "this session has no pseudo-terminals")
    return ctx.pty


class OpenPtyArgs(ToolArgs):
    argv: list[str]
    cwd: str | None = None
    env: dict[str, str] | None = None
    unconfined: bool = False
    reason: str | None = None


@tool(kind="execute")
async def open_pty(ctx: Capabilities, args: OpenPtyArgs) -> ToolOutput:
    """Start an interactive program on a pseudo-terminal (a REPL, a debugger, a TUI, a
    server you want to watch) and return its pty_id; then read_pty, write_pty /
    write_pty_keys, and close_pty when done. For a command that just runs and exits, use
    run_argv. The program runs in the sandbox like run_argv's commands; `unconfined`
    (with a `reason`) asks the user, and then everything typed into it asks too.

    Args:
        argv: The program and its arguments, one string each, e.g. ["python3", "-q"].
        cwd: Working directory, relative to the project directory (the default).
        env: Extra environment variables.
        unconfined: Run outside the sandbox (asks the user; give `reason`).
        reason: Why the program must run unconfined: what the sandbox stops it from doing.
    """
    argv = check_argv(args.argv)
    here = await anyio.to_thread.run_sync(command_cwd, ctx, args.cwd)
    extra = check_env(args.env)
    refuse_denylisted(ctx, [Command(argv, here, extra)])
    started = await confine(ctx, argv, here, extra, unconfined=args.unconfined, tty=True)
    host = _host(ctx)
    try:
        pty_id, pid = await host.open(
            started.argv, cwd=here, env=started.env, confined=started.confined
        )
    except SeamError as exc:
        if exc.code != "PTY_LIMIT" or not await _more_ptys(ctx, host, exc.message):
            raise
        pty_id, pid = await host.open(
            started.argv, cwd=here, env=started.env, confined=started.confined
        )
    text = (
        f"pty {pty_id} started: {shell_join(argv)} (pid {pid}). Read its output with "
        f"read_pty(pty_id={pty_id}); type with write_pty or write_pty_keys; "
        f"close_pty(pty_id={pty_id}) when done."
    )
    return ToolOutput(text, [TextOut(text)], raw_output={"ptyId": pty_id, "pid": pid})


async def _more_ptys(ctx: Capabilities, host: Ptys, why: str) -> bool:
    """At the session's PTY limit the user decides: as many again, no limit, or no."""
    from tether.tools.limit_ask import ask_to_raise

    note = (
        f"The model asks for another PTY, but {why}. Allow: as many PTYs again "
        "([agent] max_ptys). Always allow: no limit for this session. Reject: the call fails."
    )
    answer = await ask_to_raise(
        ctx, "Open more PTYs than the session's limit?", note, {"limit": "ptys"}, "more PTYs"
    )
    if answer == "no":
        return False
    host.raise_limit(unlimited=answer == "always")
    return True


@open_pty.planned_by
async def _plan_open(ctx: Capabilities, args: OpenPtyArgs, mode: str) -> CallPlan:
    argv = check_argv(args.argv)
    here = await anyio.to_thread.run_sync(command_cwd, ctx, args.cwd)
    plan = await plan_commands(
        ctx,
        [Command(argv, here, check_env(args.env))],
        mode,
        unconfined=args.unconfined,
        reason=args.reason,
        notes=["an interactive program on a pseudo-terminal"],
        tty=True,
    )
    plan.title = plan.target = f"pty: {shell_join(argv)}"
    return plan


@open_pty.described_by
def _describe_open(ctx: Capabilities, args: OpenPtyArgs) -> CallPlan:
    return CallPlan(title=f"pty: {shell_join(args.argv)}", kind="execute")


class ReadPtyArgs(ToolArgs):
    pty_id: int
    until: str | None = None
    timeout_seconds: float | None = None


@tool(kind="execute", read_only=True, timeout=MAX_READ_TIMEOUT + 30, spill=False)
async def read_pty(ctx: Capabilities, args: ReadPtyArgs) -> ToolOutput:
    """Read what a PTY program printed since the last read, with escape sequences removed,
    and whether it still runs (or its exit code).

    With `until`, wait until that text appears (e.g. a prompt such as ">>> " or "(Pdb) ");
    without it, return as soon as the output pauses. A long output keeps its head and tail.

    Args:
        pty_id: The id open_pty returned.
        until: Plain text (not a pattern) to wait for in the output.
        timeout_seconds: The longest wait, 10 s by default with `until`, 2 s without.
    """
    pty_id, until = args.pty_id, args.until
    timeout = _read_timeout(args)
    host = _host(ctx)
    try:
        seen = await host.read(
            pty_id,
            until=until or None,
            timeout=timeout,
            max_chars=READ_LIMIT,
            more=lambda pid, budget: _more_output(ctx, pid, budget),
        )
    except anyio.get_cancelled_exc_class():
        # Stopped mid-read (the turn was cancelled): the program is stopped with it, so
        # nothing the user can no longer see keeps running.
        with anyio.CancelScope(shield=True):
            await host.close(pty_id)
        raise
    text = _read_text(pty_id, seen, until, timeout)
    return ToolOutput(text, [TextOut(fence(text))], raw_output=_raw(seen))


async def _more_output(ctx: Capabilities, pty_id: int, budget: int) -> Raise:
    """A PTY printed its output budget: the user decides whether it goes on."""
    from tether.tools.limit_ask import ask_to_raise

    note = (
        f"pty {pty_id} has printed more than its output budget ({budget:,} bytes). Allow: as "
        "much again ([agent] pty_output_budget). Always allow: no limit for this PTY. Reject: "
        "stop the program."
    )
    title = f"Let pty {pty_id} print more than {budget:,} bytes?"
    return await ask_to_raise(ctx, title, note, {"limit": "output", "ptyId": pty_id}, "more output")


def _read_text(pty_id: int, seen: PtyRead, until: str | None, timeout: float) -> str:
    head = f"pty {pty_id}: {_state(seen)}"
    if until:
        head += f"; {until!r} seen" if seen.matched else f"; {until!r} not seen in {timeout:g} s"
    return f"{head}\n{seen.text.rstrip() if seen.text.strip() else '(no new output)'}"


def _state(seen: PtyRead) -> str:
    if seen.alive:
        return "running"
    if seen.closed:
        return f"closed by tether: {seen.closed}"
    if seen.signal:
        return f"killed by {seen.signal}"
    return f"exited with code {seen.exit_code}"


def _raw(seen: PtyRead) -> dict[str, Any]:
    return {"alive": seen.alive, "exitCode": seen.exit_code, "matched": seen.matched}


def _read_timeout(args: ReadPtyArgs) -> float:
    default = READ_TIMEOUT_UNTIL if args.until else READ_TIMEOUT_PLAIN
    return check_timeout(args.timeout_seconds, default, MAX_READ_TIMEOUT, "timeout_seconds")


@read_pty.planned_by
async def _plan_read(ctx: Capabilities, args: ReadPtyArgs, mode: str) -> CallPlan:
    _read_timeout(args)
    until = f" until {args.until!r}" if args.until else ""
    return CallPlan(title=f"Read pty {args.pty_id}{until}", kind="execute")


class WritePtyArgs(ToolArgs):
    pty_id: int
    data: str


@tool(kind="execute")
async def write_pty(ctx: Capabilities, args: WritePtyArgs) -> ToolOutput:
    """Type text into a PTY program exactly as given: include "\\n" to press Enter. For
    control keys (Ctrl-C, Esc, arrows) use write_pty_keys. Then read_pty for the answer.

    Args:
        pty_id: The id open_pty returned.
        data: The text to type.
    """
    raw = args.data.encode("utf-8")
    await _host(ctx).write(args.pty_id, raw)
    return ToolOutput(f"typed {len(raw):,} bytes into pty {args.pty_id}")


@write_pty.planned_by
async def _plan_write(ctx: Capabilities, args: WritePtyArgs, mode: str) -> CallPlan:
    shown = args.data if len(args.data) <= 60 else args.data[:59] + "…"
    plan = CallPlan(
        title=f"Type into pty {args.pty_id}: {shown!r}",
        kind="execute",
        content=[TextOut(fence(args.data))] if "\n" in args.data.rstrip("\n") else [],
    )
    return _input_consent(ctx, args.pty_id, plan)


def _input_consent(ctx: Capabilities, pty_id: int, plan: CallPlan) -> CallPlan:
    """Input to a program outside the sandbox is a command nobody has checked: it asks (an
    "always" answer covers this PTY only). A confined program's input runs confined."""
    host = _host(ctx)
    try:
        confined = host.confined(pty_id)
    except SeamError as exc:
        raise ToolError(exc.code, exc.message) from None
    if not confined:
        plan.confirm = True
        plan.scope = f"pty {pty_id} [unconfined input]"
        plan.grant_label = f"typing into pty {pty_id}"
        plan.content = [TextOut("⚠ the program runs outside the sandbox"), *plan.content]
    return plan


class WritePtyKeysArgs(ToolArgs):
    pty_id: int
    keys: str


@tool(kind="execute")
async def write_pty_keys(ctx: Capabilities, args: WritePtyKeysArgs) -> ToolOutput:
    """Press keys in a PTY program: markers such as <enter>, <c-c>, <esc>, <tab>, <up*3>,
    <m-x>, <c-s-f5>, <f1>..<f12>, <pgup>, <del>, <lt> (a literal '<') and \\xHH bytes; text
    between markers is typed as it is. An unknown marker is an error and nothing is typed.

    Args:
        pty_id: The id open_pty returned.
        keys: Keys and text, e.g. "<c-c>", ":wq<enter>" or "<down*2><enter>".
    """
    data = _encode(args.keys)
    await _host(ctx).write(args.pty_id, data)
    return ToolOutput(f"pressed {args.keys} in pty {args.pty_id} ({len(data):,} bytes)")


def _encode(keys: str) -> bytes:
    try:
        data = encode_keys(keys)
    except UnknownKey as exc:
        raise ToolError("UNKNOWN_KEY", str(exc)) from None
    if not data:
        raise ToolError("INVALID_ARGS", "keys is empty")
    return data


@write_pty_keys.planned_by
async def _plan_keys(ctx: Capabilities, args: WritePtyKeysArgs, mode: str) -> CallPlan:
    _encode(args.keys)  # an unknown marker fails here, before anything is shown or typed
    return _input_consent(ctx, args.pty_id, _describe_keys(ctx, args))


@write_pty_keys.described_by
def _describe_keys(ctx: Capabilities, args: WritePtyKeysArgs) -> CallPlan:
    return CallPlan(title=f"Press {args.keys} in pty {args.pty_id}", kind="execute")


class AskIntoPtyArgs(ToolArgs):
    pty_id: int
    prompt: str
    secret: bool = True


ANSWER = "answer"


@tool(kind="execute", timeout=ASK_TIMEOUT)
async def ask_into_pty(ctx: Capabilities, args: AskIntoPtyArgs) -> ToolOutput:
    """Have the user type the answer to a PTY program's prompt (a password, a passphrase, a
    one-time code): tether asks the user, types the answer into the program and presses
    Enter; you never see it. Use it whenever a program asks for a secret; never ask for one in
    the conversation and never type one with write_pty. Then read_pty for what followed.

    Args:
        pty_id: The id open_pty returned.
        prompt: What to ask the user, e.g. "sudo password for build-01".
        secret: The answer is masked where the user types it, and typed only while the
            program hides its input (default true); false for an answer that may show on the
            program's screen, e.g. a user name.
    """
    host, pty_id = _host(ctx), args.pty_id
    if not args.prompt.strip():
        raise ToolError("INVALID_ARGS", "prompt must not be empty")
    _refuse_echo(host, pty_id, args.secret)
    field = AskField(ANSWER, "Answer", "text", required=True, secret=args.secret)
    question = (
        f"{args.prompt.strip()}\n\nWhat you type goes into pty {pty_id}, followed by Enter; "
        "the model does not see it."
    )
    try:
        answer = await ctx.ask.ask(question, [], [field], ctx.call_id)
    except SeamError as exc:
        raise _cannot_ask(exc) from None
    if not answer.accepted:
        verb = "dismissed the question" if answer.dismissed else "declined to answer"
        return ToolOutput(f"The user {verb}; nothing was typed into pty {pty_id}.")
    typed = answer.values.get(ANSWER)
    if not isinstance(typed, str):
        raise ToolError("ASK_FAILED", "the editor returned no text; nothing was typed")
    _refuse_echo(host, pty_id, args.secret)  # the program may have moved on meanwhile
    answer_text = typed.rstrip("\r\n")
    if args.secret:  # the program may print it back itself: hidden from all it prints next
        host.hide(pty_id, answer_text)
    await host.write(pty_id, answer_text.encode("utf-8") + b"\r")
    text = (
        f"The user typed their answer into pty {pty_id} (not shown to you) and Enter was "
        f"pressed; read_pty(pty_id={pty_id}) shows what the program did next."
    )
    return ToolOutput(text)


def _refuse_echo(host: Ptys, pty_id: int, secret: bool) -> None:
    """A secret is typed only while the terminal hides input (as `getpass` and `sudo` do):
    typed with echo on, it would show in the output the model reads."""
    try:
        echoes = host.echoes(pty_id)
    except SeamError as exc:
        raise ToolError(exc.code, exc.message) from None
    if secret and echoes:
        raise ToolError(
            "PTY_ECHOES",
            f"pty {pty_id} shows what is typed, so a secret would appear in its output: the "
            "program is not at a password prompt (yet). read_pty until it asks, then call "
            "ask_into_pty again; use secret=false only for an answer that may be seen",
        )


def _cannot_ask(exc: SeamError) -> ToolError:
    if exc.code != "ASK_UNAVAILABLE":
        return ToolError(exc.code, exc.message)
    return ToolError(
        "ASK_UNAVAILABLE",
        "this editor cannot take a typed answer out of your sight, so nothing was typed; "
        "never ask for the secret in the conversation. Tell the user to run the command in "
        "their own terminal and type it there, and end your turn",
    )


@ask_into_pty.planned_by
async def _plan_ask(ctx: Capabilities, args: AskIntoPtyArgs, mode: str) -> CallPlan:
    try:
        _host(ctx).confined(args.pty_id)  # PTY_NOT_FOUND before the user is asked anything
    except SeamError as exc:
        raise ToolError(exc.code, exc.message) from None
    # No consent asked: the user types the answer, and that is the consent.
    return _describe_ask(ctx, args)


@ask_into_pty.described_by
def _describe_ask(ctx: Capabilities, args: AskIntoPtyArgs) -> CallPlan:
    what = "a secret" if args.secret else "an answer"
    prompt = " ".join(args.prompt.split())[:80]
    return CallPlan(
        title=f"Ask the user for {what} for pty {args.pty_id}: {prompt}", kind="execute"
    )


class ClosePtyArgs(ToolArgs):
    pty_id: int


@tool(kind="execute")
async def close_pty(ctx: Capabilities, args: ClosePtyArgs) -> ToolOutput:
    """Stop a PTY program (hang-up and SIGTERM, then SIGKILL for whatever it started) and
    return its last output and how it ended.

    Args:
        pty_id: The id open_pty returned.
    """
    pty_id = args.pty_id
    ended = await _host(ctx).close(pty_id)
    text = f"pty {pty_id} closed: {_state(ended).removeprefix('closed by tether: ')}"
    if ended.text.strip():
        text += f"\n{ended.text.rstrip()}"
    return ToolOutput(text, [TextOut(fence(text))], raw_output=_raw(ended))


@close_pty.planned_by
async def _plan_close(ctx: Capabilities, args: ClosePtyArgs, mode: str) -> CallPlan:
    return CallPlan(title=f"Close pty {args.pty_id}", kind="execute")
