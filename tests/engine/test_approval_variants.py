"""Approval variants, driven by the official Python ACP SDK's client: a round's card answered
"review one by one" (each call then asks on its own card, in order), `/yolo once` (the next turn
runs without asking, and only that turn), `/yolo on|off`; the path denylist and the asks for a
change to a skill stay in force in every one. Judged by the files written or not."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.connection import StreamDirection, StreamEvent

from tests.support.acp_schema import validate_agent_frame
from tests.support.harness import REPO, script

pytestmark = pytest.mark.anyio

Chooser = Callable[[Any, list[Any]], str]


def write(call_id: str, path: str, content: str = "x\n") -> dict[str, Any]:
    arguments = {"path": path, "content": content}
    return {"tool_call": {"id": call_id, "name": "write_file", "arguments": arguments}}


class Client:
    """Records every permission request and answers it with `choose` (an option id)."""

    def __init__(self, choose: Chooser) -> None:
        self.choose = choose
        self.updates: list[Any] = []
        self.permissions: list[tuple[Any, list[Any]]] = []

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, options: Any, session_id: str, tool_call: Any, **kw: Any
    ) -> Any:
        self.permissions.append((tool_call, list(options)))
        chosen = self.choose(tool_call, list(options))
        return {"outcome": {"outcome": "selected", "optionId": chosen}}


def by_kind(kind: str) -> Callable[[list[Any]], str]:
    """What a client that maps keys by kind does: the first option of that kind."""
    return lambda options: next(o.option_id for o in options if o.kind == kind)


@asynccontextmanager
async def agent(
    home: Path, project: Path, rounds: list[list[dict[str, Any]]], client: Client
) -> AsyncIterator[tuple[Any, str]]:
    tmp_path = project.parent
    path = script(tmp_path / "s.json", rounds)

    def observe(event: StreamEvent) -> None:
        if event.direction == StreamDirection.INCOMING:
            validate_agent_frame(event.message)

    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO), "TETHER_WARM": "0"}
    env["HOME"] = str(tmp_path / "fakehome")  # no skills of the machine's user
    async with spawn_agent_process(
        client,  # pyright: ignore[reportArgumentType]  # structurally a Client
        sys.executable,
        *("-m", "tether", "acp", "--script", str(path)),
        env=env,
        cwd=REPO,
        transport_kwargs={"stderr": None},
        observers=[observe],
    ) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        yield conn, sid


def a_skill(project: Path) -> Path:
    """A git project with the skill `deploy` in `.agents/skills`."""
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    d = project / ".agents" / "skills" / "deploy"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it.\n---\nDo it.\n")
    return d


async def prompt(conn: Any, sid: str, text: str) -> None:
    await conn.prompt(session_id=sid, prompt=[text_block(text)])


@pytest.mark.slow
async def test_a_round_reviewed_one_by_one_asks_each_call_in_order(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """Three writes and one to `.env` in one round: the `.env` call is refused by the denylist
    before anything is asked; the round's card offers "Review one by one" (of kind
    `reject_always`, each kind once); chosen, each remaining call asks on its own card, in call
    order."""
    answers = {"w0": "allow", "w1": "reject", "w2": "allow"}

    def choose(card: Any, options: list[Any]) -> str:
        if card.tool_call_id.startswith("round_"):
            return next(o.option_id for o in options if o.name == "Review one by one")
        return answers[card.tool_call_id]

    client = Client(choose)
    rounds = [
        [write("w0", "a.txt"), write("w1", "b.txt"), write("e", ".env"), write("w2", "c.txt")],
        [{"text": "done"}],
    ]
    async with agent(home, project, rounds, client) as (conn, sid):
        await prompt(conn, sid, "write")
    (round_card, options), *each = client.permissions
    assert [(o.kind, o.name) for o in options] == [
        ("allow_once", "Allow all 3"),
        ("allow_always", "Always allow these"),
        ("reject_once", "Reject all 3"),
        ("reject_always", "Review one by one"),
    ]
    assert round_card.tool_call_id.startswith("round_")
    assert [card.tool_call_id for card, _ in each] == ["w0", "w1", "w2"]
    assert [o.kind for o in each[0][1]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert (project / "a.txt").exists() and (project / "c.txt").exists()
    assert not (project / "b.txt").exists() and not (project / ".env").exists()


@pytest.mark.slow
async def test_a_client_picking_by_kind_never_reviews_by_mistake(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """A client that takes the first `reject_once` rejects the round (nothing written, one
    request); the review option never stands in for "Allow"."""
    client = Client(lambda card, options: by_kind("reject_once")(options))
    rounds = [[write("w0", "a.txt"), write("w1", "b.txt")], [{"text": "done"}]]
    async with agent(home, project, rounds, client) as (conn, sid):
        await prompt(conn, sid, "write")
    assert len(client.permissions) == 1
    assert not (project / "a.txt").exists() and not (project / "b.txt").exists()


@pytest.mark.slow
async def test_a_client_answering_reject_always_by_kind_reviews_and_allows_nothing(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """A client whose "always reject" key picks `reject_always` gets each call asked on its
    own card; answering those by kind too rejects each: nothing written."""
    client = Client(lambda card, options: by_kind("reject_always")(options))
    rounds = [[write("w0", "a.txt"), write("w1", "b.txt")], [{"text": "done"}]]
    async with agent(home, project, rounds, client) as (conn, sid):
        await prompt(conn, sid, "write")
    assert [card.tool_call_id for card, _ in client.permissions][1:] == ["w0", "w1"]
    assert not (project / "a.txt").exists() and not (project / "b.txt").exists()


@pytest.mark.slow
async def test_yolo_once_covers_one_turn_and_keeps_the_denylist_and_skill_asks(
    home: Path, project: Path, tmp_path: Path
) -> None:
    """`/yolo once`, then a turn: the plain writes run unasked, the `.env` write is refused,
    the change to the skill still asks (and is refused by the user). The next turn asks again."""
    skill = a_skill(project)
    client = Client(lambda card, options: by_kind("reject_once")(options))
    edit = {"path": str(skill / "SKILL.md"), "old": "Do it.", "new": "Do it now."}
    rounds = [
        [
            write("w0", "a.txt"),
            write("e", ".env"),
            {"tool_call": {"id": "s", "name": "edit_replace", "arguments": edit}},
            write("w1", "b.txt"),
        ],
        [{"text": "done"}],
        [write("w2", "c.txt")],
        [{"text": "done"}],
    ]
    async with agent(home, project, rounds, client) as (conn, sid):
        await prompt(conn, sid, "/yolo once")
        await prompt(conn, sid, "write")
        assert [card.tool_call_id for card, _ in client.permissions] == ["s"]
        await prompt(conn, sid, "write again")
    assert [card.tool_call_id for card, _ in client.permissions] == ["s", "w2"]
    assert (project / "a.txt").exists() and (project / "b.txt").exists()
    assert not (project / ".env").exists() and not (project / "c.txt").exists()
    assert "Do it.\n" in (skill / "SKILL.md").read_text()


@pytest.mark.slow
async def test_yolo_on_switches_to_allow_all_and_off_goes_back(
    home: Path, project: Path, tmp_path: Path
) -> None:
    client = Client(lambda card, options: by_kind("reject_once")(options))
    rounds = [[write("w0", "a.txt")], [{"text": "done"}], [write("w1", "b.txt")], [{"text": "ok"}]]
    async with agent(home, project, rounds, client) as (conn, sid):
        await prompt(conn, sid, "/yolo on")
        await prompt(conn, sid, "write")
        await prompt(conn, sid, "/yolo off")
        await prompt(conn, sid, "write again")
    modes = [
        u.current_mode_id
        for u in client.updates
        if getattr(u, "session_update", None) == "current_mode_update"
    ]
    assert modes == ["allow-all", "ask"]
    assert [card.tool_call_id for card, _ in client.permissions] == ["w1"]
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()
