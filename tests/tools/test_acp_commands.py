"""Commands and PTYs end to end through `tether acp` (a real subprocess, every frame validated),
for a client without `terminal`: commands run locally and their cards stream the output.
Cancellation and the end of input leave no process behind (checked in the process table)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import AgentProcess, Frame, script, spawn_agent
from tests.support.processes import alive, pids, stubborn_argv
from tests.support.sandbox_world import git
from tests.support.stored import tool_results

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes"),
]
PY = sys.executable


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": arguments}}


async def serve_until(agent: AgentProcess, done: Callable[[Frame], bool]) -> Frame:
    """Read (answering the agent's requests) until a frame satisfies `done`."""
    while True:
        frame = await agent.recv(30)
        if "method" in frame and "id" in frame:
            await agent._answer(frame)
        if done(frame):
            return frame


def tool_update(call_id: str, pred: Callable[[dict[str, Any]], bool]) -> Callable[[Frame], bool]:
    def check(frame: Frame) -> bool:
        if frame.get("method") != "session/update":
            return False
        u = frame["params"]["update"]
        return u.get("toolCallId") == call_id and pred(u)

    return check


def text_of(update: dict[str, Any]) -> str:
    return "".join(c["content"].get("text", "") for c in update.get("content") or [])


def prompt_params(sid: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}


async def test_a_command_card_streams_its_output(home: Path, project: Path, tmp_path: Path) -> None:
    flag = project / "go-on"
    (project / "work.py").write_text(
        "import os, time\nprint('first', flush=True)\n"
        f"while not os.path.exists({str(flag)!r}): time.sleep(0.01)\nprint('second')\n"
    )
    argv = [PY, "work.py"]
    rounds = [[call("run_argv", "c1", argv=argv)], [{"text": "done"}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        rid = await agent.start_request("session/prompt", prompt_params(sid))
        await serve_until(agent, tool_update("c1", lambda u: "first" in text_of(u)))
        flag.write_text("")  # the card showed `first` while the program was still waiting
        resp = await agent.until_response(rid)
        assert resp["result"]["stopReason"] == "end_turn"
        updates = [u for u in agent.updates(sid) if u.get("toolCallId") == "c1"]
    start = updates[0]
    assert start["sessionUpdate"] == "tool_call"
    assert (start["title"], start["kind"], start["rawInput"]) == (
        shlex.join(argv),
        "execute",
        {"argv": argv},
    )
    [req] = [f for f in agent.frames if f.get("method") == "session/request_permission"]
    assert req["params"]["toolCall"]["toolCallId"] == "c1"  # mode ask: every command asks
    assert "python" in req["params"]["options"][1]["name"]  # "Always allow run_argv in python…"
    final = updates[-1]
    assert final["status"] == "completed"
    card = f"```\n$ {shlex.join(argv)}\nfirst\nsecond\nexit code 0\n```"
    assert text_of(final) == card + "Allowed: user (once)"
    assert tool_results(home, sid) == ["[approval] user (once)\nexit code 0\nfirst\nsecond"]


async def test_a_command_card_shows_the_command_and_its_outputs_tail(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """The card, as the client sees it: the command, the last lines it printed (the model
    reads them all), and how it ended."""
    argv = ["seq", "1", "100"]
    rounds = [[call("run_argv", "c1", argv=argv)], [{"text": "done"}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        rid = await agent.start_request("session/prompt", prompt_params(sid))
        resp = await agent.until_response(rid)
        assert resp["result"]["stopReason"] == "end_turn"
        updates = [u for u in agent.updates(sid) if u.get("toolCallId") == "c1"]
    assert updates[0]["title"] == "seq 1 100"
    final = updates[-1]
    tail = "\n".join(str(n) for n in range(81, 101))
    card = f"```\n$ seq 1 100\n[... 80 lines above ...]\n{tail}\nexit code 0\n```"
    assert final["status"] == "completed" and text_of(final) == card + "Allowed: user (once)"
    [result] = tool_results(home, sid)
    assert "\n1\n2\n" in result and result.endswith("\n100")


async def test_denylisted_commands_are_refused_without_asking(
    home: Path, project: Path, tmp_path: Path
) -> None:
    hidden = [
        ["env", "FOO=1", "sudo", "id"],
        ["nohup", "sudo", "id"],
        ["sh", "-c", "echo hi; sudo id"],
        ["ssh", "prod", "rm", "-rf", "/"],
    ]
    rounds = [
        [call("run_argv", f"c{i}", argv=argv) for i, argv in enumerate(hidden)],
        [{"text": "ok"}],
    ]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        resp = await agent.prompt(sid, "go")
        assert resp["result"]["stopReason"] == "end_turn"
        assert not [f for f in agent.frames if f.get("method") == "session/request_permission"]
        finished = [u for u in agent.updates(sid) if u.get("status") == "failed"]
    assert len(finished) == 4
    results = tool_results(home, sid)
    assert [r.split(":", 1)[0] for r in results] == ["error [DENIED]"] * 4
    assert "denylisted: sudo id (behind env)" in results[0]
    assert "denylisted: sudo id (behind nohup)" in results[1]
    assert "denylisted: sudo id (behind sh)" in results[2]
    assert "denylisted: rm -rf / on 'prod' (behind ssh prod)" in results[3]


async def test_a_grant_for_one_program_does_not_cover_another(
    home: Path, project: Path, tmp_path: Path
) -> None:
    git(project, "init", "-q")
    rounds = [
        [call("run_argv", "c1", argv=["git", "add", "README.md"])],
        [call("run_argv", "c2", argv=["git", "add", "."])],
        [call("run_argv", "c3", argv=["git", "checkout", "--", "."])],
        [call("run_argv", "c4", argv=["git", "clean", "-fdx"])],
        [{"text": "ok"}],
    ]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        agent.permission_choice = "allow_always"
        await agent.initialize()
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "go")
        assert resp["result"]["stopReason"] == "end_turn"
        asked = [
            f["params"]["toolCall"]["toolCallId"]
            for f in agent.frames
            if f.get("method") == "session/request_permission"
        ]
    # `git add .` ran on the grant for `git add`; `git checkout` and `git clean` asked again
    assert asked == ["c1", "c3", "c4"]
    [always] = [f for f in agent.frames if f.get("method") == "session/request_permission"][:1]
    names = [o["name"] for o in always["params"]["options"]]
    assert "Always allow `git add` (writing)" in names  # the command, not "run_argv in git"
    assert always["params"]["toolCall"]["kind"] == "execute"  # a single call's card has a kind
    results = tool_results(home, sid)
    assert results[1].startswith("[approval] grant (session)\n")
    assert results[2].startswith("[approval] user (always)\n")


async def test_cancel_during_a_command_leaves_nothing_running(
    home: Path, project: Path, tmp_path: Path
) -> None:
    pid_file = project / "pids"
    rounds = [[call("run_argv", "c1", argv=stubborn_argv(project, pid_file))], [{"text": "x"}]]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        rid = await agent.start_request("session/prompt", prompt_params(sid))
        await serve_until(agent, tool_update("c1", lambda u: "ready" in text_of(u)))
        running = pids(pid_file)
        assert all(alive(p) for p in running)
        await agent.notify("session/cancel", {"sessionId": sid})
        resp = await agent.until_response(rid)
        assert resp["result"] == {"stopReason": "cancelled"}
        assert not any(alive(p) for p in running)  # gone before the turn answered
        answers = [f for f in agent.frames if f.get("id") == rid and "method" not in f]
        assert len(answers) == 1
        follow_up = await agent.prompt(sid, "again")  # the session still works
        assert follow_up["result"]["stopReason"] == "end_turn"
    assert tool_results(home, sid)[0] == "error [ABORTED]: the turn was cancelled"


async def test_cancel_during_a_pty_read_leaves_nothing_running(
    home: Path, project: Path, tmp_path: Path
) -> None:
    pid_file = project / "pids"
    rounds = [
        [call("open_pty", "p1", argv=stubborn_argv(project, pid_file))],
        [call("read_pty", "p2", pty_id=1, until="ready", timeout_seconds=30)],
        [call("read_pty", "p3", pty_id=1, until="never", timeout_seconds=120)],
        [{"text": "x"}],
    ]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        rid = await agent.start_request("session/prompt", prompt_params(sid))
        await serve_until(agent, tool_update("p3", lambda u: u.get("status") == "in_progress"))
        running = pids(pid_file)
        assert all(alive(p) for p in running)
        await agent.notify("session/cancel", {"sessionId": sid})
        resp = await agent.until_response(rid)
        assert resp["result"] == {"stopReason": "cancelled"}
        assert not any(alive(p) for p in running)
    results = tool_results(home, sid)
    assert results[0].startswith("[approval] user (once)\npty 1 started: ")
    assert results[1].startswith("pty 1: running; 'ready' seen\nready")  # asks nobody


async def test_ending_the_input_kills_every_pty(home: Path, project: Path, tmp_path: Path) -> None:
    pid_file = project / "pids"
    rounds = [
        [call("open_pty", "p1", argv=stubborn_argv(project, pid_file))],
        [call("read_pty", "p2", pty_id=1, until="ready", timeout_seconds=30)],
        [{"text": "leaving it open"}],
    ]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        resp = await agent.prompt(sid, "go")
        assert resp["result"]["stopReason"] == "end_turn"
        running = pids(pid_file)
        assert all(alive(p) for p in running)
        await agent.close_input()
        await agent.drain()
        assert await agent.wait_exit(timeout=10) == 0
    assert not any(alive(p) for p in running)


async def test_closing_a_session_kills_its_ptys(home: Path, project: Path, tmp_path: Path) -> None:
    pid_file = project / "pids"
    rounds = [
        [call("open_pty", "p1", argv=stubborn_argv(project, pid_file))],
        [call("read_pty", "p2", pty_id=1, until="ready", timeout_seconds=30)],
        [{"text": "ok"}],
    ]
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        assert (await agent.prompt(sid, "go"))["result"]["stopReason"] == "end_turn"
        running = pids(pid_file)
        assert (await agent.request("session/close", {"sessionId": sid}))["result"] == {}
        assert not any(alive(p) for p in running)
