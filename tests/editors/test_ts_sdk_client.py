"""The official ACP TypeScript SDK (@agentclientprotocol/sdk 2.4.0, tests/support/ts/drive.mjs) drives
the real `python -m tether acp` through editor-like sessions:

- with the demo model: initialize -> session/new -> a prompt that reads README.md and proposes
  an edit needing permission (answered "allow") -> session/list -> session/close -> stdin closed;
- with a scripted model (drive.mjs's `approvals` flow): a round of two writes asked once, the
  same reviewed call by call in a form, an "always" answer kept for the project, `/grants`
  listing it, and mode allow-all asking nothing.

Every frame the agent writes is checked against the ACP schema (tests/support/acp_schema.py)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_schema import (
    validate_agent_frame,
    validate_agent_response,
    validate_client_response,
)
from tests.support.harness import script
from tests.support.stored import tool_results
from tests.support.warm import Warm

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TS_DIR = REPO / "tests" / "support" / "ts"
SDK_PACKAGE = TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"

Frame = dict[str, Any]


def _node() -> str:
    """Node runs the official TypeScript SDK. CI installs it and sets TETHER_REQUIRE_NODE=1, so
    there a missing node fails; on a developer's machine without it the test is skipped."""
    node = shutil.which("node")
    if node is None:
        reason = "node (>= 20) is not on PATH: the TypeScript SDK client test needs it"
        if os.environ.get("TETHER_REQUIRE_NODE") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return node


def _ensure_sdk_installed() -> None:
    # Held across the check and the install: the suite's workers may get here at once, and
    # `npm ci` empties node_modules before it fills it.
    with open(TS_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if SDK_PACKAGE.exists():
            return
        done = subprocess.run(
            ["sh", str(TS_DIR / "install.sh")], capture_output=True, text=True, timeout=600
        )
    assert done.returncode == 0, (
        f"tests/support/ts/install.sh failed:\n{done.stdout}\n{done.stderr}"
    )
    assert SDK_PACKAGE.exists(), (
        "tests/support/ts/install.sh did not install @agentclientprotocol/sdk"
    )


@dataclass
class Transcript:
    events: list[dict[str, Any]]
    received: list[Frame] = field(default_factory=list)  # agent -> client, in order
    sent: list[Frame] = field(default_factory=list)  # client -> agent, in order
    our_methods: dict[str, str] = field(default_factory=dict)  # our request id -> method
    agent_methods: dict[str, str] = field(default_factory=dict)  # agent request id -> method

    def __post_init__(self) -> None:
        for event in self.events:
            if event["event"] != "frame":
                continue
            frame = event["frame"]
            if event["dir"] == "recv":
                self.received.append(frame)
                if "method" in frame and "id" in frame:
                    self.agent_methods[_key(frame["id"])] = frame["method"]
            else:
                self.sent.append(frame)
                if "method" in frame and "id" in frame:
                    self.our_methods[_key(frame["id"])] = frame["method"]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind]

    def response_to(self, method: str) -> Frame:
        """The agent's response frame to our (single) request ``method``."""
        found = [
            f
            for f in self.received
            if "method" not in f and self.our_methods.get(_key(f.get("id"))) == method
        ]
        assert len(found) == 1, f"expected one response to {method}, got {found}"
        return found[0]

    def updates(self) -> list[dict[str, Any]]:
        return [f["params"] for f in self.received if f.get("method") == "session/update"]


def _key(rid: Any) -> str:
    return json.dumps(rid)


