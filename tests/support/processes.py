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


# `probe.py spawn DIR PREFIX` leaves behind every kind of process that could outlive tether,
# each a `probe.py sleep DIR TOKEN` that writes DIR/TOKEN.pid (its pid as it sees it) once it
# runs, then sleeps: a plain background child; one detached by setsid and a double fork; one
# detached without the marker tether puts in commands' environment; one detached that ignores
# SIGTERM, SIGHUP and SIGINT. The spawner itself writes DIR/PREFIX.pid, then sleeps too.
# Every token is on its process's command line, so this host finds them whatever PID namespace
# they run in.
PROBE = """
import os, signal, subprocess, sys, time

def sleep(directory, token, stubborn=False):
    if stubborn:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
    path = os.path.join(directory, token)
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path + ".pid")
    time.sleep(600)

def spawn(directory, prefix):
    me = [sys.executable, os.path.abspath(__file__), "sleep", directory]
    subprocess.Popen([*me, prefix + "-child"])
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [*me, prefix + "-detached"])
        os._exit(0)
    subprocess.Popen(["env", "-u", "TETHER_OWNER", "setsid", *me, prefix + "-unmarked"])
    subprocess.Popen(["setsid", *me, prefix + "-stubborn", "stubborn"])
    sleep(directory, prefix)

if sys.argv[1] == "spawn":
    spawn(sys.argv[2], sys.argv[3])
else:
    sleep(sys.argv[2], sys.argv[3], stubborn=sys.argv[4:] == ["stubborn"])
"""
PROBE_KINDS = ("child", "detached", "unmarked", "stubborn")


def probe_argv(
    directory: Path, pid_dir: Path, prefix: str, python: str = sys.executable
) -> list[str]:
    """The spawner's argv (the probe written to `directory`); its processes' pid files go to
    `pid_dir`, their tokens start with `prefix`."""
    path = directory / "probe.py"
    path.write_text(PROBE)
    path.chmod(0o644)
    return [python, str(path), "spawn", str(pid_dir), prefix]


def probe_tokens(prefix: str) -> list[str]:
    """The spawner's token (its prefix) and its leftovers'."""
    return [prefix, *(f"{prefix}-{kind}" for kind in PROBE_KINDS)]
