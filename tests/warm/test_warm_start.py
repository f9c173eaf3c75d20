"""Warm starts (tether/warm/) judged by their effects: the agent that answers is a worker
of the user's warm server, not the launcher's child, and it runs with the launcher's working
directory, environment and stdio; what the launcher's parent does to the launcher (signals,
SIGKILL) reaches the worker and what it ran; a server whose code changed, that idles, or whose
directory is not private does not serve."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.acp_schema import validate_agent_frame
from tests.support.harness import REPO, AgentProcess, script, spawn_agent
from tests.support.stored import tool_results
from tests.support.warm import (
    INIT,
    Warm,
    alive,
    answered_initialize,
    children,
    wait_gone,
    worker_of,
)
from tether.warm.identity import INTERPRETER_ENV

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="warm starts are Linux-only"),
    pytest.mark.slow,
]


def _lines(*frames: dict[str, object]) -> bytes:
    return b"".join(json.dumps(f).encode() + b"\n" for f in frames)


@pytest.mark.anyio
async def test_the_agent_is_a_worker_with_the_launchers_cwd_env_and_stdio(
    shared_warm: Warm, home: Path, project: Path, tmp_path: Path
) -> None:
    server = shared_warm.start(home)
    turn = tmp_path / "cwd" / "turn.json"
    turn.parent.mkdir()
    script(turn, [[{"tool_call": {"id": "r", "name": "run_argv", "arguments": {
        "argv": ["sh", "-c", "echo marker=$LC_WARM_MARKER"]}}}], [{"text": "done"}]])  # fmt: skip
    # An LC_ variable: commands see only the variables the allowlist names (env_allowlist.py).
    env = {
        **os.environ,
        "TETHER_HOME": str(home),
        **shared_warm.env,
        "LC_WARM_MARKER": "second-start",
    }
    command = [sys.executable, "-m", "tether", "acp", "--script", "turn.json"]  # relative: cwd
    proc = await anyio.open_process(command, env=env, cwd=turn.parent)
    try:
        agent = AgentProcess(proc, "ndjson")
        await agent.initialize()
        worker = worker_of(proc.pid, server)
        assert children(proc.pid) == []  # the launcher runs nothing itself
        assert os.readlink(f"/proc/{worker}/cwd") == str(turn.parent)
        sid = await agent.new_session(project)
        assert (await agent.prompt(sid, "go"))["result"] == {"stopReason": "end_turn"}
        said = json.dumps([f for f in agent.frames if f.get("method") == "session/update"])
        assert "marker=second-start" in said
    finally:
        assert proc.stdin is not None
        await proc.stdin.aclose()
        with anyio.fail_after(20):
            assert await proc.wait() == 0
        await proc.aclose()
    assert wait_gone(worker) and alive(server)


def test_a_killed_launcher_stops_its_worker_and_the_command_it_ran(
    shared_warm: Warm, home: Path, project: Path, tmp_path: Path
) -> None:
    server = shared_warm.start(home)
    with _sleeping_turn(shared_warm, home, project, tmp_path, "417.5") as proc:
        worker = worker_of(proc.pid, server)
        sleeper = _wait_for_process("417.5")
        proc.kill()  # as an editor that goes away does; stdin stays open (we hold it)
        assert wait_gone(worker) and wait_gone(sleeper)
        assert alive(server)


def test_a_worker_ending_stops_nothing_another_worker_started(
    shared_warm: Warm, home: Path, project: Path, tmp_path: Path
) -> None:
    """Each worker marks what it starts as its own (engine/local/reaper.py), as separate
    processes do: the mark is made anew in each fork, not inherited from the server."""
    shared_warm.start(home)
    with _sleeping_turn(shared_warm, home, project, tmp_path, "417.7") as proc:
        sleeper = _wait_for_process("417.7")
        answered_initialize(shared_warm.launch(home, _lines(INIT)))  # another worker ends
        assert alive(sleeper)
        proc.kill()
    assert wait_gone(sleeper)  # its own worker's end does stop it


@contextmanager
def _sleeping_turn(
    warm: Warm, home: Path, project: Path, tmp_path: Path, seconds: str
) -> Iterator[subprocess.Popen[bytes]]:
    """A warm-started agent in a turn whose command (`sleep SECONDS`, in `code` mode: it runs
    without asking) is running."""
    turn = script(tmp_path / "t.json", [[{"tool_call": {"id": "r", "name": "run_argv",
        "arguments": {"argv": ["sleep", seconds]}}}], [{"text": "done"}]])  # fmt: skip
    env = {**os.environ, "TETHER_HOME": str(home), **warm.env}
    command = [sys.executable, "-m", "tether", "acp", "--script", str(turn)]
    new = {"cwd": str(project), "mcpServers": []}
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(_lines(INIT, {"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                           "params": new}))  # fmt: skip
            proc.stdin.flush()
            sid = _answer(proc, 1)["result"]["sessionId"]
            prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
            mode = {"sessionId": sid, "modeId": "code"}
            proc.stdin.write(_lines({"jsonrpc": "2.0", "id": 2, "method": "session/set_mode",
                                     "params": mode},
                                    {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                                     "params": prompt}))  # fmt: skip
            proc.stdin.flush()
            yield proc
        finally:
            proc.kill()
            proc.wait()


ASKED = {0: "initialize", 1: "session/new", 2: "session/set_mode", 3: "session/prompt"}


def _answer(proc: subprocess.Popen[bytes], rid: int) -> dict[str, Any]:
    """The answer to request `rid`; every frame read on the way checked against the schema."""
    assert proc.stdout is not None
    for line in proc.stdout:
        frame = json.loads(line)
        answer = "method" not in frame
        validate_agent_frame(frame, method=ASKED.get(frame.get("id")) if answer else None)
        if frame.get("id") == rid and answer:
            return frame
    raise AssertionError(f"no answer to {rid}")


def _wait_for_process(word: str, timeout: float = 20) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:1] == [b"sleep"] and word.encode() in argv:
                return int(entry.name)
        time.sleep(0.05)
    raise AssertionError(f"no `sleep {word}` started")


def test_the_exit_code_and_a_signal_pass_through(shared_warm: Warm, home: Path) -> None:
    shared_warm.start(home)
    answered_initialize(shared_warm.launch(home, _lines(INIT)))
    assert shared_warm.launch(home, b"").returncode == 0  # input ended before anything came
    with shared_warm.initialized(home) as proc:
        worker = worker_of(proc.pid, shared_warm.server())
        proc.terminate()
        assert proc.wait(timeout=20) == -signal.SIGTERM  # died of the signal, as its worker did
    assert wait_gone(worker)


def test_a_server_whose_import_path_changed_retires(warm: Warm, home: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    warm.env["PYTHONPATH"] = f"{REPO}{os.pathsep}{extra}"
    server = warm.start(home)
    with warm.initialized(home) as old:
        assert old.stdin is not None
        worker = worker_of(old.pid, server)
        (extra / "new_package.py").write_text("")  # a package installed where it imports from
        answered_initialize(warm.launch(home, _lines(INIT)))  # in-process
        successor = warm.server()  # started at once: the old server left it its place
        assert successor != server and alive(server) and alive(worker)
        old.stdin.close()
        assert old.wait(timeout=20) == 0  # the old server still says its worker's exit code
    assert wait_gone(server)
    answered_initialize(warm.launch(home, _lines(INIT)))
    assert alive(successor)


def test_an_idle_server_exits_and_removes_its_socket(warm: Warm, home: Path) -> None:
    warm.env["TETHER_WARM_IDLE_SECONDS"] = "0.5"
    server = warm.start(home)
    assert wait_gone(server)
    assert list(warm.base.glob("*.sock")) == []


def test_a_directory_others_can_write_is_not_used(warm: Warm, home: Path) -> None:
    warm.base.chmod(0o777)
    answered_initialize(warm.launch(home, _lines(INIT)))
    assert list(warm.base.iterdir()) == []  # no lock taken (a launcher's first step): no server


def test_off_when_told(warm: Warm, home: Path) -> None:
    answered_initialize(warm.launch(home, _lines(INIT), TETHER_WARM="0"))
    assert list(warm.base.iterdir()) == []  # no lock taken (a launcher's first step): no server


def test_doctor_says_how_tether_starts(warm: Warm, home: Path) -> None:
    def startup(**env: str) -> dict[str, Any]:
        full = {**os.environ, "TETHER_HOME": str(home), **warm.env, **env}
        command = [sys.executable, "-m", "tether", "doctor", "--json"]
        done = subprocess.run(command, capture_output=True, env=full, cwd=REPO, timeout=60)
        return json.loads(done.stdout)["startup"]

    assert startup()["how"].startswith("warm: the next start starts a server")
    server = warm.start(home)
    assert startup() == {"how": f"warm: server {server} in {warm.base}", "warm_server_pid": server}
    assert startup(TETHER_WARM="0") == {"how": "cold: TETHER_WARM=0", "warm_server_pid": None}


# A command tether confined connects to the warm server's socket itself and asks for a worker
# running `tether config init`, which would write a file where its forged environment says.
ESCAPE = """
import os, socket, sys
sock, out = sys.argv[1], sys.argv[2]
status = open("/proc/self/status").read()
print("no_new_privs=" + status.split("NoNewPrivs:")[1].split()[0])
conn = socket.socket(socket.AF_UNIX)
conn.connect(sock)
print("connected to the warm server")
argv = [b"tether", b"config", b"init"]
path = [p.encode() for p in sys.path]
env = [b"TETHER_CONFIG=" + out.encode(), b"PATH=" + os.environ["PATH"].encode()]
state = [b"/", b"18", b"0", b"", b"C.UTF-8", b"-;-;-"]  # cwd umask nice cpus locale stdio
fields = [b"tether-warm 3", b"serve", *state, b"3", *argv, b"%d" % len(path), *path, b"0", *env]
body = b"\\0".join(fields)
fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
answer = b""
try:
    conn.sendmsg([len(body).to_bytes(4, "big") + body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    while chunk := conn.recv(64):
        answer += chunk
except OSError as exc:
    print("refused:", exc)
print("the server said:", answer)
"""


@pytest.mark.anyio
@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock"])
async def test_a_confined_command_gets_no_worker_from_the_warm_server(
    shared_warm: Warm, home: Path, project: Path, tmp_path: Path, mechanism: str
) -> None:
    shared_warm.start(home)
    [sock] = shared_warm.base.glob("*.sock")
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "escape.py").write_text(ESCAPE)
    argv = [sys.executable, "escape.py", str(sock), str(outside / "planted.toml")]
    turn = script(tmp_path / "t.json", [[{"tool_call": {"id": "r", "name": "run_argv",
        "arguments": {"argv": argv}}}], [{"text": "done"}]])  # fmt: skip
    env = {**shared_warm.env, "TETHER_SANDBOX": mechanism}
    async with spawn_agent(home, "--script", str(turn), env=env) as agent:
        agent.permission_choice = "reject_once"
        await agent.initialize(terminal=False)
        sid = await agent.new_session(project)
        resp = await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        assert resp["result"] == {}
        assert (await agent.prompt(sid, "go", timeout=60))["result"]["stopReason"] == "end_turn"
    [result] = tool_results(home, sid)
    assert "no_new_privs=1" in result, result  # it ran confined
    assert "connected to the warm server" in result and "the server said: b''" in result
    assert list(outside.iterdir()) == []
    # The same request from an unconfined process is served: the refusal above was the check.
    unconfined = await anyio.run_process(argv, cwd=project, check=False)
    assert b"exit 0" in unconfined.stdout and (outside / "planted.toml").exists()


def test_the_worker_takes_the_launchers_limits_and_umask(shared_warm: Warm, home: Path) -> None:
    import resource

    server = shared_warm.start(home)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def confine() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, hard))
        os.umask(0o027)

    with shared_warm.initialized(home, preexec_fn=confine) as proc:
        assert proc.stdin is not None
        worker = worker_of(proc.pid, server)
        limits = Path(f"/proc/{worker}/limits").read_text()
        status = Path(f"/proc/{worker}/status").read_text()
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0
    assert [line.split()[3] for line in limits.splitlines() if "open files" in line] == ["200"]
    assert "Umask:\t0027" in status


MALFORMED = [b"", b"\x00\x00\x00\x05hello", b"\x00\x00\x00\x0ftether-warm 3\x00/", b"\xff" * 4]


def test_a_malformed_request_is_dropped_and_the_server_serves_on(
    shared_warm: Warm, home: Path
) -> None:
    import socket

    server = shared_warm.start(home)
    held = len(list(Path(f"/proc/{server}/fd").iterdir()))
    [sock] = shared_warm.base.glob("*.sock")
    for body in MALFORMED:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(str(sock))
            fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
            conn.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            conn.shutdown(socket.SHUT_WR)
            assert conn.recv(64) == b"", body  # nothing forked for it
    answered_initialize(shared_warm.launch(home, _lines(INIT)))
    assert shared_warm.server() == server and alive(server)
    assert len(list(Path(f"/proc/{server}/fd").iterdir())) == held  # what it was sent: closed


def test_the_launcher_loads_nothing_heavy(shared_warm: Warm, home: Path, tmp_path: Path) -> None:
    """Handing over costs the launcher the interpreter and a few C modules (rpc/startup.py's
    lazy-import policy holds for it too): the engine is the server's. Then the launcher
    becomes a shell that waits for the exit code: nothing of Python is left in it."""
    from tether.rpc.startup import LOADED_AFTER_INITIALIZE

    shared_warm.start(home)
    record = tmp_path / "modules.json"
    code = (  # what is loaded when the launcher gives up its interpreter (execs its stand-in)
        "import json, os, sys\nexecve = os.execve\n"
        "def recording(*args):\n"
        f"    open({str(record)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
        "    execve(*args)\n"
        "os.execve = recording\nfrom tether.cli.main import main\nsys.exit(main(['acp']))\n"
    )
    full = {**os.environ, "TETHER_HOME": str(home), **shared_warm.env}
    with subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, env=full) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_lines(INIT))
        proc.stdin.flush()
        validate_agent_frame(json.loads(proc.stdout.readline()), method="initialize")
        deadline = time.monotonic() + 20
        while os.readlink(f"/proc/{proc.pid}/exe") == os.path.realpath(sys.executable):
            assert time.monotonic() < deadline, "the launcher is still a Python process"
            time.sleep(0.01)
        assert os.path.basename(os.readlink(f"/proc/{proc.pid}/exe")) in (
            "dash",
            "sh",
            "bash",
            "busybox",
        )
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0
    loaded = json.loads(record.read_text())
    assert "tether.warm.launcher" in loaded and "tether.rpc.startup" not in loaded
    assert [m for m in loaded if m.startswith(LOADED_AFTER_INITIALIZE)] == []


def test_per_process_marks_are_made_anew_in_each_fork() -> None:
    """What names a tether process to others (the reaper's mark on what it starts, the session
    lease's token) is its own in a worker, not the server's it was forked from."""
    from tether.engine.local import reaper
    from tether.engine.sessions import lease

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its marks, then leave without the parent's cleanups
        os.write(write, f"{reaper.OWNER} {lease._TOKEN}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        owner, token = f.read().split()
    os.waitpid(pid, 0)
    assert owner != reaper.OWNER and owner.startswith(f"{pid}-")
    assert token != lease._TOKEN


def test_requests_back_to_back_with_the_input_ended_at_once_are_all_answered(
    shared_warm: Warm, home: Path, project: Path
) -> None:
    """A worker reads what its launcher's client wrote before the hand-over, and answers it
    all, even when that client closed its input right after."""
    shared_warm.start(home)
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new",
           "params": {"cwd": str(project), "mcpServers": []}}  # fmt: skip
    bad = b'{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {}}\n'
    done = shared_warm.launch(home, _lines(INIT, new) + bad + b"{not json\n")
    assert done.returncode == 0, done.stderr[-2000:]
    frames = [json.loads(line) for line in done.stdout.splitlines()]
    asked = {0: "initialize", 1: "session/new", 2: "session/prompt"}
    for frame in frames:
        answer = "method" not in frame
        validate_agent_frame(frame, method=asked.get(frame.get("id")) if answer else None)
    answers = {f.get("id"): f for f in frames if "method" not in f}
    assert "result" in answers[0] and "sessionId" in answers[1]["result"]
    assert answers[2]["error"]["code"] == -32602  # the prompt's missing fields, named
    assert answers[None]["error"]["code"] == -32700  # the line that is not JSON
    kinds = [f["params"]["update"]["sessionUpdate"] for f in frames if "method" in f]
    assert "available_commands_update" in kinds


def test_no_window_s_environment_shows_in_the_server_or_another_window_s_worker(
    warm: Warm, home: Path
) -> None:
    """The server was started by a first window; a second window's worker, and the server,
    show nothing of that window in /proc/PID/environ (their environment as the kernel keeps it
    from exec), nor of the second window; the worker's own environment is the second's."""
    secret = f"first-{os.urandom(8).hex()}"
    first = {"FIRST_WINDOW_TOKEN": secret}
    answered_initialize(warm.launch(home, _lines(INIT), **first))  # starts the server, cold
    server = warm.server()
    with warm.initialized(home, SECOND_WINDOW_TOKEN="second") as proc:
        worker = worker_of(proc.pid, server)
        for pid in (server, worker):
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert secret.encode() not in environ and b"FIRST_WINDOW_TOKEN" not in environ
            assert b"SECOND_WINDOW_TOKEN" not in environ
            keys = {entry.partition(b"=")[0] for entry in environ.split(b"\0") if entry}
            assert keys <= {k.encode() for k in INTERPRETER_ENV}  # what starts the interpreter
