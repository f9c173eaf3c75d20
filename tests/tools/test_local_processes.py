"""Commands on this machine (the local `terminal` seam): output in arrival order and bounded,
stdin, pipelines, and nothing left running after a timeout or a cancellation."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tests.support.processes import alive, pids, stubborn_argv
from tether.engine.local.processes import BoundedOutput, LocalTerminal
from tether.engine.local.terminal_text import sanitize
from tether.engine.seam import Stage
from tether.errors import SeamError

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX process sessions"),
]
PY = sys.executable


class Seen:
    """A CommandProgress that records output and fires an event when a word shows up."""

    def __init__(self, word: str = "") -> None:
        self.text = ""
        self.word = word
        self.seen = anyio.Event()

    def output(self, text: str) -> None:
        self.text += text
        if self.word and self.word in self.text:
            self.seen.set()

    async def terminal(self, terminal_id: str) -> None:
        raise AssertionError("a local run has no client terminal")


@pytest.mark.slow
async def test_output_arrives_in_order_with_the_exit_code(project: Path) -> None:
    code = "import sys; print('out', flush=True); print('err', file=sys.stderr); sys.exit(3)"
    done = await LocalTerminal().run(
        [PY, "-c", code], cwd=project, env={}, timeout=30, output_limit=1000
    )
    assert (done.exit_code, done.output, done.truncated, done.signal) == (
        3,
        "out\nerr\n",
        False,
        None,
    )
    env = await LocalTerminal().run(
        [PY, "-c", "import os; print(os.environ['GREETING'], os.getcwd())"],
        cwd=project,
        env={"GREETING": "hi"},
        timeout=30,
        output_limit=1000,
    )
    assert env.output == f"hi {project}\n"


@pytest.mark.slow
async def test_long_output_keeps_head_and_tail(project: Path) -> None:
    done = await LocalTerminal().run(
        [PY, "-c", "print('a' * 1000 + 'b' * 1000)"],
        cwd=project,
        env={},
        timeout=30,
        output_limit=300,
    )
    assert done.omitted == 2001 - 300 and done.truncated
    head, marker, tail = done.output.split("\n", 2)
    assert head == "a" * 100
    assert marker == "[... 1,701 bytes of output omitted ...]"
    assert tail == "b" * 199 + "\n"


def test_bounded_output_counts_exactly() -> None:
    out = BoundedOutput(9)
    for chunk in (b"12", b"3456", b"789", b"abcdef"):
        out.add(chunk)
    assert (bytes(out.head), b"".join(out.tail), out.omitted) == (b"123", b"abcdef", 6)


@pytest.mark.slow
async def test_stdin_is_fed_then_closed(project: Path) -> None:
    fed = await LocalTerminal().run(
        ["cat"], cwd=project, env={}, timeout=30, output_limit=100, stdin=b"hello\n"
    )
    assert (fed.exit_code, fed.output) == (0, "hello\n")
    empty = await LocalTerminal().run(["cat"], cwd=project, env={}, timeout=30, output_limit=100)
    assert (empty.exit_code, empty.output) == (0, "")  # no input: no waiting for one


@pytest.mark.slow
async def test_pipelines(project: Path) -> None:
    term = LocalTerminal()

    def st(*argv: str, mix: bool = False) -> Stage:
        return Stage(list(argv), project, {}, mix)

    sorted_ = await term.run_pipeline(
        [st("printf", "b\\na\\nc\\n"), st("sort"), st("head", "-n", "2")],
        stdin=None,
        timeout=30,
        output_limit=100,
    )
    assert (sorted_.output, sorted_.stage_codes) == ("a\nb\n", (0, 0, 0))
    endless = await term.run_pipeline(
        [st("yes"), st("head", "-n", "2")], stdin=None, timeout=30, output_limit=100
    )
    assert (endless.exit_code, endless.output) == (0, "y\ny\n")
    assert endless.stage_codes[0] is None  # `yes` ended by SIGPIPE
    shout = "import sys; print('to err', file=sys.stderr)"
    apart = await term.run_pipeline(
        [st(PY, "-c", shout), st("tr", "a-z", "A-Z")], stdin=None, timeout=30, output_limit=100
    )
    assert apart.output == "to err\n"  # stderr skipped the pipe
    mixed = await term.run_pipeline(
        [st(PY, "-c", shout, mix=True), st("tr", "a-z", "A-Z")],
        stdin=None,
        timeout=30,
        output_limit=100,
    )
    assert mixed.output == "TO ERR\n"  # 2>&1 |
    fed = await term.run_pipeline(
        [st("cat"), st("wc", "-l")], stdin=b"1\n2\n3\n", timeout=30, output_limit=100
    )
    assert fed.output.strip() == "3"


@pytest.mark.slow
async def test_programs_that_cannot_start(project: Path) -> None:
    term = LocalTerminal()
    with pytest.raises(SeamError) as missing:
        await term.run(["no-such-program-x"], cwd=project, env={}, timeout=5, output_limit=10)
    assert missing.value.code == "COMMAND_NOT_FOUND"
    with pytest.raises(SeamError) as nodir:
        await term.run(["ls"], cwd=project / "gone", env={}, timeout=5, output_limit=10)
    assert nodir.value.code == "NOT_A_DIRECTORY"
    (project / "plain.txt").write_text("not a program")
    with pytest.raises(SeamError) as noexec:
        await term.run(["./plain.txt"], cwd=project, env={}, timeout=5, output_limit=10)
    assert noexec.value.code == "COMMAND_NOT_EXECUTABLE"
    # A pipeline whose second program is missing leaves its first one running nowhere.
    with pytest.raises(SeamError):
        await term.run_pipeline(
            [Stage(["yes"], project, {}), Stage(["no-such-program-x"], project, {})],
            stdin=None,
            timeout=5,
            output_limit=10,
        )


@pytest.mark.slow
async def test_output_streams_while_the_command_runs(project: Path) -> None:
    flag = project / "go-on"
    code = (
        "import os, time\nprint('first', flush=True)\n"
        f"while not os.path.exists({str(flag)!r}): time.sleep(0.01)\nprint('second')"
    )
    seen = Seen("first")

    async def release() -> None:
        await seen.seen.wait()  # seen while the program still waits for us
        flag.write_text("")

    async with anyio.create_task_group() as tg:
        tg.start_soon(release)
        done = await LocalTerminal().run(
            [PY, "-c", code], cwd=project, env={}, timeout=30, output_limit=100, progress=seen
        )
        assert done.output == "first\nsecond\n" and seen.text == "first\nsecond\n"


@pytest.mark.slow
async def test_a_timeout_stops_the_program_and_what_it_started(project: Path) -> None:
    pid_file = project / "pids"
    done = await LocalTerminal().run(
        stubborn_argv(project, pid_file), cwd=project, env={}, timeout=3, output_limit=100
    )
    assert done.timed_out and done.signal == "SIGKILL" and done.exit_code is None
    assert done.output == "ready\n"
    assert not any(alive(p) for p in pids(pid_file))


@pytest.mark.slow
async def test_cancellation_stops_everything_at_once(project: Path) -> None:
    pid_file = project / "pids"
    seen = Seen("ready")
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_when_ready() -> None:
                await seen.seen.wait()
                scope.cancel()

            tg.start_soon(cancel_when_ready)
            await LocalTerminal().run(
                stubborn_argv(project, pid_file),
                cwd=project,
                env={},
                timeout=60,
                output_limit=100,
                progress=seen,
            )
    assert scope.cancelled_caught
    running = pids(pid_file)
    assert len(running) == 2 and not any(alive(p) for p in running)


def test_terminal_text_is_sanitised() -> None:
    raw = "\x1b[31mred\x1b[0m\r\n50%\r100%\rdone\n\x1b]0;title\x07x\x1bc ab\bc\x1b(B\x07"
    assert sanitize(raw) == "red\ndone\nx ac"
