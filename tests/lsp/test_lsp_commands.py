"""`tether lsp`'s command list is the slash-command registry: every command a session offers
(what `/help` lists, from tether/engine/slash/) is announced in `initialize` as `tether.NAME`
and runs as that command; nothing else is announced."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.lsp_client import lsp_in_process, script_file
from tether.rpc.lsp.lsp_handshake import CANCEL, PROMPT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REQUEST_FAILED = -32803  # a command's own refusal (a /btw without a question): still its answer


@pytest.fixture(autouse=True)
def _home(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))
    user = tmp_path / "user"  # no skills of the developer's (~/.agents/skills) in /help
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))


def _offered(help_text: str) -> list[str]:
    """The command names `/help` lists, in its order."""
    listing = help_text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^- /([^\s:]+)", listing, re.M)


async def test_the_announced_commands_are_the_registrys_and_each_runs(
    project: Path, tmp_path: Path
) -> None:
    turns = [[{"text": "Written."}] for _ in range(4)]  # /init and any other turn: answered
    async with lsp_in_process(project, script_file(tmp_path / "s.json", turns)) as (editor, _):
        result = await editor.start()
        assert result.capabilities.execute_command_provider is not None
        announced = list(result.capabilities.execute_command_provider.commands)
        offered = _offered((await editor.command("tether.help"))["text"])
        assert "skills" in offered and "help" in offered
        assert announced == [PROMPT, CANCEL, *(f"tether.{name}" for name in offered)]
        for name in offered:
            try:
                answer = await editor.command(f"tether.{name}")
            except JsonRpcException as exc:  # never "not defined" (-32602): a refusal
                assert exc.code == REQUEST_FAILED, (name, exc.code, exc.message)
            else:
                assert answer["stopReason"] == "end_turn", (name, answer)
        assert editor.errors == []


async def test_tether_skills_lists_the_skills(project: Path, tmp_path: Path) -> None:
    skill = project / ".agents" / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Say hello.\n---\nSay hi.\n")
    async with lsp_in_process(project, script_file(tmp_path / "s.json", [])) as (editor, _):
        await editor.start()
        answer = await editor.command("tether.skills")
    assert answer["stopReason"] == "end_turn"
    assert answer["text"].startswith("Skills:") and "greet" in answer["text"]
