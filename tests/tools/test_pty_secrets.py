"""ask_into_pty through a real `tether acp`: the user's answer to a masked form field reaches a
program reading a password with `getpass`, and nowhere else (not the tool result, the store,
tether's frames or its logs); a client without forms, a declined form and a terminal that
echoes are refused before anything is typed; an answer the program prints back is hidden from
everything that PTY produces afterwards."""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.mcp.test_mcp_servers import calls, config, text
from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.lsp_client import lsp_in_process, script_file
from tests.support.providers.mock_llm_server import MockLLMServer
from tests.support.stored import tool_results
from tether.engine.local.secret_filter import MASK, SecretFilter

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminals"),
]

READS_A_PASSWORD = """\
import getpass, hashlib
pw = getpass.getpass("Password: ")
print("sha256", hashlib.sha256(pw.encode()).hexdigest(), "length", len(pw))
print("finished")
"""
FORMS = {"elicitation": {"form": {}}}


def _call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": call_id, "name": name, "arguments": arguments}}


def _rounds(*calls: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [[c] for c in calls] + [[{"text": "done"}]]


def _password_rounds(**ask: Any) -> list[list[dict[str, Any]]]:
    return _rounds(
        _call("open_pty", "p1", argv=[sys.executable, "reads_password.py"]),
        _call("read_pty", "p2", pty_id=1, until="Password: ", timeout_seconds=30),
        _call("ask_into_pty", "p3", pty_id=1, prompt="Password for the test vault", **ask),
        _call("read_pty", "p4", pty_id=1, until="finished", timeout_seconds=30),
    )


async def _turn(
    home: Path, project: Path, rounds: list[list[dict[str, Any]]], answer: Any, **caps: Any
) -> tuple[AgentProcess, str, list[dict[str, Any]]]:
    """One turn whose client answers every form with `answer`; the agent (exited, its
    stderr read), the session id and the forms it was sent."""
    (project / "reads_password.py").write_text(READS_A_PASSWORD)
    forms: list[dict[str, Any]] = []
    env = {"TETHER_LOG_LEVEL": "DEBUG"}
    turn = script(project.parent / "turn.json", rounds)
    async with spawn_agent(home, "--script", str(turn), env=env, capture_stderr=True) as agent:
        default = agent.handler

        async def handler(method: str, params: Any) -> Any:
            if method == "elicitation/create":
                forms.append(params)
                return answer
            return await default(method, params)

        agent.handler = handler
        await agent.initialize(**caps)
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "log in", timeout=60)
        assert resp["result"]["stopReason"] == "end_turn"
        await agent.close_input()
        await agent.drain()
        agent.stderr_log = await agent.stderr_text()  # type: ignore[attr-defined]
    return agent, sid, forms


def _everything_tether_kept(home: Path) -> bytes:
    """Every byte under TETHER_HOME: the store (and its journal), logs, spill files."""
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


@pytest.mark.slow
async def test_the_secret_reaches_the_program_and_nothing_else(home: Path, project: Path) -> None:
    secret = f"pw-{secrets.token_hex(8)}"
    answer = {"action": "accept", "content": {"answer": secret}}
    agent, sid, forms = await _turn(home, project, _password_rounds(), answer, **FORMS)
    [form] = forms
    assert form["toolCallId"] == "p3" and form["mode"] == "form"
    assert form["message"].startswith("Password for the test vault\n")
    field = form["requestedSchema"]["properties"]["answer"]
    assert field["type"] == "string" and field["_meta"] == {"writeOnly": True}
    assert form["requestedSchema"]["required"] == ["answer"]
    results = tool_results(home, sid)
    digest = hashlib.sha256(secret.encode()).hexdigest()
    assert f"sha256 {digest} length {len(secret)}" in results[3]  # the program got it whole
    assert results[2].startswith("The user typed their answer into pty 1 (not shown to you)")
    # Nowhere tether writes: results, the store, the frames it sent, its logs and stderr.
    assert not any(secret in r for r in results)
    assert secret.encode() not in _everything_tether_kept(home)
    assert list(home.rglob("tether.log")), "the log file was written"
    assert secret not in json.dumps(agent.frames)
    assert secret not in agent.stderr_log  # type: ignore[attr-defined]
    assert any(secret in json.dumps(f) for f in agent.sent)  # the client did send it


@pytest.mark.slow
async def test_a_client_without_forms_is_refused(home: Path, project: Path) -> None:
    rounds = _password_rounds()
    rounds[3] = [_call("read_pty", "p4", pty_id=1, timeout_seconds=0.5)]
    _, sid, forms = await _turn(home, project, rounds, None)
    assert forms == []
    results = tool_results(home, sid)
    refusal = results[2]
    assert refusal.startswith("error [ASK_UNAVAILABLE]: this editor cannot take a typed answer")
    assert "their own terminal" in refusal
    assert results[3] == "pty 1: running\n(no new output)"  # nothing was typed


@pytest.mark.slow
async def test_a_declined_form_types_nothing(home: Path, project: Path) -> None:
    rounds = _password_rounds()
    rounds[3] = [_call("read_pty", "p4", pty_id=1, timeout_seconds=0.5)]
    _, sid, forms = await _turn(home, project, rounds, {"action": "decline"}, **FORMS)
    assert len(forms) == 1
    results = tool_results(home, sid)
    assert results[2] == "The user declined to answer; nothing was typed into pty 1."
    assert results[3] == "pty 1: running\n(no new output)"


