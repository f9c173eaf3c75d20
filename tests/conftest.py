from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# delete_path trashes through send2trash, which reads XDG_DATA_HOME once, at import: the whole
# run (and every agent it spawns) gets a private trash, never the developer's.
TRASH_HOME = Path(tempfile.mkdtemp(prefix="tether-test-xdg-"))
os.environ["XDG_DATA_HOME"] = str(TRASH_HOME)

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
)


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TETHER_CONFIG", str(tmp_path / "absent-config.toml"))
    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


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
