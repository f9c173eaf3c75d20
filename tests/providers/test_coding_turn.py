"""Real coding work end to end: through `tether acp` and the OpenAI-compatible adapter (a
loopback server speaking chat completions), the model runs the tests, sees them fail, fixes the
code with `edit_replace`, and reruns them green."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.harness import spawn_agent
from tests.support.providers import wire
from tests.support.providers.mock_llm_server import MockLLMServer, Reply

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CODE = "def add(a, b):\n    return a - b\n"
TEST = (
    "import unittest\n\nfrom calc import add\n\n\n"
    "class T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)


def _tool_text(body: dict[str, object], call_id: str) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return next(m["content"] for m in messages if m.get("tool_call_id") == call_id)


async def test_run_the_tests_fix_the_code_rerun_them(home: Path, project: Path) -> None:
    (project / "calc.py").write_text(CODE)
    (project / "test_calc.py").write_text(TEST)
    # -B: the fix keeps calc.py's size and can land in the second of the first run, which
    # Python's cached bytecode (keyed by size and mtime in seconds) would not see.
    run = {"argv": [sys.executable, "-B", "-m", "unittest", "-q"]}
    fix = {"path": "calc.py", "old": "return a - b", "new": "return a + b"}
    with MockLLMServer() as server:
        server.script(
            "/v1/chat/completions",
            Reply(chunks=wire.chat_call("run_argv", run, "run1")),
            Reply(chunks=wire.chat_call("edit_replace", fix, "fix1")),
            Reply(chunks=wire.chat_call("run_argv", run, "run2")),
            Reply(chunks=wire.chat_text(["Fixed: ", "add() adds now; the tests pass."])),
        )
        env = {"OPENAI_BASE_URL": server.url + "/v1", "TETHER_MODEL": "openai:gpt-5.5"}
        async with spawn_agent(home, env=env) as agent:
            await agent.initialize()
            sid = await agent.new_session(project)
            resp = await agent.prompt(sid, "Make the tests pass", timeout=60)
            assert resp["result"]["stopReason"] == "end_turn"
            cards = {
                u["toolCallId"]: u for u in agent.updates(sid) if u["sessionUpdate"] == "tool_call"
            }
        bodies = [p.json() for p in server.posts]
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    first_run = _tool_text(bodies[1], "run1")
    assert "exit code 1" in first_run and "FAILED" in first_run
    assert _tool_text(bodies[2], "fix1").startswith("[approval] user (once)\n")
    second_run = _tool_text(bodies[3], "run2")
    assert "exit code 0" in second_run and "OK" in second_run
    assert cards["run1"]["kind"] == "execute" and "unittest -q" in cards["run1"]["title"]
    assert cards["fix1"]["kind"] == "edit"
    assert [c["type"] for c in cards["fix1"]["content"]] == ["diff"]
