"""Helpers for tests about processes: programs that resist being stopped, and the process
table as the kernel reports it."""

from __future__ import annotations

import sys
from pathlib import Path

# Ignores SIGTERM, SIGHUP and SIGINT, starts a child that ignores them too, writes
# "<pid> <child pid>" to argv[1], says "ready", then waits. Only SIGKILL stops either.
STUBBORN = """
import os, signal, subprocess, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
print("ready", flush=True)
time.sleep(600)
"""


def stubborn_script(directory: Path) -> Path:
    path = directory / "stubborn.py"
    path.write_text(STUBBORN)
    return path


def stubborn_argv(directory: Path, pid_file: Path) -> list[str]:
    return [sys.executable, str(stubborn_script(directory)), str(pid_file)]


def pids(pid_file: Path) -> list[int]:
    return [int(p) for p in pid_file.read_text().split()]


def alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
