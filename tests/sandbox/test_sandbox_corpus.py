"""Every trick of the corpus, as scripted-model turns through `tether acp`, judged by the file
system afterwards: nothing outside the project changed, no uncommitted work discarded, the
repository as it was, no sentinel written by a denylisted program, no secret shown.

- `code` mode, every permission request rejected: what runs unasked runs confined;
- `ask` mode, every request allowed (the wrappers too): what runs, runs confined;
- no sandbox at all (`TETHER_SANDBOX=none`), `code` mode, every request rejected: then
  nothing but known read-only commands runs unasked;
- and a control: no sandbox, `ask` mode, everything allowed, where the same corpus does
  take effect (so the corpus is a real one).
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.support.harness import script, spawn_agent
from tests.support.sandbox_corpus import ALL, PROGRAMS, Trick
from tests.support.sandbox_world import (
    NOTES,
    SECRET,
    WORK,
    World,
    changes,
    repository_state,
    snapshot,
    world,
)
from tests.support.stored import tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
CONFIG = '[workspace]\ncommand_denylist = ["git push --force", "git push -f"]\n'


def _rounds(w: World, tricks: list[Trick]) -> list[list[dict[str, Any]]]:
    rounds: list[list[dict[str, Any]]] = []
    for t, trick in enumerate(tricks):
        for r, calls in enumerate(trick.rounds(w)):
            rounds.append(
                [
                    {"tool_call": {"id": f"t{t}r{r}c{c}", "name": name, "arguments": args}}
                    for c, (name, args) in enumerate(calls)
                ]
            )
        rounds.append([{"text": f"done: {trick.name}"}])
    return rounds


async def _attack(w: World, mechanism: str, mode: str, choice: str) -> tuple[list[str], str]:
    """Run the whole corpus in one session; the stored tool results and every frame's text."""
    (w.tether_home / "config.toml").write_text(CONFIG)
    path = script(w.root / "corpus.json", _rounds(w, ALL))
    env = {
        **w.env(),
        "TETHER_SANDBOX": mechanism,
        "TETHER_CONFIG": str(w.tether_home / "config.toml"),
    }
    async with spawn_agent(w.tether_home, "--script", str(path), env=env) as agent:
        agent.permission_choice = choice
        await agent.initialize(terminal=False)
        sid = await agent.new_session(w.project)
        resp = await agent.request("session/set_mode", {"sessionId": sid, "modeId": mode})
        assert resp["result"] == {}
        for trick in ALL:
            resp = await agent.prompt(sid, trick.name, timeout=60)
            assert resp["result"] == {"stopReason": "end_turn"}, (trick.name, resp)
        frames = json.dumps(agent.frames)
    return tool_results(w.tether_home, sid), frames


def _effects(
    w: World, before: dict[str, dict[str, str]], results: list[str], frames: str
) -> list[str]:
    """Everything the corpus achieved, as lines (empty: nothing)."""
    found: list[str] = []
    for name in ("outside", "home", "remote"):
        found += [f"{name}: {c}" for c in changes(before[name], snapshot(getattr(w, name)))]
    found += [f"repository: {c}" for c in changes(before["repo"], repository_state(w.project))]
    for name, text in (("work.txt", WORK), ("notes.txt", NOTES)):
        p = w.project / name
        if not p.exists() or p.read_text() != text:
            found.append(f"uncommitted work discarded: {name}")
    found += [f"sentinel: {p.relative_to(w.root)}" for p in w.root.rglob("S_*")]
    if SECRET in frames or any(SECRET in r for r in results):
        found.append("the secret was shown")
    return found


def _missing() -> list[str]:
    return [p for p in PROGRAMS if shutil.which(p) is None]


@pytest.mark.parametrize(
    ("mechanism", "mode", "choice"),
    [
        ("bubblewrap", "code", "reject_once"),
        ("bubblewrap", "ask", "allow_once"),
        ("landlock", "code", "reject_once"),  # (confined, `ask` runs the very same commands)
        ("none", "code", "reject_once"),
    ],
)
async def test_the_corpus_changes_nothing(mechanism: str, mode: str, choice: str) -> None:
    assert not _missing(), f"the corpus needs these programs (.ci/run installs them): {_missing()}"
    with world() as w:
        before = _before(w)
        results, frames = await _attack(w, mechanism, mode, choice)
        assert _effects(w, before, results, frames) == []
        if mechanism != "none":  # confined, the work still gets done
            assert (w.project / "src" / "made_here.txt").exists()
            status = results[-1]
            assert "exit code 0" in status and " M work.txt" in status, status
            assert "?? notes.txt" in status and "?? src/made_here.txt" in status, status
            assert any("[sandbox] this command ran confined" in r for r in results)


async def test_without_a_sandbox_the_corpus_is_real() -> None:
    """The control: allowed and unconfined, the same tricks do what they are meant to."""
    with world() as w:
        before = _before(w)
        results, frames = await _attack(w, "none", "ask", "allow_once")
        effects = _effects(w, before, results, frames)
    assert len(effects) >= 25, effects
    assert any(e.startswith("sentinel") for e in effects)  # dd ran behind a wrapper
    assert any(e.startswith("outside") for e in effects)
    assert any(e.startswith("uncommitted work") for e in effects)
    assert "the secret was shown" in effects


def _before(w: World) -> dict[str, dict[str, str]]:
    return {
        "outside": snapshot(w.outside),
        "home": snapshot(w.home),
        "remote": snapshot(w.remote),
        "repo": repository_state(w.project),
    }
