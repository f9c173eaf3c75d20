"""Helpers for tests about processes: programs that resist being stopped, and the process
table as the kernel reports it."""

from __future__ import annotations

import sys
from pathlib import Path

# Ignores SIGTERM, SIGHUP and SIGINT, starts a child that ignores them too, writes
# "<pid> <child pid>" to argv[1], says "ready", then waits. Only SIGKILL stops either. Both
# carry argv[1] on their command line, so this host finds them even when they run in a PID
# namespace of their own (a sandbox), where the pids they see are not this host's.
STUBBORN = """
import os, signal, subprocess, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
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
    """The stubborn program and its child, as this host numbers them: found by the pid file's
    path on their command lines while they run (in a sandbox's PID namespace the numbers they
    wrote are not this host's), else the numbers they wrote."""
    written = [int(p) for p in pid_file.read_text().split()]
    assert len(written) == 2
    return carrying(str(pid_file)) or written


def carrying(word: str) -> list[int]:
    """The live processes with `word` among their arguments."""
    found: list[int] = []
    needle = word.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in args and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
