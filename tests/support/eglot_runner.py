"""A real Emacs (Debian's `emacs-nox`, with `elpa-eglot`) on a terminal that tmux runs, for the
eglot tests: keys are typed with `tmux send-keys`, and what Emacs showed (every message and
minibuffer prompt) is read from the log `tests/support/eglot/init.el` writes. CI sets
TETHER_REQUIRE_EMACS=1, so there a missing Emacs fails instead of skipping."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.harness import REPO

EMACS = shutil.which("emacs")
TMUX = shutil.which("tmux")
INIT = REPO / "tests" / "support" / "eglot" / "init.el"
INSTALL = "apt-get install -y emacs-nox elpa-eglot tmux"

if EMACS is None and os.environ.get("TETHER_REQUIRE_EMACS") == "1":
    raise RuntimeError(f"TETHER_REQUIRE_EMACS=1 but no emacs ({INSTALL})")
needs_emacs = pytest.mark.skipif(EMACS is None, reason=f"emacs is not installed ({INSTALL})")

WAIT = 20.0  # seconds: the most any one step may take


@functools.cache
def _eglot() -> None:
    """Emacs is here; so must eglot be (a clear failure rather than a connect timeout)."""
    assert EMACS is not None
    out = subprocess.run(
        [EMACS, "--batch", "-q", "--eval", "(require 'eglot)"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, f"emacs is installed but eglot is not ({INSTALL}): {out.stderr}"


class Emacs:
    """One Emacs in tmux, started on a file of a project, eglot connected to `tether lsp`."""

    def __init__(self, socket: Path, log: Path, pid_file: Path) -> None:
        self.socket = socket
        self.log = log
        self.pid_file = pid_file

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        out = subprocess.run(
            [TMUX, "-S", str(self.socket), *args], capture_output=True, text=True, timeout=10
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    def keys(self, *keys: str) -> None:
        """Keys by tmux's names (`M-x`, `C-g`, `Enter`)."""
        self.tmux("send-keys", "-t", "emacs", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "emacs", "-l", text)

    def command(self, name: str, *answers: str, prefix: bool = False) -> None:
        """M-x NAME RET (after C-u with `prefix`), then at each prompt that follows an answer
        and RET."""
        if prefix:
            self.keys("C-u")
        before = len(_prompts(self.entries()))
        self.keys("M-x")
        for text in (name, *answers):
            self.wait_for(lambda es, n=before: len(_prompts(es)) > n, f"a prompt for {text!r}")
            self.type(text)
            before = len(_prompts(self.entries()))
            self.keys("Enter")

    def entries(self) -> list[str]:
        """What Emacs showed, in order: `MESSAGE: ...`, `PROMPT: <prompt>[<initial text>]`,
        `ERROR: ...`."""
        if not self.log.exists():
            return []
        return [e for e in self.log.read_text(encoding="utf-8").split("\n\f\n") if e]

    def wait_for(self, cond: Callable[[list[str]], bool], what: str) -> list[str]:
        deadline = time.monotonic() + WAIT
        while True:
            entries = self.entries()
            if entries and cond(entries):
                return entries
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}\n{self.report()}")
            time.sleep(0.05)

    def mark(self) -> int:
        """How many entries there are now (for `shown(..., after=...)`)."""
        return len(self.entries())

    def shown(self, pattern: str, what: str | None = None, after: int = 0) -> str:
        """Wait until an entry (past the first `after`) matches the regex `pattern`; returns
        that entry."""
        regex = re.compile(pattern, re.S)

        def found(entries: list[str]) -> str | None:
            return next((e for e in entries[after:] if regex.search(e)), None)

        return found(self.wait_for(lambda es: found(es) is not None, what or pattern)) or ""

    def question(self, count: int = 1) -> str:
        """Wait for the `count`-th approval question in the minibuffer; returns its entry."""
        entries = self.wait_for(
            lambda es: len(_prompts(es, "tether asks to")) >= count, f"approval question {count}"
        )
        return _prompts(entries, "tether asks to")[count - 1]

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "emacs")

    def on_screen(self, cond: Callable[[str], bool], what: str) -> str:
        """Wait until the terminal shows what `cond` looks for; returns that screen."""
        deadline = time.monotonic() + WAIT
        while not cond(screen := self.screen()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what} on the screen\n{self.report()}")
            time.sleep(0.05)
        return screen

    def report(self) -> str:
        try:
            screen = self.tmux("capture-pane", "-p", "-t", "emacs")
        except AssertionError as exc:
            screen = f"(no screen: {exc})"
        return "--- log\n" + "\n".join(self.entries()) + "\n--- screen\n" + screen

    def tether_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None


def _prompts(entries: list[str], text: str = "") -> list[str]:
    return [e for e in entries if e.startswith("PROMPT: ") and text in e]


@contextmanager
def emacs_on(
    tmp_path: Path, project: Path, home: Path, script: Path, file: str, **env: str
) -> Iterator[Emacs]:
    """Emacs (-nw, 120x40) in a private tmux server, on `project/file`, with the README's eglot
    setup starting `tether lsp --script SCRIPT`; yields once eglot is connected. At the end
    Emacs is killed, and tether (which exits with its input) is waited for."""
    assert EMACS is not None, "no emacs"
    assert TMUX is not None, f"emacs is installed but tmux is not ({INSTALL})"
    _eglot()
    run = tmp_path / "emacs-run"
    run.mkdir()
    socket, log, pid_file = run / "tmux.sock", run / "log.txt", run / "tether.pid"
    tether = 'echo $$ > "$0"; exec "$@"'
    command = ["/bin/sh", "-c", tether, str(pid_file)]
    command += [sys.executable, "-m", "tether", "lsp", "--script", str(script)]
    full_env = {
        **os.environ,
        "HOME": str(run / "home"),
        "PYTHONPATH": str(REPO),
        "TETHER_HOME": str(home),
        "TETHER_TEST_REPO": str(REPO),
        "TETHER_LSP_CMD": json.dumps(command),
        "TETHER_TEST_FILE": str(project / file),
        "TETHER_TEST_LOG": str(log),
        "XDG_CONFIG_HOME": str(run / "xdg-config"),
        "XDG_STATE_HOME": str(run / "xdg-state"),
        "XDG_CACHE_HOME": str(run / "xdg-cache"),
        **env,
    }
    emacs = Emacs(socket, log, pid_file)
    start = ["new-session", "-d", "-s", "emacs", "-x", "120", "-y", "40", "-c", str(project)]
    subprocess.run(
        [TMUX, "-S", str(socket), "-f", "/dev/null", *start, EMACS, "-nw", "-q", "-l", str(INIT)],
        env=full_env,
        check=True,
        timeout=10,
    )
    try:
        emacs.shown(r"^MESSAGE: \[eglot\] Connected! Server `tether'", "eglot to connect")
        yield emacs
    finally:
        pid = emacs.tether_pid()
        subprocess.run([TMUX, "-S", str(socket), "kill-server"], capture_output=True, timeout=10)
        if pid is not None:
            _wait_gone(pid)


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + WAIT
    while _alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, 9)  # the tether this test started outlived its client
            return
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Running (a zombie, whose parent Emacs is gone, counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
