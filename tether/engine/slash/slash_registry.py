"""The slash commands, one registry: every front offers `offered(ctx)` and runs what `parse`
finds in a prompt's text. A command's reply is an agent message (recorded like any event, so a
reload shows it).

The table names each handler by where it lives, so listing the commands (every session does as
it opens) loads none of them: a handler's module, and what it pulls in, is imported when its
command first runs."""

from __future__ import annotations

import uuid

import msgspec

from tether.engine import events as ev
from tether.engine.history import UserPart, prompt_text
from tether.engine.sessions.state import MODES
from tether.engine.slash.slash_command import Command, CommandContext, CommandSource

_SESSION = "tether.engine.slash.session_commands"
_CONTEXT = "tether.engine.slash.context_commands"


async def _help(ctx: CommandContext, arg: str) -> str:
    lines = ["Commands:", *[_usage(c) for c in offered(ctx)], "", "Modes:"]
    now = ctx.session.state.mode
    lines += [f"- {k}{' (now)' if k == now else ''}: {d}" for k, (_, d) in MODES.items()]
    tools = ctx.manager.runtime(ctx.session.id).registry()
    lines += ["", "Tools:", *[f"- {t.name}: {' '.join(t.description.split())}" for t in tools]]
    return "\n".join(lines)


def _usage(c: Command) -> str:
    bracketed = c.hint is not None and any(ch in c.hint for ch in "<[")
    hint = "" if not c.hint else f" {c.hint}" if bracketed else f" <{c.hint}>"
    return f"- /{c.name}{hint}: {c.help}"


COMMANDS: tuple[Command, ...] = (
    Command(
        "mode",
        f"Switch mode: {', '.join(MODES)} (`/help` says what each allows)",
        f"{_SESSION}:mode",
        hint=" | ".join(MODES),
    ),
    Command("model", "Switch the model of this session", f"{_SESSION}:model", hint="model id"),
    Command(
        "undo",
        "Revert the file changes of the last turn (again: one more turn back)",
        f"{_SESSION}:undo",
    ),
    Command("title", "Rename this session", f"{_SESSION}:title", hint="new title"),
    Command(
        "compact",
        "Summarise the conversation so far for the model (the history keeps everything)",
        f"{_SESSION}:compact",
        hint="what the summary should focus on (optional)",
    ),
    Command(
        "retry",
        "Go on with the last turn that did not finish (an error, a cancel, the round limit)",
        f"{_SESSION}:retry",
        turn=True,
    ),
    Command(
        "status",
        "Show the model, the mode, how full the context is, the cost so far, grants, MCP "
        "servers and where the session is kept",
        "tether.engine.slash.status_report:status",
    ),
    Command(
        "btw",
        "Ask a side question: answered with read-only tools, not added to the conversation",
        f"{_CONTEXT}:btw",
        hint="question",
        turn=True,
    ),
    Command(
        "clear",
        "Start the model on a fresh context (the session keeps the conversation so far)",
        f"{_CONTEXT}:clear",
    ),
    Command(
        "export",
        "Save the transcript as Markdown (default: a new tether-DATE.md in the project)",
        f"{_CONTEXT}:export",
        hint="path (optional)",
    ),
    Command(
        "grants",
        "List the 'always' answers in force; `/grants revoke N` or `all` takes them back",
        "tether.engine.slash.grant_commands:grants",
        hint="revoke N | revoke all",
    ),
    Command(
        "init",
        "Look at the project and write an AGENTS.md for coding agents (you approve the edit)",
        f"{_CONTEXT}:init",
        hint="what to stress (optional)",
        turn=True,
    ),
    Command(
        "todos",
        "Show the todo stack (the model's plan); `push A; B`, `pop` or `clear` change it",
        "tether.engine.slash.todo_commands:todos",
        hint="push TASK; TASK | pop | clear (optional)",
    ),
    Command(
        "mcp",
        "Show the MCP servers, their state and tools; `reconnect [NAME]` starts them again",
        "tether.engine.slash.mcp_commands:mcp",
        hint="reconnect [NAME] (optional)",
    ),
    Command(
        "yolo",
        "Run calls without asking: `on` for this session, `once` for the next turn, `off`; "
        "the denylists and skill changes still ask",
        "tether.engine.slash.yolo_commands:yolo",
        hint="on | off | once",
    ),
    Command("help", "List tether's commands, modes and tools", _help),
)


