"""Which tests start processes, seen by the interpreter itself: an audit hook hears every
`subprocess.Popen`, fork, exec and spawn made in the test process while a test runs (its
fixtures' set-up and tear-down included), and a test that started one without the `slow` mark
fails its tear-down saying so. `pytest -m "not slow"` is then exactly the tests that start no
process of their own. TETHER_TEST_SPAWNS=FILE records instead of failing: the node id of each
test that started one unmarked is appended to FILE (to find the tests to mark), and of each
test marked slow that started none, with "none" (to find marks no longer needed).

Not counted: the probes tether makes once per process and caches (is bubblewrap usable, which
ripgrep is installed), which start a process for whichever test happens to ask first; a test
that uses a fixture starting a process (a warm server) is marked by that fixture, as the fixture
may have started it for an earlier test."""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from typing import Any

import pytest

# The audit events that start a process (os.fork covers multiprocessing, os.forkpty pty.fork).
SPAWN_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "os.system",
    }
)


class _Watch:
    def __init__(self) -> None:
        self.current: str | None = None
        self.spawned: dict[str, str] = {}  # node id -> what it started first

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event in SPAWN_EVENTS and self.current is not None and not _probing():
            self.spawned.setdefault(self.current, f"{event} {_program(args)}")


# The cached probes: a whole module, or (module, function).
PROBES = frozenset({"tether.engine.sandbox.detect", ("tether.engine.local.ripgrep", "rg_version")})
SPAWNING_FIXTURES = frozenset({"warm", "shared_warm"})


def _probing() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__")
        if module in PROBES or (module, frame.f_code.co_name) in PROBES:
            return True
        frame = frame.f_back
    return False


def mark_slow_by_fixture(items: list[pytest.Item]) -> None:
    """Tests using a fixture that starts a process are slow, whoever used it first."""
    for item in items:
        if SPAWNING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def _program(args: tuple[Any, ...]) -> str:
    """The program named in an event's arguments (Popen's are executable, args, cwd, env)."""
    for arg in args[:2]:
        if isinstance(arg, bytes | str | os.PathLike):
            return os.fsdecode(arg)
        if isinstance(arg, list | tuple) and arg:
            return " ".join(str(a) for a in arg[:4])
    return ""


_WATCH = _Watch()
sys.addaudithook(_WATCH.hook)  # an audit hook cannot be removed: one for the whole run


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    _WATCH.current = item.nodeid
    try:
        return (yield)
    finally:
        _WATCH.current = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when != "teardown":
        return report
    started = _WATCH.spawned.get(item.nodeid)
    slow = item.get_closest_marker("slow") is not None
    record = os.environ.get("TETHER_TEST_SPAWNS")
    if record and (started is None) == slow:
        with open(record, "a") as out:
            out.write(f"{item.nodeid}\t{started or 'none'}\n")
    elif started is not None and not slow and report.outcome == "passed":
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started a process ({started}) but is not marked slow: "
            "mark it `@pytest.mark.slow` (or its module's pytestmark), so that "
            '`pytest -m "not slow"` runs only tests that start none'
        )
    return report
