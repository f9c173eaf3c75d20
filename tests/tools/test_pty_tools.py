"""The PTY tools on real pseudo-terminals: a Python REPL driven by reads until its prompt,
typed text and key markers; limits, idle expiry, the output budget, and cancellation."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from tests.support.processes import alive, carrying, pids, stubborn_argv
from tests.tools.test_process_tools import make_ctx
from tether.engine.local.fallbacks import PolicyApproval
from tether.engine.local.pty_host import PtyHost
from tether.engine.registry import ToolDef, ToolOutput
from tether.engine.seam import Capabilities
from tether.errors import SeamError, ToolError
from tether.tools.pty import close_pty, open_pty, read_pty, write_pty, write_pty_keys
from tether.tools.pty_keys import UnknownKey, encode_keys

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminals"),
]
PY = sys.executable
Failed = (ToolError, SeamError)  # the pipeline answers both the same way: error [CODE]


async def call(tool: ToolDef, ctx: Capabilities, **args: Any) -> ToolOutput:
    decoded = tool.decode(msgspec.json.encode(args))
    await tool.plan(ctx, decoded, "code")  # the checks a real call goes through first
    return await tool.invoke(ctx, decoded)


@pytest.mark.slow
async def test_a_repl_session(project: Path, tmp_path: Path) -> None:
    host = PtyHost()
    ctx = make_ctx(project, tmp_path, pty=host)
    try:
        opened = await call(open_pty, ctx, argv=[PY, "-q", "-i"])
        assert opened.text.startswith(f"pty 1 started: {PY} -q -i (pid ")
        # Every wait is for an effect, with room for a loaded machine (CI once took over 10 s
        # to see a Ctrl-C's KeyboardInterrupt): a wait that ends early ends the test early.
        first = await call(read_pty, ctx, pty_id=1, until=">>> ", timeout_seconds=60)
        assert first.text == "pty 1: running; '>>> ' seen\n>>>"
        await call(write_pty, ctx, pty_id=1, data="print('\\x1b[31mred\\x1b[0m', 6 * 7)\n")
        answer = await call(read_pty, ctx, pty_id=1, until=">>> ", timeout_seconds=60)
        assert answer.text.splitlines()[-2:] == ["red 42", ">>>"]  # colours removed
        await call(
            write_pty, ctx, pty_id=1, data="import time; print('sl' + 'eeping'); time.sleep(60)\n"
        )
        running = await call(read_pty, ctx, pty_id=1, until="sleeping", timeout_seconds=60)
        assert running.raw_output["matched"], running.text  # running, not still being typed
        await call(write_pty_keys, ctx, pty_id=1, keys="<c-c>")
        interrupted = await call(read_pty, ctx, pty_id=1, until=">>> ", timeout_seconds=60)
        assert "KeyboardInterrupt" in interrupted.text, interrupted.text
        await call(write_pty_keys, ctx, pty_id=1, keys="exit()<enter>")
        ended = await _until_exited(ctx, pty_id=1)
        assert ended.text.startswith("pty 1: exited with code 0")
        again = await call(read_pty, ctx, pty_id=1)
        assert again.text == "pty 1: exited with code 0\n(no new output)"
        with pytest.raises(Failed) as e:
            await call(write_pty, ctx, pty_id=1, data="x")
        assert e.value.code == "PTY_EXITED"
        closed = await call(close_pty, ctx, pty_id=1)
        assert closed.text == "pty 1 closed: exited with code 0"
        with pytest.raises(Failed) as gone:
            await call(read_pty, ctx, pty_id=1)
        assert gone.value.code == "PTY_NOT_FOUND"
    finally:
        await host.close_all()


async def _until_exited(ctx: Capabilities, pty_id: int, within: float = 60) -> ToolOutput:
    """read_pty until the program has exited (a read returns when the output pauses)."""
    with anyio.fail_after(within):
        while True:
            seen = await call(read_pty, ctx, pty_id=pty_id, timeout_seconds=2)
            if not seen.raw_output["alive"]:
                return seen


@pytest.mark.slow
async def test_read_without_until_returns_when_output_pauses(project: Path, tmp_path: Path) -> None:
    host = PtyHost()
    ctx = make_ctx(project, tmp_path, pty=host)
    try:
        await call(open_pty, ctx, argv=["cat"])
        await call(write_pty, ctx, pty_id=1, data="echo me\n")
        out = await call(read_pty, ctx, pty_id=1, timeout_seconds=30)
        assert out.text.startswith("pty 1: running\necho me")  # the terminal's echo
        missing = await call(read_pty, ctx, pty_id=1, until="never", timeout_seconds=0.3)
        assert missing.text == "pty 1: running; 'never' not seen in 0.3 s\n(no new output)"
    finally:
        await host.close_all()


@pytest.mark.slow
async def test_close_stops_the_program_and_its_children(project: Path, tmp_path: Path) -> None:
    host = PtyHost()
    ctx = make_ctx(project, tmp_path, pty=host, sandbox=None)  # pids as this host sees them
    pid_file = project / "pids"
    await call(open_pty, ctx, argv=stubborn_argv(project, pid_file))
    await call(read_pty, ctx, pty_id=1, until="ready", timeout_seconds=30)
    closed = await call(close_pty, ctx, pty_id=1)
    assert closed.text.startswith("pty 1 closed: killed by SIGKILL")
    assert not any(alive(p) for p in pids(pid_file))


@pytest.mark.slow
async def test_cancelling_a_read_stops_the_program(project: Path, tmp_path: Path) -> None:
    host = PtyHost()
    ctx = make_ctx(project, tmp_path, pty=host, sandbox=None)  # pids as this host sees them
    pid_file = project / "pids"
    await call(open_pty, ctx, argv=stubborn_argv(project, pid_file))
    await call(read_pty, ctx, pty_id=1, until="ready", timeout_seconds=30)
    with anyio.move_on_after(0.3) as scope:  # the "user" cancels a read that waits forever
        await call(read_pty, ctx, pty_id=1, until="never", timeout_seconds=60)
    assert scope.cancelled_caught
    assert not any(alive(p) for p in pids(pid_file))
    with pytest.raises(Failed):
        await call(read_pty, ctx, pty_id=1)  # closed with it
    await host.close_all()


@pytest.mark.slow
async def test_limits(project: Path, tmp_path: Path) -> None:
    host = PtyHost(limit=2, output_budget=50_000)
    ctx = make_ctx(project, tmp_path, pty=host, approval=PolicyApproval(False))  # "raise?" no
    try:
        await call(open_pty, ctx, argv=["cat"])
        await call(open_pty, ctx, argv=["cat"])
        with pytest.raises(Failed) as full:
            await call(open_pty, ctx, argv=["cat"])
        assert full.value.code == "PTY_LIMIT" and "(ids 1, 2)" in full.value.message
        await call(close_pty, ctx, pty_id=2)
        opened = await call(open_pty, ctx, argv=[PY, "-c", "print('z' * 200_000)"])
        assert opened.raw_output["ptyId"] == 3
        flood = await call(read_pty, ctx, pty_id=3, until="never", timeout_seconds=30)
        head = flood.text.split("\n", 1)[0]
        assert head == (
            "pty 3: closed by tether: it printed more than its output budget (50,000 bytes); "
            "'never' not seen in 30 s"
        )
        assert "characters of output omitted" in flood.text
    finally:
        await host.close_all()


@pytest.mark.slow
async def test_idle_ptys_are_closed(project: Path, tmp_path: Path) -> None:
    host = PtyHost(idle_timeout=0.2)
    ctx = make_ctx(project, tmp_path, pty=host, sandbox=None)  # pids as this host sees them
    pid_file = project / "pids"
    await call(open_pty, ctx, argv=stubborn_argv(project, pid_file))
    await call(read_pty, ctx, pty_id=1, until="ready", timeout_seconds=30)
    running = pids(pid_file)
    with anyio.fail_after(10):  # nobody touches it: the idle timer ends it on its own
        while any(alive(p) for p in running):
            await anyio.sleep(0.02)
    status = await call(read_pty, ctx, pty_id=1)
    assert status.text == "pty 1: closed by tether: it was idle for 0.2 s\n(no new output)"
    await host.close_all()


@pytest.mark.slow
async def test_programs_that_cannot_start(project: Path, tmp_path: Path) -> None:
    host = PtyHost()
    ctx = make_ctx(project, tmp_path, pty=host)
    with pytest.raises(Failed) as missing:
        await call(open_pty, ctx, argv=["no-such-program-x"])
    assert missing.value.code == "COMMAND_NOT_FOUND"
    (project / "tool.sh").write_text("#!/bin/sh\necho from-script\n")
    (project / "tool.sh").chmod(0o755)
    await call(open_pty, ctx, argv=["./tool.sh"], cwd=".")  # relative to the session's cwd
    out = await call(read_pty, ctx, pty_id=1, until="from-script", timeout_seconds=30)
    assert "from-script" in out.text
    await host.close_all()
    without = make_ctx(project, tmp_path)
    with pytest.raises(Failed) as none:
        await call(open_pty, without, argv=["cat"])
    assert none.value.code == "PTY_UNAVAILABLE"


@pytest.mark.slow
async def test_pty_plans(project: Path, tmp_path: Path) -> None:
    host = PtyHost()
    ctx = make_ctx(project, tmp_path, pty=host)
    bare = make_ctx(project, tmp_path, pty=host, sandbox=None)

    async def plan(tool: ToolDef, mode: str = "code", on: Capabilities = ctx, **args: Any) -> Any:
        return await tool.plan(on, tool.decode(msgspec.json.encode(args)), mode)

    # In the sandbox, `code` mode opens a shell unasked; `ask` mode asks; no sandbox: it asks.
    shell = await plan(open_pty, argv=["bash", "--norc"])
    assert shell.title == "pty: bash --norc" and not shell.confirm and shell.waived_by_mode
    assert shell.scope == "bash [runs code]" and shell.grant_label == "`bash` (runs code)"
    assert (await plan(open_pty, "ask", argv=["htop"])).confirm
    assert (await plan(open_pty, on=bare, argv=["bash", "--norc"])).confirm
    outside = await plan(open_pty, argv=["bash"], unconfined=True, reason="needs my ssh agent")
    assert outside.confirm and not outside.grantable
    assert any("OUTSIDE the sandbox" in c.text for c in outside.content)
    remote = await plan(open_pty, argv=["ssh", "prod"])
    assert any("its input is not checked" in c.text for c in remote.content)
    with pytest.raises(Failed) as denied:
        await plan(open_pty, argv=["sudo", "-i"])
    assert denied.value.code == "DENIED"
    try:
        await call(open_pty, ctx, argv=["cat"])  # confined: what is typed runs confined too
        await call(open_pty, ctx, argv=["cat"], unconfined=True, reason="test")
        calls: tuple[tuple[ToolDef, dict[str, Any]], ...] = (
            (read_pty, {"pty_id": 1}),
            (write_pty, {"pty_id": 1, "data": "ls\n"}),
            (write_pty_keys, {"pty_id": 1, "keys": "<c-c>"}),
            (close_pty, {"pty_id": 1}),
        )
        for tool, args in calls:
            assert not (await plan(tool, "ask", **args)).confirm
        typing = await plan(write_pty, "code", pty_id=2, data="rm -rf ~\n")
        assert typing.confirm and typing.scope == "pty 2 [unconfined input]"
        assert (await plan(write_pty_keys, "code", pty_id=2, keys="<c-c>")).confirm
    finally:
        await host.close_all()
    with pytest.raises(Failed) as unknown:
        await plan(write_pty_keys, pty_id=1, keys="<c-c><hyper-x>")
    assert unknown.value.code == "UNKNOWN_KEY" and "<hyper-x> is not a key" in unknown.value.message
    with pytest.raises(Failed):
        await plan(read_pty, pty_id=1, timeout_seconds=0)


@pytest.mark.parametrize(
    ("keys", "data"),
    [
        ("<c-c>", b"\x03"),
        ("<esc>", b"\x1b"),
        ("<up*3>", b"\x1b[A" * 3),
        ("<m-x>", b"\x1bx"),
        ("\\x1b\\x5b", b"\x1b["),
        (":wq<enter>", b":wq\r"),
        ("<c-up>", b"\x1b[1;5A"),
        ("<c-s-f5>", b"\x1b[15;6~"),
        ("<s-tab>", b"\x1b[Z"),
        ("<f1><f12>", b"\x1bOP\x1b[24~"),
        ("<lt>b> a < b", b"<b> a < b"),
        ("<c-space><c-[>", b"\x00\x1b"),
    ],
)
def test_key_markers(keys: str, data: bytes) -> None:
    assert encode_keys(keys) == data


@pytest.mark.parametrize("keys", ["<div>", "<x>", "<up*0>", "<c-enter>", "<c-é>", "a<bogus>b"])
def test_unknown_markers_are_errors(keys: str) -> None:
    with pytest.raises(UnknownKey):
        encode_keys(keys)


@pytest.mark.slow
async def test_the_limit_holds_for_opens_of_one_round(project: Path, tmp_path: Path) -> None:
    """Twenty opens at once (one round's calls run in parallel): eight programs run (the
    user, asked to raise the limit, says no)."""
    host = PtyHost()
    ctx = make_ctx(project, tmp_path, pty=host, sandbox=None, approval=PolicyApproval(False))
    token = f"tether-pty-limit-{tmp_path.name}"
    outcomes: list[str] = []

    async def one() -> None:
        try:
            await call(open_pty, ctx, argv=[PY, "-c", "import time; time.sleep(60)", token])
            outcomes.append("opened")
        except Failed as exc:
            outcomes.append(exc.code)

    try:
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(one)
        assert sorted(outcomes) == ["PTY_LIMIT"] * 12 + ["opened"] * 8
        assert len(carrying(token)) == 8
    finally:
        await host.close_all()
    assert carrying(token) == []
