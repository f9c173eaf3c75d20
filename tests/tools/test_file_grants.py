"""An "always allow" on a file tool's card covers exactly what the card said: that operation
(trash is not permanent deletion, creating is not replacing) on that path, and the option says
so. Before, the grant was keyed to the parent folder: "Always allow delete_path in …/ws" on
"Move tmp.txt to the system trash" later deleted an untracked tree for good, unasked. Judged by
the files after the second call, whose request the user rejects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.inprocess import agent_in_memory
from tests.support.stored import tool_results
from tether.tools import catalog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _call(cid: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": arguments}}


def _setup(project: Path) -> None:
    (project / "tmp.txt").write_text("scratch\n")
    (project / "other.txt").write_text("other\n")
    (project / "a.txt").write_text("alpha\n")
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("print('the user's work')\n")


def _intact(project: Path) -> None:
    assert (project / "src" / "main.py").read_text() == "print('the user's work')\n"
    assert (project / "other.txt").read_text() == "other\n"
    assert (project / "README.md").read_text() == "# Demo project\n\nHello.\n"
    assert not (project / "moved").exists() and not (project / "c2.md").exists()


# (the call always allowed, what its "always" option says, a later call it must not cover)
CASES = {
    "trash-then-permanent": (
        _call("c1", "delete_path", path="tmp.txt"),
        "Always allow moving tmp.txt to the system trash",
        _call("c2", "delete_path", path="src", permanent=True),
    ),
    "trash-then-another-path": (
        _call("c1", "delete_path", path="tmp.txt"),
        "Always allow moving tmp.txt to the system trash",
        _call("c2", "delete_path", path="other.txt"),
    ),
    "create-then-replace": (
        _call("c1", "write_file", path="new.txt", content="new\n"),
        "Always allow creating new.txt",
        _call("c2", "write_file", path="README.md", content="replaced\n", overwrite=True),
    ),
    "edit-then-another-file": (
        _call("c1", "edit_replace", path="a.txt", old="alpha", new="beta"),
        "Always allow editing a.txt",
        _call("c2", "edit_replace", path="README.md", old="Hello.", new="Bye."),
    ),
    "move-then-another-move": (
        _call("c1", "move_path", src="a.txt", dst="b.txt"),
        "Always allow moving a.txt to b.txt",
        _call("c2", "move_path", src="src", dst="moved"),
    ),
    "copy-then-another-copy": (
        _call("c1", "copy_path", src="README.md", dst="c1.md"),
        "Always allow copying README.md to c1.md",
        _call("c2", "copy_path", src="README.md", dst="c2.md"),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_an_always_answer_covers_only_what_its_card_named(
    home: Path, project: Path, case: str
) -> None:
    first, option, second = CASES[case]
    _setup(project)
    rounds = [{"events": [first]}, {"events": [{"text": "one"}]}]
    rounds += [{"events": [second]}, {"events": [{"text": "two"}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        client.choice = "allow_always"
        await client.prompt(sid, "first")
        client.choice = "reject"
        await client.prompt(sid, "second")
    _intact(project)
    assert len(client.permissions) == 2  # the second call asked
    names = [o["name"] for o in client.permissions[0]["options"]]
    assert option in names
    assert tool_results(home, sid)[1].startswith("error [REJECTED]: user declined")


async def test_the_same_operation_on_the_same_path_is_covered(home: Path, project: Path) -> None:
    _setup(project)
    trash = _call("c1", "delete_path", path="tmp.txt")
    rounds = [{"events": [trash]}, {"events": [{"text": "one"}]}]
    rounds += [{"events": [{**trash, "tool_call": {**trash["tool_call"], "id": "c2"}}]}]
    rounds += [{"events": [{"text": "two"}]}]
    async with agent_in_memory(home, {"rounds": rounds}, catalog()) as client:
        sid = await client.start(project)
        client.choice = "allow_always"
        await client.prompt(sid, "first")
        (project / "tmp.txt").write_text("scratch again\n")
        client.choice = "reject"
        await client.prompt(sid, "second")
        before = len(client.updates)
        await client.prompt(sid, "/grants")
        listed = "".join(
            u["content"]["text"]
            for u in client.updates[before:]
            if u["sessionUpdate"] == "agent_message_chunk"
        )
    assert len(client.permissions) == 1
    assert not (project / "tmp.txt").exists()
    assert tool_results(home, sid)[1].startswith("[approval] grant (session)\n")
    assert "always allow: moving tmp.txt to the system trash" in listed