@pytest.mark.slow
async def test_a_terminal_that_echoes_gets_no_secret(home: Path, project: Path) -> None:
    rounds = _rounds(
        _call("open_pty", "p1", argv=["cat"]),
        _call("ask_into_pty", "p2", pty_id=1, prompt="Password"),
    )
    answer = {"action": "accept", "content": {"answer": "never-asked"}}
    _, sid, forms = await _turn(home, project, rounds, answer, **FORMS)
    assert forms == []  # refused before the user was asked
    refusal = tool_results(home, sid)[1]
    assert refusal.startswith("error [PTY_ECHOES]: pty 1 shows what is typed")


@pytest.mark.slow
async def test_tether_lsp_refuses_it(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LSP has no way to take a typed answer: refused, nothing typed."""
    monkeypatch.setenv("TETHER_HOME", str(home))
    (project / "reads_password.py").write_text(READS_A_PASSWORD)
    rounds = _password_rounds()
    rounds[3] = [_call("read_pty", "p4", pty_id=1, timeout_seconds=0.5)]
    async with lsp_in_process(project, script_file(tmp_path / "s.json", rounds)) as (editor, _):
        await editor.start()
        result = await editor.prompt("log in")
    results = tool_results(home, result["sessionId"])
    assert results[2].startswith("error [ASK_UNAVAILABLE]: this editor cannot take a typed")
    assert results[3] == "pty 1: running\n(no new output)"


SAYS_THE_PASSWORD = """\
import getpass, sys, termios
pw = getpass.getpass("Password: ")
print("logged in as", pw, flush=True)
half = len(pw) // 2
print("token:", pw[:half], end="", flush=True)
# The rest once a line is typed, unechoed: the secret is whole in the output, split across reads.
fd = sys.stdin.fileno()
echo = termios.tcgetattr(fd)
quiet = echo[:3] + [echo[3] & ~termios.ECHO] + echo[4:]
termios.tcsetattr(fd, termios.TCSADRAIN, quiet)
sys.stdin.readline()
termios.tcsetattr(fd, termios.TCSADRAIN, echo)
print(pw[half:], "finished", flush=True)
"""


@pytest.mark.slow
async def test_a_secret_the_program_prints_back_is_hidden_everywhere(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """The program turns echo off, reads the answer, then prints it (`echo "logged in as $pw"`),
    once whole and once split across two reads. The model's next requests, the store and the
    export never hold it."""
    secret = f"pw-{secrets.token_hex(8)}"
    (project / "says_password.py").write_text(SAYS_THE_PASSWORD)
    exported = project / "transcript.md"
    with MockLLMServer() as llm:
        llm.script(
            "/v1/chat/completions",
            calls(("p1", "open_pty", {"argv": [sys.executable, "says_password.py"]})),
            calls(("p2", "read_pty", {"pty_id": 1, "until": "Password: ", "timeout_seconds": 30})),
            calls(("p3", "ask_into_pty", {"pty_id": 1, "prompt": "Password for the vault"})),
            calls(("p4", "read_pty", {"pty_id": 1, "until": "token: ", "timeout_seconds": 30})),
            calls(("p5", "write_pty", {"pty_id": 1, "data": "\n"})),
            calls(("p6", "read_pty", {"pty_id": 1, "until": "finished", "timeout_seconds": 30})),
            text("Logged in."),
        )
        env = config(tmp_path, llm.url) | {"TETHER_LOG_LEVEL": "DEBUG"}
        async with spawn_agent(home, env=env) as agent:
            default = agent.handler

            async def handler(method: str, params: Any) -> Any:
                if method == "elicitation/create":
                    return {"action": "accept", "content": {"answer": secret}}
                return await default(method, params)

            agent.handler = handler
            await agent.initialize(**FORMS)
            sid = await agent.new_session(project)
            resp = await agent.prompt(sid, "log in", timeout=60)
            assert resp["result"]["stopReason"] == "end_turn"
            await agent.prompt(sid, f"/export {exported}")
            await agent.close_input()
            await agent.drain()
        bodies = [r.body.decode() for r in llm.posts]
    results = tool_results(home, sid)
    assert "logged in as [secret hidden]" in results[3]  # whole, in one read
    assert results[3].rstrip().endswith("token:")  # its first half is held back ...
    assert results[5].endswith("\n[secret hidden] finished")  # ... and hidden with the rest
    assert len(bodies) == 7
    assert not any(secret in b for b in bodies)  # the model never saw it, whole or in halves
    half = len(secret) // 2
    assert not any(secret[:half] in b or secret[half:] in b for b in bodies)
    kept = _everything_tether_kept(home)  # the store, its journal, the debug log
    assert list(home.rglob("tether.log"))
    assert secret.encode() not in kept and secret[:half].encode() not in kept
    assert secret not in json.dumps(agent.frames)
    text_out = exported.read_text()
    assert "Read pty 1 until 'finished'" in text_out
    assert secret not in text_out and secret[:half] not in text_out


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(max_size=20),
    after=st.text(max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=6),
)
def test_a_secret_split_anywhere_never_gets_out(before: str, after: str, cuts: list[int]) -> None:
    secret = "hunter2-swordfish"
    output = f"{before}logged in as {secret}\r\n{before}{secret}{after}"
    hidden = SecretFilter()
    hidden.add(secret)
    pieces = [output[a:b] for a, b in itertools.pairwise([0, *sorted(cuts), len(output)])]
    out = "".join(hidden.feed(p) for p in pieces) + hidden.flush()
    assert secret not in out
    assert out == output.replace(secret, MASK)  # and everything else whole, in order
