"""The PTY limits as settings (issue 32, item 2): how many PTYs a session may have open and
how much one may print, raised by the user when reached (asked on the call's card, like the
round limit) or without asking under `auto_continue_limits`; on real pseudo-terminals, and
over ACP with the card a client sees."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.harness import configured_turn
from tests.support.stored import tool_results
from tests.support.toolctx import make_ctx
from tests.tools.test_pty_tools import Failed, call
from tether.engine.local.fallbacks import PolicyApproval
from tether.engine.local.pty_host import PtyHost
from tether.engine.seam import ConfirmDecision, ConfirmRequest, RoundCard
from tether.tools.pty import close_pty, open_pty, read_pty

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminals"),
]
PY = sys.executable
FLOOD = [PY, "-c", "print('z' * 200_000); print('THE END')"]


class Answers:
    """An approval that answers the requests it is asked in order, and keeps them."""

    def __init__(self, *answers: ConfirmDecision) -> None:
        self.answers = list(answers)
        self.asked: list[ConfirmRequest] = []

    async def confirm(
        self, batch: list[ConfirmRequest], card: RoundCard | None = None
    ) -> list[ConfirmDecision]:
        self.asked += batch
        return [self.answers.pop(0) for _ in batch]


@pytest.mark.slow
async def test_the_user_raises_the_pty_limit_and_the_output_budget(
    project: Path, tmp_path: Path
) -> None:
    host = PtyHost(limit=1, output_budget=50_000)
    approval = Answers(ConfirmDecision("allow"), ConfirmDecision("allow", remember=True))
    ctx = make_ctx(project, tmp_path, pty=host, approval=approval, call_id="c1")
    try:
        await call(open_pty, ctx, argv=["cat"])
        second = await call(open_pty, ctx, argv=FLOOD)
        assert second.raw_output["ptyId"] == 2
        [more_ptys] = approval.asked
        assert more_ptys.title == "Open more PTYs than the session's limit?"
        assert more_ptys.call_id == "c1"  # on the call's own card
        flood = await call(read_pty, ctx, pty_id=2, until="THE END", timeout_seconds=30)
        assert flood.text.startswith("pty 2: "), flood.text
        assert "closed by tether" not in flood.text
        assert "'THE END' seen" in flood.text
        assert approval.asked[1].title == "Let pty 2 print more than 50,000 bytes?"
        assert len(approval.asked) == 2  # "always": no limit for that PTY, asked once
    finally:
        await host.close_all()


@pytest.mark.slow
async def test_auto_raise_goes_past_both_limits_without_asking(
    project: Path, tmp_path: Path
) -> None:
    host = PtyHost(limit=1, output_budget=50_000, auto_raise=True)
    ctx = make_ctx(project, tmp_path, pty=host, approval=Answers())  # asking would fail
    try:
        await call(open_pty, ctx, argv=["cat"])
        await call(open_pty, ctx, argv=FLOOD)
        flood = await call(read_pty, ctx, pty_id=2, until="THE END", timeout_seconds=30)
        assert "'THE END' seen" in flood.text and "closed by tether" not in flood.text
    finally:
        await host.close_all()


@pytest.mark.slow
async def test_a_rejected_raise_keeps_the_limit(project: Path, tmp_path: Path) -> None:
    host = PtyHost(limit=1)
    ctx = make_ctx(project, tmp_path, pty=host, approval=PolicyApproval(False))
    try:
        await call(open_pty, ctx, argv=["cat"])
        with pytest.raises(Failed) as full:
            await call(open_pty, ctx, argv=["cat"])
        assert full.value.code == "PTY_LIMIT"
        await call(close_pty, ctx, pty_id=1)
    finally:
        await host.close_all()


@pytest.mark.slow
async def test_max_ptys_from_the_config_file_asks_over_acp(home: Path, project: Path) -> None:
    config = "[agent]\nmax_ptys = 1\n"
    calls = [
        {"name": "open_pty", "arguments": {"argv": ["cat"]}},
        {"name": "open_pty", "arguments": {"argv": ["cat"]}},
    ]
    sid, frames = await configured_turn(home, project, config, calls)
    asked = [
        f["params"]
        for f in frames
        if f.get("method") == "session/request_permission"
        and f["params"]["toolCall"].get("title") == "Open more PTYs than the session's limit?"
    ]
    assert len(asked) == 1, [f.get("method") for f in frames]
    kinds = {o["kind"] for o in asked[0]["options"]}
    assert {"allow_once", "reject_once"} <= kinds
    results = tool_results(home, sid)
    assert sum("started" in r for r in results) == 2, results  # the harness allowed it
