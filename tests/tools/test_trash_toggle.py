"""`[trash] enabled` (issue 32, item 8): on (the default) `delete_path` moves to the system
trash; off, it deletes for good, and the permission request says so before anything happens.
Through `tether acp` under a config file, judged by the project's and the trash's contents."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRASH_HOME
from tests.support.harness import configured_turn
from tether.engine.config.file import parse_config
from tether.engine.config.resolve import resolve
from tether.errors import ConfigError

pytestmark = pytest.mark.anyio

Frame = dict[str, Any]


def _trashed(name: str) -> list[Path]:
    files = TRASH_HOME / "Trash" / "files"
    return [p for p in files.iterdir() if p.name.startswith(name)] if files.is_dir() else []


def _asked(frames: list[Frame]) -> list[str]:
    return [
        f["params"]["toolCall"]["title"]
        for f in frames
        if f.get("method") == "session/request_permission"
    ]


def _said(frames: list[Frame]) -> str:
    texts: list[str] = []
    for f in frames:
        update = f.get("params", {}).get("update", {}) if f.get("method") else {}
        if update.get("sessionUpdate") == "tool_call_update":
            for c in update.get("content") or []:
                texts.append(c.get("content", {}).get("text", ""))
    return "\n".join(texts)


async def _delete(home: Path, project: Path, config: str) -> tuple[str, list[Frame]]:
    name = f"victim-{uuid.uuid4().hex[:8]}"
    (project / f"{name}.txt").write_text("the user's notes\n")
    calls = [{"name": "delete_path", "arguments": {"path": f"{name}.txt"}}]
    _, frames = await configured_turn(home, project, config, calls)
    assert not (project / f"{name}.txt").exists()
    return name, frames


@pytest.mark.slow
async def test_by_default_a_delete_lands_in_the_trash(home: Path, project: Path) -> None:
    name, frames = await _delete(home, project, "")
    [kept] = _trashed(name)
    assert kept.read_text() == "the user's notes\n"
    assert _asked(frames) == [f"Move {name}.txt to the system trash"]
    assert f"file {name}.txt moved to the system trash" in _said(frames)


@pytest.mark.slow
async def test_with_the_trash_off_a_delete_is_for_good(home: Path, project: Path) -> None:
    name, frames = await _delete(home, project, "[trash]\nenabled = false\n")
    assert _trashed(name) == []
    assert _asked(frames) == [f"Delete {name}.txt permanently"]
    assert f"file {name}.txt deleted permanently" in _said(frames)


def test_the_table_is_read_and_checked_with_lines() -> None:
    assert resolve(parse_config("[trash]\nenabled = false\n"), env={}).trash is False
    assert resolve(parse_config(""), env={}).trash is True
    for text, expected in (
        ("[trash]\n\nenabled = 'no'\n", ":3: trash.enabled: expected true or false, got a string"),
        ("[trash]\nenable = false\n", ":2: trash.enable: unknown key (expected one of: enabled)"),
    ):
        with pytest.raises(ConfigError) as caught:
            parse_config(text, Path("/cfg/config.toml"))
        assert f"/cfg/config.toml{expected}" in str(caught.value).splitlines(), str(caught.value)
