"""CodeCompanion.nvim's ACP client against the real `tether acp`, replayed frame by frame.

CodeCompanion is not on any package registry this project uses, so its calls are replayed as
its source sends them (lua/codecompanion/acp/init.lua, prompt_builder.lua, adapters/acp/*.lua,
interactions/chat/acp/fs.lua): `initialize` with the adapter's `parameters`, `authenticate` only
when `authMethods` is not empty, `session/new` with `cwd` and `mcpServers`, a prompt whose
attached file is a `resource` without `mimeType`, `fs/read_text_file` answered `""` for a missing
file, `fs/write_text_file` answered `null`, permissions picked by option kind, `session/cancel`
followed by the `cancelled` outcome, `session/list` with `cwd`, `session/set_config_option`.
The entry users copy (editors/neovim/examples/codecompanion.lua) is tested in Lua
(editors/neovim/tests/codecompanion_spec.lua); here: the README shows it verbatim.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import REPO, AgentProcess, script, spawn_agent
from tests.support.protocol_log import check_sent

FIXTURE = REPO / "editors" / "fixtures"
NEOVIM = REPO / "editors" / "neovim"

# adapters/acp/goose.lua `parameters`, which the tether entry inherits.
CC_INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
    "clientInfo": {"name": "CodeCompanion.nvim", "version": "1.0.0"},
}
FIXED = 'def greet(name):\n    return f"Hello, {name}!"\n'
FENCED_CHECK = (
    "```\n$ python3 check.py\nHello, Ada!\nexit code 0\n```"  # check.py's run, as the card shows it
)


def test_readme_shows_the_tested_entry() -> None:
    example = (NEOVIM / "examples" / "codecompanion.lua").read_text()
    setup = example[example.index('require("codecompanion").setup(') :]
    assert setup in (NEOVIM / "README.md").read_text()


class CodeCompanion:
    """CodeCompanion's answers to the agent's requests (its fs.lua and permission handler)."""

    def __init__(self, agent: AgentProcess, pick: str | None = "allow_once") -> None:
        self.agent = agent
        self.pick = pick  # the option kind the user picks; None: the user cancels
        self.session_id = ""
        self.permissions: list[dict[str, Any]] = []
        self.quirks: list[dict[str, Any]] = []  # our answers that are CodeCompanion's, not ACP's
        agent.handler = self.handle

    async def handle(self, method: str, params: Any) -> Any:
        if method == "fs/read_text_file":
            path = Path(params["path"])
            # ENOENT is answered as an empty file, "so the agent can create it".
            return {"content": path.read_text() if path.exists() else ""}
        if method == "fs/write_text_file":
            path = Path(params["path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(params["content"])
            self.quirks.append(params)
            return None  # `send_result(id, vim.NIL)`: a null result
        if method == "session/request_permission":
            self.permissions.append(params)
            if self.pick is None:
                await self.agent.notify("session/cancel", {"sessionId": self.session_id})
                return {"outcome": {"outcome": "cancelled"}}
            option = next(o for o in params["options"] if o["kind"] == self.pick)
            return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
        raise LookupError(f"CodeCompanion does not handle {method}")


async def connect(agent: AgentProcess, cwd: Path, pick: str | None = "allow_once") -> CodeCompanion:
    cc = CodeCompanion(agent, pick)
    init = await agent.request("initialize", CC_INITIALIZE)
    assert init["result"]["protocolVersion"] == CC_INITIALIZE["protocolVersion"]
    # `#auth_methods > 0` is false: CodeCompanion goes straight to the session.
    assert init["result"]["authMethods"] == []
    new = await agent.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    cc.session_id = new["result"]["sessionId"]
    return cc


def check_replay(agent: AgentProcess, cc: CodeCompanion) -> None:
    """Every frame we sent is valid ACP, except CodeCompanion's `null` write results."""
    quirk_ids = {
        f["id"]
        for f in agent.frames
        if f.get("method") == "fs/write_text_file" and f["params"] in cc.quirks
    }
    sent = [f for f in agent.sent if not ("result" in f and f.get("id") in quirk_ids)]
    assert len(agent.sent) - len(sent) == len(quirk_ids)
    check_sent(sent, agent.frames)


