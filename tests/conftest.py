from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.support.scheduling import group_by_worker
from tests.support.spawn_watch import (  # noqa: F401 (hooks: a test that starts a process is slow)
    mark_slow_by_fixture,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
)
from tests.support.warm import shared_warm, warm  # noqa: F401 (fixtures: warm servers)

# delete_path trashes into $XDG_DATA_HOME/Trash (tether/engine/local/trash.py): the whole run
# (and every agent it spawns) gets a private trash, never the developer's.
TRASH_HOME = Path(tempfile.mkdtemp(prefix="tether-test-xdg-"))
os.environ["XDG_DATA_HOME"] = str(TRASH_HOME)

# Agents the tests spawn start warm, as users' do: one warm server (tether/warm/fork_server.py)
# in a private directory serves the whole run and is stopped at its end (a cold start costs the
# engine's imports, about 0.4 s of CPU, and the suite spawns hundreds). Tests marked
# `cold_start` spawn theirs in-process (the agent is then their child, its memory its own, and
# the engine loads on a thread beside the first answers); TETHER_TEST_WARM=0 runs all of them
# cold. A launcher a test kills is seen dead only once its worker is gone (the server holds
# it), so no worker outlives its test. tests/warm/ tests warm starts themselves.
WARM_DIR = Path(tempfile.mkdtemp(prefix="tether-test-warm-"))
os.environ["TETHER_WARM_DIR"] = str(WARM_DIR)
os.environ["TETHER_WARM"] = "0" if os.environ.get("TETHER_TEST_WARM") == "0" else "1"

# What selects a real provider: a test must never reach the developer's keys or config file
# (spawned agents inherit os.environ).
_PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL",
    "TETHER_MODEL",
    "TETHER_SEARXNG_URL",
    "EXA_API_KEY",
    "PERPLEXITY_API_KEY",
)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_slow_by_fixture(items)
    group_by_worker(items)


@pytest.fixture(autouse=True)
def _cold_start(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("cold_start") is not None:
        monkeypatch.setenv("TETHER_WARM", "0")


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TETHER_CONFIG", os.devnull)  # no config file: read as empty
    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from tether.warm.control import stop_servers

    stop_servers(str(WARM_DIR), wait=30)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private TETHER_HOME: the store and spill files of one test."""
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    (p / "README.md").write_text("# Demo project\n\nHello.\n")
    return p
