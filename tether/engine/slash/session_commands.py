"""The commands that show or change one session: /mode, /model, /undo, /title, /compact,
/retry."""

from __future__ import annotations

import uuid

from tether.engine import events as ev
from tether.engine.sessions.state import MODES
from tether.engine.slash.slash_command import CommandContext


async def mode(ctx: CommandContext, arg: str) -> str:
    s = ctx.session
    if not arg:
        choices = "\n".join(f"- `{k}`: {d}" for k, (_, d) in MODES.items())
        return f"Mode is **{s.state.mode}**. Choose one with `/mode NAME`:\n{choices}"
    await ctx.manager.settings.set_mode(s, arg)
    await ctx.options_changed("mode")
    return f"Mode is now **{s.state.mode}**: {MODES[s.state.mode][1]}."


async def model(ctx: CommandContext, arg: str) -> str:
    s = ctx.session
    words = arg.split()
    persist = PERSIST in words
    arg = " ".join(w for w in words if w != PERSIST)
    if not arg and not persist:
        infos = ctx.manager.deps.catalog.infos.values()
        choices = "\n".join(f"- `{i.id}`: {i.name}" for i in infos)
        return (
            f"Model is **{s.state.model}**. Choose one with `/model ID` (`/model ID --persist` "
            f"also makes it the default of new sessions):\n{choices}"
        )
    if arg:
        await ctx.manager.settings.set_model(s, arg)
        await ctx.options_changed("model")
    said = f"Model is now **{s.state.model}**." if arg else f"Model is **{s.state.model}**."
    return f"{said} {await _persist_model(s.state.model)}" if persist else said


PERSIST = "--persist"


async def _persist_model(model_id: str) -> str:
    """`[defaults] model` in the user's config file, comments kept (engine/config/persist)."""
    import anyio

    from tether.engine.config.persist import persist_default_model
    from tether.errors import ConfigError
    from tether.paths import config_path

    path = config_path()
    try:
        await anyio.to_thread.run_sync(persist_default_model, path, model_id)
    except ConfigError as exc:
        return f"It was not written to {path}:\n{exc.message}"
    except OSError as exc:
        return f"It was not written to {path}: {exc.strerror or exc}"
    return f"Saved as the default model (`[defaults] model` in {path}) from tether's next start."


async def undo(ctx: CommandContext, arg: str) -> str:
    return await ctx.manager.undo(ctx.session)


async def title(ctx: CommandContext, arg: str) -> str:
    s = ctx.session
    await ctx.manager.settings.set_title(s, arg)
    return f"Session renamed: **{s.title}**." if s.title else "Session title cleared."


async def compact(ctx: CommandContext, arg: str) -> str:
    summarised = await ctx.manager.compact(ctx.session, arg or None)
    if summarised is None:
        return "Nothing to compact yet: the conversation has no earlier part to summarise."
    if summarised == 0:
        return "The conversation could not be summarised; nothing was replaced."
    return (
        f"Compacted: the {summarised} messages so far are summarised for the model (the "
        "session keeps every one; a reload still shows them)."
    )


async def retry(ctx: CommandContext, arg: str) -> str:
    assert ctx.scope is not None, "a turn command runs inside a prompt's claim"
    ctx.session.record(ev.UserPrompted(ctx.parts))
    stop = await ctx.manager.retry_turn(ctx.session, ctx.scope)
    if stop is None:
        text = "Nothing to retry: the last turn finished."
        await ctx.manager.emit(ctx.session, ev.TextDelta(uuid.uuid4().hex, text))
        await ctx.manager.persist(ctx.session)
        return "end_turn"
    return stop
