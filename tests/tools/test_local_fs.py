"""The local file system seam refuses what is not UTF-8 text, and the file tools report it."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tests.support.toolctx import make_ctx
from tether.engine.local.file_system import LocalFileSystem
from tether.engine.seam import Capabilities
from tether.errors import SeamError, ToolError
from tether.tools.files import read_file, write_file

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))


def _ctx(root: Path, spill: Path) -> Capabilities:
    return make_ctx(root, spill)


async def _refused(path: Path) -> SeamError:
    with pytest.raises(SeamError) as caught:
        await LocalFileSystem().read_text(path)
    return caught.value


async def test_a_file_with_a_nul_byte_is_binary(tmp_path: Path) -> None:
    path = tmp_path / "logo.png"
    path.write_bytes(PNG)
    err = await _refused(path)
    assert err.code == "BINARY_FILE"
    assert err.message == f"{path} is a binary file ({len(PNG)} bytes); read_file reads text only"


async def test_bytes_that_are_not_utf8_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\u00e9 cr\u00e8me\n".encode("latin-1"))
    err = await _refused(path)
    assert err.code == "BINARY_FILE"
    assert err.message == (
        f"{path} is not UTF-8 text (byte 3 of 11); read_file reads UTF-8 text only"
    )


async def test_a_nul_past_the_sniffed_head_is_still_text(tmp_path: Path) -> None:
    path = tmp_path / "late.txt"
    text = "x" * 9000 + "\0tail\n"
    path.write_text(text)
    assert await LocalFileSystem().read_text(path) == text


async def test_text_directories_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "ok.md"
    path.write_text("h\u00e9llo \u2713\n")
    assert await LocalFileSystem().read_text(path) == "h\u00e9llo \u2713\n"
    assert (await _refused(tmp_path)).code == "IS_A_DIRECTORY"
    assert (await _refused(tmp_path / "gone")).code == "FILE_NOT_FOUND"


async def test_read_file_reports_a_binary_file_to_the_model(project: Path, tmp_path: Path) -> None:
    (project / "logo.png").write_bytes(PNG)
    ctx = _ctx(project, tmp_path / "spill")
    with pytest.raises(SeamError) as caught:
        await read_file.invoke(ctx, read_file.decode('{"path": "logo.png"}'))
    assert caught.value.code == "BINARY_FILE"


async def test_an_unreadable_existing_file_is_never_replaced_silently(
    project: Path, tmp_path: Path
) -> None:
    (project / "logo.png").write_bytes(PNG)
    ctx = _ctx(project, tmp_path / "spill")
    args = {"path": "logo.png", "content": "text"}
    with pytest.raises(ToolError) as caught:
        await write_file.plan(ctx, write_file.decode(msgspec.json.encode(args)), "code")
    assert caught.value.code == "FILE_EXISTS"
    args["overwrite"] = True  # type: ignore[assignment]
    plan = await write_file.plan(ctx, write_file.decode(msgspec.json.encode(args)), "code")
    assert plan.confirm and plan.title == "Replace logo.png"