@pytest.mark.slow
@pytest.mark.anyio
async def test_codecompanion_turn_on_the_shared_fixture(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURE / "project", project)
    async with spawn_agent(home, "--script", str(FIXTURE / "session.json")) as agent:
        cc = await connect(agent, project)
        app = project / "app.py"
        prompt = [
            {"type": "text", "text": "fix greet"},
            # A file in the chat's context: a resource without mimeType (helpers.form_messages).
            {"type": "resource", "resource": {"uri": f"file://{app}", "text": app.read_text()}},
        ]
        resp = await agent.request("session/prompt", {"sessionId": cc.session_id, "prompt": prompt})
        assert resp["result"] == {"stopReason": "end_turn"}
        # CodeCompanion shows a request's first diff only: each file is asked on its own card,
        # its diff first (the session's approvals option is `call` for this client).
        first, second, command_card = cc.permissions
        diffs = [
            [c for c in p["toolCall"].get("content") or [] if c["type"] == "diff"]
            for p in (first, second)
        ]
        assert not first["toolCall"]["toolCallId"].startswith("round_")
        assert [d[0]["path"] for d in diffs] == [str(app), str(project / "notes.md")]
        assert command_card["toolCall"]["title"] == "python3 check.py"
        assert app.read_text() == FIXED
        assert (project / "notes.md").exists()
        # No `terminal` capability: the command ran as tether's own process, its output on
        # the card as text.
        assert not any(str(f.get("method")).startswith("terminal/") for f in agent.frames)
        [ran] = [
            u
            for u in agent.updates(cc.session_id)
            if u.get("toolCallId") == "check1" and u.get("status") == "completed"
        ]
        assert ran["content"] == [
            {"type": "content", "content": {"type": "text", "text": FENCED_CHECK}},
            {"type": "content", "content": {"type": "text", "text": "Allowed: user (once)"}},
        ]
        texts = "".join(
            u["content"]["text"]
            for u in agent.updates(cc.session_id)
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        assert texts.endswith("the change is described in notes.md.")

        # /resume lists sessions with cwd; the model picker uses session/set_config_option.
        listed = await agent.request("session/list", {"cwd": str(project)})
        assert cc.session_id in [s["sessionId"] for s in listed["result"]["sessions"]]
        chosen = await agent.request(
            "session/set_config_option",
            {"sessionId": cc.session_id, "configId": "model", "value": "demo"},
        )
        model = next(o for o in chosen["result"]["configOptions"] if o["id"] == "model")
        assert model["currentValue"] == "demo"
        mode = await agent.request(
            "session/set_mode", {"sessionId": cc.session_id, "modeId": "code"}
        )
        assert mode["result"] == {}
        check_replay(agent, cc)


@pytest.mark.slow
@pytest.mark.anyio
async def test_codecompanion_cancel_answers_the_pending_permission(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    calls = [
        {"tool_call": {"id": n, "name": "write_file", "arguments": {"path": n, "content": "x\n"}}}
        for n in ("a.txt", "b.txt")
    ]
    path = script(tmp_path / "two.json", [calls])
    async with spawn_agent(home, "--script", str(path)) as agent:
        cc = await connect(agent, project, pick=None)
        resp = await agent.prompt(cc.session_id, "write two files")
        assert resp["result"] == {"stopReason": "cancelled"}
        check_replay(agent, cc)
    assert not (project / "a.txt").exists()


@pytest.mark.slow
@pytest.mark.anyio
async def test_codecompanion_empty_read_of_a_missing_file_is_accepted(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    read = {"tool_call": {"id": "r1", "name": "read_file", "arguments": {"path": "new.txt"}}}
    path = script(tmp_path / "read.json", [[read], [{"text": "it is empty"}]])
    async with spawn_agent(home, "--script", str(path)) as agent:
        cc = await connect(agent, project)
        resp = await agent.prompt(cc.session_id, "read new.txt")
        assert resp["result"] == {"stopReason": "end_turn"}
        done = [
            u
            for u in agent.updates(cc.session_id)
            if u.get("toolCallId") == "r1" and u.get("status") == "completed"
        ]
        assert done, "the read completed with CodeCompanion's empty content"
        check_replay(agent, cc)
