"""The system trash tether moves entries into itself (the freedesktop.org specification,
relative to the pinned parent): what lands there can be restored (its `.trashinfo` names where
it was), names never collide, a file system's own trash is used the way the specification says
and never through a planted link, and an entry crosses to the home trash by copy where a rename
cannot. Judged by the trash's and the project's contents."""

from __future__ import annotations

import os
import stat
import sys
import uuid
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.conftest import TRASH_HOME
from tether.engine.local.file_system import LocalFileSystem
from tether.engine.local.nofollow import parent_dir
from tether.engine.local.trash import _home_trash, _move, _volume_trash

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the freedesktop trash"),
]


def _info(trash: Path, name: str) -> dict[str, str]:
    lines = (trash / "info" / f"{name}.trashinfo").read_text().splitlines()
    assert lines[0] == "[Trash Info]"
    return dict(line.split("=", 1) for line in lines[1:])


async def test_a_trashed_entry_can_be_restored_and_names_never_collide(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "d").mkdir(parents=True)
    name = f"notes {uuid.uuid4().hex[:8]}.txt"  # a space: the path is URL-quoted
    fs = LocalFileSystem()
    for text in ("first\n", "second\n"):
        (project / "d" / name).write_text(text)
        await fs.delete(project / "d" / name, permanent=False)
    (project / "d" / "tree").mkdir()
    (project / "d" / "tree" / "x").write_text("x\n")
    await fs.delete(project / "d" / "tree", permanent=False)
    trash = TRASH_HOME / "Trash"
    second = name.replace(".txt", " 2.txt")
    assert (trash / "files" / name).read_text() == "first\n"
    assert (trash / "files" / second).read_text() == "second\n"
    for kept in (name, second):
        info = _info(trash, kept)
        assert unquote(info["Path"]) == str(project / "d" / name)
        assert len(info["DeletionDate"]) == len("2026-01-01T00:00:00")
    trees = [p for p in (trash / "files").iterdir() if p.name.startswith("tree")]
    assert any((t / "x").read_text() == "x\n" for t in trees)
    assert sorted(os.listdir(project / "d")) == []


def _entry(project: Path, name: str) -> Path:
    (project / name).write_text(f"{name}\n")
    return project / name


def test_a_volume_trash_is_made_where_the_specification_says(tmp_path: Path) -> None:
    top, project = tmp_path, tmp_path / "project"
    project.mkdir()
    path = _entry(project, "a.txt")
    with parent_dir(path) as (parent, name):
        _move(parent, name, path, _volume_trash(top), top, copy=False)
    own = top / f".Trash-{os.getuid()}"
    assert (own / "files" / "a.txt").read_text() == "a.txt\n"
    assert _info(own, "a.txt")["Path"] == "project/a.txt"  # relative to the top
    assert stat.S_IMODE(own.stat().st_mode) == 0o700
    # An administrator's shared trash (a real directory with the sticky bit) comes first.
    (top / ".Trash").mkdir(mode=0o777)
    os.chmod(top / ".Trash", 0o1777)
    path = _entry(project, "b.txt")
    with parent_dir(path) as (parent, name):
        _move(parent, name, path, _volume_trash(top), top, copy=False)
    assert (top / ".Trash" / str(os.getuid()) / "files" / "b.txt").read_text() == "b.txt\n"


def test_a_planted_volume_trash_link_is_not_followed(tmp_path: Path) -> None:
    top, project, elsewhere = tmp_path, tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (top / f".Trash-{os.getuid()}").symlink_to(elsewhere, target_is_directory=True)
    path = _entry(project, "a.txt")
    with pytest.raises(OSError), parent_dir(path) as (parent, name):
        _move(parent, name, path, _volume_trash(top), top, copy=False)
    assert list(elsewhere.iterdir()) == []
    assert path.read_text() == "a.txt\n"


def test_across_file_systems_the_entry_is_copied_then_removed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    tag = uuid.uuid4().hex[:8]
    file = _entry(project, f"f-{tag}.txt")
    tree = project / f"t-{tag}"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "x").write_text("x\n")
    (tree / "link").symlink_to("/etc/hostname")
    link = project / f"l-{tag}"
    link.symlink_to("/etc/hostname")
    home = TRASH_HOME
    for path in (file, tree, link):
        with parent_dir(path) as (parent, name):
            _move(parent, name, path, _home_trash(), home, copy=True)
    files = TRASH_HOME / "Trash" / "files"
    assert (files / file.name).read_text() == file.name + "\n"
    assert (files / tree.name / "sub" / "x").read_text() == "x\n"
    assert os.readlink(files / tree.name / "link") == "/etc/hostname"
    assert os.readlink(files / link.name) == "/etc/hostname"
    assert os.listdir(project) == []
