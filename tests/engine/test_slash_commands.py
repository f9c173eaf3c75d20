"""The engine's slash commands, the same in every front: each typed as an ACP prompt (real
frames, each validated) and through `tether lsp` (`tether.prompt` and `tether.NAME`), its reply
checked as the client sees it and again in the session's replay (`session/load`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.inprocess import Client, agent_in_memory
from tests.support.lsp_client import lsp_in_process, script_file
from tests.support.stored import stored_messages
from tether.engine.history import TextPart, UserMessage
from tether.engine.slash.context_commands import INIT_PROMPT
from tether.tools import catalog

pytestmark = pytest.mark.anyio

Rounds = list[dict[str, Any]]


def _call(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": arguments}}


def _said(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


async def _replayed(home: Path, project: Path, sid: str) -> str:
    async with agent_in_memory(home, {"rounds": []}, catalog()) as again:
        return _said(await again.load(sid, project))


async def _each(client: Client, sid: str, *prompts: str) -> list[str]:
    """What the client was shown in answer to each prompt."""
    shown: list[str] = []
    for text in prompts:
        before = len(client.updates)
        await client.prompt(sid, text)
        shown.append(_said(client.updates[before:]))
    return shown


SIMPLE = [
    ("/help", "Commands:\n- /mode <ask | code | read-only | allow-all>: Switch mode"),
    ("/status", "- Model: **scripted**"),
    ("/grants", "No grants: every call that needs approval asks."),
    ("/grants revoke 9", "Say which: `/grants revoke N` (1 to 0) or `/grants revoke all`."),
    ("/clear", "Context cleared: the model starts afresh (0 earlier messages"),
    ("/mode code", "Mode is now **code**"),
    ("/model", "Model is **scripted**"),
    ("/title Renamed", "Session renamed: **Renamed**."),
    ("/undo", "Nothing to undo: no earlier turn of this session changed files."),
    ("/compact", "Nothing to compact yet"),
    ("/retry", "Nothing to retry: the last turn finished."),
    ("/btw", "Ask a side question with `/btw QUESTION`."),
    ("/export /nonexistent/dir/t.md", "Not exported: "),
    ("/init", "Written."),
    ("/todos", "Todo stack: empty."),
]


@pytest.mark.slow
@pytest.mark.parametrize(("prompt", "reply"), SIMPLE, ids=[p.split()[0] for p, _ in SIMPLE])
async def test_each_command_over_acp(home: Path, project: Path, prompt: str, reply: str) -> None:
    rounds = [{"events": [{"text": "Written."}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        [shown] = await _each(client, sid, prompt)
    assert reply in shown
    assert reply in await _replayed(home, project, sid)


@pytest.mark.slow
@pytest.mark.parametrize(("prompt", "reply"), SIMPLE, ids=[p.split()[0] for p, _ in SIMPLE])
async def test_each_command_over_lsp(
    home: Path,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    prompt: str,
    reply: str,
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))
    script = script_file(tmp_path / "s.json", [[{"text": "Written."}]])
    name, _, arg = prompt[1:].partition(" ")
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        typed = await editor.prompt(prompt)
        assert editor.errors == []
    assert reply in typed["text"]
    assert reply in await _replayed(home, project, typed["sessionId"])
    if name in ("help", "status", "grants"):  # the same command as `tether.NAME`
        async with lsp_in_process(project, script) as (editor, _):
            await editor.start()
            result = await editor.command(f"tether.{name}", *([arg] if arg else []))
        assert reply in result["text"]


@pytest.mark.slow
async def test_help_gives_each_tool_its_whole_description(home: Path, project: Path) -> None:
    async with agent_in_memory(home, {"rounds": []}, catalog()) as client:
        sid = await client.start(project)
        [shown] = await _each(client, sid, "/help")
    tools = catalog()
    assert any(t.description.count(". ") >= 2 for t in tools)
    for t in tools:
        assert f"- {t.name}: {' '.join(t.description.split())}\n" in shown + "\n"


@pytest.mark.slow
async def test_status_says_where_the_session_stands(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(home))  # no skills of the user's
    rounds = [{"events": [{"text": "Hi."}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        _, shown = await _each(client, sid, "hello", "/status")
    assert "- Mode: **ask**" in shown
    assert "- Context: **" in shown and " tokens (" in shown
    assert "- Cost so far: " in shown
    assert "- Grants: 0 for this session, 0 for this project, 0 directories" in shown
    assert "- MCP servers: none" in shown
    assert "- Skills: 0 (`/skills` lists them)" in shown
    assert f"- Session: `{sid}` in `{project}`, kept in `{home / 'tether.db'}`" in shown


@pytest.mark.slow
async def test_btw_answers_with_read_only_tools_and_leaves_the_history(
    home: Path, project: Path
) -> None:
    rounds = [
        {"events": [{"text": "Main answer."}]},
        {
            "events": [
                _call("b1", "read_file", path="README.md"),
                _call("b2", "write_file", path="side.txt", content="no\n"),
            ]
        },
        {"events": [{"text": "The README greets you."}]},
        {"events": [{"text": "Back to the task."}]},
    ]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        _, side, _ = await _each(client, sid, "hello", "/btw what does the README say?", "next")
    assert "The README greets you." in side
    assert not (project / "side.txt").exists()
    [model] = client.models
    asked = model.requests[1]
    assert "`read-only` mode" in asked.system
    assert "what does the README say?" in _text(asked.messages[-1])
    after = model.requests[3]  # the next main turn: no trace of the side question
    assert [_text(m) for m in after.messages if isinstance(m, UserMessage)] == ["hello", "next"]
    kinds = [m["type"] for m in stored_messages(home, sid)]
    assert kinds == ["user", "assistant", "user", "assistant"]
    assert "The README greets you." in await _replayed(home, project, sid)


@pytest.mark.slow
async def test_clear_starts_afresh_and_keeps_the_history(home: Path, project: Path) -> None:
    rounds = [{"events": [{"text": "One."}]}, {"events": [{"text": "Two."}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        _, cleared, _ = await _each(client, sid, "first", "/clear", "second")
    assert cleared.startswith("Context cleared: the model starts afresh (2 earlier messages")
    [model] = client.models
    assert [_text(m) for m in model.requests[1].messages] == ["second"]
    assert len(stored_messages(home, sid)) == 4
    replay = await _replayed(home, project, sid)
    assert "One." in replay and "Two." in replay


@pytest.mark.slow
async def test_export_writes_the_transcript(home: Path, project: Path) -> None:
    rounds = [{"events": [{"text": "An answer worth keeping."}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        _, done, again = await _each(client, sid, "a question", "/export t.md", "/export t.md")
    out = project / "t.md"
    assert done == f"Exported the transcript to `{out}`."
    assert "a question" in out.read_text() and "An answer worth keeping." in out.read_text()
    assert again.startswith(f"Not exported: `{out}` exists.")
    assert sid


@pytest.mark.slow
async def test_init_writes_agents_md_through_the_approval(home: Path, project: Path) -> None:
    rounds = [
        {"events": [_call("i1", "write_file", path="AGENTS.md", content="# Agents\nmake test\n")]},
        {"events": [{"text": "Wrote AGENTS.md."}]},
    ]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        [shown] = await _each(client, sid, "/init keep it short")
    assert "Wrote AGENTS.md." in shown
    assert len(client.permissions) == 1  # the normal edit approval
    assert (project / "AGENTS.md").read_text() == "# Agents\nmake test\n"
    [model] = client.models
    sent = _text(model.requests[0].messages[0])
    assert sent.startswith(INIT_PROMPT) and sent.endswith("The user adds: keep it short")
    async with agent_in_memory(home, {"rounds": []}, catalog()) as again:
        replay = await again.load(sid, project)
    typed = [u["content"]["text"] for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert typed == ["/init keep it short"]


@pytest.mark.slow
async def test_grants_list_and_revoke_across_a_restart(home: Path, project: Path) -> None:
    first: Rounds = [
        {"events": [_call("g1", "write_file", path="a.txt", content="a\n")]},
        {"events": [{"text": "ok"}]},
    ]
    async with agent_in_memory(home, {"rounds": first}, catalog()) as client:
        client.choice = "allow_always"
        sid = await client.start(project)
        params = {"sessionId": sid, "configId": "always", "value": "project"}
        await client.peer.request("session/set_config_option", params)
        await client.prompt(sid, "write a")
    second: Rounds = [
        {"events": [_call("g2", "write_file", path="b.txt", content="b\n")]},
        {"events": [{"text": "ok"}]},
    ]
    async with agent_in_memory(home, {"rounds": second}, catalog()) as client:
        client.choice = "reject"
        other = await client.start(project)  # a new session of the project, after a restart
        listed, revoked, empty = await _each(
            client, other, "/grants", "/grants revoke 1", "/grants"
        )
        await client.prompt(other, "write b")
    assert "1. always allow: " in listed and "(this project)" in listed
    assert revoked.startswith("Revoked (those calls ask again):")
    assert empty == "No grants: every call that needs approval asks."
    assert len(client.permissions) == 1  # asked again, and rejected
    assert not (project / "b.txt").exists()


def _text(message: Any) -> str:
    return "".join(p.text for p in message.parts if isinstance(p, TextPart))


@pytest.mark.slow
async def test_a_skill_named_like_a_command_is_listed_without_one(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(home))
    skill = project / ".agents" / "skills" / "status"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: status\ndescription: Summarise the build status.\n---\nRun the build.\n"
    )
    async with agent_in_memory(home, {"rounds": []}, catalog()) as client:
        sid = await client.start(project)
        listed, status = await _each(client, sid, "/skills", "/status")
    assert "- **/status**: Summarise the build status." in listed
    assert "no command of its own (tether's `/status` has the name)" in listed
    assert "- Skills: 1 (`/skills` lists them)" in status  # the built-in ran


@pytest.mark.slow
async def test_a_slash_command_with_a_bad_argument_over_lsp_is_invalid_params(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))
    script = script_file(tmp_path / "s.json", [[{"text": "unused"}]])
    async with lsp_in_process(project, script) as (editor, _):
        await editor.start()
        with pytest.raises(Exception, match=r"tether\.status takes at most one argument"):
            await editor.command("tether.status", {"not": "a string"})
        still = await editor.command("tether.status")  # the server serves on
    assert "- Model: **scripted**" in still["text"]


# --- the registry loads a handler when its command runs --------------------------------------

LISTS_THE_COMMANDS = """
import sys
from tether.engine.slash import slash_registry
assert [c.name for c in slash_registry.COMMANDS] and all(c.help for c in slash_registry.COMMANDS)
print(sorted(m for m in sys.modules if m.startswith("tether.engine.slash.")))
"""


@pytest.mark.slow
def test_listing_the_commands_imports_no_handler() -> None:
    """What a front lists (names, help, hints) comes from the table: the handlers' modules
    (and the engine they pull in: the seam, the sandbox, export, MCP) load when one runs."""
    import subprocess
    import sys

    from tests.support.harness import REPO

    done = subprocess.run(
        [sys.executable, "-c", LISTS_THE_COMMANDS],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,
        check=True,
    )
    loaded = done.stdout.strip()
    assert loaded == "['tether.engine.slash.slash_command', 'tether.engine.slash.slash_registry']"


def test_every_handler_named_in_the_table_is_an_async_function() -> None:
    """A handler named by where it lives is checked here, not first met by a user's command."""
    import inspect

    from tether.engine.slash import slash_registry
    from tether.engine.slash.slash_command import handler

    for command in slash_registry.COMMANDS:
        assert inspect.iscoroutinefunction(handler(command.handler)), command.name
