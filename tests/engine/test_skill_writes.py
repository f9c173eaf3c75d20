"""Writing skills end to end over ACP (a scripted model, the real `tether acp`): `skill_create`,
`skill_edit` and `skill_search`; the write policy (the path denylist first, then the session's
answer per skill directory, then `[skills] allow_write`, then the question, which no mode
skips); `[skills] enabled = false`. Judged by the files written or not, and by the frames a
client sees."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.engine.test_config import errors_of
from tests.support.harness import AgentProcess, script, spawn_agent
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.stored import tool_results

pytestmark = pytest.mark.anyio
Frame = dict[str, Any]


def call(call_id: str, tool: str, **arguments: Any) -> list[dict[str, Any]]:
    """A round making one call."""
    return [{"tool_call": {"id": call_id, "name": tool, "arguments": arguments}}]


def turns(*calls: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [r for c in calls for r in (c, [{"text": "done"}])]


class World:
    """A git project with the skill `deploy` in `.agents/skills`, a fake HOME, a config file."""

    def __init__(self, tmp_path: Path, project: Path, home: Path) -> None:
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        self.project, self.home = project, home
        self.skills = project / ".agents" / "skills"
        self.deploy = self.skills / "deploy"
        self.deploy.mkdir(parents=True)
        (self.deploy / "SKILL.md").write_text(
            "---\nname: deploy\ndescription: Ship the app.\n---\nRun make ship.\n"
        )
        self.config = tmp_path / "config.toml"
        self.config.write_text("")
        self.user = tmp_path / "fakehome"
        self.user.mkdir()
        self.tmp = tmp_path

    def spawn(self, rounds: list[list[dict[str, Any]]]) -> Any:
        path = script(self.tmp / "s.json", rounds)
        env = {"HOME": str(self.user), "TETHER_CONFIG": str(self.config)}
        return spawn_agent(self.home, "--script", str(path), env=env)


@pytest.fixture
def world(tmp_path: Path, project: Path, home: Path) -> World:
    return World(tmp_path, project, home)


def said(agent: AgentProcess, sid: str) -> str:
    updates = agent.updates(sid)
    return "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def asked(agent: AgentProcess) -> list[Frame]:
    return [f for f in agent.frames if f.get("method") == "session/request_permission"]


async def opened(agent: AgentProcess, world: World, mode: str = "ask") -> str:
    await agent.initialize()
    sid = await agent.new_session(world.project)
    if mode != "ask":
        await agent.request("session/set_mode", {"sessionId": sid, "modeId": mode})
    return sid


@pytest.mark.slow
async def test_a_session_answer_covers_one_skill_directory_even_in_allow_all(
    world: World,
) -> None:
    """In `allow-all`, `skill_create` still asks, offering once / this session / no; "this
    session" lets later changes to that skill run unasked (the result says so), while another
    skill's change asks again and a rejection leaves it as it was."""
    made = world.skills / "notes"
    rounds = turns(
        call(
            "c",
            "skill_create",
            name="notes",
            description="Keep notes.",
            body="Write notes.",
            files={"scripts/n.sh": "echo hi\n"},
            location="project",
        ),
        call("e", "skill_edit", name="notes", text="More.\n", append=True),
        call("d", "skill_edit", name="deploy", old="make ship", text="make deploy"),
        call("f", "skill_edit", name="notes", text="Never.\n", append=True),
    )
    async with world.spawn(rounds) as agent:
        sid = await opened(agent, world, "allow-all")
        agent.permission_choice = "allow_always"
        await agent.prompt(sid, "make a skill")
        [first] = asked(agent)
        options = [(o["kind"], o["name"]) for o in first["params"]["options"]]
        assert options == [
            ("allow_once", "Allow"),
            ("allow_always", "Allow changes to the skill notes for this session"),
            ("reject_once", "Reject"),
        ]
        await agent.prompt(sid, "add to it")
        assert len(asked(agent)) == 1  # the session's answer covers the skill
        await agent.prompt(sid, "/grants")
        assert f"1. changes to the skill notes (`{made}`, this session)" in said(agent, sid)
        agent.permission_choice = "reject_once"
        await agent.prompt(sid, "change deploy")
        assert len(asked(agent)) == 2  # another skill: asked again
        await agent.prompt(sid, "/grants revoke 1")
        await agent.prompt(sid, "add again")
        assert len(asked(agent)) == 3  # revoked: asked again, rejected
    assert (made / "SKILL.md").read_text() == (
        '---\nname: notes\ndescription: "Keep notes."\n---\nWrite notes.\nMore.\n'
    )
    assert (made / "scripts" / "n.sh").read_text() == "echo hi\n"
    assert "make ship" in (world.deploy / "SKILL.md").read_text()
    results = tool_results(world.home, sid)
    assert results[0].startswith("[approval] user (session)\ncreated the skill notes")
    assert results[1].startswith("[approval] grant (session)\nedited notes/SKILL.md")
    assert "REJECTED" in results[2]


