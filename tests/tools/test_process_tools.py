"""run_argv and run_argv_batch against a real project directory and real processes: what the
model reads, what the card shows, and what needs the user's consent."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.support import toolctx
from tether.engine.events import TextOut, ToolContent
from tether.engine.registry import CallPlan, ToolDef, ToolOutput
from tether.engine.seam import Capabilities
from tether.errors import ToolError
from tether.tools.batch import MAX_NODES, run_argv_batch
from tether.tools.run import run_argv

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX programs"),
]


def note(p: CallPlan) -> str:
    """The first text of a call's card: why it asks, and where it runs."""
    first = p.content[0]
    assert isinstance(first, TextOut)
    return first.text


def make_ctx(project: Path, tmp_path: Path, **kw: Any) -> Capabilities:
    return toolctx.make_ctx(project, tmp_path / "spill", **kw)


async def call(tool: ToolDef, ctx: Capabilities, args: dict[str, Any]) -> ToolOutput:
    return await tool.invoke(ctx, tool.decode(msgspec.json.encode(args)))


async def plan(tool: ToolDef, ctx: Capabilities, args: dict[str, Any], mode: str) -> CallPlan:
    return await tool.plan(ctx, tool.decode(msgspec.json.encode(args)), mode)


async def failure(tool: ToolDef, ctx: Capabilities, args: dict[str, Any]) -> ToolError:
    with pytest.raises(ToolError) as e:
        await plan(tool, ctx, args, "code")
    return e.value


# --- run_argv --------------------------------------------------------------------------------


