"""The offline demo introduces itself once per session, saying how to configure a real model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.harness import AgentProcess, spawn_agent
from tether.engine.providers.demo import INTRODUCTION

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def turn_text(agent: AgentProcess, sid: str, prompt: str) -> str:
    before = len(agent.updates(sid))
    resp = await agent.prompt(sid, prompt)
    assert resp["result"]["stopReason"] == "end_turn"
    return "".join(
        u["content"]["text"]
        for u in agent.updates(sid)[before:]
        if u["sessionUpdate"] == "agent_message_chunk"
    )


async def test_the_first_answer_of_a_session_says_it_is_the_demo(home: Path, project: Path) -> None:
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        first = await turn_text(agent, sid, "show me")
        assert first.startswith(INTRODUCTION + "\n\nLet me look around the project.")
        assert "\n" not in INTRODUCTION and "OPENAI_API_KEY" in INTRODUCTION
        assert "tether config init" in INTRODUCTION
        again = await turn_text(agent, sid, "again")
        assert INTRODUCTION not in again and again.startswith("Let me look around")
        other = await agent.new_session(project)
        assert (await turn_text(agent, other, "hi")).startswith(INTRODUCTION)


async def test_tool_call_ids_are_unique_within_the_session(home: Path, project: Path) -> None:
    """ACP: a toolCallId is unique within its session (VS Code's panel overwrote one turn's
    cards with the next's when the demo reused them)."""
    async with spawn_agent(home) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await turn_text(agent, sid, "one")
        await turn_text(agent, sid, "two")
        ids = [u["toolCallId"] for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call"]
    assert len(ids) >= 4 and len(set(ids)) == len(ids), ids
