"""`/yolo on|off|once`: the seed's session YOLO, as tether's `allow-all` mode. `on` switches
the session to `allow-all` (as the editor's mode menu does), `off` back to the mode it left,
`once` runs the next turn as `allow-all` and only that turn (it ends with the turn, however the
turn ends). In every case the command and path denylists still refuse what they name, and a
change to a skill still asks."""

from __future__ import annotations

from tether.engine.sessions.state import ALLOW_ALL_MODE, MODES, READ_ONLY_MODE
from tether.engine.slash.slash_command import CommandContext

KEPT = "the denylists still refuse what they name, and changes to skills still ask"


async def yolo(ctx: CommandContext, arg: str) -> str:
    s = ctx.session
    word = arg.strip().lower()
    if word == "on":
        if s.state.mode != ALLOW_ALL_MODE:
            s.yolo_from = s.state.mode
            await ctx.manager.settings.set_mode(s, ALLOW_ALL_MODE)
            await ctx.options_changed("mode")
        return f"YOLO is on: mode **{ALLOW_ALL_MODE}**, calls run without asking; {KEPT}."
    if word == "off":
        return await _off(ctx)
    if word == "once":
        if s.state.mode == READ_ONLY_MODE:
            return "The session is in read-only mode: choose another mode (`/mode`) first."
        s.yolo_once = True
        return f"YOLO for the next turn only: its calls run without asking; {KEPT}."
    return _status(ctx)


async def _off(ctx: CommandContext) -> str:
    s = ctx.session
    was_once, s.yolo_once = s.yolo_once, False
    if s.state.mode == ALLOW_ALL_MODE:
        back = s.yolo_from or ctx.manager.deps.agent.default_mode
        s.yolo_from = None
        await ctx.manager.settings.set_mode(s, back)
        await ctx.options_changed("mode")
        return f"YOLO is off: mode **{back}**: {MODES[back][1]}."
    if was_once:
        return "YOLO is off: the next turn asks as usual."
    return f"YOLO was not on (mode **{s.state.mode}**)."


def _status(ctx: CommandContext) -> str:
    s = ctx.session
    if s.state.mode == ALLOW_ALL_MODE:
        now = "on"
    elif s.yolo_once:
        now = "on for the next turn"
    else:
        now = "off"
    return (
        f"YOLO is {now}. `/yolo on` runs every call without asking for this session, "
        f"`/yolo once` for the next turn only, `/yolo off` asks again; {KEPT}."
    )
