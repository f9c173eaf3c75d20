"""A `terminal/create` run the way Zed runs it, for the Zed replay (tests/editors/test_editor_zed.py).

What Zed does (crates/acp_thread/src/terminal.rs `create_terminal_entity`, task::ShellBuilder,
project::create_terminal_task): the command and its arguments become one line for the system
shell, `/bin/sh -i -c "(command arg …) </dev/null"` — the arguments joined by spaces, unquoted —
run in a real terminal (a pseudo-terminal that is the shell's controlling tty) with `PAGER=""`,
`GIT_PAGER=cat` and the agent's `env` on top of the editor's. `terminal/output` is the
terminal's text (no carriage returns); past `outputByteLimit` Zed keeps the *start* of it, cut
back to a line end, and says `truncated`; the exit status comes with it once the command ended.
The terminal's id is a UUID. A released terminal stays on the tool card with what it showed.

When the project holds a Python virtual environment (`terminal.detect_venv`, on by default:
`.env`, `env`, `.venv` or `venv` with `bin/activate`), Zed makes it the active toolchain and runs
its activation script first (project::terminals `create_terminal_task`): the user's shell runs
`. VENV/bin/activate; /bin/sh -i -c "(...) </dev/null"`, so the venv's `bin` comes first on the
PATH the command line is looked up in.
"""

from __future__ import annotations

import fcntl
import os
import pty
import shlex
import signal
import subprocess
import termios
import threading
import uuid
from pathlib import Path
from typing import Any

import anyio

SHELL = "/bin/sh"  # util::shell::get_default_system_shell_preferring_bash() off Windows


def shell_line(command: str, args: list[str]) -> str:
    """ShellBuilder::build for a POSIX shell with stdin from /dev/null."""
    return "(" + " ".join([command, *args]) + ") </dev/null"


VENVS = (".env", "env", ".venv", "venv")  # terminal.detect_venv's default directories


def zed_argv(command: str, args: list[str], worktree: Path) -> list[str]:
    """The program Zed starts for a terminal of the agent's, in `worktree`."""
    argv = [SHELL, "-i", "-c", shell_line(command, args)]
    activate = next(
        (worktree / v / "bin" / "activate" for v in VENVS if (worktree / v / "bin").is_dir()),
        None,
    )
    if activate is None or not activate.exists():
        return argv
    user_shell = os.environ.get("SHELL", SHELL)
    return [user_shell, "-c", f". {shlex.quote(str(activate))}; {shlex.join(argv)}"]


def _controlling_tty() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class ZedTerminal:
    def __init__(self, params: dict[str, Any], worktree: Path) -> None:
        self.id = str(uuid.uuid4())
        self.label = " ".join([params["command"], *(params.get("args") or [])])
        self.limit: int | None = params.get("outputByteLimit")
        env = {**os.environ, "PAGER": "", "GIT_PAGER": "cat"}
        env.update({e["name"]: e["value"] for e in params.get("env") or []})
        master, slave = pty.openpty()
        try:
            self.proc = subprocess.Popen(
                zed_argv(params["command"], params.get("args") or [], worktree),
                cwd=params.get("cwd") or worktree,
                env=env,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                preexec_fn=_controlling_tty,
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self._master = master
        self._screen = bytearray()
        self._ended = threading.Event()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        """Everything the command writes to its terminal, until the terminal closes."""
        try:
            while chunk := os.read(self._master, 65536):
                self._screen += chunk
        except OSError:  # EIO: every process holding the terminal has exited
            pass
        finally:
            os.close(self._master)
            self.proc.wait()
            self._ended.set()

    @property
    def text(self) -> str:
        """What the terminal shows."""
        return bytes(self._screen).decode("utf-8", "replace").replace("\r\n", "\n")

    def exit_status(self) -> dict[str, Any]:
        code = self.proc.returncode
        if code < 0:  # portable_pty's ExitStatus: code 1 and the signal's description
            return {"exitCode": 1, "signal": signal.strsignal(-code)}
        return {"exitCode": code}

    async def wait_for_exit(self) -> dict[str, Any]:
        await anyio.to_thread.run_sync(self._ended.wait)
        return self.exit_status()

    def output(self) -> dict[str, Any]:
        text = self.text
        content = text
        if self.limit is not None and len(text.encode()) > self.limit:
            head = text.encode()[: self.limit].decode("utf-8", "ignore")
            content = head[: head.rfind("\n")] if "\n" in head else head
        result: dict[str, Any] = {"output": content, "truncated": len(content) < len(text)}
        if self._ended.is_set():
            result["exitStatus"] = self.exit_status()
        return result

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
