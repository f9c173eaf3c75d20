"""Zed against the real `tether acp`: the settings entry and registry manifest in editors/zed, and
a replay of the message sequence Zed sends, with Zed's exact `initialize` capabilities, its
session setup, a prompt with an embedded file, answers served the way Zed serves them (reads from
unsaved buffers, writes applied to the buffer and saved, permission options as buttons,
commands run in a Zed terminal: a real shell in a pseudo-terminal, tests/support/zed_terminal.py),
cancel, the thread history and closing the thread.

Every frame tether writes is schema-checked by the harness; every frame this replay sends is
checked too (`check_sent`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft7Validator

from tests.support.harness import REPO, AgentProcess, script, spawn_agent
from tests.support.protocol_log import check_sent
from tests.support.zed_terminal import ZedTerminal, zed_argv
from tether import __version__

ZED = REPO / "editors" / "zed"
FIXTURE = REPO / "editors" / "fixtures"
REGISTRY_SCHEMA = REPO / "tests" / "fixtures" / "acp-registry" / "agent.schema.json"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

# crates/agent_servers/src/acp.rs, client_capabilities_for_agent(), serialized.
ZED_CAPABILITIES = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "auth": {"terminal": True},
    "session": {"configOptions": {"boolean": {}}},
    "elicitation": {"form": {}, "url": {}},
    "_meta": {"terminal_output": True, "terminal-auth": True},
}
ZED_INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": ZED_CAPABILITIES,
    "clientInfo": {"name": "zed", "title": "Zed", "version": "0.224.0"},
}
UNSAVED = 'def greet(name):\n    return "hello " + name  # edited in Zed, not saved\n'
FIXED = 'def greet(name):\n    return f"Hello, {name}!"\n'


def strip_jsonc(text: str) -> str:
    """JSON with // comments (Zed's settings format) as plain JSON."""
    out, in_string, i = [], False, 0
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            if i == -1:
                break
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


# --- the files users copy ------------------------------------------------------------------


def test_settings_entry_is_a_custom_agent_server() -> None:
    settings = json.loads(strip_jsonc((ZED / "settings.example.jsonc").read_text()))
    [(name, entry)] = settings["agent_servers"].items()
    assert entry["type"] == "custom"
    assert Path(entry["command"]).name in PYPROJECT["scripts"]
    assert Path(entry["command"]).is_absolute()  # a GUI-started Zed has no shell PATH
    assert entry["args"] == ["acp"]
    assert set(entry["env"]) >= {"TETHER_MODEL", "ANTHROPIC_API_KEY"}
    assert all(isinstance(v, str) for v in entry["env"].values())
    keymap = json.loads((ZED / "keymap.example.json").read_text())
    action, args = keymap[0]["bindings"]["ctrl-alt-t"]
    assert action == "agent::NewExternalAgentThread"
    assert args == {"agent": {"custom": {"name": name}}}


def test_registry_manifest_runs_this_package_with_uvx() -> None:
    manifest = json.loads((ZED / "registry" / "agent.json").read_text())
    assert re.fullmatch(r"[a-z][a-z0-9-]*", manifest["id"])
    assert manifest["version"] == __version__
    assert manifest["name"] and manifest["description"]
    assert manifest["license"] == PYPROJECT["license"]
    # The registry's own agent.schema.json (vendored with its licence), strictly: it allows
    # no `cmd` in a uvx distribution, for one.
    schema = json.loads(REGISTRY_SCHEMA.read_text())
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    assert [e.message for e in validator.iter_errors(manifest)] == []
    assert not validator.is_valid(
        {**manifest, "distribution": {"uvx": {"package": "x", "cmd": "y"}}}
    )
    uvx = manifest["distribution"]["uvx"]
    # `uvx tether-acp==X acp` runs the package's own command: it must be there.
    assert uvx["package"] == f"{PYPROJECT['name']}=={__version__}"
    assert PYPROJECT["scripts"][PYPROJECT["name"]] == PYPROJECT["scripts"]["tether"]
    assert uvx["args"] == ["acp"]
    icon = (ZED / "registry" / "icon.svg").read_text()
    assert 'width="16"' in icon and 'height="16"' in icon


