"""A session's cgroup, where one can be made: cgroup v2, a group below this process's own that
it may write (as root, or in a cgroup delegated to its user, as systemd does for a user's
session). Every command of the session joins it as it starts (its one-use launcher writes
itself into `cgroup.procs` before becoming the sandbox), and a process cannot leave it on its
own; when the session closes, or tether ends, everything in it is killed (`cgroup.kill`) and the
group removed. A SIGKILLed tether's groups are killed and removed by the next tether, which
leaves a live one's alone (a group's name holds its tether's pid and start time). Where no group
can be made, the other layers hold alone (engine/local/reaper.py).
"""

from __future__ import annotations

import atexit
import itertools
import os
import signal
import threading
import time
from pathlib import Path

from tether.engine.local import reaper

PREFIX = "tether-"
EMPTY_WAIT = 1.0  # seconds for a killed group to empty before it is removed
_numbers = itertools.count(1)
_made: set[Path] = set()
_guard = threading.Lock()
_swept = False


def make() -> Path | None:
    """A new group for a session, or None where none can be made."""
    parent = own()
    if parent is None:
        return None
    _sweep(parent)
    path = parent / f"{PREFIX}{reaper.owner().replace(':', '-')}-{next(_numbers)}"
    try:
        path.mkdir()
    except OSError:
        return None
    with _guard:
        _made.add(path)
    return path


def join_line(group: Path | None) -> str:
    """The launcher's line that moves it (then the sandbox and the program) into `group`;
    a group it cannot join is passed over without a word."""
    if group is None:
        return ""
    procs = str(group / "cgroup.procs").replace("'", "'\\''")
    return f"{{ echo 0 > '{procs}'; }} 2>/dev/null\n"


def end(group: Path) -> None:
    """Kill everything in `group` and remove it."""
    with _guard:
        _made.discard(group)
    _kill(group)
    _remove(group)


def end_all() -> None:
    """Every group this tether made (it is ending), and those of tethers killed meanwhile."""
    with _guard:
        made = list(_made)
    for group in made:
        end(group)
    if _swept:
        parent = own()
        if parent is not None:
            _sweep(parent, again=True)


def own() -> Path | None:
    """This process's own cgroup v2 directory, when it may make groups in it."""
    mount = _mount_point()
    if mount is None:
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    relative = next((line[3:] for line in lines if line.startswith("0::")), None)
    if relative is None or not relative.startswith("/"):
        return None
    path = mount / relative.lstrip("/")
    return path if os.access(path, os.W_OK | os.X_OK) else None


def _mount_point() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (its root mounted: not a part of it)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        dash = fields.index("-") if "-" in fields else -1
        if dash > 0 and fields[dash + 1] == "cgroup2" and fields[3] == "/":
            return Path(fields[4])
    return None


def _sweep(parent: Path, *, again: bool = False) -> None:
    """Once per process (unless `again`): end the groups of tethers that are gone."""
    global _swept
    with _guard:
        if _swept and not again:
            return
        _swept = True
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        if _orphaned(entry):
            end(Path(entry.path))


def _orphaned(entry: os.DirEntry[str]) -> bool:
    """Whether a group named `tether-PID-START-N` outlived the tether it names."""
    owner = entry.name.removeprefix(PREFIX).split("-")
    if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
        return False
    if len(owner) != 3 or not owner[0].isdigit() or not owner[1]:
        return False  # not one of ours
    return reaper.start_time(int(owner[0])) != owner[1]


def _kill(group: Path) -> None:
    try:
        (group / "cgroup.kill").write_text("1")  # Linux 5.14+: all of it, at once
    except OSError:
        for _ in range(10):  # older kernels: SIGKILL whoever is in it, a few rounds
            pids = _members(group)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)


def _members(group: Path) -> list[int]:
    try:
        return [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _remove(group: Path) -> None:
    deadline = time.monotonic() + EMPTY_WAIT
    while True:
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # still busy: the next tether's sweep removes it
            time.sleep(0.01)


reaper.at_stop(end_all)  # SIGTERM, SIGHUP
atexit.register(end_all)  # a normal exit, also where no front installed the reaper (a test's)
