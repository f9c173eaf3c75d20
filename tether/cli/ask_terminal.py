"""`tether ask`'s questions on the terminal (a permission's options, a form's fields, a
password), each read in a daemon thread so a cancelled turn abandons it."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from tether.schemas import acp

T = TypeVar("T")


async def in_daemon_thread(fn: Callable[[], T]) -> T:
    """Run a blocking terminal prompt in a daemon thread: when the turn is cancelled the prompt
    is abandoned, and a thread still waiting for a line never holds up the exit."""
    done = anyio.Event()
    box: list[T] = []
    errors: list[BaseException] = []
    token = anyio.lowlevel.current_token()

    def run() -> None:
        try:
            box.append(fn())
        except BaseException as exc:
            errors.append(exc)
        try:
            anyio.from_thread.run_sync(done.set, token=token)
        except anyio.RunFinishedError:
            pass  # nobody is waiting any more

    threading.Thread(target=run, name="tether-ask prompt", daemon=True).start()
    await done.wait()
    if errors:
        raise errors[0]
    return box[0]


def interactive() -> bool:
    return sys.stdin.isatty() and os.environ.get("TETHER_NONINTERACTIVE") != "1"


def prompt_choice(params: acp.RequestPermissionRequest) -> str | None:
    for i, o in enumerate(params.options, 1):
        print(f"    [{i}] {o.name}", file=sys.stderr)
    while True:
        answer = _read_line("    choose: ")
        if answer is None:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(params.options):
            return params.options[int(answer) - 1].option_id


def prompt_fields(props: dict[str, Any]) -> dict[str, bool | str]:
    """A yes/no per boolean field (a call to allow), a line per text field (empty: unsaid)."""
    answers: dict[str, bool | str] = {}
    for key, prop in props.items():
        title = prop.get("title", key)
        if prop.get("type") != "boolean":
            secret = (prop.get("_meta") or {}).get("writeOnly") is True
            ask = _read_secret if secret else _read_line
            text = ask(f"    {title}{'' if secret else ' (optional)'}: ")
            if text:
                answers[key] = text
            continue
        answer = _read_line(f"    allow {title}? [Y/n] ")
        answers[key] = answer is not None and answer.lower() in ("", "y", "yes")
    return answers


def _read_secret(prompt: str) -> str | None:
    """A line typed without echo (a password for a PTY): never shown, never logged."""
    import getpass

    try:
        return getpass.getpass(prompt, stream=sys.stderr)
    except EOFError:
        return None


def _read_line(prompt: str) -> str | None:
    """One line from the terminal, None at end of input. Reads the descriptor itself, not
    sys.stdin: an abandoned prompt thread must hold no lock the exiting interpreter needs."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1024)
        if not chunk:
            return None if not line else line.decode(errors="replace").strip()
        line += chunk
    return line.decode(errors="replace").strip()
