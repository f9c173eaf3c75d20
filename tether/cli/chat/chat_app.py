"""`tether` alone on a terminal: the chat's loop. It spawns `tether acp` (as `tether ask` does),
opens a session in the folder (or loads one: `--continue`, `--resume ID`), then reads a line at a
prompt with history and `/command` completion, runs it as a turn, and reads the next.

Ctrl-C during a turn cancels the turn (`session/cancel`) and the chat stays; at the prompt, Ctrl-C
twice in a row, Ctrl-D on an empty line, or `/exit` leaves with 0."""

from __future__ import annotations

import argparse
import os
import sys

import anyio
import anyio.abc
from prompt_toolkit import PromptSession
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console

from tether.cli import exit_codes
from tether.cli.ask_client import (
    CANCEL_GRACE,
    AskOptions,
    ProcessStream,
    _server_command,
)
from tether.cli.chat.chat_agent import ChatAgent, Chooser
from tether.cli.chat.chat_view import ChatView
from tether.cli.chat.permission_menu import choose_option
from tether.cli.chat.slash_complete import SlashCompleter
from tether.cli.chat.terminal_modes import between_prompts
from tether.cli.session_pick import NoSessionToContinue, pick_session
from tether.rpc.peer import Peer
from tether.rpc.rpc_error import ConnectionClosed, RpcError
from tether.schemas import acp
from tether.transports.framing import NdjsonFramer
from tether.transports.streams import FramedStream

HISTORY_FILE = "chat_history"  # in tether's data directory: the lines typed at the prompt
PROMPT = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} "
EXIT_COMMANDS = ("/exit", "/quit")


def run_chat(args: argparse.Namespace) -> int:
    from tether.cli.ask_client import cwd_problem
    from tether.cli.config_gate import gate
    from tether.logs import setup_logging

    cwd = os.path.abspath(args.cwd)
    problem = cwd_problem(cwd)
    if problem is not None:
        print(f"tether: --cwd {cwd}: {problem}", file=sys.stderr)
        return exit_codes.USAGE
    stop = gate(cwd, args.model, args.script)  # what stops `ask` stops the chat, in one line
    if stop is not None:
        return stop
    setup_logging("chat", args.log_level)
    try:
        return anyio.run(_chat, args, cwd)
    except KeyboardInterrupt:  # Ctrl-C before the chat's own handling was in place
        return exit_codes.INTERRUPTED


def _server(args: argparse.Namespace) -> list[str]:
    spawn = AskOptions(
        prompt="",
        script=args.script,
        model=args.model,
        log_level=args.log_level,
        max_rounds=args.max_rounds,
        auto_continue=args.auto_continue,
    )
    return _server_command(spawn)


async def _chat(args: argparse.Namespace, cwd: str) -> int:
    view = ChatView(Console(highlight=False), cwd)
    completer = SlashCompleter()
    async with await anyio.open_process(_server(args), stderr=None) as proc:
        stream = FramedStream(ProcessStream(proc, None), NdjsonFramer())
        peer = Peer(stream, name="chat")
        agent = ChatAgent(peer, view, completer, _chooser(args))
        agent.register()
        code = exit_codes.TURN_FAILED
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.run)
            tg.start_soon(_watch_interrupts, agent)
            try:
                code = await _converse(agent, args, cwd)
            finally:
                await stream.aclose()
                tg.cancel_scope.cancel()
        await _reap(proc)
    return code


async def _reap(proc: anyio.abc.Process) -> None:
    with anyio.move_on_after(CANCEL_GRACE):
        await proc.wait()
    if proc.returncode is None:
        proc.kill()


async def _converse(agent: ChatAgent, args: argparse.Namespace, cwd: str) -> int:
    try:
        await agent.initialize()
        loading = await pick_session(cwd, args.continue_last, args.resume, agent.list_sessions)
        if loading is None:
            await agent.new_session(cwd)
        else:
            await agent.load_session(loading, cwd)
        if args.mode:
            await agent.set_mode(args.mode)
    except NoSessionToContinue as exc:
        print(f"tether: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    except RpcError as exc:
        print(f"tether: {exc.message}", file=sys.stderr)
        return exit_codes.USAGE
    except ConnectionClosed:
        print("tether: the agent exited before the session opened", file=sys.stderr)
        return exit_codes.TURN_FAILED
    mode = f" · mode {agent.mode}" if agent.mode else ""
    agent.view.say(f"tether · {cwd} · session {agent.session_id}{mode}", "bold")
    agent.view.say("/ and Tab: commands · Ctrl-C cancels a turn · Ctrl-D exits")
    with between_prompts(signals=False):
        return await _loop(agent)


async def _loop(agent: ChatAgent) -> int:
    prompt: PromptSession[str] = PromptSession(
        history=_history(),
        completer=agent.completer,
        complete_while_typing=False,
        key_bindings=_newline_keys(),
        prompt_continuation="  ",
    )
    armed = False  # a Ctrl-C at the prompt: a second one in a row exits
    while True:
        try:
            line = await prompt.prompt_async(PROMPT, handle_sigint=False)
        except KeyboardInterrupt:
            if armed:
                return exit_codes.OK
            armed = True
            agent.view.say("(Ctrl-C again or Ctrl-D to exit)")
            continue
        except EOFError:
            return exit_codes.OK
        armed = False
        text = line.strip()
        if text in EXIT_COMMANDS:
            return exit_codes.OK
        if not text:
            continue
        try:
            with between_prompts(signals=True):
                await agent.turn(text)
        except RpcError as exc:
            agent.view.say(f"error: {exc.message}", "red")
        except ConnectionClosed:
            agent.view.say("the agent exited", "red")
            return exit_codes.TURN_FAILED


def _newline_keys() -> KeyBindings:
    """A new line in the prompt instead of sending it: `\\` then Enter, or Alt-Enter (Esc, Enter),
    as in other agents' terminals."""
    kb = KeyBindings()

    @kb.add("enter", filter=Condition(_after_backslash))
    def _continued(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        buffer.delete_before_cursor(1)
        buffer.insert_text("\n")

    @kb.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return kb


def _after_backslash() -> bool:
    from prompt_toolkit.application import get_app

    return get_app().current_buffer.document.text_before_cursor.endswith("\\")


def _history() -> History:
    """The prompt's lines, kept across chats in tether's data directory (in memory only when
    that directory cannot be written)."""
    from tether.paths import data_dir

    path = data_dir() / HISTORY_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)  # what the user typed: theirs alone
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(path))


def _chooser(args: argparse.Namespace) -> Chooser:
    """The menu, or the answer `--yes` / `--no` gives to every request without asking."""
    kind = "allow_once" if args.yes else "reject_once" if args.no else None

    async def choose(params: acp.RequestPermissionRequest) -> str | None:
        if kind is None:
            return await choose_option(params)
        return next((o.option_id for o in params.options if o.kind == kind), None)

    return choose


async def _watch_interrupts(agent: ChatAgent) -> None:
    """Ctrl-C while a turn runs (the terminal is not in raw mode then: it is a signal)."""
    import signal

    try:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                if agent.turning:
                    agent.interrupt()
    except NotImplementedError:  # Windows: Ctrl-C stays a KeyboardInterrupt
        return
