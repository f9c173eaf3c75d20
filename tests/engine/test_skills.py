"""Agent Skills end to end through `tether acp` (a real subprocess, every frame validated) with a
loopback OpenAI-compatible model, so what the model is sent is visible: skills from the
project (found from a subdirectory, up to the repository root), a fake HOME and `[skills]
paths`; the first root wins a name; broken ones are reported, never fatal; a skill outside the
project is activated by the model and its resources read; the catalog's bytes stay the same
from round to round; `/skills` and `/skill-name args` (and the replay of the latter); a change
in a skills root is asked every time, even in `code` mode after an "always" answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.sessions.test_live_equals_replay import merge_chunks
from tests.sessions.test_session_lifecycle import SETUP
from tests.support.harness import REPO, AgentProcess, spawn_agent
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply
from tests.support.stored import stored_messages

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROUTE = "/v1/chat/completions"
REVIEW_BODY = "# Reviewing code\n\n1. Read references/checklist.md.\n2. Apply every item.\n"


def skill(root: Path, name: str, description: str, body: str = "Do it.\n", **extra: str) -> Path:
    d = root / name
    d.mkdir(parents=True)
    more = "".join(f"{k}: {v}\n" for k, v in extra.items())
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n{more}---\n{body}")
    return d


class World:
    """A repository with skills in two places, a fake HOME with skills, a `[skills] paths`
    directory, and the session working in a subdirectory of the repository."""

    def __init__(self, tmp_path: Path, project: Path) -> None:
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        self.project = project
        self.cwd = project / "src"
        self.cwd.mkdir()
        self.user = tmp_path / "fakehome"
        self.extra = tmp_path / "team-skills"
        self.config = tmp_path / "config.toml"
        self.config.write_text(f'[skills]\npaths = ["{self.extra}"]\n')
        mine = project / ".agents" / "skills"
        theirs = project / ".claude" / "skills"
        home = self.user / ".agents" / "skills"
        skill(mine, "deploy", "Deploy the app. Use when the user asks to ship.")
        skill(theirs, "deploy", "The .claude copy of deploy, shadowed.")
        skill(theirs, "lint-fix", "Fix lint errors the project's way.")
        self.review = skill(
            home, "review-code", "Review code against the team checklist.", REVIEW_BODY
        )
        (self.review / "references").mkdir()
        (self.review / "references" / "checklist.md").write_text("- no print statements\n")
        (self.review / "scripts").mkdir()
        (self.review / "scripts" / "count.py").write_text("print(1)\n")
        skill(home, "lint-fix", "The home copy of lint-fix, shadowed by the project's.")
        skill(self.extra, "release-notes", "Write release notes from the git log.")
        skill(theirs, "Bad_Name", "A name the specification refuses.")
        (theirs / "no-header").mkdir()
        (theirs / "no-header" / "SKILL.md").write_text("Just text, no frontmatter.\n")
        skill(self.extra, "mismatch", "x").joinpath("SKILL.md").write_text(
            "---\nname: other-name\ndescription: d\n---\n"
        )

    def env(self, server: MockLLMServer) -> dict[str, str]:
        return {
            "HOME": str(self.user),
            "TETHER_CONFIG": str(self.config),
            "OPENAI_BASE_URL": server.url + "/v1",
            "TETHER_MODEL": "openai:gpt-5.5",
        }


@pytest.fixture
def world(tmp_path: Path, project: Path) -> World:
    return World(tmp_path, project)


def replies(*rounds: wire.Chunks) -> list[Reply]:
    return [Reply(chunks=r) for r in rounds]


def turn_updates(agent: AgentProcess, sid: str) -> list[dict[str, Any]]:
    return merge_chunks([u for u in agent.updates(sid) if u["sessionUpdate"] not in SETUP])


def said(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def tool_text(message: dict[str, Any]) -> str:
    return message["content"] if isinstance(message["content"], str) else str(message["content"])


async def test_the_model_activates_a_skill_outside_the_project_and_reads_its_files(
    home: Path, world: World
) -> None:
    checklist = world.review / "references" / "checklist.md"
    with MockLLMServer() as server:
        server.script(
            ROUTE,
            *replies(
                wire.chat_call("skill_read", {"name": "review-code"}, "call_1"),
                wire.chat_call("read_file", {"path": str(checklist)}, "call_2"),
                wire.chat_text(["Reviewed."]),
            ),
        )
        async with spawn_agent(home, env=world.env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(world.cwd)
            answer = await agent.prompt(sid, "review my change", timeout=30)
            assert answer["result"] == {"stopReason": "end_turn"}
        bodies = [r.json() for r in server.posts]
    updates = agent.updates(sid)
    calls = {u["toolCallId"]: u for u in updates if u["sessionUpdate"] == "tool_call"}
    assert calls["call_1"]["title"] == "Use skill review-code"  # the user sees which
    done = {u["toolCallId"]: u["status"] for u in updates if u.get("status") == "completed"}
    assert done == {"call_1": "completed", "call_2": "completed"}
    assert not any(u["sessionUpdate"] == "tool_call" and "permission" in u for u in updates)

    # The activation: the body, the files by absolute path.
    activated = tool_text(bodies[1]["messages"][-1])
    assert REVIEW_BODY.strip() in activated
    assert str(checklist) in activated and str(world.review / "scripts" / "count.py") in activated
    assert "name: review-code" not in activated  # the header is not the instructions
    # The reference, read through read_file though it lies outside the project.
    assert "no print statements" in tool_text(bodies[2]["messages"][-1])

    # The catalog: sorted, first root wins, broken ones left out; the same bytes every round.
    systems = [b["messages"][0]["content"] for b in bodies]
    assert systems[0] == systems[1] == systems[2]
    catalog = systems[0].split("# Skills\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert catalog == [
        "- deploy: Deploy the app. Use when the user asks to ship.",
        "- lint-fix: Fix lint errors the project's way.",
        "- release-notes: Write release notes from the git log.",
        "- review-code: Review code against the team checklist.",
    ]
    tools = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert "skill_read" in tools and "skill_list" in tools


async def test_slash_skills_lists_them_with_the_shadowed_and_the_broken(
    home: Path, world: World
) -> None:
    with MockLLMServer() as server:
        async with spawn_agent(home, env=world.env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(world.cwd)
            answer = await agent.prompt(sid, "/skills")
            assert answer["result"] == {"stopReason": "end_turn"}
        assert server.posts == []  # no model was asked
    commands = next(
        u["availableCommands"]
        for u in agent.updates(sid)
        if u["sessionUpdate"] == "available_commands_update"
    )
    names = [c["name"] for c in commands]
    for name in ("skills", "deploy", "lint-fix", "release-notes", "review-code"):
        assert name in names
    assert "Bad_Name" not in names and "mismatch" not in names
    text = said(agent.updates(sid))
    mine, theirs = world.project / ".agents/skills", world.project / ".claude/skills"
    assert "- **/deploy**: Deploy the app." in text
    assert f"{theirs}/deploy/SKILL.md: shadowed by {mine}/deploy/SKILL.md" in text
    assert f"~/.agents/skills/lint-fix/SKILL.md: shadowed by {theirs}/lint-fix/SKILL.md" in text
    assert f"{theirs}/Bad_Name/SKILL.md: `name` 'Bad_Name' must be lowercase" in text
    assert f"{theirs}/no-header/SKILL.md: SKILL.md must start with a YAML frontmatter" in text
    assert "`name` 'other-name' does not match its directory 'mismatch'" in text
    searched = text.split("Searched, in this order")[1]
    order = [
        f"{world.cwd}/.agents/skills (project, absent)",
        f"{mine} (project)",
        f"{theirs} (project)",
        "~/.agents/skills (user)",
        "~/.claude/skills (user, absent)",
        f"{home}/skills (tether, absent)",
        f"{world.extra} (config)",
    ]
    positions = [searched.index(o) for o in order]
    assert positions == sorted(positions)
    assert str(world.project.parent / ".agents") not in searched  # stops at the repository


async def test_a_skill_command_runs_a_turn_on_the_skill_and_replays_as_typed(
    home: Path, world: World
) -> None:
    with MockLLMServer() as server:
        server.script(
            ROUTE,
            *replies(wire.chat_text(["Following ", "the checklist."]), wire.chat_text(["ok"])),
        )
        async with spawn_agent(home, env=world.env(server)) as first:
            await first.initialize()
            sid = await first.new_session(world.cwd)
            answer = await first.prompt(sid, "/review-code only the tests")
            assert answer["result"] == {"stopReason": "end_turn"}
            live = turn_updates(first, sid)
            await first.close_input()
            assert await first.wait_exit() == 0
        sent = server.posts[0].json()["messages"][-1]["content"]
        assert REVIEW_BODY.strip() in sent and "The user's request: only the tests" in sent
        assert str(world.review / "references" / "checklist.md") in sent
        assert said(live) == "Following the checklist."

        async with spawn_agent(home, env=world.env(server)) as second:
            await second.initialize()
            params = {"sessionId": sid, "cwd": str(world.cwd), "mcpServers": []}
            assert "result" in await second.request("session/load", params)
            replayed = turn_updates(second, sid)
            assert replayed[0] == {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": "/review-code only the tests"},
            }
            assert replayed[1:] == live
            # The model keeps what it was sent for the command.
            assert (await second.prompt(sid, "and now?"))["result"]["stopReason"] == "end_turn"
        history = server.posts[-1].json()["messages"]
        assert REVIEW_BODY.strip() in history[1]["content"]


async def test_a_change_to_a_skill_is_asked_every_time_even_in_code_mode(
    home: Path, world: World
) -> None:
    """In `code` mode (writes in the project need no question) and after an "always" answer
    covering the whole project, a change inside a skills root still asks (inside a skill: once,
    for this session, or no; elsewhere in the root: nothing to remember), and a rejection
    leaves the skill as it was."""
    skills = world.project / ".agents" / "skills"
    target = skills / "deploy" / "SKILL.md"
    before = target.read_text()
    new = skills / "made" / "SKILL.md"
    new.parent.mkdir()  # (the test client's fs/write_text_file makes no directories)
    plain, moved = world.project / "plain.txt", world.project / "moved.txt"
    content = "---\nname: made\ndescription: made by the model\n---\nBody.\n"
    edit = {"path": str(target), "old": "Do it.", "new": "Do it now."}
    rounds = [
        wire.chat_call("write_file", {"path": "plain.txt", "content": "x\n"}, "w0"),
        wire.chat_call("move_path", {"src": "plain.txt", "dst": "moved.txt"}, "m1"),
        wire.chat_call("move_path", {"src": "moved.txt", "dst": str(skills / "m.md")}, "m2"),
        wire.chat_call("write_file", {"path": str(new), "content": content}, "w1"),
        wire.chat_call("edit_replace", edit, "w2"),
    ]
    with MockLLMServer() as server:
        server.script(ROUTE, *replies(*(x for r in rounds for x in (r, wire.chat_text(["ok"])))))
        async with spawn_agent(home, env=world.env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(world.project)
            await agent.prompt(sid, "/mode code")

            async def turn(choice: str) -> list[dict[str, Any]]:
                agent.permission_choice = choice
                await agent.prompt(sid, "go")
                return [f for f in agent.frames if f.get("method") == "session/request_permission"]

            assert await turn("allow_once") == [] and plain.read_text() == "x\n"  # no question
            assert len(await turn("allow_always")) == 1 and moved.exists()  # a project grant
            asked = await turn("reject_once")  # covered by the grant, yet asked: it is a skill
            assert len(asked) == 2 and moved.exists() and not (skills / "m.md").exists()
            asked = await turn("allow_once")
            assert len(asked) == 3 and new.read_text() == content
            menus = [
                [c["name"] for c in u["availableCommands"]]
                for u in agent.updates(sid)
                if u["sessionUpdate"] == "available_commands_update"
            ]
            assert "made" not in menus[0] and "made" in menus[-1]  # the new skill is offered
            kinds = [o["kind"] for o in asked[-1]["params"]["options"]]
            assert kinds == ["allow_once", "allow_always", "reject_once"]  # once, session, no
            assert "(a change to a skill)" in asked[-1]["params"]["toolCall"]["title"]
            asked = await turn("reject_once")
            assert len(asked) == 4 and asked[-1]["params"]["toolCall"]["toolCallId"] == "w2"
            # Into the root itself, not inside a skill: nothing to remember.
            kinds = [o["kind"] for o in asked[1]["params"]["options"]]
            assert kinds == ["allow_once", "reject_once"]
            assert "asked every time" in asked[1]["params"]["toolCall"]["title"]
    assert target.read_text() == before  # rejected by the client: unchanged
    results = [m for m in server.posts[-1].json()["messages"] if m["role"] == "tool"]
    assert "REJECTED" in tool_text(results[-1])


async def test_doctor_reports_the_skills_and_their_problems(world: World, home: Path) -> None:
    env = {
        "HOME": str(world.user),
        "TETHER_CONFIG": str(world.config),
        "TETHER_HOME": str(home),
        "PYTHONPATH": str(REPO),
        "PATH": "/usr/bin:/bin",
    }
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, "-m", "tether", "doctor"], cwd=world.cwd, env=env, check=False
        )
    out = done.stdout.decode()
    section = out.split("skills (Agent Skills, first root wins a name)\n", 1)[1]
    assert "deploy" in section and "review-code" in section and "release-notes" in section
    assert f"shadowed: {world.project}/.claude/skills/deploy" in section
    assert f"problem: {world.project}/.claude/skills/Bad_Name/SKILL.md" in section
    assert "does not match its directory 'mismatch'" in section
    assert f"root: {world.extra} (config)" in section
    assert done.returncode == 0, out  # problems with skills are not fatal


async def test_tether_lsp_runs_the_same_commands(
    home: Path, world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.lsp_client import lsp_in_process, script_file

    for name, value in world.env(MockLLMServer()).items():
        if name in ("HOME", "TETHER_CONFIG"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("TETHER_HOME", str(home))
    script = script_file(tmp_path / "s.json", [[{"text": "Deploying now."}]])
    async with lsp_in_process(world.cwd, script) as (editor, _):
        await editor.start()
        listed = await editor.prompt("/skills")
        deployed = await editor.prompt("/deploy to staging")
        assert editor.errors == []
    assert listed["stopReason"] == "end_turn"
    assert "- **/review-code**: Review code against the team checklist." in listed["text"]
    assert "does not match its directory 'mismatch'" in listed["text"]
    assert deployed["text"] == "Deploying now."
    [sent] = stored_messages(home, deployed["sessionId"])[0]["parts"]
    assert "Deploy the app" not in sent["text"]  # the body, not the header
    assert "\nDo it.\n" in sent["text"] and "The user's request: to staging" in sent["text"]


async def test_a_confined_command_cannot_change_a_committed_skill(home: Path, world: World) -> None:
    """Committed files are writable to confined commands (git can restore them), but not a
    skill's: in `code` mode a command runs unasked, and the sandbox keeps the skill as it is."""
    from tether.engine.sandbox.detect import detect

    if sys.platform != "linux":
        pytest.skip("the Linux sandbox")
    assert detect("auto").confines, "no sandbox here: this test must run where one confines"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(world.project)]
    await anyio.run_process([*git, "add", "-A"])
    await anyio.run_process([*git, "commit", "-qm", "skills"])
    target = world.project / ".agents" / "skills" / "deploy" / "SKILL.md"
    before = target.read_text()
    code = "import sys; open('README.md', 'a').write('!'); open(sys.argv[1], 'a').write('changed')"
    argv = [sys.executable, "-c", code, str(target)]
    with MockLLMServer() as server:
        server.script(
            ROUTE, *replies(wire.chat_call("run_argv", {"argv": argv}), wire.chat_text(["ok"]))
        )
        async with spawn_agent(home, env=world.env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(world.project)
            await agent.prompt(sid, "/mode code")
            await agent.prompt(sid, "go", timeout=60)
            asked = [f for f in agent.frames if f.get("method") == "session/request_permission"]
    assert asked == []  # ran unasked, confined
    assert (world.project / "README.md").read_text().endswith("!")  # a committed file: written
    assert target.read_text() == before  # a committed skill: not
    assert "OSError" in tool_text(server.posts[-1].json()["messages"][-1])


async def test_a_skill_linked_in_from_elsewhere_is_readable_and_guarded(
    home: Path, world: World, tmp_path: Path
) -> None:
    """`~/.claude/skills/x` a symlink to a dotfiles repository: its files are read where they
    really are, and a change there still asks."""
    real = skill(tmp_path / "dotfiles", "linked", "A skill kept in a dotfiles repository.")
    (real / "notes.md").write_text("linked notes\n")
    (world.user / ".claude" / "skills").mkdir(parents=True)
    (world.user / ".claude" / "skills" / "linked").symlink_to(real)
    through_link = world.user / ".claude" / "skills" / "linked" / "notes.md"
    with MockLLMServer() as server:
        server.script(
            ROUTE,
            *replies(
                wire.chat_call("read_file", {"path": str(through_link)}, "r1"),
                wire.chat_call(
                    "request_directory_access", {"path": str(real), "mode": "write"}, "g1"
                ),
                wire.chat_call("write_file", {"path": str(real / "x.md"), "content": "x"}, "w1"),
                wire.chat_text(["done"]),
            ),
        )
        async with spawn_agent(home, env=world.env(server)) as agent:
            await agent.initialize()
            sid = await agent.new_session(world.project)
            await agent.prompt(sid, "/mode code")
            agent.permission_choice = "allow_once"
            await agent.prompt(sid, "go")
            asked = [
                f["params"]["toolCall"]["toolCallId"]
                for f in agent.frames
                if f.get("method") == "session/request_permission"
            ]
        results = [m for m in server.posts[-1].json()["messages"] if m["role"] == "tool"]
    assert "linked notes" in tool_text(results[0])
    assert asked == ["g1", "w1"]  # the write into the skill asked, though in code mode
    assert (real / "x.md").read_text() == "x"
