"""Where file tools may go: roots, grants, the denylist, escapes, bad paths, special files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest

from tests.support.toolctx import make_ctx, plan, run, text
from tether.engine.grants import Grant, Grants
from tether.engine.registry import ToolDef
from tether.engine.seam import Capabilities
from tether.engine.workspace import DirGrant, Workspace
from tether.errors import ConfigError, SeamError, ToolError
from tether.tools.edit import edit_replace
from tether.tools.files import list_dir, read_file, write_file
from tether.tools.manage import copy_path, delete_path, move_path
from tether.tools.search import regex_files, tree

pytestmark = pytest.mark.anyio


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("outside secret\n")
    return d


@pytest.fixture
def ctx(project: Path, tmp_path: Path) -> Capabilities:
    return make_ctx(project, tmp_path / "spill")


async def _code(ctx: Capabilities, t: ToolDef, **args: object) -> str:
    """The error code the model reads; planning and running fail alike."""
    with pytest.raises((ToolError, SeamError)) as e, anyio.fail_after(5):
        await run(ctx, t, **args)
    return e.value.code


@pytest.mark.slow
async def test_dot_dot_absolute_and_symlink_escapes(
    ctx: Capabilities, project: Path, outside: Path
) -> None:
    for path in ("../outside/secret.txt", str(outside / "secret.txt"), "sub/../../outside"):
        assert await _code(ctx, read_file, path=path) == "OUTSIDE_ROOTS"
    (project / "link.txt").symlink_to(outside / "secret.txt")
    (project / "linkdir").symlink_to(outside)
    assert await _code(ctx, read_file, path="link.txt") == "OUTSIDE_ROOTS"
    assert await _code(ctx, read_file, path="linkdir/secret.txt") == "OUTSIDE_ROOTS"
    assert await _code(ctx, write_file, path="linkdir/new.txt", content="x") == "OUTSIDE_ROOTS"
    assert await _code(ctx, write_file, path="link.txt", content="x", overwrite=True) == (
        "OUTSIDE_ROOTS"
    )
    assert await _code(ctx, list_dir, path="linkdir") == "OUTSIDE_ROOTS"
    assert await _code(ctx, copy_path, src="linkdir/secret.txt", dst="stolen.txt") == (
        "OUTSIDE_ROOTS"
    )
    assert await _code(ctx, move_path, src="README.md", dst="../outside/r.md") == "OUTSIDE_ROOTS"
    assert (outside / "secret.txt").read_text() == "outside secret\n"
    assert not (outside / "new.txt").exists()
    # The walkers list a symlink but never follow it out of the project.
    assert "secret.txt" not in await text(ctx, tree)
    assert "outside secret" not in await text(ctx, regex_files, pattern="secret")


@pytest.mark.slow
async def test_the_denylist_wins(ctx: Capabilities, project: Path) -> None:
    for rel in (".env", ".env.local", ".git/config", "keys/id_rsa", "certs/server.PEM"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("SECRET\n")
        with pytest.raises(ToolError) as e:
            await run(ctx, read_file, path=rel)
        assert e.value.code == "PATH_DENIED", rel
    with pytest.raises(ToolError) as e:
        await run(ctx, read_file, path=".env")
    assert e.value.message == ".env matches the path denylist entry '.env*'"
    assert await _code(ctx, write_file, path=".git/hooks/pre-commit", content="x") == "PATH_DENIED"
    assert await _code(ctx, delete_path, path=".git") == "PATH_DENIED"
    (project / "public.txt").symlink_to(project / ".env")  # resolved, then checked
    assert await _code(ctx, read_file, path="public.txt") == "PATH_DENIED"
    (project / ".envrc-data").mkdir()
    (project / ".envrc-data" / "x.txt").write_text("x")
    assert await _code(ctx, read_file, path=".envrc-data/x.txt") == "PATH_DENIED"
    assert "SECRET" not in await text(ctx, regex_files, pattern="SEC.ET")
    assert ".env" not in await text(ctx, tree)


async def test_denylist_is_relative_to_the_root_and_configurable(tmp_path: Path) -> None:
    project = tmp_path / ".envs" / "proj"  # the root's own location is not judged
    project.mkdir(parents=True)
    (project / "app.py").write_text("x = 1\n")
    (project / "data.sqlite").write_text("rows\n")
    ctx = make_ctx(project, tmp_path / "spill")
    assert (await text(ctx, read_file, path="app.py")).endswith("x = 1")
    ctx = make_ctx(
        project, tmp_path / "spill", workspace=Workspace([project], denylist=["*.sqlite"])
    )
    assert await _code(ctx, read_file, path="data.sqlite") == "PATH_DENIED"


async def test_additional_roots_and_grants(project: Path, tmp_path: Path, outside: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "lib.py").write_text("lib\n")
    (outside / ".env").write_text("SECRET\n")
    ws = Workspace([project, other], grants=[DirGrant(outside, "read")])
    ctx = make_ctx(project, tmp_path / "spill", workspace=ws)
    assert (await text(ctx, read_file, path="../other/lib.py")).endswith("lib")
    await run(ctx, write_file, path=str(other / "new.py"), content="n\n")
    assert (other / "new.py").read_text() == "n\n"
    assert (await text(ctx, read_file, path=str(outside / "secret.txt"))).endswith("secret")
    with pytest.raises(ToolError) as e:
        await run(ctx, write_file, path=str(outside / "w.txt"), content="w")
    assert (e.value.code, e.value.message) == (
        "OUTSIDE_ROOTS",
        f"{outside / 'w.txt'} is in a directory granted for reading only; ask the user for "
        "write access with request_directory_access (access: write)",
    )
    assert await _code(ctx, read_file, path=str(outside / ".env")) == "PATH_DENIED"
    sibling = tmp_path / "outside2"
    sibling.mkdir()
    (sibling / "s.txt").write_text("s")
    assert await _code(ctx, read_file, path=str(sibling / "s.txt")) == "OUTSIDE_ROOTS"


def test_a_session_grant_does_not_cover_a_sibling() -> None:
    grants = Grants([Grant("write_file", "/p/src/", "allow")])  # a folder: "/" ends it
    assert grants.match("write_file", "/p/src/") is not None
    assert grants.match("write_file", "/p/src/deep/er") is not None
    assert grants.match("write_file", "/p/src2") is None
    assert grants.match("write_file", "/p/src") is None
    assert grants.match("write_file", "/p/sr") is None
    assert grants.match("edit_replace", "/p/src/") is None


def test_a_grant_without_a_trailing_slash_covers_exactly_its_scope() -> None:
    grants = Grants([Grant("delete_path", "trash /p/tmp.txt", "allow")])
    assert grants.match("delete_path", "trash /p/tmp.txt") is not None
    assert grants.match("delete_path", "trash /p/tmp.txt/x") is None
    assert grants.match("delete_path", "delete /p/tmp.txt") is None
    assert grants.match("delete_path", "trash /p") is None


async def test_bad_paths_are_invalid_path(ctx: Capabilities, project: Path) -> None:
    (project / "loop").symlink_to(project / "loop")
    for path in ("a\0b", "loop", "loop/x", "x" * 300, "a/" * 2100):
        for t in (read_file, list_dir):
            assert await _code(ctx, t, path=path) == "INVALID_PATH", (t.name, path[:20])
    for path in ("a\0b", "loop/x", "x" * 300):
        assert await _code(ctx, delete_path, path=path) == "INVALID_PATH", path[:20]
        assert await _code(ctx, write_file, path=path, content="x") == "INVALID_PATH"
    assert await _code(ctx, read_file, path="") == "INVALID_PATH"
    # The loop itself is an entry like any other: it can be removed.
    await run(ctx, delete_path, path="loop", permanent=True)
    assert not (project / "loop").is_symlink()


@pytest.mark.slow
async def test_fifos_and_devices_are_refused_without_blocking(
    ctx: Capabilities, project: Path
) -> None:
    os.mkfifo(project / "pipe")
    os.mknod(project / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # like /dev/zero
    for name in ("pipe", "zero"):
        assert await _code(ctx, read_file, path=name) == "NOT_A_REGULAR_FILE"
        assert await _code(ctx, write_file, path=name, content="x", overwrite=True) == (
            "NOT_A_REGULAR_FILE"
        )
        assert await _code(ctx, edit_replace, path=name, old="a", new="b") == ("NOT_A_REGULAR_FILE")
        assert await _code(ctx, copy_path, src=name, dst=f"{name}.copy") == "NOT_A_REGULAR_FILE"
    (project / "dir").mkdir()
    os.mkfifo(project / "dir" / "p")
    assert await _code(ctx, copy_path, src="dir", dst="dir2") == "NOT_A_REGULAR_FILE"
    assert not (project / "dir2").exists()
    with anyio.fail_after(5):
        got = await text(ctx, regex_files, pattern="x")
    assert got.startswith("no matches")
    with pytest.raises(SeamError) as e:
        await ctx.fs.read_text(project / "pipe")
    assert e.value.message == (
        f"{project / 'pipe'} is a FIFO (named pipe); only regular files are read or written"
    )


async def test_writes_never_go_through_a_hard_link(
    ctx: Capabilities, project: Path, outside: Path
) -> None:
    os.link(outside / "secret.txt", project / "alias.txt")
    with pytest.raises((ToolError, SeamError)) as e:
        await plan(ctx, write_file, path="alias.txt", content="pwned", overwrite=True)
    assert e.value.code == "HARD_LINK" and "has 2 hard links" in e.value.message
    assert await _code(ctx, edit_replace, path="alias.txt", old="outside", new="pwned") == (
        "HARD_LINK"
    )
    with pytest.raises(SeamError) as e2:
        await ctx.fs.write_text(project / "alias.txt", "pwned")
    assert e2.value.code == "HARD_LINK"
    assert (outside / "secret.txt").read_text() == "outside secret\n"


@pytest.mark.slow
async def test_a_hard_link_is_neither_read_nor_copied(
    ctx: Capabilities, project: Path, outside: Path
) -> None:
    """A second name of `.env`, or of a file outside the roots, passes every check a name can;
    so a file with several names is not read, copied or searched."""
    (project / ".env").write_text("API_KEY=secret\n")
    os.link(project / ".env", project / "innocent.txt")
    os.link(outside / "secret.txt", project / "alias.txt")
    (project / "dir").mkdir()
    os.link(outside / "secret.txt", project / "dir" / "inner.txt")
    for path in ("innocent.txt", "alias.txt"):
        assert await _code(ctx, read_file, path=path) == "HARD_LINK"
        assert await _code(ctx, copy_path, src=path, dst=f"copy-{path}") == "HARD_LINK"
        assert not (project / f"copy-{path}").exists()
    assert await _code(ctx, copy_path, src="dir", dst="dir2") == "HARD_LINK"
    assert not (project / "dir2").exists()  # refused before anything was copied
    found = await text(ctx, regex_files, pattern="secret")
    assert "API_KEY" not in found and "outside secret" not in found


async def test_the_denylist_matches_every_unicode_spelling(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    ctx = make_ctx(root, tmp_path / "spill", workspace=Workspace([root], denylist=["geheim-ü*"]))
    decomposed = "geheim-u\u0308.txt"  # the NFD spelling (as macOS stores names)
    (root / decomposed).write_text("x")
    assert await _code(ctx, read_file, path=decomposed) == "PATH_DENIED"
    assert await _code(ctx, read_file, path="GEHEIM-\u00dc.txt") == "PATH_DENIED"  # case too


async def test_a_huge_file_is_read_in_bounded_memory(ctx: Capabilities, project: Path) -> None:
    import tracemalloc

    with (project / "huge.txt").open("w") as f:
        for _ in range(64):
            f.write("a" * (1024 * 1024))  # 64 MiB on one line
    tracemalloc.start()
    try:
        got = await text(ctx, read_file, path="huge.txt", max_chars=1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.startswith("L1-1 of 1 (line 1 cut)") and len(got) < 1100
    assert peak < 16 * 1024 * 1024, peak


def test_the_config_file_sets_the_denylist(tmp_path: Path) -> None:
    import json
    import re

    from tether.engine.config.file import example_config, parse_config
    from tether.engine.config.load import build_catalog
    from tether.engine.workspace import DEFAULT_DENYLIST

    catalog = build_catalog(parse_config('[workspace]\npath_denylist = ["*.sqlite"]\n'), env={})
    assert catalog.path_denylist == ("*.sqlite",)
    assert build_catalog(parse_config(""), env={}).path_denylist is None
    with pytest.raises(
        ConfigError, match=r":2: workspace.path_denylist: expected an array, got a string"
    ):
        parse_config('[workspace]\npath_denylist = ".env"\n')
    # The example file shows the built-in list.
    shown = re.search(r"#path_denylist = (\[.*\])", example_config())
    assert shown is not None and tuple(json.loads(shown.group(1))) == DEFAULT_DENYLIST


@pytest.mark.slow
async def test_tether_acp_applies_the_configured_denylist(home: Path, project: Path) -> None:
    from tests.support.harness import configured_turn
    from tests.support.stored import tool_results

    (project / "data.sqlite").write_text("rows\n")
    (project / ".env").write_text("A=1\n")
    calls = [{"name": "read_file", "arguments": {"path": p}} for p in ["data.sqlite", ".env"]]
    config = '[workspace]\npath_denylist = ["*.sqlite"]\n'
    sid, _ = await configured_turn(home, project, config, calls)
    denied, replaced = tool_results(home, sid)
    assert denied == "error [PATH_DENIED]: data.sqlite matches the path denylist entry '*.sqlite'"
    assert replaced == "L1-1 of 1\nA=1"  # the configured list replaced the built-in one
