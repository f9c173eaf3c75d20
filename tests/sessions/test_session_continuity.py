"""One session, any editor: two `tether acp` processes (two editor windows) on one home. A session
has one writer at a time across processes, a prompt sees (and shows) what the other committed,
a folder is one identity however it is spelled, and sessions never prompted do not pile up. The
model is a loopback OpenAI-compatible server, so what each process sends is visible."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, cast

import anyio
import apsw
import pytest

from tests.support.harness import AgentProcess, spawn_agent
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply

pytestmark = pytest.mark.anyio


def _env(server: MockLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.url + "/v1", "TETHER_MODEL": "openai:gpt-5.5"}


def _answers(*texts: str, gate: threading.Event | None = None) -> list[Reply]:
    return [
        Reply(chunks=wire.chat_text([t]), gate=gate if i == 0 else None)
        for i, t in enumerate(texts)
    ]


async def _load(agent: AgentProcess, sid: str, project: Path) -> dict[str, Any]:
    params = {"sessionId": sid, "cwd": str(project), "mcpServers": []}
    return await agent.request("session/load", params)


def _conversation(request: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of each user and assistant message a request carried."""
    out: list[tuple[str, str]] = []
    for m in request["messages"]:
        if m["role"] not in ("user", "assistant"):
            continue
        content = m["content"]
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        out.append((m["role"], text))
    return out


def _stored_kinds(home: Path, sid: str) -> list[str]:
    db = apsw.Connection(str(home / "tether.db"))
    try:
        rows = db.execute(
            "SELECT body FROM messages WHERE session_id=? ORDER BY seq", (sid,)
        ).fetchall()
    finally:
        db.close()
    return [json.loads(cast(bytes, body))["type"] for (body,) in rows]


async def _until_posts(server: MockLLMServer, n: int) -> None:
    with anyio.fail_after(10):
        while len(server.posts) < n:
            await anyio.sleep(0.02)


def _texts(updates: list[dict[str, Any]], kind: str) -> str:
    return "".join(u["content"].get("text", "") for u in updates if u["sessionUpdate"] == kind)


@pytest.mark.slow
async def test_a_turn_committed_by_one_process_is_in_the_others_next_request_and_updates(
    home: Path, project: Path
) -> None:
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", *_answers("answer one", "answer two", "answer three"))
        async with (
            spawn_agent(home, env=_env(server)) as a,
            spawn_agent(home, env=_env(server)) as b,
        ):
            await a.initialize()
            await b.initialize()
            sid = await a.new_session(project)
            assert "result" in await a.prompt(sid, "one")
            assert "result" in await _load(
                b, sid, project
            )  # b opens the session: it shows turn one
            assert "result" in await a.prompt(sid, "two")  # a goes on; b's screen is behind
            seen = len(b.updates(sid))
            assert "result" in await b.prompt(sid, "three")
            later = b.updates(sid)[seen:]
    assert _conversation(server.posts[-1].json()) == [
        ("user", "one"),
        ("assistant", "answer one"),
        ("user", "two"),
        ("assistant", "answer two"),
        ("user", "three"),
    ]
    # b was shown a's second turn before its own answer
    assert _texts(later, "user_message_chunk") == "two"
    shown = _texts(later, "agent_message_chunk")
    assert "answer two" in shown and shown.index("answer two") < shown.index("answer three")


@pytest.mark.slow
async def test_a_prompt_from_another_process_during_a_turn_is_refused_and_nothing_interleaves(
    home: Path, project: Path
) -> None:
    gate = threading.Event()
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", *_answers("a's answer", "b's answer", gate=gate))
        async with (
            spawn_agent(home, env=_env(server)) as a,
            spawn_agent(home, env=_env(server)) as b,
        ):
            await a.initialize()
            await b.initialize()
            sid = await a.new_session(project)
            assert "result" in await _load(b, sid, project)
            params = {"sessionId": sid, "prompt": [{"type": "text", "text": "from a"}]}
            a_turn = await a.start_request("session/prompt", params)
            await _until_posts(server, 1)  # a's turn is running: its request is at the model
            refused = await b.prompt(sid, "from b")
            gate.set()
            assert (await a.until_response(a_turn))["result"]["stopReason"] == "end_turn"
            assert "result" in await b.prompt(sid, "from b")  # free again once a's turn ended
    assert refused["error"]["code"] == -32001
    assert "another window" in refused["error"]["message"]
    assert len(server.posts) == 2
    assert _stored_kinds(home, sid) == ["user", "assistant", "user", "assistant"]
    assert _conversation(server.posts[-1].json()) == [
        ("user", "from a"),
        ("assistant", "a's answer"),
        ("user", "from b"),
    ]


