"""The file tools against a real project directory: model-facing text and error texts."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import TRASH_HOME
from tests.support.toolctx import make_ctx, plan, run, text
from tether.engine.events import DiffOut
from tether.engine.registry import ToolDef
from tether.engine.seam import Capabilities
from tether.errors import SeamError, ToolError
from tether.tools.edit import edit_lineno, edit_replace
from tether.tools.files import list_dir, read_file, view_image, write_file
from tether.tools.manage import copy_path, delete_path, move_path

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


@pytest.fixture
def ctx(project: Path, tmp_path: Path) -> Capabilities:
    return make_ctx(project, tmp_path / "spill")


async def _error(ctx: Capabilities, t: ToolDef, **args: object) -> ToolError | SeamError:
    """The error the model would read (the pipeline answers both kinds alike)."""
    with pytest.raises((ToolError, SeamError)) as e:
        await run(ctx, t, **args)
    return e.value


# --- read_file ------------------------------------------------------------------------------


async def test_read_file_labels_ranges_and_line_numbers(ctx: Capabilities, project: Path) -> None:
    (project / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert await text(ctx, read_file, path="f.txt", start_line=9) == "L9-10 of 10\nline 9\nline 10"
    got = await text(ctx, read_file, path="f.txt", start_line=2, end_line=3, with_lineno=True)
    assert got == "L2-3 of 10\n2\tline 2\n3\tline 3"
    (project / "empty.txt").write_text("")
    assert await text(ctx, read_file, path="empty.txt") == "L0-0 of 0 (empty file)\n"
    (project / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    assert await text(ctx, read_file, path="crlf.txt") == "L1-2 of 2\na\nb"


async def test_read_file_argument_errors(ctx: Capabilities, project: Path) -> None:
    (project / "f.txt").write_text("one\ntwo\n")
    e = await _error(ctx, read_file, path="f.txt", start_line=5)
    assert (e.code, e.message) == (
        "INVALID_ARGS",
        "start_line=5 is past the end of f.txt (2 lines)",
    )
    e = await _error(ctx, read_file, path="f.txt", start_line=2, end_line=1)
    assert e.message == "end_line (1) is before start_line"
    e = await _error(ctx, read_file, path="f.txt", start_line=0)
    assert e.message == "start_line must be 1 or more"
    e = await _error(ctx, read_file, path="missing.txt")
    assert (e.code, e.message) == ("FILE_NOT_FOUND", "no such file or directory: missing.txt")
    (project / "sub").mkdir()
    e = await _error(ctx, read_file, path="sub")
    assert (e.code, e.message) == ("IS_A_DIRECTORY", "sub is a directory; use list_dir or tree")


async def test_read_file_refuses_images_and_binaries(ctx: Capabilities, project: Path) -> None:
    (project / "logo.png").write_bytes(PNG)
    e = await _error(ctx, read_file, path="logo.png")
    assert (e.code, e.message) == (
        "BINARY_FILE",
        "logo.png is a binary file (40 bytes): an image (image/png); look at it with view_image",
    )
    (project / "blob.bin").write_bytes(b"abc\0def" * 10)
    e = await _error(ctx, read_file, path="blob.bin")
    assert e.message == "blob.bin is a binary file (70 bytes); read_file reads text only"
    (project / "latin.txt").write_bytes("caf\xe9 ok\n".encode("latin-1"))
    e = await _error(ctx, read_file, path="latin.txt")
    assert (e.code, e.message) == (
        "BINARY_FILE",
        "latin.txt is not UTF-8 text (byte 3 of 8); read_file reads UTF-8 text only",
    )
    # Past the sniffed head, the whole read still refuses what is not UTF-8.
    (project / "late.txt").write_bytes(b"x" * 9000 + b"\xff\n")
    e = await _error(ctx, read_file, path="late.txt")
    assert e.message.endswith(
        "is not UTF-8 text (byte 9000 of 9002); read_file reads UTF-8 text only"
    )
    # A multi-byte character cut by the sniff window is still text.
    (project / "utf8.txt").write_text("é" * 5000)
    assert (await text(ctx, read_file, path="utf8.txt", max_chars=10)).startswith("L1-1 of 1")


async def test_read_file_cuts_long_lines_and_bounds_the_output(
    ctx: Capabilities, project: Path
) -> None:
    (project / "one.txt").write_text("x" * 5_000_000)
    got = await text(ctx, read_file, path="one.txt", max_chars=1000)
    assert got.startswith("L1-1 of 1 (line 1 cut)\n" + "x" * 999)
    assert got.endswith(" [… line cut after 999 chars]") and len(got) < 1100
    (project / "wide.txt").write_text("short\n" + "y" * 3000 + "\nend\n")
    got = await text(ctx, read_file, path="wide.txt", with_lineno=True)
    assert got.splitlines()[0] == "L1-3 of 3 (line 2 cut)"
    assert got.splitlines()[2] == "2\t" + "y" * 2000 + " [… line cut after 2000 chars]"
    assert got.splitlines()[3] == "3\tend"


async def test_read_file_streams_a_large_file(ctx: Capabilities, project: Path) -> None:
    line = "0123456789" * 9 + "\n"  # 91 bytes
    (project / "big.txt").write_text(line * 60_000)  # 5.4 MB: over the whole-read bound
    got = await text(ctx, read_file, path="big.txt", start_line=59_999, with_lineno=True)
    assert got == f"L59999-60000 of 60000\n59999\t{line[:-1]}\n60000\t{line[:-1]}"
    got = await text(ctx, read_file, path="big.txt", start_line=10, max_chars=200)
    assert got.splitlines()[0] == "L10-11 of 60000 (truncated; continue with start_line=12)"


async def test_spill_files_are_readable(ctx: Capabilities, tmp_path: Path) -> None:
    saved = await ctx.spill.save("x/../../evil name", "spilled text")
    assert saved.parent == tmp_path / "spill" and saved.name == "x_.._.._evil_name.txt"
    assert (await text(ctx, read_file, path=str(saved))).endswith("spilled text")


# --- write_file -----------------------------------------------------------------------------


async def test_write_file_creates_and_replaces_only_when_asked(
    ctx: Capabilities, project: Path
) -> None:
    e = await _error(ctx, write_file, path="README.md", content="new")
    assert (e.code, e.message) == (
        "FILE_EXISTS",
        "README.md exists; pass overwrite=true to replace it",
    )
    p = await plan(ctx, write_file, "code", path="README.md", content="new", overwrite=True)
    assert p.confirm and p.title == "Replace README.md"
    assert (p.scope, p.grant_label) == (f"replace {project / 'README.md'}", "replacing README.md")
    assert p.content == [DiffOut(str(project / "README.md"), "new", "# Demo project\n\nHello.\n")]
    new = await plan(ctx, write_file, "code", path="sub/dir/n.txt", content="n")
    assert not new.confirm and new.title == "Create sub/dir/n.txt"
    assert (await plan(ctx, write_file, "ask", path="sub/dir/n.txt", content="n")).confirm
    assert await text(ctx, write_file, path="sub/dir/n.txt", content="n") == (
        "created sub/dir/n.txt (1 bytes)"
    )
    assert (project / "sub/dir/n.txt").read_text() == "n"
    (project / "sub").joinpath("f").write_text("")
    e = await _error(ctx, write_file, path="sub/f/x.txt", content="x")
    assert e.code == "NOT_A_DIRECTORY"
    e = await _error(ctx, write_file, path="sub", content="x", overwrite=True)
    assert (e.code, e.message) == ("IS_A_DIRECTORY", "sub is a directory")


# --- edit_replace ---------------------------------------------------------------------------


async def test_edit_replace(ctx: Capabilities, project: Path) -> None:
    f = project / "app.py"
    f.write_text("def a():\n    return 1\n\ndef b():\n    return 1\n")
    e = await _error(ctx, edit_replace, path="app.py", old="return 1", new="return 2")
    assert (e.code, e.message) == (
        "EDIT_AMBIGUOUS",
        "old text occurs 2 times in app.py (lines 2, 5); include more surrounding text to make "
        "it unique, or pass max_replaces to replace several",
    )
    p = await plan(
        ctx, edit_replace, path="app.py", old="a():\n    return 1", new="a():\n    return 3"
    )
    assert (p.title, p.kind, p.confirm) == ("Edit app.py", "edit", True)
    assert p.locations[0].line == 1 and isinstance(p.content[0], DiffOut)
    out = await run(
        ctx, edit_replace, path="app.py", old="a():\n    return 1", new="a():\n    return 3"
    )
    assert out.text == "edited app.py: replaced 1 of 1 match at line 1; 0 remain"
    out = await run(ctx, edit_replace, path="app.py", old="return", new="yield", max_replaces=1)
    assert out.text == "edited app.py: replaced 1 of 2 matches at line 2; 1 remain"
    assert f.read_text() == "def a():\n    yield 3\n\ndef b():\n    return 1\n"
    e = await _error(ctx, edit_replace, path="app.py", old="def b():\nreturn 1", new="x")
    assert e.code == "EDIT_NOT_FOUND"
    assert e.message == (
        "old text not found in app.py; the same lines with different indentation or spacing are "
        "at line 4: copy them exactly (read_file shows the text as it is)"
    )
    e = await _error(ctx, edit_replace, path="app.py", old="nothing like it", new="x")
    assert (
        e.message == "old text not found in app.py; read the file again and copy the text exactly"
    )
    e = await _error(ctx, edit_replace, path="app.py", old="", new="x")
    assert e.message == "old must not be empty; use write_file to create a file"
    e = await _error(ctx, edit_replace, path="app.py", old="def", new="def")
    assert e.code == "INVALID_ARGS"
    e = await _error(ctx, edit_replace, path="app.py", old="def", new="x", max_replaces=0)
    assert e.message == "max_replaces must be 1 or more"


async def test_edit_replace_keeps_crlf(ctx: Capabilities, project: Path) -> None:
    (project / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    await run(ctx, edit_replace, path="w.txt", old="one\ntwo", new="uno\ndos")
    assert (project / "w.txt").read_bytes() == b"uno\r\ndos\r\n"


# --- edit_lineno ----------------------------------------------------------------------------


async def test_edit_lineno_needs_a_numbered_read_this_turn(
    ctx: Capabilities, project: Path
) -> None:
    f = project / "n.txt"
    f.write_text("".join(f"{i}\n" for i in range(1, 21)))
    e = await _error(ctx, edit_lineno, path="n.txt", start_line=2, end_line=3, new="x")
    assert (e.code, e.message) == (
        "NOT_READ",
        "read n.txt with read_file(with_lineno=true) first: edit_lineno changes only lines read "
        "with line numbers this turn",
    )
    await run(ctx, read_file, path="n.txt", end_line=5)  # without numbers: does not count
    assert (
        await _error(ctx, edit_lineno, path="n.txt", start_line=2, end_line=3, new="x")
    ).code == "NOT_READ"
    await run(ctx, read_file, path="n.txt", start_line=1, end_line=5, with_lineno=True)
    e = await _error(ctx, edit_lineno, path="n.txt", start_line=4, end_line=7, new="x")
    assert e.message == (
        "lines 6-7 of n.txt were not read with line numbers this turn (read: 1-5); read them "
        "with read_file(with_lineno=true) first"
    )
    p = await plan(ctx, edit_lineno, path="n.txt", start_line=2, end_line=3, new="two\nthree\nmore")
    assert p.title == "Edit n.txt" and p.locations[0].line == 2 and p.confirm
    out = await run(
        ctx, edit_lineno, path="n.txt", start_line=2, end_line=3, new="two\nthree\nmore"
    )
    assert out.text == (
        "edited n.txt: lines 2-3 (2 lines) replaced by 3 lines; later lines moved by +1. Read the "
        "file again with with_lineno before another edit_lineno."
    )
    assert f.read_text().startswith("1\ntwo\nthree\nmore\n4\n")
    # The write reset what was read: line numbers have moved.
    assert (
        await _error(ctx, edit_lineno, path="n.txt", start_line=1, end_line=1, new="x")
    ).code == "NOT_READ"


async def test_edit_lineno_refuses_a_changed_file(ctx: Capabilities, project: Path) -> None:
    f = project / "n.txt"
    f.write_text("a\nb\nc\n")
    await run(ctx, read_file, path="n.txt", with_lineno=True)
    f.write_text("a\nB\nc\nd\n")
    e = await _error(ctx, edit_lineno, path="n.txt", start_line=2, end_line=2, new="x")
    assert (e.code, e.message) == (
        "FILE_CHANGED",
        "n.txt changed since you read it; read it again with with_lineno",
    )


async def test_edit_lineno_inserts_appends_and_deletes(ctx: Capabilities, project: Path) -> None:
    f = project / "n.txt"
    f.write_text("a\nb\nc")  # no final newline
    await run(ctx, read_file, path="n.txt", with_lineno=True)
    await run(ctx, edit_lineno, path="n.txt", start_line=4, end_line=3, new="d")
    assert f.read_text() == "a\nb\nc\nd"
    await run(ctx, read_file, path="n.txt", with_lineno=True)
    await run(ctx, edit_lineno, path="n.txt", start_line=1, end_line=0, new="top\n")
    assert f.read_text() == "top\na\nb\nc\nd"
    await run(ctx, read_file, path="n.txt", with_lineno=True)
    await run(ctx, edit_lineno, path="n.txt", start_line=2, end_line=4, new="")
    assert f.read_text() == "top\nd"
    (project / "e.txt").write_text("")
    await run(ctx, read_file, path="e.txt", with_lineno=True)
    await run(ctx, edit_lineno, path="e.txt", start_line=1, end_line=0, new="first")
    assert (project / "e.txt").read_text() == "first\n"
    e = await _error(ctx, edit_lineno, path="n.txt", start_line=3, end_line=1, new="")
    assert e.code == "INVALID_ARGS"


async def test_edit_lineno_refuses_lines_it_showed_cut(ctx: Capabilities, project: Path) -> None:
    (project / "w.txt").write_text("ok\n" + "z" * 3000 + "\n")
    await run(ctx, read_file, path="w.txt", with_lineno=True)
    await run(ctx, edit_lineno, path="w.txt", start_line=1, end_line=1, new="fine")
    await run(ctx, read_file, path="w.txt", with_lineno=True)
    e = await _error(ctx, edit_lineno, path="w.txt", start_line=2, end_line=2, new="x")
    assert e.code == "NOT_READ" and "lines 2 of w.txt" in e.message


# --- list_dir, copy, move, delete -----------------------------------------------------------


async def test_list_dir(ctx: Capabilities, project: Path) -> None:
    (project / "src").mkdir()
    (project / "a.py").write_text("")
    (project / "to-src").symlink_to(project / "src")
    os.mkfifo(project / "pipe")
    got = await text(ctx, list_dir)
    assert got == ".: 5 entries\nsrc/\nto-src/\na.py\npipe (not a regular file)\nREADME.md"
    e = await _error(ctx, list_dir, path="README.md")
    assert (e.code, e.message) == ("NOT_A_DIRECTORY", "README.md is a file; use read_file")
    assert (await _error(ctx, list_dir, path="nope")).code == "FILE_NOT_FOUND"


async def test_copy_and_move(ctx: Capabilities, project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "m.py").write_text("print(1)\n")
    p = await plan(ctx, copy_path, "code", src="src", dst="lib")
    assert (p.title, p.kind, p.confirm) == ("Copy src to lib", "edit", False)
    assert await text(ctx, copy_path, src="src", dst="lib") == "copied directory src to lib"
    assert (project / "lib" / "m.py").read_text() == "print(1)\n"
    e = await _error(ctx, copy_path, src="src", dst="lib")
    assert (e.code, e.message) == ("FILE_EXISTS", "lib already exists; delete or move it first")
    e = await _error(ctx, copy_path, src="src", dst="src/inner")
    assert e.message == "src/inner is inside src"
    p = await plan(ctx, move_path, "code", src="lib/m.py", dst="pkg/m.py")
    assert (p.title, p.kind, p.confirm, p.scope, p.grant_label) == (
        "Move lib/m.py to pkg/m.py",
        "move",
        True,
        f"move {project / 'lib/m.py'} to {project / 'pkg/m.py'}",
        "moving lib/m.py to pkg/m.py",
    )
    assert (
        await text(ctx, move_path, src="lib/m.py", dst="pkg/m.py")
        == "moved file lib/m.py to pkg/m.py"
    )
    assert not (project / "lib" / "m.py").exists() and (project / "pkg" / "m.py").exists()
    assert (await _error(ctx, move_path, src="gone", dst="x")).code == "FILE_NOT_FOUND"


async def test_delete_goes_to_the_trash_unless_permanent(ctx: Capabilities, project: Path) -> None:
    trash = TRASH_HOME / "Trash" / "files"
    (project / "old.txt").write_text("bye\n")
    p = await plan(ctx, delete_path, path="old.txt")
    assert (p.title, p.kind, p.confirm) == ("Move old.txt to the system trash", "delete", True)
    assert await text(ctx, delete_path, path="old.txt") == "file old.txt moved to the system trash"
    assert not (project / "old.txt").exists()
    assert (trash / "old.txt").read_text() == "bye\n"
    (trash / "old.txt").unlink()
    (project / "d").mkdir()
    (project / "d" / "x").write_text("x")
    p = await plan(ctx, delete_path, path="d", permanent=True)
    assert p.title == "Delete d/ permanently"
    assert (
        await text(ctx, delete_path, path="d", permanent=True) == "directory d deleted permanently"
    )
    assert not (project / "d").exists() and not (trash / "d").exists()
    e = await _error(ctx, delete_path, path=".")
    assert e.message == ". is a root of the session; it is not deleted"


async def test_a_failed_trashing_leaves_the_path(ctx: Capabilities, project: Path) -> None:
    # The trash keeps NAME.trashinfo beside each file: a 250-byte name cannot have one.
    name = "n" * 250
    (project / name).write_text("keep me")
    e = await _error(ctx, delete_path, path=name)
    assert e.code == "TRASH_FAILED" and "it was left in place" in e.message
    assert "Pass permanent=true to delete it for good." in e.message
    assert (project / name).read_text() == "keep me"


async def test_deleting_a_symlink_removes_the_link_only(ctx: Capabilities, project: Path) -> None:
    (project / "link").symlink_to(project / "README.md")
    await run(ctx, delete_path, path="link", permanent=True)
    assert not (project / "link").is_symlink() and (project / "README.md").exists()


# --- view_image -----------------------------------------------------------------------------


async def test_view_image_sends_the_picture_to_an_image_model(
    project: Path, tmp_path: Path
) -> None:
    import msgspec

    from tether.engine.history import ImagePart
    from tether.engine.providers.scripted import Script, ScriptedModel

    script = msgspec.convert({"model": {"images": True}, "rounds": []}, Script)
    ctx = make_ctx(project, tmp_path / "spill", llm=ScriptedModel(script, keep_requests=True))
    (project / "logo.png").write_bytes(PNG)
    out = await run(ctx, view_image, path="logo.png", detail="high")
    assert out.text == "logo.png: image/png image, 40 bytes (shown to you below)"
    assert out.images == [ImagePart(base64.b64encode(PNG).decode(), "image/png", "high")]
    p = await plan(ctx, view_image, path="logo.png")
    assert (p.title, p.kind, p.confirm) == ("View logo.png", "read", False)
    (project / "notes.txt").write_text("not a picture")
    e = await _error(ctx, view_image, path="notes.txt")
    assert (e.code, e.message) == (
        "NOT_AN_IMAGE",
        "notes.txt is not a PNG, JPEG, GIF or WebP image",
    )


async def test_view_image_refuses_models_without_images(ctx: Capabilities, project: Path) -> None:
    (project / "logo.png").write_bytes(PNG)
    e = await _error(ctx, view_image, path="logo.png")
    assert (e.code, e.message) == (
        "IMAGES_UNSUPPORTED",
        "the model this session's model does not accept images, so view_image cannot show logo.png",
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(alphabet="ab\n\ré", max_size=80),
    first=st.integers(1, 12),
    span=st.one_of(st.none(), st.integers(0, 6)),
    budget=st.integers(1, 40),
    chunk=st.integers(1, 9),
)
def test_streamed_windows_match_whole_reads(
    tmp_path: Path, text: str, first: int, span: int | None, budget: int, chunk: int
) -> None:
    """The streaming reader (for files too large to load) sees what a whole read sees, whatever
    the chunk size."""
    from tether.tools import text as text_mod

    path = tmp_path / "w.txt"
    path.write_bytes(text.encode())
    last = None if span is None else first + span
    ctx = make_ctx(tmp_path, tmp_path / "spill")
    whole = text_mod.window_of(text, first, last, budget)
    old = text_mod.STREAM_CHUNK
    text_mod.STREAM_CHUNK = chunk
    try:
        size = path.stat().st_size
        streamed = anyio.run(text_mod.stream_window, ctx, path, size, first, last, budget)
    finally:
        text_mod.STREAM_CHUNK = old
    assert (streamed.lines, streamed.full_lengths, streamed.total) == (
        whole.lines,
        whole.full_lengths,
        whole.total,
    )
