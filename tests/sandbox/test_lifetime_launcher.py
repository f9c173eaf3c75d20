"""The launcher every command tether does not give to bubblewrap starts through
(tether/engine/sandbox/lifetime_exec.py, and the Landlock launcher on top of it), run as tether
runs it: it ends as its program ended, passes signals on, and when its program ends, or tether
does (SIGKILL included), nothing the program started lives on: detached (setsid, double fork),
without tether's marker, ignoring SIGTERM. Three ways: Landlock (a PID namespace, with a user
namespace when unprivileged), unconfined as this user (a PID namespace as root), unconfined as an
unprivileged user (no namespace: the launcher as subreaper). Judged by /proc."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.processes import alive, carrying, probe_argv, probe_tokens
from tests.tools.test_process_tools import make_ctx
from tests.tools.test_pty_tools import call as pty_call
from tether.engine.local import reaper
from tether.engine.local.pty_host import PtyHost
from tether.engine.sandbox.detect import LAUNCHER, detect
from tether.engine.sandbox.session_sandbox import LIFETIME, Sandbox
from tether.tools.pty import open_pty, read_pty, write_pty_keys

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="Linux processes"),
    pytest.mark.slow,
]
WAYS = ("landlock", "unconfined", "unprivileged")
NOBODY = 65534


def _launcher(way: str, where: Path, owner: str | None = None) -> list[str]:
    """The launcher's argv up to the program (`where`: a directory the program may write)."""
    if way == "landlock":
        policy = where / f"policy-{uuid.uuid4().hex}.json"
        body = {"writable": [str(where)], "tmp": str(where), "owner": owner or ""}
        policy.write_text(json.dumps(body))
        return [sys.executable, "-I", "-S", str(LAUNCHER), str(policy), "--"]
    unprivileged = way == "unprivileged" and os.geteuid() == 0
    script = _readable_copy(where) if unprivileged else LIFETIME
    head = [_python(way), "-I", "-S", str(script), *(["--owner", owner] if owner else []), "--"]
    if unprivileged:
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *head]
    return head


def _readable_copy(where: Path) -> Path:
    """The launcher where nobody can read it: a checkout in a private directory (`mktemp -d`,
    root's home) is not. It is one standalone file, run with -I -S as tether runs it."""
    copy = where / LIFETIME.name
    if not copy.exists():
        shutil.copyfile(LIFETIME, copy)
        copy.chmod(0o644)
    return copy


def _python(way: str) -> str:
    """The interpreter: nobody cannot reach this one when it lives in root's home."""
    return "/usr/bin/python3" if way == "unprivileged" and os.geteuid() == 0 else sys.executable


def _env(way: str) -> dict[str, str]:
    """Root's PATH holds directories nobody may not search."""
    unprivileged = way == "unprivileged" and os.geteuid() == 0
    return {**os.environ, "PATH": "/usr/bin:/bin"} if unprivileged else dict(os.environ)


@pytest.fixture
def where() -> Iterator[Path]:
    """A directory anyone may reach and write (the unprivileged way runs as nobody, who cannot
    enter pytest's own temporary directories)."""
    path = Path(tempfile.mkdtemp(prefix="tether-test-lifetime-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _run(argv: list[str], way: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=30, check=False, env=_env(way)
    )


@pytest.mark.parametrize("way", WAYS)
def test_it_ends_as_its_program_ended(way: str, where: Path) -> None:
    head = _launcher(way, where)
    assert _run([*head, "sh", "-c", "exit 7"], way).returncode == 7
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
        assert _run([*head, "sh", "-c", f"kill -{sig.name[3:]} $$"], way).returncode == -sig
    missing = _run([*head, "no-such-program-x"], way)
    assert missing.returncode == 127 and "no-such-program-x" in missing.stderr
    assert _run([*head, "sh", "-c", "echo out; echo err >&2"], way).stdout == "out\n"


@pytest.mark.parametrize("way", WAYS)
def test_a_signal_to_it_reaches_the_program(way: str, where: Path) -> None:
    program = [
        "sh",
        "-c",
        "trap 'echo got TERM; exit 3' TERM; echo ready; while :; do sleep 0.05; done",
    ]
    with subprocess.Popen(
        [*_launcher(way, where), *program], stdout=subprocess.PIPE, text=True
    ) as p:
        assert p.stdout is not None and p.stdout.readline() == "ready\n"
        p.send_signal(signal.SIGTERM)  # to the launcher alone
        assert p.wait(timeout=10) == 3
        assert p.stdout.read() == "got TERM\n"


@contextmanager
def _probe(way: str, where: Path, owner: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """The launcher running the probe (tests/support/processes.py), once every process it leaves
    behind runs; its tokens are the probe's with prefix `where.name`."""
    probe = probe_argv(where, where, where.name, python=_python(way))
    argv = [*_launcher(way, where, owner), *probe]
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=_env(way)) as launcher:
        try:
            deadline = time.monotonic() + 30
            tokens = probe_tokens(where.name)
            while not all((where / f"{t}.pid").exists() for t in tokens):
                assert time.monotonic() < deadline and launcher.poll() is None
                time.sleep(0.02)
            assert all(carrying(t) for t in tokens)
            yield launcher
        finally:
            launcher.kill()


def _survivors(prefix: str, timeout: float = 10) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = [p for t in probe_tokens(prefix) for p in carrying(t) if alive(p)]
        if not left or time.monotonic() > deadline:
            for pid in left:  # a failed test leaves nothing running
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return left
        time.sleep(0.02)


@pytest.mark.parametrize("way", WAYS)
def test_what_the_program_left_ends_when_it_is_stopped(way: str, where: Path) -> None:
    """SIGTERM to the launcher: the program dies of it, and whatever it left (detached, without
    the marker, ignoring SIGTERM) with it."""
    with _probe(way, where) as launcher:
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=10) == -signal.SIGTERM
    assert _survivors(where.name) == []


