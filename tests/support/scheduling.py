"""Which tests share a worker when the suite runs in parallel (pytest-xdist, `--dist loadgroup`).

A group runs on one worker, one test after another, and groups are handed out first, the largest
first. So:

- `warm`: every test of a warm server (tests/warm/, and the tests of other rooms that use the
  `warm` or `shared_warm` fixture): the session-scoped `shared_warm` server is then started once,
  and no two tests kill, retire or measure warm servers at the same time;
- `cgroups`: the tests that make cgroups and judge what is in them;
- `long-sessions`: the module whose 300-round session runs for minutes starts with the run
  instead of ending it alone on one worker.

A test module may also name its group itself with `pytest.mark.xdist_group`."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
WARM_FIXTURES = frozenset({"warm", "shared_warm"})
MODULE_GROUPS = {
    "warm": "warm",  # a room: every module in it
    "sandbox/test_session_cgroups.py": "cgroups",
    "sessions/test_long_sessions.py": "long-sessions",
}


def group_of(item: pytest.Item) -> str | None:
    where = item.path.relative_to(TESTS).as_posix()
    for prefix, group in MODULE_GROUPS.items():
        if where == prefix or where.startswith(prefix + "/"):
            return group
    if WARM_FIXTURES & set(getattr(item, "fixturenames", ())):
        return "warm"
    return None


def group_by_worker(items: list[pytest.Item]) -> None:
    """Run before xdist reads the marks into the node ids (tests/conftest.py's hook is tryfirst)."""
    for item in items:
        group = group_of(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
