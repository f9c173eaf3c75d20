"""`@tool` schema inference, and the file tools against a real directory."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tests.support.toolctx import make_ctx
from tether.engine.registry import ToolArgs, parse_docstring, tool
from tether.engine.seam import Capabilities
from tether.errors import ToolError
from tether.tools.files import list_dir, read_file, write_file

pytestmark = pytest.mark.anyio


class FindArgs(ToolArgs):
    pattern: str
    limit: int = 10
    paths: list[str] | None = None


def test_schema_is_inferred_from_hints_and_docstring() -> None:
    @tool(kind="search", read_only=True)
    async def find(ctx: Capabilities, args: FindArgs) -> str:
        """Find things in files.

        Longer explanation.

        Args:
            pattern: A regular expression.
            limit: At most this many
                matches are returned.
            paths (list): Where to look.

        Returns:
            Matches.
        """
        return ""

    assert find.description == "Find things in files. Longer explanation."
    assert find.parameters == {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "A regular expression."},
            "limit": {
                "type": "integer",
                "default": 10,
                "description": "At most this many matches are returned.",
            },
            "paths": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
                "description": "Where to look.",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    with pytest.raises(ToolError, match="missing required argument `pattern`"):
        find.decode("{}")
    with pytest.raises(ToolError, match="Expected `int`, got `str` - at `limit`"):
        find.decode('{"pattern": "x", "limit": "many"}')
    with pytest.raises(ToolError, match="unknown field `colour`"):
        find.decode('{"pattern": "x", "colour": 1}')
    assert msgspec.structs.asdict(find.decode('{"pattern": "x"}')) == {
        "pattern": "x",
        "limit": 10,
        "paths": None,
    }


def test_docstring_without_args() -> None:
    assert parse_docstring("Just a line.") == ("Just a line.", {})


def _ctx(root: Path, spill: Path) -> Capabilities:
    return make_ctx(root, spill)


async def test_read_file_ranges_and_numbers(project: Path, tmp_path: Path) -> None:
    (project / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    ctx = _ctx(project, tmp_path / "spill")
    out = await read_file.invoke(
        ctx, read_file.decode('{"path": "f.txt", "start_line": 3, "end_line": 4}')
    )
    assert out.text == "L3-4 of 10\nline 3\nline 4"
    out = await read_file.invoke(
        ctx, read_file.decode('{"path": "f.txt", "end_line": 2, "with_lineno": true}')
    )
    assert out.text == "L1-2 of 10\n1\tline 1\n2\tline 2"
    out = await read_file.invoke(ctx, read_file.decode('{"path": "f.txt", "max_chars": 20}'))
    assert out.text == "L1-2 of 10 (truncated; continue with start_line=3)\nline 1\nline 2"


async def test_paths_stay_inside_the_roots(project: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("s")
    ctx = _ctx(project, tmp_path / "spill")
    for path in ("../secret", str(tmp_path / "secret")):
        with pytest.raises(ToolError) as e:
            await read_file.invoke(ctx, read_file.decode(msgspec.json.encode({"path": path})))
        assert e.value.code == "OUTSIDE_ROOTS"
    (project / "link").symlink_to(tmp_path / "secret")
    with pytest.raises(ToolError):
        await read_file.invoke(ctx, read_file.decode('{"path": "link"}'))


async def test_spilled_results_are_readable(project: Path, tmp_path: Path) -> None:
    ctx = _ctx(project, tmp_path / "spill")
    saved = await ctx.spill.save("x/../../evil name", "spilled text")
    assert saved.parent == tmp_path / "spill" and saved.name == "x_.._.._evil_name.txt"
    out = await read_file.invoke(ctx, read_file.decode(msgspec.json.encode({"path": str(saved)})))
    assert out.text.endswith("spilled text")


async def test_write_file_refuses_to_replace_unless_asked(project: Path, tmp_path: Path) -> None:
    ctx = _ctx(project, tmp_path / "spill")
    args = write_file.decode('{"path": "README.md", "content": "new"}')
    with pytest.raises(ToolError) as e:
        await write_file.plan(ctx, args, "code")
    assert e.value.code == "FILE_EXISTS"
    args = write_file.decode('{"path": "README.md", "content": "new", "overwrite": true}')
    plan = await write_file.plan(ctx, args, "code")
    assert (
        plan.confirm
        and plan.title == "Replace README.md"
        and plan.scope == f"replace {project / 'README.md'}"
    )
    new = write_file.decode('{"path": "sub/dir/n.txt", "content": "n"}')
    assert not (await write_file.plan(ctx, new, "code")).confirm
    assert (await write_file.plan(ctx, new, "ask")).confirm
    out = await write_file.invoke(ctx, new)
    assert out.text == "created sub/dir/n.txt (1 bytes)"
    assert (project / "sub/dir/n.txt").read_text() == "n"


async def test_list_dir(project: Path, tmp_path: Path) -> None:
    (project / "src").mkdir()
    (project / "a.py").write_text("")
    ctx = _ctx(project, tmp_path / "spill")
    out = await list_dir.invoke(ctx, list_dir.decode("{}"))
    assert out.text == ".: 3 entries\nsrc/\na.py\nREADME.md"
    with pytest.raises(ToolError) as e:
        await list_dir.invoke(ctx, list_dir.decode('{"path": "README.md"}'))
    assert e.value.code == "NOT_A_DIRECTORY"


class _EchoArgs(ToolArgs):
    text: str


def test_a_tool_takes_its_arguments_as_one_module_level_struct() -> None:
    """`@tool` reads the arguments' Struct from the function's own annotation (this module's
    `from __future__ import annotations` makes it a name, looked up in the module)."""

    async def echo(ctx: Capabilities, args: _EchoArgs) -> str:
        """Say it back.

        Args:
            text: what to say
        """
        return args.text

    made = tool()(echo)
    assert made.args_type is _EchoArgs
    assert made.parameters["properties"]["text"]["description"] == "what to say"

    class Local(ToolArgs):
        text: str

    async def local(ctx: Capabilities, args: Local) -> str:
        return args.text

    with pytest.raises(TypeError, match="define its ToolArgs at module level"):
        tool()(local)

    async def untyped(ctx: Capabilities, args: dict[str, str]) -> str:
        return ""

    with pytest.raises(TypeError, match="must take"):
        tool()(untyped)  # type: ignore[arg-type]  # what the check is for