@pytest.mark.parametrize("way", WAYS)
def test_what_the_program_left_ends_when_tether_is_killed(way: str, where: Path) -> None:
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with _probe(way, where, f"{owner.pid}:{reaper.start_time(owner.pid)}") as launcher:
            owner.kill()  # tether, SIGKILLed: nothing of it runs to stop anything
            owner.wait()
            assert launcher.wait(timeout=10) == -signal.SIGKILL
    finally:
        owner.kill()
        owner.wait()
    assert _survivors(where.name) == []


@pytest.mark.parametrize("way", WAYS)
def test_nothing_runs_for_a_tether_that_is_gone(way: str, where: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    sentinel = where / "ran"
    done = _run([*_launcher(way, where, f"{gone.pid}:1"), "touch", str(sentinel)], way)
    assert done.returncode == 125 and "did not run" in done.stderr
    assert not sentinel.exists()


@pytest.mark.parametrize("way", ["landlock", "unconfined"])
def test_the_program_is_pid_2_of_a_namespace_with_its_own_proc(way: str, where: Path) -> None:
    """Where the kernel allows it (Landlock: always, through a user namespace if need be;
    unconfined: as root); its /proc is its namespace's (its own pid reads as itself)."""
    if way == "unconfined" and os.geteuid() != 0:
        pytest.skip("an unprivileged user's unconfined command gets no namespace (by design)")
    done = _run([*_launcher(way, where), "sh", "-c", "echo $$ $PPID; cat /proc/$$/comm"], way)
    assert done.stdout.split() == ["2", "1", "sh"], done.stderr


# tether as a subreaper (reaper.install) runs unconfined commands that ignore SIGTERM and stops
# them at their timeout; then prints the states of its children.
_ZOMBIES = """
import anyio, ctypes, json, os, sys
from pathlib import Path
from tether.engine.local.processes import run_local
from tether.engine.sandbox.detect import detect
from tether.engine.sandbox.session_sandbox import Sandbox
from tether.engine.seam import Stage
from tests.support.processes import stubborn_argv

ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER, as tether is

async def main(where):
    box = Sandbox(detect("none"), base=where)
    for i in range(4):
        argv = await box.unconfined(stubborn_argv(where, where / f"pids-{i}"), base=dict(os.environ), env={})
        await run_local([Stage(argv, where, {})], stdin=None, timeout=0.2, output_limit=100,
                        progress=None)
    box.close()
    me = os.getpid()
    kids = Path(f"/proc/{me}/task/{me}/children").read_text().split()
    print(json.dumps([Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[0]
                      for k in kids]))

anyio.run(main, Path(sys.argv[1]))
"""


def test_commands_stopped_at_their_timeout_leave_no_zombie_with_tether(where: Path) -> None:
    """Their launchers are killed after the grace; what was below them comes to tether, a
    subreaper, which reaps it (nothing else would, until tether exits)."""
    done = subprocess.run(
        [sys.executable, "-c", _ZOMBIES, str(where)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert json.loads(done.stdout) == [], done.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock", "none"])
async def test_on_a_pty_ctrl_c_reaches_the_program_and_its_end_is_said_as_it_was(
    project: Path, tmp_path: Path, mechanism: str
) -> None:
    """The launcher is in the terminal's foreground group with its program: Ctrl-C interrupts
    the program (once: the launcher passes no SIGINT on), not the launcher; exit codes and
    signal deaths read as they did before it."""
    host = PtyHost()
    ctx = make_ctx(project, tmp_path, pty=host, sandbox=Sandbox(detect(mechanism), base=tmp_path))
    try:
        code = (
            # (the handler only counts: printing from it could re-enter a print under way)
            "import signal, time\n"
            "n = seen = 0\n"
            "def on_int(*a):\n"
            "    global n; n += 1\n"
            "signal.signal(signal.SIGINT, on_int)\n"
            "print('re' + 'ady', flush=True)\n"
            "while n < 2:\n"
            "    if n != seen: seen = n; print('INT', n, flush=True)\n"
            "    time.sleep(0.05)\n"
            "raise SystemExit(5)"
        )
        await pty_call(open_pty, ctx, argv=[sys.executable, "-c", code])
        await pty_call(read_pty, ctx, pty_id=1, until="ready", timeout_seconds=30)
        await pty_call(write_pty_keys, ctx, pty_id=1, keys="<c-c>")
        once = await pty_call(read_pty, ctx, pty_id=1, until="INT 1", timeout_seconds=10)
        assert once.raw_output["matched"] and "INT 2" not in once.text, once.text
        await pty_call(write_pty_keys, ctx, pty_id=1, keys="<c-c>")
        ended = await pty_call(read_pty, ctx, pty_id=1, until="never", timeout_seconds=10)
        assert ended.text.startswith("pty 1: exited with code 5"), ended.text
        await pty_call(open_pty, ctx, argv=["sh", "-c", "echo up; kill -TERM $$"])
        killed = await pty_call(read_pty, ctx, pty_id=2, until="never", timeout_seconds=10)
        # bubblewrap says a signal death as 128 + N, as it always has; the launcher re-raises it
        said = "exited with code 143" if mechanism == "bubblewrap" else "killed by SIGTERM"
        assert killed.text.startswith(f"pty 2: {said}"), killed.text
    finally:
        await host.close_all()
