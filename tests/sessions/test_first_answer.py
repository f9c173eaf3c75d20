"""The chores a session's opening starts in the background (the sandbox's probe, the model
lists) go at once when no prompt came with `session/new`, and after the first answer started
when one did (tether/engine/sessions/first_answer.py)."""

from __future__ import annotations

import anyio
import pytest

from tether.engine.sessions.first_answer import LIMIT, SETTLE, FirstAnswer

pytestmark = pytest.mark.anyio


async def test_without_a_prompt_chores_go_after_a_short_settle() -> None:
    first = FirstAnswer()
    started = anyio.current_time()
    with anyio.fail_after(LIMIT / 2):
        await first.wait()
    assert anyio.current_time() - started >= SETTLE


async def test_with_a_prompt_chores_wait_for_its_answer() -> None:
    first = FirstAnswer()
    order: list[str] = []

    async def chore() -> None:
        await first.wait()
        order.append("chore")

    async with anyio.create_task_group() as tg:
        tg.start_soon(chore)
        first.prompted()
        await anyio.sleep(SETTLE * 3)
        order.append("answer")
        first.answered()
    assert order == ["answer", "chore"]
    with anyio.fail_after(1):  # answered: later chores go at once
        await first.wait()