@pytest.mark.slow
async def test_killing_the_holder_frees_the_session(home: Path, project: Path) -> None:
    gate = threading.Event()
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", *_answers("never seen", "b's answer", gate=gate))
        async with (
            spawn_agent(home, env=_env(server)) as a,
            spawn_agent(home, env=_env(server)) as b,
        ):
            await a.initialize()
            await b.initialize()
            sid = await a.new_session(project)
            params = {"sessionId": sid, "prompt": [{"type": "text", "text": "from a"}]}
            await a.start_request("session/prompt", params)
            await _until_posts(server, 1)
            a.proc.kill()  # SIGKILL: a leaves its lease behind
            await a.proc.wait()
            assert "result" in await _load(b, sid, project)
            answered = await b.prompt(sid, "from b")
            gate.set()
    assert answered["result"]["stopReason"] == "end_turn"


@pytest.mark.slow
async def test_a_lease_of_a_process_on_another_machine_expires(home: Path, project: Path) -> None:
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", *_answers("answer"))
        async with spawn_agent(home, env=_env(server)) as b:
            await b.initialize()
            sid = await b.new_session(project)
            db = apsw.Connection(str(home / "tether.db"))
            until = time.time() + 1.5
            db.execute(
                "UPDATE sessions SET lease_holder='another-machine|4242:x', lease_until=? WHERE id=?",
                (until, sid),
            )
            db.close()
            refused = await b.prompt(sid, "too early")
            await anyio.sleep(max(0.0, until - time.time()) + 0.1)
            answered = await b.prompt(sid, "after the lease")
    assert "tether process 4242 on another-machine" in refused["error"]["message"]
    assert answered["result"]["stopReason"] == "end_turn"
    assert len(server.posts) == 1


