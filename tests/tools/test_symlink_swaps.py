"""A directory swapped for a symlink between the check and the write redirects nothing: writes,
deletes, moves, trashing and `/undo` walk to their file without following links, so a swap
makes them fail (or act on the entry that was checked) instead of landing outside the project.
The racing swaps run in a process of their own, as a confined program would. Judged by the
directory outside."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TRASH_HOME
from tests.support.harness import script, spawn_agent
from tether.engine.local.file_system import LocalFileSystem
from tether.errors import SeamError

pytestmark = pytest.mark.anyio


def _write(path: str, content: str, overwrite: bool = False) -> dict[str, Any]:
    args = {"path": path, "content": content, "overwrite": overwrite}
    return {"tool_call": {"name": "write_file", "arguments": args}}


def _swap(directory: Path, target: Path) -> None:
    """Replace `directory` with a symlink to `target` (what a command could do meanwhile)."""
    directory.rename(directory.with_name(directory.name + ".old"))
    directory.symlink_to(target, target_is_directory=True)


@pytest.mark.slow
@pytest.mark.parametrize("existed", [False, True], ids=["created", "replaced"])
async def test_undo_does_not_follow_a_swapped_directory(
    home: Path, project: Path, tmp_path: Path, existed: bool
) -> None:
    outside = tmp_path / "outside-config"
    outside.mkdir()
    (outside / "settings.json").write_text("the user's own settings\n")
    (project / "conf").mkdir()
    if existed:
        (project / "conf" / "settings.json").write_text("before\n")
    rounds = [[_write("conf/settings.json", "by the model\n", overwrite=existed)], [{"text": "ok"}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        agent.permission_choice = "allow_once"
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "write it")
        _swap(project / "conf", outside)
        assert (await agent.prompt(sid, "/undo"))["result"] == {"stopReason": "end_turn"}
        said = "".join(
            u["content"]["text"]
            for u in agent.updates(sid)
            if u["sessionUpdate"] in ("agent_message_chunk", "tool_call_update")
            and isinstance(u.get("content"), dict)
        )
    assert (outside / "settings.json").read_text() == "the user's own settings\n"
    assert sorted(p.name for p in outside.iterdir()) == ["settings.json"]
    assert "SYMLINK_IN_PATH" in said or "symlink" in said


# d: the real directory, gone, a link to outside, gone, ... again, until the stop file appears.
# A process of its own, as a confined program would be: it races tether's thread on another core
# (a thread of the test would mostly wait for the GIL, and miss the narrow windows).
FLIPPER = """
import os, sys
from pathlib import Path
project, outside, stop = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
d, link, real = project / "d", project / "d.link", project / "d.real"
link.symlink_to(outside, target_is_directory=True)
strays = 0
print("flipping", flush=True)
while not stop.exists():
    for a, b in ((d, real), (link, d), (d, link), (real, d)):
        try:
            os.rename(a, b)
        except OSError:
            # A write made a new d while it was gone: moved aside, so the swaps go on (left
            # there, every later rename would fail and nothing would race).
            if real.is_dir() and d.is_dir() and not d.is_symlink():
                strays += 1
                try:
                    os.rename(d, project / f"stray{strays}")
                except OSError:
                    pass
"""


# d and a link to outside exchanged atomically (renameat2 RENAME_EXCHANGE), again and again: d
# is always there, half the time the real directory, half the time the link.
EXCHANGER = """
import ctypes, sys
from pathlib import Path
project, outside, stop = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
d, link = project / "d", project / "d.link"
link.symlink_to(outside, target_is_directory=True)
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = bytes(d), bytes(link)
print("flipping", flush=True)
while not stop.exists():
    for _ in range(20):
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")
"""


@contextlib.contextmanager
def _flipping(project: Path, outside: Path, program: str = FLIPPER) -> Iterator[None]:
    stop = project.parent / "stop-flipping"
    argv = [sys.executable, "-c", program, str(project), str(outside), str(stop)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as flipper:
        try:
            assert flipper.stdout is not None and flipper.stdout.readline() == "flipping\n"
            yield
        finally:
            stop.touch()
            flipper.wait(timeout=30)


@pytest.mark.slow
async def test_concurrent_swaps_never_land_a_write_outside(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "d").mkdir(parents=True)
    outside.mkdir()
    fs = LocalFileSystem()
    refused = 0
    with _flipping(project, outside):
        i = 0
        while i < 300 or (refused == 0 and i < 20_000):  # until the swaps have raced a write
            i += 1
            try:
                await fs.write_text(project / "d" / f"f{i}.txt", "x")
            except SeamError:
                refused += 1
    assert list(outside.iterdir()) == []  # nothing written through the link
    assert refused > 0  # the swaps did race the writes


@pytest.mark.slow
async def test_concurrent_swaps_never_trash_a_file_outside(tmp_path: Path) -> None:
    """The user's approved "Move d/victim.txt to the trash" while a program swaps d for a link
    to a directory outside: the file outside stays, whatever the timing."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "d").mkdir(parents=True)
    outside.mkdir()
    tag = uuid.uuid4().hex[:8]  # the test run shares one trash
    names = [f"victim-{tag}-{i}.txt" for i in range(600)]
    for name in names:
        (outside / name).write_text("outside\n")
        (project / "d" / name).write_text("project\n")
    fs = LocalFileSystem()
    raced = trashed = 0
    with _flipping(project, outside, EXCHANGER):
        for name in names:
            try:
                await fs.delete(project / "d" / name, permanent=False)
                trashed += 1
            except SeamError as exc:
                raced += exc.code == "SYMLINK_IN_PATH"
    assert sorted(p.name for p in outside.iterdir()) == sorted(names)  # nothing outside trashed
    assert all((outside / n).read_text() == "outside\n" for n in names)
    in_trash = [p for p in (TRASH_HOME / "Trash" / "files").iterdir() if tag in p.name]
    assert {p.read_text() for p in in_trash} == {"project\n"}
    infos = [TRASH_HOME / "Trash" / "info" / f"{p.name}.trashinfo" for p in in_trash]
    assert all(f"Path={project}/d/victim-{tag}-" in i.read_text() for i in infos)  # restorable
    for entry in [*in_trash, *infos]:
        entry.unlink()
    assert raced > 0 and trashed > 0  # the swaps did race the deletes, and some went through


async def test_delete_and_move_refuse_a_swapped_parent(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    (project / "d" / "keep.txt").write_text("project\n")
    _swap(project / "d", outside)
    fs = LocalFileSystem()
    for attempt in (
        fs.delete(project / "d" / "keep.txt", permanent=True),
        fs.delete(project / "d" / "keep.txt", permanent=False),
        fs.move(project / "d" / "keep.txt", project / "moved.txt"),
        fs.write_text(project / "d" / "keep.txt", "overwritten\n"),
    ):
        with pytest.raises(SeamError) as refused:
            await attempt
        assert refused.value.code == "SYMLINK_IN_PATH"
    assert (outside / "keep.txt").read_text() == "keep\n"
    assert not (project / "moved.txt").exists()