@pytest.mark.slow
def test_the_command_the_entries_name_answers_initialize() -> None:
    """`tether acp` (run as `python -m tether acp`, the console script's target) answers Zed."""
    request = json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": ZED_INITIALIZE}
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tether", "acp"],
        input=request + "\n",
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
    )
    first = json.loads(proc.stdout.splitlines()[0])
    assert first["result"]["protocolVersion"] == 1
    assert first["result"]["authMethods"] == []
    assert proc.returncode == 0


# --- a Zed-shaped client ------------------------------------------------------------------


class ZedEditor:
    """What Zed does with the agent's requests, for a project worktree: reads come from open
    buffers (unsaved text included), writes go into the buffer and are saved, paths outside the
    worktree are `resource_not_found`, commands run in Zed terminals (tests/support/zed_terminal.py),
    permission options are buttons (`click` picks one; None leaves the card waiting until the
    user stops the turn)."""

    def __init__(self, agent: AgentProcess, worktree: Path) -> None:
        self.agent = agent
        self.worktree = worktree
        self.buffers: dict[Path, str] = {}
        self.click: str | None = "allow_once"
        self.asked: list[dict[str, Any]] = []
        self.terminals: dict[str, ZedTerminal] = {}  # created and not released
        self.released: dict[str, ZedTerminal] = {}  # still shown on their tool cards
        self.session_id = ""
        agent.handler = self.handle

    def _path(self, params: dict[str, Any]) -> Path:
        path = Path(params["path"])
        if not path.is_relative_to(self.worktree):
            raise LookupError(f"{path} is not in the project")
        return path

    async def handle(self, method: str, params: Any) -> Any:
        if method == "fs/read_text_file":
            path = self._path(params)
            if path not in self.buffers:
                if not path.exists():
                    raise LookupError(f"no file {path}")
                self.buffers[path] = path.read_text()
            lines = self.buffers[path].splitlines(keepends=True)
            start = (params.get("line") or 1) - 1
            limit = params.get("limit")
            return {"content": "".join(lines[start : None if limit is None else start + limit])}
        if method == "fs/write_text_file":
            path = self._path(params)
            self.buffers[path] = params["content"]
            path.write_text(params["content"])  # Zed saves after applying the edit
            return {}
        if method == "session/request_permission":
            self.asked.append(params)
            if self.click is None:  # the user presses stop instead of a button
                await self.agent.notify("session/cancel", {"sessionId": self.session_id})
                return {"outcome": {"outcome": "cancelled"}}
            option = next(o for o in params["options"] if o["kind"] == self.click)
            return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
        if method.startswith("terminal/"):
            return await self._terminal(method.removeprefix("terminal/"), params)
        raise LookupError(f"Zed has no handler for {method}")

    async def _terminal(self, op: str, params: dict[str, Any]) -> Any:
        if op == "create":
            terminal = ZedTerminal(params, self.worktree)
            self.terminals[terminal.id] = terminal
            return {"terminalId": terminal.id}
        terminal = self.terminals.get(params["terminalId"])
        if terminal is None:
            raise LookupError(f"unknown terminal {params['terminalId']}")
        if op == "wait_for_exit":
            return await terminal.wait_for_exit()
        if op == "output":
            return terminal.output()
        terminal.kill()  # kill, or release of a command still running
        if op == "release":
            self.released[terminal.id] = self.terminals.pop(terminal.id)
            await terminal.wait_for_exit()
        return {}


def _write(name: str) -> dict[str, Any]:
    return {
        "tool_call": {
            "id": name,
            "name": "write_file",
            "arguments": {"path": name, "content": "x\n"},
        }
    }