def _drive(
    project: Path, home: Path, extra: dict[str, str], *args: str, agent: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess[str], Transcript]:
    """drive.mjs with `args` (a flow) against `python -m tether acp` plus `agent` (flags)."""
    node = _node()
    _ensure_sdk_installed()
    env = {
        **os.environ,
        "TETHER_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        **extra,
    }
    command = [sys.executable, "-m", "tether", "acp", *agent]
    done = subprocess.run(
        [
            node,
            str(TS_DIR / "drive.mjs"),
            "--cwd",
            str(project),
            "--timeout",
            "120",
            *args,
            "--",
            *command,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    events: list[dict[str, Any]] = []
    for number, line in enumerate(done.stdout.splitlines(), 1):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"drive.mjs stdout line {number} is not JSON: {line!r}")
    return done, Transcript(events)


def _check_clean_run(done: subprocess.CompletedProcess[str], t: Transcript) -> None:
    """drive.mjs ran its flow through, the agent exited on its own, and every frame both ways
    is schema-valid (responses against their method's type)."""
    assert done.returncode == 0, (
        f"drive.mjs exited {done.returncode}\n--- stderr (tail) ---\n{done.stderr[-6000:]}"
        f"\n--- failures ---\n{[e.get('failures') for e in t.of('done')]}"
    )
    assert t.of("done") == [{"event": "done", "ok": True, "failures": []}]
    assert not t.of("invalid_line"), t.of("invalid_line")
    assert not t.of("sdk_rejected"), t.of("sdk_rejected")
    assert t.of("agent_exit") == [
        {"event": "agent_exit", "code": 0, "signal": None, "forced": False}
    ]
    assert t.received, "the agent wrote nothing"
    for frame in t.received:
        method = None if "method" in frame else t.our_methods.get(_key(frame.get("id")))
        validate_agent_frame(frame, method=method)
    # ... and so is every answer the SDK gave to the agent's requests (our side of the test).
    for frame in t.sent:
        if "method" not in frame and "result" in frame:
            validate_client_response(t.agent_methods[_key(frame["id"])], frame)


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_typescript_sdk_drives_a_prompt_with_a_permission_and_an_edit(
    project: Path, home: Path, start: str, request: pytest.FixtureRequest
) -> None:
    """`warm`: the agent is a worker of a warm server (tests/warm/test_warm_start.py); the process
    the SDK spawned and sees exit is its stand-in."""
    readme = project / "README.md"
    original = readme.read_text()
    extra = {"TETHER_WARM": "0"}
    server = 0
    if start == "warm":
        warm: Warm = request.getfixturevalue("shared_warm")
        server = warm.start(home)
        extra = warm.env
    done, t = _drive(project, home, extra)
    if start == "warm":  # the agent that served the SDK was the server's worker
        log = (home / "logs" / "tether.log").read_text()
        assert log.count(f"parent process {server}\n") == 1, log
    _check_clean_run(done, t)

    init = t.response_to("initialize")
    validate_agent_response("initialize", init)
    assert init["result"]["protocolVersion"] == 1
    session_caps = init["result"].get("agentCapabilities", {}).get("sessionCapabilities", {})
    assert session_caps.get("list") is not None and session_caps.get("close") is not None

    created = t.response_to("session/new")
    validate_agent_response("session/new", created)
    session_id = created["result"]["sessionId"]

    prompt = t.response_to("session/prompt")
    validate_agent_response("session/prompt", prompt)
    assert prompt["result"]["stopReason"] == "end_turn"

    listed = t.response_to("session/list")
    validate_agent_response("session/list", listed)
    assert session_id in [s["sessionId"] for s in listed["result"]["sessions"]]
    validate_agent_response("session/close", t.response_to("session/close"))

    # Session updates: all for our session, the expected kinds, tool calls announced first.
    updates = t.updates()
    assert {u["sessionId"] for u in updates} == {session_id}
    kinds = [u["update"]["sessionUpdate"] for u in updates]
    for kind in ("agent_message_chunk", "tool_call", "tool_call_update"):
        assert kind in kinds, f"no {kind} among {kinds}"
    announced: set[str] = set()
    for update in (u["update"] for u in updates):
        if update["sessionUpdate"] == "tool_call":
            announced.add(update["toolCallId"])
        elif update["sessionUpdate"] == "tool_call_update":
            assert update["toolCallId"] in announced, f"update of an unannounced call: {update}"

    # available_commands_update goes out after the session/new response, never before.
    positions = {id(f): i for i, f in enumerate(t.received)}
    commands = [
        positions[id(f)]
        for f in t.received
        if f.get("method") == "session/update"
        and f["params"]["update"]["sessionUpdate"] == "available_commands_update"
    ]
    assert all(i > positions[id(created)] for i in commands)

    # The permission request: on an announced call's card, answered with an "allow" option.
    asked = [f for f in t.received if f.get("method") == "session/request_permission"]
    assert asked, "the agent never asked for permission"
    for ask in asked:
        assert ask["params"]["sessionId"] == session_id
        card = ask["params"]["toolCall"]
        # either an announced call's card, or a new card the client can render on its own
        assert card["toolCallId"] in announced or card.get("title"), f"no card: {ask}"
        answers = [f for f in t.sent if "method" not in f and f.get("id") == ask["id"]]
        assert len(answers) == 1, f"permission request {ask['id']} answered {answers}"
        chosen = answers[0]["result"]["outcome"]
        assert chosen["outcome"] == "selected"
        kinds_by_id = {o["optionId"]: o["kind"] for o in ask["params"]["options"]}
        assert kinds_by_id[chosen["optionId"]].startswith("allow")

    # The allowed edit went through the client's fs/write_text_file and matches its diff.
    writes = [e for e in t.of("request") if e["method"] == "fs/write_text_file"]
    assert writes, "the allowed edit was not written through the client's fs/write_text_file"
    assert {Path(w["params"]["path"]).resolve() for w in writes} == {readme.resolve()}
    assert not any(e.get("outsideCwd") for e in t.of("request"))
    assert not any(e.get("unexpected") for e in t.of("request"))
    assert readme.read_text() == writes[-1]["params"]["content"] != original
    diffs = [
        c
        for u in updates
        if u["update"]["sessionUpdate"] in ("tool_call", "tool_call_update")
        for c in u["update"].get("content") or []
        if c["type"] == "diff" and Path(c["path"]).resolve() == readme.resolve()
    ]
    assert diffs, "no diff for README.md was shown"
    assert diffs[-1]["newText"] == readme.read_text()


def _write(call_id: str, name: str) -> dict[str, Any]:
    arguments = {"path": name, "content": f"{name}\n"}
    return {"tool_call": {"id": call_id, "name": "write_file", "arguments": arguments}}


def _steps(t: Transcript) -> dict[str, list[dict[str, Any]]]:
    """drive.mjs's events per step of its flow (a `flow` event opens each step)."""
    steps: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] = []
    for event in t.events:
        if event["event"] == "flow":
            current = steps.setdefault(event["step"], [])
        else:
            current.append(event)
    return steps