@pytest.mark.slow
async def test_the_denylist_and_the_skill_directory_come_first(world: World) -> None:
    """A file the path denylist names, or a path leaving the skill, is refused before anyone
    is asked, whatever `allow_write` says."""
    world.config.write_text("[skills]\nallow_write = true\n")
    outside = world.project / "escaped.txt"
    rounds = turns(
        call("a", "skill_edit", name="deploy", path=".env", text="SECRET=1\n"),
        call("b", "skill_edit", name="deploy", path="../../../escaped.txt", text="x\n"),
        call("c", "skill_create", name="x", description="d", body="b", files={"/tmp/a": "x"}),
        call("d", "skill_edit", name="deploy", old="make ship", text="make deploy"),
    )
    async with world.spawn(rounds) as agent:
        sid = await opened(agent, world)
        for _ in range(4):
            await agent.prompt(sid, "go")
        assert asked(agent) == []  # refused, or covered by allow_write
    assert not (world.deploy / ".env").exists() and not outside.exists()
    assert not (world.skills / "x").exists()
    results = tool_results(world.home, sid)
    assert "PATH_DENIED" in results[0] and "INVALID_PATH" in results[1]
    assert "INVALID_PATH" in results[2]
    assert results[3].startswith("[approval] config (policy)\n")
    assert "make deploy" in (world.deploy / "SKILL.md").read_text()


@pytest.mark.slow
async def test_skill_search_rebases_hits_and_a_lost_description_is_noted(world: World) -> None:
    (world.deploy / "references").mkdir()
    (world.deploy / "references" / "steps.md").write_text("first\nmake ship twice\n")
    rewritten = "---\nname: deploy\n---\nNo description now.\n"
    rounds = turns(
        call("s", "skill_search", pattern="make ship"),
        call("r", "skill_edit", name="deploy", text=rewritten),
    )
    async with world.spawn(rounds) as agent:
        sid = await opened(agent, world)
        await agent.prompt(sid, "search")
        await agent.prompt(sid, "/skills search ship twice")
        replied = said(agent, sid)
        await agent.prompt(sid, "rewrite")
    assert "deploy/references/steps.md:2: make ship twice" in replied  # the tool's handler
    found, noted = tool_results(world.home, sid)
    assert "deploy/SKILL.md:5: Run make ship." in found
    assert "deploy/references/steps.md:2: make ship twice" in found
    assert "`description` is missing (its description is gone)" in noted
    assert (world.deploy / "SKILL.md").read_text() == rewritten


@pytest.mark.slow
async def test_skills_off_drops_the_tools_and_the_catalog(world: World) -> None:
    world.config.write_text("[skills]\nenabled = false\n")
    rounds = turns(call("a", "skill_list"))
    async with world.spawn(rounds) as agent:
        sid = await opened(agent, world)
        await agent.prompt(sid, "list")
        await agent.prompt(sid, "/status")
        status = said(agent, sid)
    [result] = tool_results(world.home, sid)
    assert result.startswith("error [UNKNOWN_TOOL]")
    assert "- Skills: off (`[skills] enabled = false`)" in status


@pytest.mark.slow
@pytest.mark.parametrize("enabled", [True, False])
async def test_the_request_carries_skill_tools_and_catalog_only_when_enabled(
    world: World, enabled: bool
) -> None:
    world.config.write_text(f"[skills]\nenabled = {str(enabled).lower()}\n")
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", Reply(chunks=wire.chat_text(["hi"])))
        env = {
            "HOME": str(world.user),
            "TETHER_CONFIG": str(world.config),
            "OPENAI_BASE_URL": server.url + "/v1",
            "TETHER_MODEL": "openai:gpt-5.5",
        }
        async with spawn_agent(world.home, env=env) as agent:
            sid = await opened(agent, world)
            await agent.prompt(sid, "hello")
        [body] = [r.json() for r in server.posts]
    tools = {t["function"]["name"] for t in body["tools"]}
    names = {"skill_read", "skill_list", "skill_search", "skill_create", "skill_edit"}
    assert (names <= tools) if enabled else not (names & tools)
    assert ("- deploy: Ship the app." in body["messages"][0]["content"]) == enabled


def test_the_new_skills_keys_are_checked_with_their_line() -> None:
    lines = errors_of("[skills]\nenabled = 'no'\n")
    assert any(line.startswith("/cfg/config.toml:2: skills.enabled") for line in lines), lines
    lines = errors_of("[skills]\nallow_write = 1\n")
    assert any(line.startswith("/cfg/config.toml:2: skills.allow_write") for line in lines), lines