async def zed_session(agent: AgentProcess, project: Path) -> tuple[ZedEditor, str, dict[str, Any]]:
    """initialize + session/new the way Zed does them; returns the editor, session id and the
    session/new result."""
    zed = ZedEditor(agent, project)
    init = await agent.request("initialize", ZED_INITIALIZE)
    assert init["result"]["protocolVersion"] == 1
    assert init["result"]["authMethods"] == []  # no login screen
    mcp = [{"name": "filesystem", "command": "/usr/bin/env", "args": ["true"], "env": []}]
    rid = await agent.start_request("session/new", {"cwd": str(project), "mcpServers": mcp})
    resp = await agent.until_response(rid)
    sid = resp["result"]["sessionId"]
    zed.session_id = sid
    # Zed drops a session/update that arrives before the session/new response (#60199).
    answered_at = agent.frames.index(resp)
    early = [
        f
        for f in agent.frames[:answered_at]
        if f.get("method") == "session/update" and f["params"]["sessionId"] == sid
    ]
    assert early == []
    return zed, sid, resp["result"]


def check_command_in_a_zed_terminal(
    agent: AgentProcess, zed: ZedEditor, sid: str, card: dict[str, Any], project: Path
) -> None:
    """The fixture's `python3 check.py`: asked for (running a script always asks), run in a Zed
    terminal that the tool card embeds before it is released, the fixed greet() in its output."""
    tool_call = card["toolCall"]
    assert (tool_call["toolCallId"], tool_call["title"], tool_call["kind"]) == (
        "check1",
        "python3 check.py",
        "execute",
    )
    announced = next(
        u
        for u in agent.updates(sid)
        if u.get("toolCallId") == "check1" and u["sessionUpdate"] == "tool_call"
    )
    assert announced["kind"] == "execute"
    [note] = announced["content"]
    assert note["content"]["text"].startswith(
        "⚠ python3 runs the script check.py\nruns in the sandbox"
    )
    [create] = [dict(f["params"]) for f in agent.frames if f.get("method") == "terminal/create"]
    assert create.pop("outputByteLimit") > 0
    # Zed joins command and args through a shell: tether sends the argv as one quoted line,
    # after the sandbox's one-use launcher named by a variable (so the user reads the command);
    # the environment is the command environment (with tether's process marker), every other
    # variable of tether's own emptied, and the launcher.
    assert create.pop("command") == '"$TETHER_SANDBOXED" python3 check.py'
    sent = {e["name"]: e["value"] for e in create.pop("env")}
    assert sent["TETHER_OWNER"] and sent["PATH"] and sent["TETHER_HOME"] == ""
    assert re.fullmatch(r"/\S+/run/sandboxed-\d+", sent["TETHER_SANDBOXED"])
    assert create == {"sessionId": sid, "args": [], "cwd": str(project)}
    [(tid, terminal)] = zed.released.items()
    assert zed.terminals == {}  # every terminal the agent created was released
    assert terminal.label == '"$TETHER_SANDBOXED" python3 check.py'  # the card's header
    assert terminal.text == "Hello, Ada!\n"  # check.py ran after app.py was fixed
    assert terminal.exit_status() == {"exitCode": 0}

    calls = [
        (f["method"], f["params"].get("terminalId"))
        for f in agent.frames
        if "id" in f and str(f.get("method")).startswith("terminal/")
    ]
    assert calls == [
        ("terminal/create", None),
        ("terminal/wait_for_exit", tid),
        ("terminal/output", tid),
        ("terminal/release", tid),
    ]
    embedded = [
        i
        for i, f in enumerate(agent.frames)
        if f.get("method") == "session/update"
        and f["params"]["update"].get("toolCallId") == "check1"
        and {"type": "terminal", "terminalId": tid} in f["params"]["update"].get("content", [])
    ]
    waited = next(
        i for i, f in enumerate(agent.frames) if f.get("method") == "terminal/wait_for_exit"
    )
    assert embedded and embedded[0] < waited  # the card shows the terminal while it runs
    done = agent.frames[embedded[-1]]["params"]["update"]
    assert done["status"] == "completed"
    assert done["content"] == [
        {"type": "terminal", "terminalId": tid},  # Zed shows its exit status: no line for it
        {"type": "content", "content": {"type": "text", "text": "Allowed: user (once)"}},
    ]
    assert done["rawOutput"]["exitCode"] == 0


