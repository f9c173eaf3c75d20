"""Slash commands: offered through `available_commands_update`, run from a prompt's text. A
command's reply is an agent message (recorded like any event, so a reload shows it)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from tether.engine import events as ev
from tether.engine.history import UserPart
from tether.engine.sessions.state import MODES, Session
from tether.engine.sessions.turn_runner import prompt_text
from tether.schemas import acp

if TYPE_CHECKING:
    from tether.rpc.acp.agent import AcpAgent

COMMANDS = [
    acp.AvailableCommand(
        name="mode",
        description="Switch mode: ask, code or read-only",
        input=acp.CommandInput(hint="ask | code | read-only"),
    ),
    acp.AvailableCommand(
        name="model",
        description="Switch the model of this session",
        input=acp.CommandInput(hint="model id"),
    ),
    acp.AvailableCommand(
        name="undo",
        description="Revert the file changes of the last turn (again: one more turn back)",
    ),
    acp.AvailableCommand(
        name="title",
        description="Rename this session",
        input=acp.CommandInput(hint="new title"),
    ),
    acp.AvailableCommand(
        name="status", description="Show the model, the mode and what confines commands"
    ),
    acp.AvailableCommand(name="help", description="List tether's commands, modes and tools"),
]


def parse(parts: list[UserPart]) -> tuple[str, str] | None:
    """("mode", "code") for "/mode code"; None when the prompt is not one of our commands."""
    text = prompt_text(parts)
    if not text.startswith("/"):
        return None
    name, _, arg = text[1:].strip().partition(" ")
    if name not in {c.name for c in COMMANDS}:
        return None
    return name, arg.strip()


async def run(agent: AcpAgent, s: Session, name: str, arg: str) -> None:
    manager = agent.manager
    if name == "mode":
        reply = await _mode(agent, s, arg)
    elif name == "model":
        reply = await _model(agent, s, arg)
    elif name == "undo":
        reply = await manager.undo(s)
    elif name == "title":
        await manager.settings.set_title(s, arg)
        reply = f"Session renamed: **{s.title}**." if s.title else "Session title cleared."
    elif name == "status":
        reply = _status(agent, s)
    else:
        reply = _help(agent, s)
    await manager.emit(s, ev.TextDelta(uuid.uuid4().hex, reply))
    await manager.persist(s)


async def _mode(agent: AcpAgent, s: Session, arg: str) -> str:
    if not arg:
        choices = "\n".join(f"- `{k}`: {d}" for k, (_, d) in MODES.items())
        return f"Mode is **{s.state.mode}**. Choose one with `/mode NAME`:\n{choices}"
    await agent.manager.settings.set_mode(s, arg)
    await agent.send(s.id, acp.CurrentModeUpdate(current_mode_id=s.state.mode))
    await agent.send_options(s)
    return f"Mode is now **{s.state.mode}**: {MODES[s.state.mode][1]}."


async def _model(agent: AcpAgent, s: Session, arg: str) -> str:
    if not arg:
        infos = agent.deps.catalog.infos.values()
        choices = "\n".join(f"- `{i.id}`: {i.name}" for i in infos)
        return f"Model is **{s.state.model}**. Choose one with `/model ID`:\n{choices}"
    await agent.manager.settings.set_model(s, arg)
    await agent.send_options(s)
    return f"Model is now **{s.state.model}**."


def _status(agent: AcpAgent, s: Session) -> str:
    box = agent.manager.sandbox(s).info
    network = "on" if agent.manager.settings.network(s) else "off"
    return "\n".join(
        [
            f"- Model: **{s.state.model}**",
            f"- Mode: **{s.state.mode}**: {MODES[s.state.mode][1]}",
            f"- Sandbox: **{box.mechanism}**: {box.summary} ({box.why})",
            f"- Network for confined commands: **{network}** (the Command network option)",
        ]
    )


def _help(agent: AcpAgent, s: Session) -> str:
    lines = ["Commands:", *[f"- /{c.name}: {c.description}" for c in COMMANDS], "", "Modes:"]
    lines += [f"- {k}: {d}" for k, (_, d) in MODES.items()]
    tools = agent.manager.runtime(s.id).registry()
    lines += ["", "Tools:", *[f"- {t.name}: {t.description.split('.')[0]}" for t in tools]]
    return "\n".join(lines)