@pytest.mark.slow
async def test_a_folder_is_one_identity_however_it_is_spelled(
    home: Path, project: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(project, target_is_directory=True)
    with MockLLMServer() as server:
        server.script("/v1/chat/completions", *_answers("one", "two"))
        async with spawn_agent(home, env=_env(server)) as agent:
            await agent.initialize()
            by_link = await agent.new_session(link)  # an editor opened through the symlink
            await agent.prompt(by_link, "through the link")
            by_path = await agent.new_session(project)
            await agent.prompt(by_path, "through the path")
            spellings = [
                str(project),
                f"{project}/",
                str(project).replace("/project", "//project"),
                f"{project}/.",
                f"{project}/../project",
                str(link),
                f"{link}/",
            ]
            listed: list[set[str]] = []
            cwds: set[str] = set()
            for cwd in spellings:
                answer = await agent.request("session/list", {"cwd": cwd})
                listed.append({s["sessionId"] for s in answer["result"]["sessions"]})
                cwds |= {s["cwd"] for s in answer["result"]["sessions"]}
    assert all(found == {by_link, by_path} for found in listed), list(
        zip(spellings, listed, strict=True)
    )
    assert cwds == {str(project.resolve())}


async def test_the_store_moves_old_rows_to_real_paths_and_forgets_unprompted_sessions(
    home: Path, project: Path, tmp_path: Path
) -> None:
    from tether.engine.sessions.migrations import migrate
    from tether.engine.sessions.store import Store

    link = tmp_path / "link"
    link.symlink_to(project, target_is_directory=True)
    db = apsw.Connection(str(home / "tether.db"))
    migrate(db, upto=3)  # a store from before leases and real paths
    rows = [
        ("sess_link", f"{link}/", "2026-01-01T00:00:00.000Z", True),
        (
            "sess_slashes",
            str(project).replace("/project", "//project"),
            "2026-01-01T00:00:00.000Z",
            True,
        ),
        ("sess_old_unprompted", str(project), "2026-01-01T00:00:00.000Z", False),
        (
            "sess_new_unprompted",
            str(project),
            time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            False,
        ),
    ]
    message = json.dumps({"type": "user", "parts": [{"type": "text", "text": "hi"}]})
    for sid, cwd, updated, prompted in rows:
        db.execute(
            "INSERT INTO sessions(id, cwd, title, created_at, updated_at, state) VALUES(?, ?, NULL, ?, ?, '{}')",
            (sid, cwd, updated, updated),
        )
        if prompted:
            db.execute("INSERT INTO messages VALUES(?, 0, ?)", (sid, message))
    db.close()
    store = Store(home / "tether.db")
    listed = await store.list(str(link), None, 10)
    await store.close()
    assert {r.id for r in listed} == {"sess_link", "sess_slashes"}
    assert {r.cwd for r in listed} == {os.path.realpath(project)}
    db = apsw.Connection(str(home / "tether.db"))
    ids = {sid for (sid,) in db.execute("SELECT id FROM sessions").fetchall()}
    db.close()
    assert ids == {"sess_link", "sess_slashes", "sess_new_unprompted"}


class _SdkClient:
    """The official Python SDK's client side: keeps every update it is sent."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, *args: Any, **kw: Any) -> Any:
        raise AssertionError("these turns need no permission")


@pytest.mark.slow
async def test_the_official_sdk_continues_a_session_in_a_second_process(
    home: Path, project: Path
) -> None:
    """Two windows driven by the official Python SDK: b is refused while a's turn runs, then
    shown a's turn before its own, and its request carries a's turn."""
    import sys

    from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
    from acp.connection import StreamDirection, StreamEvent

    from tests.support.acp_schema import validate_agent_frame
    from tests.support.harness import REPO

    def observe(event: StreamEvent) -> None:
        if event.direction == StreamDirection.INCOMING:
            validate_agent_frame(event.message)

    gate = threading.Event()
    with MockLLMServer() as server:
        server.script(
            "/v1/chat/completions", *_answers("from a, answered", "from b, answered", gate=gate)
        )
        env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO), **_env(server)}
        a_client, b_client = _SdkClient(), _SdkClient()
        command = (sys.executable, "-m", "tether", "acp")
        options: dict[str, Any] = {
            "env": env,
            "cwd": REPO,
            "transport_kwargs": {"stderr": None},
            "observers": [observe],
        }
        async with (
            spawn_agent_process(a_client, *command, **options) as (a, _),  # pyright: ignore[reportArgumentType]
            spawn_agent_process(b_client, *command, **options) as (b, _),  # pyright: ignore[reportArgumentType]
        ):
            await a.initialize(protocol_version=PROTOCOL_VERSION)
            await b.initialize(protocol_version=PROTOCOL_VERSION)
            sid = (await a.new_session(cwd=str(project), mcp_servers=[])).session_id
            await b.load_session(cwd=str(project), session_id=sid)
            code, message = 0, ""
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: a.prompt(session_id=sid, prompt=[text_block("from a")]))
                await _until_posts(server, 1)
                with pytest.raises(RequestError) as refused:
                    await b.prompt(session_id=sid, prompt=[text_block("from b")])
                code, message = refused.value.code, str(refused.value)
                gate.set()
            answer = await b.prompt(session_id=sid, prompt=[text_block("from b")])
    assert code == -32001 and "another window" in message
    assert answer.stop_reason == "end_turn"
    shown = [
        getattr(u.content, "text", "")
        for u in b_client.updates
        if getattr(u, "session_update", "") in ("user_message_chunk", "agent_message_chunk")
    ]
    assert "".join(shown).index("from a, answered") < "".join(shown).index("from b, answered")
    assert _conversation(server.posts[-1].json()) == [
        ("user", "from a"),
        ("assistant", "from a, answered"),
        ("user", "from b"),
    ]
