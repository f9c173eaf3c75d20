"""ask_user: a form when the client offers one, a choice on the call's card when it does not,
and a clear "cannot ask here" otherwise: never an empty answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import script, spawn_agent
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _ask(**arguments: Any) -> list[list[dict[str, Any]]]:
    call = {"tool_call": {"id": "q1", "name": "ask_user", "arguments": arguments}}
    return [[call], [{"text": "thanks"}]]


async def _run(
    home: Path, project: Path, tmp_path: Path, rounds: list[list[dict[str, Any]]], **caps: Any
) -> tuple[list[dict[str, Any]], str]:
    asked: list[dict[str, Any]] = []
    async with spawn_agent(home, "--script", str(script(tmp_path / "s.json", rounds))) as agent:
        default = agent.handler

        async def handler(method: str, params: Any) -> Any:
            asked.append({"method": method, **params})
            if method == "elicitation/create":
                return {"action": "accept", "content": {"choice": "Postgres", "port": 5432}}
            if method == "session/request_permission":
                second = params["options"][1]["optionId"]
                return {"outcome": {"outcome": "selected", "optionId": second}}
            return await default(method, params)

        agent.handler = handler
        await agent.initialize(**caps)
        sid = await agent.new_session(project)
        resp = await agent.prompt(sid, "go")
        assert resp["result"]["stopReason"] == "end_turn"
    [result] = tool_results(home, sid)
    return asked, result


async def test_a_form_when_the_client_offers_one(home: Path, project: Path, tmp_path: Path) -> None:
    rounds = _ask(
        question="Which database?",
        options=["SQLite", "Postgres"],
        fields=[{"name": "port", "label": "Port", "type": "integer", "required": False}],
    )
    asked, result = await _run(home, project, tmp_path, rounds, elicitation={"form": {}})
    [form] = asked
    assert form["method"] == "elicitation/create" and form["message"] == "Which database?"
    assert form["toolCallId"] == "q1"
    props = form["requestedSchema"]["properties"]
    assert [o["const"] for o in props["choice"]["oneOf"]] == ["SQLite", "Postgres"]
    assert props["port"] == {"type": "integer", "title": "Port"}
    assert form["requestedSchema"]["required"] == ["choice"]
    assert result == "The user answered:\n- choice: Postgres\n- port: 5432"


async def test_choices_on_the_card_without_forms(home: Path, project: Path, tmp_path: Path) -> None:
    asked, result = await _run(
        home, project, tmp_path, _ask(question="Ship it?", options=["Yes", "Not yet"])
    )
    [request] = asked
    assert request["method"] == "session/request_permission"
    assert request["toolCall"] == {"toolCallId": "q1", "title": "Ship it?"}
    assert [o["name"] for o in request["options"]] == ["Yes", "Not yet"]
    assert len({o["kind"] for o in request["options"]}) == 2
    assert result == "The user answered:\n- choice: Not yet"


async def test_a_question_this_client_cannot_take_says_so(
    home: Path, project: Path, tmp_path: Path
) -> None:
    asked, result = await _run(home, project, tmp_path, _ask(question="What is the API key name?"))
    assert asked == []
    assert result.startswith("error [ASK_UNAVAILABLE]: this editor cannot show a form")
    assert "ask the user in your reply" in result