_FIXED = frozenset(c.name for c in COMMANDS)


def _skill_commands(ctx: CommandContext) -> list[Command]:
    from tether.engine.slash.skill_commands import skill_commands

    return skill_commands(ctx, taken=_FIXED)


def _mcp_prompt_commands(ctx: CommandContext) -> list[Command]:
    """The MCP servers' prompts; a session without servers loads none of the MCP code."""
    manager = ctx.manager
    if ctx.session.id not in manager.sessions or manager.runtime(ctx.session.id).mcp is None:
        return []
    from tether.engine.slash.mcp_commands import prompt_commands

    return prompt_commands(ctx)


SOURCES: tuple[CommandSource, ...] = (_skill_commands, _mcp_prompt_commands)
"""Where the session's own commands come from, after the fixed ones."""


def offered(ctx: CommandContext) -> list[Command]:
    """The commands available in this session, in the order fronts list them (a name taken by
    a fixed command is not offered again)."""
    fixed = [c for c in COMMANDS if c.available(ctx)]
    taken = {c.name for c in fixed}
    more = [c for source in SOURCES for c in source(ctx) if c.name not in taken]
    return fixed + more


async def prompted(ctx: CommandContext, parts: list[UserPart]) -> ev.StopReason:
    """A prompt, as every front hands it over: a slash command runs, anything else is a turn."""
    assert ctx.scope is not None, "a prompt runs inside its claim"
    found = parse(ctx, parts)
    if found is None:
        reply = unknown(ctx, parts)
        if reply is None:
            return await ctx.manager.run_turn(ctx.session, parts, ctx.scope)
        ctx.session.record(ev.UserPrompted(parts))
        return await _answer(ctx, reply)
    command, arg = found
    if not command.turn:
        ctx.session.record(ev.UserPrompted(parts))  # the client shows its own prompt
    return await run(msgspec.structs.replace(ctx, parts=parts), command, arg)


def parse(ctx: CommandContext, parts: list[UserPart]) -> tuple[Command, str] | None:
    """(/mode, "code") for "/mode code"; None when the prompt is not an offered command."""
    from tether.engine.slash.command_words import command_word  # (with the first prompt)

    word = command_word(prompt_text(parts))
    if word is None:
        return None
    name, arg = word
    command = next((c for c in offered(ctx) if c.name == name), None)
    return None if command is None else (command, arg)


def unknown(ctx: CommandContext, parts: list[UserPart]) -> str | None:
    """The reply to a command no one has (`/stauts`), with the near names; None for a prompt
    that is not a command (command_words.py says which)."""
    from tether.engine.slash.command_words import command_word, unknown_reply

    word = command_word(prompt_text(parts))
    if word is None:
        return None
    return unknown_reply(*word, [c.name for c in offered(ctx)])


async def run(ctx: CommandContext, command: Command, arg: str) -> ev.StopReason:
    """Run the command and show its reply, stored with the session; the prompt's stop reason
    (a command that runs a turn ends as its turn did)."""
    reply = await command.run(ctx, arg)
    if command.turn:
        return _stop_reason(reply)
    return await _answer(ctx, reply)


async def _answer(ctx: CommandContext, reply: str) -> ev.StopReason:
    await ctx.manager.emit(ctx.session, ev.TextDelta(uuid.uuid4().hex, reply))
    await ctx.manager.persist(ctx.session)
    return "end_turn"


def _stop_reason(text: str) -> ev.StopReason:
    stops: tuple[ev.StopReason, ...] = (
        "end_turn",
        "max_tokens",
        "max_turn_requests",
        "refusal",
        "cancelled",
    )
    return next(s for s in stops if s == text)