@pytest.mark.slow
async def test_run_argv_reports_exit_code_and_output(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    (project / "src").mkdir()
    (project / "src" / "a.txt").write_text("one\ntwo\n")
    out = await call(run_argv, ctx, {"argv": ["wc", "-l", "a.txt"], "cwd": "src"})
    assert out.text == "exit code 0\n2 a.txt"
    assert out.raw_output == {"exitCode": 0, "signal": None, "timedOut": False, "truncated": False}
    assert out.content == [TextOut("```\n$ wc -l a.txt\n2 a.txt\nexit code 0\n```")]
    failed = await call(run_argv, ctx, {"argv": ["ls", "missing-file"]})
    assert failed.text.startswith("exit code 2\nls: cannot access 'missing-file'")
    quiet = await call(run_argv, ctx, {"argv": ["true"]})
    assert quiet.text == "exit code 0\n(no output)"


@pytest.mark.slow
async def test_a_long_output_keeps_its_middle_in_a_file_the_model_can_read(
    project: Path, tmp_path: Path
) -> None:
    """1.3 MB of numbered lines: the result keeps a head and a tail, and names the file that
    holds all of it and the byte ranges shown; read_file pages through the middle."""
    from tether.tools.files import read_file

    ctx = make_ctx(project, tmp_path)
    code = (
        "import sys\nfor i in range(100_000): sys.stdout.write(f'line {i:06d} ' + 'x' * 2 + '\\n')"
    )
    out = await call(run_argv, ctx, {"argv": [sys.executable, "-c", code]})
    assert "line 000000" in out.text and "line 099999" in out.text
    assert "line 050000" not in out.text
    marker = next(line for line in out.text.splitlines() if "bytes of output omitted here" in line)
    path = Path(marker.split(" is in ", 1)[1].split(" (bytes ", 1)[0])
    whole = path.read_bytes()
    assert len(whole) == 100_000 * 15 and whole.startswith(b"line 000000 xx\n")
    assert f"-{len(whole):,} below" in marker
    middle = await call(
        read_file, ctx, {"path": str(path), "start_line": 50_001, "end_line": 50_002}
    )
    assert "line 050000 xx" in middle.text


@pytest.mark.slow
async def test_run_argv_stdin_env_and_timeout(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    fed = await call(run_argv, ctx, {"argv": ["sort"], "stdin": "b\na\n"})
    assert fed.text == "exit code 0\na\nb"
    env = await call(run_argv, ctx, {"argv": ["printenv", "TETHER_X"], "env": {"TETHER_X": "42"}})
    assert env.text == "exit code 0\n42"
    slow = await call(run_argv, ctx, {"argv": ["sleep", "30"], "timeout_seconds": 0.5})
    assert slow.text == (
        "timed out after 0.5 s: the command and what it started were killed\n(no output)"
    )
    assert slow.raw_output["timedOut"] is True


@pytest.mark.slow
async def test_run_argv_streams_to_the_card(project: Path, tmp_path: Path) -> None:
    reports: list[list[ToolContent]] = []

    async def report(content: list[ToolContent]) -> None:
        reports.append(content)

    ctx = make_ctx(project, tmp_path, report=report)
    await call(run_argv, ctx, {"argv": ["printf", "streamed"]})
    assert reports and reports[-1] == [TextOut("```\n$ printf streamed\nstreamed\n```")]


@pytest.mark.slow
async def test_plans_show_the_real_command(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    (project / "sub").mkdir()
    args = {"argv": ["git", "log", "--format=%an <%ae>"], "cwd": "sub", "env": {"LC_ALL": "C 1"}}
    p = await plan(run_argv, ctx, args, "ask")
    assert p.title == "git log '--format=%an <%ae>'"
    # A known read-only invocation runs unasked in every mode; its grant names it exactly.
    assert p.kind == "execute" and not p.confirm and p.scope == "git log [read-only]"
    assert note(p).startswith("in sub\nwith 'LC_ALL=C 1'\nruns in the sandbox")
    # A variable not known to be harmless makes it ask (see test_command_judgement.py).
    assert (await plan(run_argv, ctx, {**args, "env": {"A": "1 2"}}, "ask")).confirm
    assert not (await plan(run_argv, ctx, {"argv": ["git", "status"]}, "code")).confirm
    # Mode `code` runs everything else confined, unasked, saying what it does; `ask` asks.
    free = await plan(run_argv, ctx, {"argv": ["pytest", "-q"]}, "code")
    assert not free.confirm and free.waived_by_mode and free.scope == "pytest [writing]"
    assert (await plan(run_argv, ctx, {"argv": ["pytest", "-q"]}, "ask")).confirm
    risky = await plan(run_argv, ctx, {"argv": ["python3", "-c", "print(1)"]}, "ask")
    assert risky.confirm and risky.scope.startswith("python3 -c code#")
    assert risky.grant_label.endswith("(runs code)")
    assert note(risky).startswith("⚠ python3 runs inline code (-c)\nruns in the")
    assert TextOut("```\npython3 -c:\nprint(1)\n```") in risky.content
    # No sandbox: only read-only invocations run unasked, whatever the mode.
    bare = make_ctx(project, tmp_path, sandbox=None)
    assert (await plan(run_argv, bare, {"argv": ["pytest", "-q"]}, "code")).confirm
    assert not (await plan(run_argv, bare, {"argv": ["git", "status"]}, "code")).confirm


@pytest.mark.slow
async def test_unconfined_always_asks_with_its_reason(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    args = {"argv": ["npm", "install"], "unconfined": True, "reason": "needs ~/.npm"}
    p = await plan(run_argv, ctx, args, "code")
    assert p.confirm and not p.grantable and p.scope == "npm install [writing] [unconfined]"
    assert note(p) == "⚠ runs OUTSIDE the sandbox, with your permissions: needs ~/.npm"
    with pytest.raises(ToolError) as why:
        await plan(run_argv, ctx, {"argv": ["npm", "install"], "unconfined": True}, "code")
    assert why.value.code == "INVALID_ARGS" and "reason" in why.value.message


@pytest.mark.slow
async def test_batch_plan_lists_every_command(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    nodes = [
        {"argv": ["make"], "then": {"argv": ["make", "test"]}, "else": {"argv": ["cat", "log"]}},
        {"argv": ["git", "diff"], "pipe": {"argv": ["head"]}},
        {"argv": ["ruff", "check"], "else": [{"argv": ["ruff", "format"]}, {"argv": ["ls"]}]},
    ]
    p = await plan(run_argv_batch, ctx, {"nodes": nodes}, "code")
    assert p.title == (
        "if make; then make test; else cat log; fi; git diff | head; "
        "ruff check || { ruff format; ls; }"
    )
    assert not p.confirm and p.kind == "execute"
    assert p.scope == (
        "make [writing], make test [writing], cat [read-only], git diff [read-only], "
        "head [read-only], ruff [writing], ls [read-only]"
    )
    assert note(p).startswith(
        "$ make\n  then: $ make test\n  else: $ cat log\n$ git diff | head\n"
        "$ ruff check\n  else: $ ruff format\n  else: $ ls\nruns in the sandbox"
    )
    asked = await plan(
        run_argv_batch, ctx, {"nodes": [{"argv": ["ls"], "then": {"argv": ["rm", "x"]}}]}, "ask"
    )
    assert asked.confirm and "⚠ deletes files: x" in note(asked)


async def test_batch_denylist_reaches_every_node(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    nodes = [{"argv": ["ls"], "else": {"argv": ["echo"], "pipe": {"argv": ["sudo", "tee", "x"]}}}]
    e = await failure(run_argv_batch, ctx, {"nodes": nodes})
    assert e.code == "DENIED" and "denylisted: sudo tee x" in e.message


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ([], "nodes must hold at least one node"),
        (
            [{"argv": ["ls"], "then": {"argv": "ls -l"}}],
            "nodes[0].then.argv must be a list of strings, one per argument (there is no shell)",
        ),
        ([{"argv": []}], "nodes[0].argv must name a program"),
        ([{"argv": ["ls"], "then": {"argv": ["ls"], "colour": 1}}], "unknown field `colour`"),
        (
            [{"argv": ["ls"], "pipe": {"argv": ["wc"], "then": {"argv": ["ls"]}}}],
            "nodes[0].pipe: a pipe step takes no then",
        ),
        (
            [{"argv": ["ls"], "pipe": [{"argv": ["wc"], "stdin": "x"}]}],
            "nodes[0].pipe[0]: a pipe step takes no stdin",
        ),
        ([{"argv": ["ls"]}] * (MAX_NODES + 1), "a batch holds at most 20 nodes"),
        (
            [
                {
                    "argv": ["a"],
                    "then": {
                        "argv": ["b"],
                        "then": {"argv": ["c"], "then": {"argv": ["d"], "then": {"argv": ["e"]}}},
                    },
                }
            ],
            "nodes[0].then.then.then.then: batches nest at most 4 levels",
        ),
        ([{"argv": ["ls"], "timeout_seconds": -1}], "nodes[0].timeout_seconds must be a positive"),
    ],
)
async def test_batch_arguments_are_checked_before_any_prompt(
    project: Path, tmp_path: Path, nodes: list[Any], message: str
) -> None:
    e = await failure(run_argv_batch, make_ctx(project, tmp_path), {"nodes": nodes})
    assert e.code == "INVALID_ARGS" and message in e.message, e.message


def test_batch_schema_is_self_contained() -> None:
    node = run_argv_batch.parameters["properties"]["nodes"]["items"]
    assert set(node["properties"]) == {
        "argv",
        "then",
        "else",
        "pipe",
        "cwd",
        "env",
        "stdin",
        "mix_stderr",
        "stop_on_error",
        "timeout_seconds",
    }
    assert node["required"] == ["argv"] and "$ref" not in str(run_argv_batch.parameters)