def _said(events: list[dict[str, Any]]) -> str:
    return "".join(
        e["frame"]["params"]["update"]["content"]["text"]
        for e in events
        if e["event"] == "frame"
        and e["frame"].get("method") == "session/update"
        and e["frame"]["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def _asked(events: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "request" and e["method"] == method]


def test_typescript_sdk_drives_round_and_per_call_review_grants_and_allow_all(
    project: Path, home: Path, tmp_path: Path
) -> None:
    ok = [{"text": "ok"}]
    rounds = [
        [_write("w_a", "a.txt"), _write("w_b", "b.txt")],
        ok,
        [_write("w_c", "c.txt"), _write("w_d", "d.txt")],
        ok,
        [_write("w_e", "e.txt")],
        ok,
        [_write("w_f", "f.txt")],
        ok,
    ]
    path = script(tmp_path / "s.json", rounds)
    done, t = _drive(
        project, home, {"TETHER_WARM": "0"}, "--flow", "approvals", agent=("--script", str(path))
    )
    _check_clean_run(done, t)
    steps = _steps(t)
    assert list(steps) == ["round", "per-call", "project-grant", "grants", "allow-all"]

    # The round of two writes: one permission request, on a card naming both, each kind once
    # ("Review one by one" is reject_always: it allows nothing by itself).
    [round_ask] = _asked(steps["round"], "session/request_permission")
    assert round_ask["params"]["toolCall"]["title"] == "Edit a.txt, b.txt"
    kinds = [o["kind"] for o in round_ask["params"]["options"]]
    assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert round_ask["chosenKind"] == "allow_once"

    # approvals=call: the next round is one form, a box per call; only c.txt's was checked.
    assert not _asked(steps["per-call"], "session/request_permission")
    [form] = _asked(steps["per-call"], "elicitation/create")
    boxes = form["params"]["requestedSchema"]["properties"]
    checked = {boxes[k]["title"]: v for k, v in form["response"]["content"].items()}
    assert len(checked) == 2 and sorted(checked.values()) == [False, True]
    assert next(title for title, v in checked.items() if v).endswith("c.txt")

    # always=project: the "always" option says so, and the grant is the project's.
    [grant_ask] = _asked(steps["project-grant"], "session/request_permission")
    chosen = next(o for o in grant_ask["params"]["options"] if o["kind"] == "allow_always")
    assert grant_ask["chosenKind"] == "allow_always"
    assert chosen["name"].endswith(" in this project")
    listed = _said(steps["grants"])
    assert "1. always allow: " in listed and "(this project)" in listed, listed

    # allow-all asked nothing, and says why on the call's result the model read.
    assert not _asked(steps["allow-all"], "session/request_permission")
    assert not _asked(steps["allow-all"], "elicitation/create")
    sid = t.response_to("session/new")["result"]["sessionId"]
    results = tool_results(home, sid)
    assert results[-1].startswith("[approval] mode (allow-all)"), results

    # Judged by the files: what was allowed was written, the unchecked call was not.
    for name in ("a.txt", "b.txt", "c.txt", "e.txt", "f.txt"):
        assert (project / name).read_text() == f"{name}\n"
    assert not (project / "d.txt").exists()