@pytest.mark.slow
@pytest.mark.anyio
async def test_zed_turn_on_the_shared_fixture(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURE / "project", project)
    async with spawn_agent(home, "--script", str(FIXTURE / "session.json")) as agent:
        zed, sid, new = await zed_session(agent, project)
        # Zed shows config options (and then ignores `modes`): a Mode and a Model picker.
        categories = {o.get("category"): o for o in new["configOptions"]}
        assert {"mode", "model"} <= set(categories)
        # Defaults from settings (default_config_options) are pushed right after creation.
        pushed = await agent.request(
            "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "ask"}
        )
        assert pushed["result"]["configOptions"]
        # The user edits app.py without saving, then mentions it in the prompt.
        app = project / "app.py"
        zed.buffers[app] = UNSAVED
        prompt = [
            {"type": "text", "text": "fix greet"},
            {
                "type": "resource",
                "resource": {"uri": app.as_uri(), "mimeType": "text/x-python", "text": UNSAVED},
            },
        ]
        resp = await agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
        assert resp["result"] == {"stopReason": "end_turn"}

        updates = agent.updates(sid)
        kinds = [u["sessionUpdate"] for u in updates]
        for kind in ("agent_thought_chunk", "agent_message_chunk", "plan", "tool_call"):
            assert kind in kinds
        plan = next(u for u in updates if u["sessionUpdate"] == "plan")
        assert [e["content"] for e in plan["entries"]] == [
            "Fix greet() punctuation",
            "Write notes.md",
            "Run check.py",
        ]
        edit = next(
            u
            for u in updates
            if u.get("toolCallId") == "edit1" and u["sessionUpdate"] == "tool_call"
        )
        # The diff's old side is the unsaved buffer: tether read it through fs/read_text_file.
        assert edit["content"][0] == {
            "type": "diff",
            "path": str(app),
            "oldText": UNSAVED,
            "newText": FIXED,
        }
        assert edit["locations"] == [{"path": str(app)}]

        round_card, command_card = zed.asked
        assert round_card["toolCall"]["toolCallId"].startswith("round_")
        kinds = sorted(c["type"] for c in round_card["toolCall"]["content"])
        assert kinds == ["content", "diff", "diff"]
        for option in round_card["options"] + command_card["options"]:  # buttons
            assert option["name"]
            assert option["kind"] in {"allow_once", "allow_always", "reject_once", "reject_always"}
        assert app.read_text() == FIXED and zed.buffers[app] == FIXED
        assert (project / "notes.md").read_text() == "# Notes\n\ngreet() now says Hello, NAME!\n"
        check_command_in_a_zed_terminal(agent, zed, sid, command_card, project)

        # The thread history (sessionCapabilities.list) shows it by title; closing the thread.
        listed = await agent.request("session/list", {"cwd": str(project)})
        titles = {s["sessionId"]: s.get("title") for s in listed["result"]["sessions"]}
        assert titles[sid] == "fix greet"
        closed = await agent.request("session/close", {"sessionId": sid})
        assert closed["result"] == {}
        check_sent(agent.sent, agent.frames)


