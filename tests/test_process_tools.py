"""run_argv and run_argv_batch against a real project directory and real processes: what the
model reads, what the card shows, and what needs the user's consent."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests import toolctx
from tether.engine.events import TextOut, ToolContent
from tether.engine.registry import CallPlan, ToolDef, ToolError, ToolOutput
from tether.engine.seam import Capabilities, CommandDenylist
from tether.tools.process import MAX_NODES, run_argv, run_argv_batch

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX programs"),
]


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


async def test_run_argv_reports_exit_code_and_output(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    (project / "src").mkdir()
    (project / "src" / "a.txt").write_text("one\ntwo\n")
    out = await call(run_argv, ctx, {"argv": ["wc", "-l", "a.txt"], "cwd": "src"})
    assert out.text == "exit code 0\n2 a.txt"
    assert out.raw_output == {"exitCode": 0, "signal": None, "timedOut": False, "truncated": False}
    assert out.content == [TextOut("```\nexit code 0\n2 a.txt\n```")]
    failed = await call(run_argv, ctx, {"argv": ["ls", "missing-file"]})
    assert failed.text.startswith("exit code 2\nls: cannot access 'missing-file'")
    quiet = await call(run_argv, ctx, {"argv": ["true"]})
    assert quiet.text == "exit code 0\n(no output)"


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


async def test_run_argv_streams_to_the_card(project: Path, tmp_path: Path) -> None:
    reports: list[list[ToolContent]] = []

    async def report(content: list[ToolContent]) -> None:
        reports.append(content)

    ctx = make_ctx(project, tmp_path, report=report)
    await call(run_argv, ctx, {"argv": ["printf", "streamed"]})
    assert reports and reports[-1] == [TextOut("```\nstreamed\n```")]


async def test_plans_show_the_real_command(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    (project / "sub").mkdir()
    args = {"argv": ["git", "log", "--format=%an <%ae>"], "cwd": "sub", "env": {"A": "1 2"}}
    p = await plan(run_argv, ctx, args, "ask")
    assert p.title == "git log '--format=%an <%ae>'"
    assert p.kind == "execute" and p.scope == "git" and p.confirm
    assert p.content == [TextOut("in sub\nwith 'A=1 2'")]
    # Mode `code` runs read-only commands freely and asks for dangerous ones, saying why.
    assert not (await plan(run_argv, ctx, {"argv": ["git", "status"]}, "code")).confirm
    assert not (await plan(run_argv, ctx, {"argv": ["pytest", "-q"]}, "code")).confirm
    risky = await plan(run_argv, ctx, {"argv": ["python3", "-c", "print(1)"]}, "code")
    assert risky.confirm and risky.scope == "python3"
    assert risky.content == [
        TextOut("⚠ python3 runs inline code (-c)"),
        TextOut("```\npython3 -c:\nprint(1)\n```"),
    ]
    wrapped = await plan(run_argv, ctx, {"argv": ["env", "X=1", "uv", "run", "pytest"]}, "code")
    assert wrapped.scope == "env uv run pytest" and not wrapped.confirm


async def test_bad_arguments_fail_before_anyone_is_asked(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    with pytest.raises(ToolError, match="Expected `array`, got `str` - at `argv`"):
        run_argv.decode('{"argv": "git status"}')
    assert (await failure(run_argv, ctx, {"argv": []})).code == "INVALID_ARGS"
    assert (await failure(run_argv, ctx, {"argv": [""]})).code == "INVALID_ARGS"
    bad_timeout = await failure(run_argv, ctx, {"argv": ["ls"], "timeout_seconds": 0})
    assert bad_timeout.message == "timeout_seconds must be a positive number of seconds"
    assert (await failure(run_argv, ctx, {"argv": ["ls"], "cwd": "nope"})).code == "NOT_A_DIRECTORY"
    assert (await failure(run_argv, ctx, {"argv": ["ls"], "cwd": "/"})).code == "OUTSIDE_ROOTS"
    (project / ".git").mkdir()
    assert (await failure(run_argv, ctx, {"argv": ["ls"], "cwd": ".git"})).code == "PATH_DENIED"
    env = await failure(run_argv, ctx, {"argv": ["ls"], "env": {"A=B": "1"}})
    assert env.message == "env: 'A=B' is not a valid variable"


@pytest.mark.parametrize(
    "argv",
    [
        ["sudo", "ls"],
        ["env", "FOO=1", "sudo", "ls"],
        ["nohup", "doas", "id"],
        ["sh", "-c", "echo ok && sudo rm -rf /tmp/x"],
        ["ssh", "prod", "rm", "-rf", "/"],
        ["timeout", "5", "shutdown", "-h", "now"],
    ],
)
async def test_denylisted_commands_are_refused_in_every_mode(
    project: Path, tmp_path: Path, argv: list[str]
) -> None:
    ctx = make_ctx(project, tmp_path)
    for mode in ("ask", "code"):
        refused = await failure(run_argv, ctx, {"argv": argv}) if mode == "code" else None
        with pytest.raises(ToolError) as e:
            await plan(run_argv, ctx, {"argv": argv}, mode)
        assert e.value.code == "DENIED" and "denylisted:" in e.value.message
        assert refused is None or refused.message == e.value.message
    # Invoked without a plan (nobody should), it still refuses.
    with pytest.raises(ToolError) as direct:
        await call(run_argv, ctx, {"argv": argv})
    assert direct.value.code == "DENIED"


async def test_a_configured_denylist_adds_to_the_defaults(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path, command_denylist=CommandDenylist(("git push",)))
    e = await failure(run_argv, ctx, {"argv": ["git", "push", "origin"]})
    assert e.code == "DENIED" and "configured" in e.message
    assert (await plan(run_argv, ctx, {"argv": ["git", "status"]}, "code")).title == "git status"
    assert (await failure(run_argv, ctx, {"argv": ["sudo", "ls"]})).code == "DENIED"
    alone = make_ctx(project, tmp_path, command_denylist=CommandDenylist(builtin=False))
    assert (await plan(run_argv, alone, {"argv": ["sudo", "ls"]}, "code")).title == "sudo ls"


def test_the_config_file_sets_the_command_denylist() -> None:
    from tether.engine.config.errors import ConfigError
    from tether.engine.config.file import parse_config
    from tether.engine.config.resolve import resolve

    text = '[workspace]\ncommand_denylist = ["git push", "kubectl delete"]\n'
    setup = resolve(parse_config(text), env={})
    assert setup.command_denylist == CommandDenylist(("git push", "kubectl delete"))
    off = resolve(parse_config("[workspace]\nbuiltin_command_denylist = false\n"), env={})
    assert off.command_denylist == CommandDenylist(builtin=False)
    assert resolve(parse_config(""), env={}).command_denylist == CommandDenylist()
    blank = parse_config('[workspace]\ncommand_denylist = ["git push", "  "]\n')
    with pytest.raises(ConfigError, match=r":2: workspace.command_denylist: an entry is empty"):
        resolve(blank, env={})


async def test_tether_acp_applies_the_configured_command_denylist(
    home: Path, project: Path
) -> None:
    from tests.harness import configured_turn
    from tests.stored import tool_results

    argvs = [["git", "push", "origin", "main"], ["sudo", "true"]]
    calls = [{"name": "run_argv", "arguments": {"argv": argv}} for argv in argvs]
    config = '[workspace]\ncommand_denylist = ["git push"]\n'
    sid, frames = await configured_turn(home, project, config, calls)
    asked = [f for f in frames if f.get("method") == "session/request_permission"]
    assert asked == []  # refused at plan time: nobody is asked
    pushed, escalated = tool_results(home, sid)
    assert pushed.startswith("error [DENIED]: denylisted: git push origin main — configured")
    assert escalated.startswith("error [DENIED]: denylisted: sudo true — privilege escalation")


# --- run_argv_batch --------------------------------------------------------------------------


async def test_batch_runs_in_order_with_branches(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    (project / "a.txt").write_text("x\n")
    nodes = [
        {
            "argv": ["test", "-f", "a.txt"],
            "then": {"argv": ["cat", "a.txt"]},
            "else": {"argv": ["echo", "no a"]},
        },
        {
            "argv": ["test", "-f", "b.txt"],
            "then": [{"argv": ["cat", "b.txt"]}],
            "else": [{"argv": ["echo", "no b"]}, {"argv": ["echo", "twice"]}],
        },
    ]
    out = await call(run_argv_batch, ctx, {"nodes": nodes})
    assert out.text == (
        "5 commands ran: 4 succeeded, 1 failed\n\n"
        "$ test -f a.txt\nexit code 0\n(no output)\n\n"
        "(then) $ cat a.txt\nexit code 0\nx\n\n"
        "$ test -f b.txt\nexit code 1\n(no output)\n\n"
        "(else) $ echo 'no b'\nexit code 0\nno b\n\n"
        "(else) $ echo twice\nexit code 0\ntwice"
    )
    assert [c["command"] for c in out.raw_output["commands"]][:2] == [
        "test -f a.txt",
        "cat a.txt",
    ]


async def test_batch_pipes_and_inheritance(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    (project / "d").mkdir()
    (project / "d" / "f.txt").write_text("3\n1\n2\n")
    nodes = [
        {
            "argv": ["cat", "f.txt"],
            "cwd": "d",
            "env": {"LC_ALL": "C"},
            "pipe": [{"argv": ["sort"]}, {"argv": ["head", "-n", "2"]}],
            "then": {"argv": ["pwd"]},  # inherits cwd d
        },
        {
            "argv": ["printf", "x"],
            "pipe": {"argv": ["wc", "-c"], "pipe": {"argv": ["tr", "-d", " "]}},
        },
        {"argv": ["false"], "pipe": {"argv": ["true"]}, "else": {"argv": ["echo", "unreached"]}},
    ]
    out = await call(run_argv_batch, ctx, {"nodes": nodes})
    blocks = out.text.split("\n\n")
    assert blocks[0] == "4 commands ran: 4 succeeded"
    assert blocks[1] == "$ cat f.txt | sort | head -n 2\nexit code 0 (pipeline: 0 | 0 | 0)\n1\n2"
    assert blocks[2] == f"(then) $ pwd\nexit code 0\n{project / 'd'}"
    assert blocks[3] == "$ printf x | wc -c | tr -d ' '\nexit code 0 (pipeline: 0 | 0 | 0)\n1"
    # Only the last step's exit code decides the branch.
    assert blocks[4] == "$ false | true\nexit code 0 (pipeline: 1 | 0)\n(no output)"


async def test_batch_stops_on_error_when_asked(project: Path, tmp_path: Path) -> None:
    ctx = make_ctx(project, tmp_path)
    nodes = [
        {"argv": ["false"]},
        {"argv": ["ls", "nothing-here"], "stop_on_error": True},
        {"argv": ["echo", "later"], "then": {"argv": ["echo", "more"]}},
    ]
    out = await call(run_argv_batch, ctx, {"nodes": nodes})
    assert out.text.startswith("2 commands ran: 0 succeeded, 2 failed\n\n$ false\nexit code 1")
    assert out.text.endswith(
        "[stopped: `ls nothing-here` failed and has stop_on_error; "
        "not run: echo later && echo more]"
    )


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
    assert p.scope == "cat, git, head, ls, make, ruff"
    assert p.content == [
        TextOut(
            "$ make\n  then: $ make test\n  else: $ cat log\n$ git diff | head\n"
            "$ ruff check\n  else: $ ruff format\n  else: $ ls"
        )
    ]
    risky = await plan(
        run_argv_batch, ctx, {"nodes": [{"argv": ["ls"], "then": {"argv": ["rm", "x"]}}]}, "code"
    )
    assert risky.confirm and TextOut("$ ls\n  then: $ rm x\n⚠ deletes files: x") in risky.content


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
