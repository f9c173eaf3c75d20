"""A command on a real PTY, read as a user reads it: the text it drew (escape sequences stripped,
redraws included), waited for with a deadline, and keys typed into it. The chat's tests use it."""

from __future__ import annotations

import os
import re
import select
import sys
import time
from pathlib import Path

from ptyprocess import PtyProcess

from tests.support.harness import REPO

_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_=>]|[\r\x07]")
KEYS = {"up": "\x1b[A", "down": "\x1b[B", "enter": "\r", "tab": "\t", "ctrl-c": "\x03"}
KEYS["escape"] = "\x1b"
KEYS["ctrl-d"] = "\x04"


class Screen:
    def __init__(self, argv: list[str], home: Path, size: tuple[int, int] = (40, 110)) -> None:
        env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
        # The PTY answers no cursor-position requests (a terminal emulator would).
        env["PROMPT_TOOLKIT_NO_CPR"] = "1"
        env.pop("TETHER_NONINTERACTIVE", None)
        command = [sys.executable, "-m", "tether", *argv]
        self.proc = PtyProcess.spawn(command, env=env, dimensions=size)
        self.raw = b""
        self.seen = 0  # where the next wait starts looking

    @property
    def text(self) -> str:
        return _ESCAPES.sub("", self.raw.decode("utf-8", "replace"))

    def _read(self, timeout: float) -> bool:
        """False once the program closed the terminal."""
        if not select.select([self.proc.fd], [], [], timeout)[0]:
            return True
        try:
            self.raw += self.proc.read(65536)
        except EOFError:
            return False
        return True

    def wait_for(self, wanted: str, timeout: float = 30) -> str:
        """The text up to and including the next `wanted` after the last one waited for."""
        deadline = time.monotonic() + timeout
        while (at := self.text.find(wanted, self.seen)) < 0:
            if time.monotonic() > deadline or not self._read(0.1):
                if self.text.find(wanted, self.seen) >= 0:
                    continue
                raise AssertionError(f"no {wanted!r} on the screen:\n{self.text[self.seen :]}")
        found = self.text[self.seen : at + len(wanted)]
        self.seen = at + len(wanted)
        return found

    def type(self, text: str) -> None:
        self.proc.write(text.encode())

    def press(self, *keys: str) -> None:
        for key in keys:
            self.type(KEYS.get(key, key))

    def exit_code(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.isalive():
            if time.monotonic() > deadline:
                raise AssertionError(f"still running; the screen:\n{self.text[-2000:]}")
            if not self._read(0.1):
                break
        self.proc.wait()
        status = self.proc.exitstatus
        assert status is not None, f"killed by signal {self.proc.signalstatus}"
        return status

    def close(self) -> None:
        if self.proc.isalive():
            self.proc.terminate(force=True)
