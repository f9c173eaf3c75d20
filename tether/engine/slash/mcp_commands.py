"""`/mcp` (the session's MCP servers: state, tools, prompts; `/mcp reconnect [NAME]`) and each
MCP prompt as a command, `/mcp__<server>__<prompt> args`: its arguments taken from the text
(in declared order, or `name=value`), the prompt got from the server, and a turn run on it."""

from __future__ import annotations

import shlex
import uuid
from typing import TYPE_CHECKING

from tether.engine import events as ev
from tether.engine.history import TextPart, UserPart
from tether.engine.mcp.names import tool_name, unique
from tether.engine.mcp.server_state import ServerStatus, left_out_lines
from tether.engine.mcp.spec import PromptArgument, RemotePrompt
from tether.engine.slash.slash_command import Command, CommandContext, Handler, prompt_turn
from tether.errors import TetherError

if TYPE_CHECKING:
    from tether.engine.mcp.host import McpHost

NO_SERVERS = (
    "No MCP servers in this session. Add them in the editor's agent settings (they come "
    "with each new session) or as `[mcp_servers.NAME]` tables in tether's config file."
)
OUTPUT_LINE = 200  # characters of a failed server's last stderr line shown
USAGE = "`/mcp` lists the servers; `/mcp reconnect [NAME]` starts one (or every failed one) again."


def _host(ctx: CommandContext) -> McpHost | None:
    return ctx.manager.runtime(ctx.session.id).mcp


async def mcp(ctx: CommandContext, arg: str) -> str:
    host = _host(ctx)
    words = arg.split()
    if words[:1] == ["reconnect"] and len(words) <= 2:
        if host is None:
            return NO_SERVERS
        return await _reconnect(host, words[1] if len(words) == 2 else None)
    if words:
        return f"Unknown: `/mcp {arg}`. {USAGE}"
    if host is None or not host.statuses():
        return NO_SERVERS
    lines = ["MCP servers:", *[_line(s) for s in host.statuses()], "", USAGE]
    return "\n".join(lines)


async def _reconnect(host: McpHost, name: str | None) -> str:
    try:
        done = await host.reconnect(name)
    except KeyError:
        names = ", ".join(f"`{s.name}`" for s in host.statuses())
        return f"No MCP server named `{name}` in this session (its servers: {names})."
    if not done:
        return (
            "No MCP server has failed or exited: nothing to reconnect "
            "(`/mcp reconnect NAME` restarts a running one)."
        )
    return "\n".join(["Reconnected:", *[_line(s) for s in done]])


def _line(s: ServerStatus) -> str:
    head = f"- **{s.name}** ({s.transport}): {s.summary}"
    if s.state == "ready":
        prompts = f", {s.prompts} prompt{'' if s.prompts == 1 else 's'}" if s.prompts else ""
        tools = ", ".join(f"`{t}`" for t in s.tools) or "none"
        lines = [f"{head}{prompts}", f"  - tools ({len(s.tools)}): {tools}"]
        if s.left_out:
            lines.append(f"  - left out ({len(s.left_out)}):")
            lines += [f"    - {x}" for x in left_out_lines(s.left_out, quote="`")]
        return "\n".join(lines)
    if s.state in ("failed", "exited"):
        lines = s.output.strip().splitlines()
        last = lines[-1][:OUTPUT_LINE].replace("`", "'") if lines else ""  # one code span
        said = f"\n  - its last output: `{last}`" if last else ""
        return f"{head}{said}\n  - start it again with `/mcp reconnect {s.name}`"
    return head


# --- prompts as commands --------------------------------------------------------------------


def prompt_commands(ctx: CommandContext) -> list[Command]:
    """The prompts of the session's connected MCP servers, one command each (a session
    source: they come and go with their servers)."""
    if ctx.session.id not in ctx.manager.sessions:
        return []
    host = _host(ctx)
    if host is None:
        return []
    taken: set[str] = set()
    commands: list[Command] = []
    for server, prompt in host.prompts():
        name = unique(tool_name(server, prompt.name), taken)
        taken.add(name)
        about = prompt.description or prompt.title or f"The prompt {prompt.name}"
        commands.append(
            Command(
                name,
                f"{about} (MCP server {server})",
                _runner(server, prompt),
                hint=_hint(prompt.arguments),
                turn=True,
            )
        )
    return commands


def _hint(arguments: list[PromptArgument]) -> str | None:
    """ "<file> [focus]": required arguments in angle brackets, optional ones in square."""
    if not arguments:
        return None
    return " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in arguments)


def _runner(server: str, prompt: RemotePrompt) -> Handler:
    async def run(ctx: CommandContext, arg: str) -> str:
        host = _host(ctx)
        try:
            arguments = prompt_arguments(prompt.arguments, arg)
            if host is None:
                raise TetherError("MCP_SERVER_GONE", f"the MCP server {server} is not running")
            model = ctx.manager.deps.catalog.infos.get(ctx.session.state.model)
            images = model is not None and model.images
            text, pictures = await host.get_prompt(server, prompt.name, arguments, images=images)
        except (ValueError, TetherError) as exc:
            why = exc.message if isinstance(exc, TetherError) else str(exc)
            return await _answer(ctx, f"`/{tool_name(server, prompt.name)}`: {why}")
        if not pictures:
            return await prompt_turn(ctx, text)
        assert ctx.scope is not None, "a turn command runs inside a prompt's claim"
        sent: list[UserPart] = [TextPart(text), *pictures]
        return await ctx.manager.run_turn(ctx.session, ctx.parts, ctx.scope, sent=sent)

    return run


async def _answer(ctx: CommandContext, text: str) -> str:
    """A turn command's reply without a turn (it could not run)."""
    ctx.session.record(ev.UserPrompted(ctx.parts))
    await ctx.manager.emit(ctx.session, ev.TextDelta(uuid.uuid4().hex, text))
    await ctx.manager.persist(ctx.session)
    return "end_turn"


def prompt_arguments(declared: list[PromptArgument], text: str) -> dict[str, str]:
    """The arguments in `text`: `name=value` for a declared name, the other words in
    declared order (the last argument left takes the rest of the words). ValueError saying
    what is missing or too much."""
    names = [a.name for a in declared]
    try:
        words = shlex.split(text)
    except ValueError:  # an unclosed quote: the words as typed
        words = text.split()
    values: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        key, eq, value = word.partition("=")
        if eq and key in names:
            values[key] = value
        else:
            positional.append(word)
    free = [n for n in names if n not in values]
    if positional and not free:
        taken = ", ".join(names) if names else "none"
        raise ValueError(f"too many arguments: {' '.join(positional)!r} (it takes: {taken})")
    if len(positional) > len(free):
        positional[len(free) - 1 :] = [" ".join(positional[len(free) - 1 :])]
    values.update(zip(free, positional, strict=False))
    missing = [a.name for a in declared if a.required and a.name not in values]
    if missing:
        usage = _hint(declared) or ""
        raise ValueError(f"missing {', '.join(missing)} (arguments: {usage})")
    return values
