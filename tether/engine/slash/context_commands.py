"""The commands about the conversation itself: /clear (a fresh context), /btw (a side question
that leaves the history as it was), /export (the transcript as Markdown), /init (an AGENTS.md
for the project, written through the normal approval)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import anyio

from tether.engine import events as ev
from tether.engine.history import TextPart, UserPart
from tether.engine.local.nofollow import create_new
from tether.engine.sessions.export import to_markdown
from tether.engine.slash.slash_command import CommandContext, prompt_turn
from tether.errors import SeamError

BTW_PREAMBLE = (
    "A side question from the user, apart from the task at hand: answer it briefly. Only "
    "read-only tools are available for it, and this exchange is not kept in the conversation."
)

INIT_PROMPT = """\
Write an `AGENTS.md` at the root of this project: the instructions a coding agent (you, in \
later sessions, or another agent) needs to work here. Look at the project first: its layout, \
languages, how to set it up, build it, run its tests and linters (the exact commands), its \
conventions (style, naming, commit messages) and anything surprising. Keep it short and \
concrete: commands over prose, no generic advice. If an `AGENTS.md` (or `CLAUDE.md`) exists, \
improve it instead of starting over, keeping what is still true. Write it with `write_file`; \
the user approves the change."""


async def clear(ctx: CommandContext, arg: str) -> str:
    left = await ctx.manager.turns.clear(ctx.manager.runtime(ctx.session.id))
    return (
        f"Context cleared: the model starts afresh ({left} earlier messages are no longer sent; "
        "the session keeps them, and a reload still shows them)."
    )


async def btw(ctx: CommandContext, arg: str) -> str:
    assert ctx.scope is not None, "a turn command runs inside a prompt's claim"
    s = ctx.session
    s.record(ev.UserPrompted(ctx.parts))
    if not arg:
        text = "Ask a side question with `/btw QUESTION`."
        await ctx.manager.emit(s, ev.TextDelta(uuid.uuid4().hex, text))
        await ctx.manager.persist(s)
        return "end_turn"
    parts: list[UserPart] = [TextPart(f"{BTW_PREAMBLE}\n\n{arg}")]
    runtime = ctx.manager.runtime(s.id)
    return await ctx.manager.turns.side_turn(runtime, parts, ctx.scope)


async def export(ctx: CommandContext, arg: str) -> str:
    s = ctx.session
    await ctx.manager.persist(s)  # the events so far, this command's prompt included
    events = await ctx.manager.deps.store.events(s.id, s)
    path = _export_path(s.cwd, arg or f"tether-{time.strftime('%Y%m%d-%H%M%S')}.md")
    # A new file, never through a link: a command may have planted one under the default
    # name (guessable to the second), a repository may commit `notes.md -> ../elsewhere`.
    data = to_markdown(s, events).encode("utf-8")
    try:
        await anyio.to_thread.run_sync(create_new, path, data)
    except FileExistsError:
        return f"Not exported: `{path}` exists. Give another path: `/export PATH`."
    except SeamError as exc:
        return f"Not exported: {exc.message}. Give another path: `/export PATH`."
    except OSError as exc:
        return f"Not exported: {exc.strerror or exc} (`{path}`)."
    return f"Exported the transcript to `{path}`."


def _export_path(cwd: str, name: str) -> Path:
    return Path(cwd) / Path(name).expanduser()  # relative to the project


async def init(ctx: CommandContext, arg: str) -> str:
    extra = f"\n\nThe user adds: {arg}" if arg else ""
    return await prompt_turn(ctx, INIT_PROMPT + extra)