@pytest.mark.slow
@pytest.mark.anyio
async def test_zed_stop_while_the_approval_card_waits(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    path = script(tmp_path / "two.json", [[_write("a.txt"), _write("b.txt")]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        zed, sid, _ = await zed_session(agent, project)
        zed.click = None
        resp = await agent.prompt(sid, "write two files")
        assert resp["result"] == {"stopReason": "cancelled"}
        assert len(zed.asked) == 1
        check_sent(agent.sent, agent.frames)
    assert not (project / "a.txt").exists() and not (project / "b.txt").exists()


@pytest.mark.slow
@pytest.mark.anyio
async def test_zed_missing_file_is_resource_not_found_and_the_turn_goes_on(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    call = {"tool_call": {"id": "r1", "name": "read_file", "arguments": {"path": "missing.txt"}}}
    path = script(tmp_path / "read.json", [[call], [{"text": "no such file"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        _, sid, _ = await zed_session(agent, project)
        resp = await agent.prompt(sid, "read it")
        assert resp["result"] == {"stopReason": "end_turn"}
        failed = [
            u
            for u in agent.updates(sid)
            if u.get("toolCallId") == "r1" and u.get("status") == "failed"
        ]
        assert failed, "the read failed as a tool result, not as a crash"


@pytest.mark.slow
@pytest.mark.anyio
async def test_zed_runs_the_argv_exactly_nothing_expanded(home: Path, tmp_path: Path) -> None:
    """Zed hands `command` + `args` to `/bin/sh -c` joined by spaces: unquoted, `$(...)` would
    run and an argument with a space would split. tether quotes the argv for Zed."""
    project = tmp_path / "project"
    project.mkdir()
    calls = [
        {"tool_call": {"id": "e1", "name": "run_argv", "arguments": {"argv": argv}}}
        for argv in (["echo", "$(touch pwned)"], ["printf", "%s|", "two words", "a;b"])
    ]
    path = script(tmp_path / "quote.json", [calls[:1], calls[1:], [{"text": "done"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        zed, sid, _ = await zed_session(agent, project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        agent.handler = zed.handle
        resp = await agent.prompt(sid, "echo things")
        assert resp["result"] == {"stopReason": "end_turn"}
    texts = sorted(t.text for t in zed.released.values())
    assert texts == ["$(touch pwned)\n", "two words|a;b|"]
    assert not (project / "pwned").exists()


def _plant(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("mechanism", ["bubblewrap", "landlock"])
async def test_zed_shows_the_command_and_runs_it_confined(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mechanism: str
) -> None:
    """In a project with a virtual environment, which Zed activates before the agent's command
    line (the venv's `bin` first on PATH, a folder a confined command may write), a `touch`
    planted there, a program named like a shell builtin (`kill`) and a script named by its
    path all run in the sandbox, and Zed's card shows each command as the model wrote it."""
    monkeypatch.setenv("TETHER_SANDBOX", mechanism)
    project, outside = tmp_path / "project", tmp_path / "outside"
    venv_bin = project / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    outside.mkdir()
    (venv_bin / "activate").write_text(
        f'VIRTUAL_ENV={venv_bin.parent}\nPATH="$VIRTUAL_ENV/bin:$PATH"\nexport VIRTUAL_ENV PATH\n'
    )
    _plant(venv_bin / "touch", 'echo planted touch ran\nexec /usr/bin/touch "$@"')
    _plant(project / "mk.sh", 'exec /usr/bin/touch "$1"')
    # The replay activates it as Zed does: a bare `touch` on this line finds the planted one,
    # outside any sandbox (what naming the program alone on Zed's line would run).
    line = zed_argv("touch", [str(outside / "bare")], project)
    with anyio.fail_after(30):
        await anyio.run_process(line, cwd=project)
    assert (outside / "bare").exists()
    (outside / "bare").unlink()

    argvs = [
        ["touch", str(outside / "a")],
        ["kill", "-0", str(os.getpid())],
        ["./mk.sh", str(outside / "b")],
    ]
    rounds = [
        [{"tool_call": {"id": f"c{i}", "name": "run_argv", "arguments": {"argv": a}}}]
        for i, a in enumerate(argvs)
    ]
    path = script(tmp_path / "confined.json", [*rounds, [{"text": "done"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        zed, sid, _ = await zed_session(agent, project)
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        resp = await agent.prompt(sid, "try these")
        assert resp["result"] == {"stopReason": "end_turn"}
        check_sent(agent.sent, agent.frames)
    assert list(outside.iterdir()) == []
    touched, killed, scripted = zed.released.values()
    assert [t.label for t in (touched, killed, scripted)] == [
        f'"$TETHER_SANDBOXED" {shlex.join(a)}' for a in argvs
    ]
    assert "planted touch ran" in touched.text and touched.exit_status()["exitCode"] != 0
    assert (
        killed.exit_status()["exitCode"] != 0
    )  # not the shell's kill: this process is out of reach
    assert scripted.exit_status()["exitCode"] != 0
