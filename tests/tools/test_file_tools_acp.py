"""The file tools in real turns: the frames a client sees, a client that serves `fs/*` (unsaved
buffers, writes landing in the editor) and one that does not, and the hardening regressions
(special files, huge files, bad paths, same-round overwrites) through the whole pipeline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.harness import script, spawn_agent
from tests.support.inprocess import Client, agent_in_memory
from tests.support.stored import tool_results
from tether.engine.history import ToolResultMessage
from tether.engine.registry import CallPlan, ToolArgs, ToolDef, tool
from tether.engine.seam import Capabilities
from tether.rpc.rpc_error import RpcError
from tether.tools import catalog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
FS = {"fs": {"readTextFile": True, "writeTextFile": True}}


def _call(name: str, cid: str, **args: Any) -> dict[str, Any]:
    return {"tool_call": {"id": cid, "name": name, "arguments": args}}


def _rounds(*rounds: list[dict[str, Any]]) -> dict[str, Any]:
    return {"rounds": [{"events": r} for r in rounds] + [{"events": [{"text": "done"}]}]}


class Editor:
    """A client's `fs/*`: open buffers (unsaved text) over the disk, writes saved to disk."""

    def __init__(self, client: Client, buffers: dict[Path, str]) -> None:
        self.buffers = buffers
        self.requests: list[tuple[str, str]] = []
        client.peer.on_request("fs/read_text_file", self.read)
        client.peer.on_request("fs/write_text_file", self.write)

    async def read(self, params: dict[str, Any]) -> dict[str, Any]:
        path = Path(params["path"])
        self.requests.append(("read", path.name))
        if path in self.buffers:
            return {"content": self.buffers[path]}
        if not path.is_file():
            raise RpcError.not_found(str(path))
        return {"content": path.read_text()}

    async def write(self, params: dict[str, Any]) -> dict[str, Any]:
        path = Path(params["path"])
        self.requests.append(("write", path.name))
        self.buffers.pop(path, None)
        path.write_text(params["content"])
        return {}


def _calls(client: Client, kind: str) -> list[dict[str, Any]]:
    return [u for u in client.updates if u["sessionUpdate"] == kind]


EDIT_SCRIPT = _rounds(
    [_call("read_file", "r1", path="README.md")],
    [_call("edit_replace", "e1", path="README.md", old="Hello.", new="Hello, world.")],
)


async def test_a_client_fs_serves_unsaved_buffers_and_takes_the_writes(
    home: Path, project: Path
) -> None:
    readme = project / "README.md"
    async with agent_in_memory(home, EDIT_SCRIPT, catalog()) as client:
        editor = Editor(client, {readme: "# Demo project\n\nUnsaved line.\nHello.\n"})
        sid = await client.start(project, FS)
        assert await client.prompt(sid, "go") == "end_turn"
    read, edit = tool_results(home, sid)
    assert read == "L1-4 of 4\n# Demo project\n\nUnsaved line.\nHello."
    assert edit == (
        "[approval] user (once)\nedited README.md: replaced 1 of 1 match at line 4; 0 remain"
    )
    assert readme.read_text() == "# Demo project\n\nUnsaved line.\nHello, world.\n"
    assert ("write", "README.md") in editor.requests
    card = _calls(client, "tool_call")[1]
    assert card["title"] == "Edit README.md" and card["kind"] == "edit"
    assert card["locations"] == [{"path": str(readme), "line": 4}]
    assert card["content"] == [
        {
            "type": "diff",
            "path": str(readme),
            "oldText": "# Demo project\n\nUnsaved line.\nHello.\n",
            "newText": "# Demo project\n\nUnsaved line.\nHello, world.\n",
        }
    ]
    [asked] = client.permissions
    assert asked["toolCall"]["toolCallId"] == "e1"


async def test_without_client_fs_the_same_tools_use_the_disk(home: Path, project: Path) -> None:
    readme = project / "README.md"
    async with agent_in_memory(home, EDIT_SCRIPT, catalog()) as client:
        editor = Editor(client, {readme: "unsaved text the agent must not see\n"})
        sid = await client.start(project, {})
        assert await client.prompt(sid, "go") == "end_turn"
    assert editor.requests == []
    assert tool_results(home, sid)[0] == "L1-3 of 3\n# Demo project\n\nHello."
    assert readme.read_text() == "# Demo project\n\nHello, world.\n"
    done = [u for u in _calls(client, "tool_call_update") if u.get("status") == "completed"]
    assert done[-1]["content"][0]["type"] == "diff"


async def test_special_files_never_reach_the_editor(home: Path, project: Path) -> None:
    os.mkfifo(project / "pipe")
    turn = _rounds(
        [
            _call("read_file", "r1", path="pipe"),
            _call("write_file", "w1", path="pipe", content="x", overwrite=True),
        ]
    )
    async with agent_in_memory(home, turn, catalog()) as client:
        editor = Editor(client, {})
        sid = await client.start(project, FS)
        with anyio.fail_after(10):
            assert await client.prompt(sid, "go") == "end_turn"
    assert editor.requests == [] and client.permissions == []
    assert (
        tool_results(home, sid)
        == [
            "error [NOT_A_REGULAR_FILE]: pipe is not a regular file (a FIFO, device or socket); "
            "only regular files are read or written"
        ]
        * 2
    )


class BrokenArgs(ToolArgs):
    x: int


def _broken_tool() -> ToolDef:
    @tool(kind="read", read_only=True)
    async def broken(ctx: Capabilities, args: BrokenArgs) -> str:
        """A tool whose planner has a bug.

        Args:
            x: Anything.
        """
        return "unreachable"

    @broken.planned_by
    async def _plan(ctx: Capabilities, args: BrokenArgs, mode: str) -> CallPlan:
        raise RuntimeError("planner bug")

    return broken


async def test_bad_paths_fail_the_call_not_the_turn(home: Path, project: Path) -> None:
    (project / "loop").symlink_to(project / "loop")
    turn = _rounds(
        [
            _call("read_file", "a", path="a\u0000b"),
            _call("read_file", "b", path="loop"),
            _call("read_file", "c", path="x" * 5000),
            _call("write_file", "d", path="loop/new.txt", content="x"),
            _call("broken", "e", x=1),
            _call("read_file", "f", path="README.md", end_line=1),
        ]
    )
    turn["rounds"].append({"events": [{"text": "the session still serves"}]})
    async with agent_in_memory(home, turn, [*catalog(), _broken_tool()]) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "end_turn"
        assert await client.prompt(sid, "again") == "end_turn"
    results = tool_results(home, sid)
    assert results[0] == "error [INVALID_PATH]: path contains a NUL byte: 'a\\x00b'"
    assert results[1] == "error [INVALID_PATH]: loop: a symlink loop"
    assert results[2] == "error [INVALID_PATH]: path is longer than 4096 characters"
    assert results[3] == "error [INVALID_PATH]: loop/new.txt: a symlink loop"
    assert results[4] == "error [TOOL_FAILED]: RuntimeError: planner bug"
    assert results[5] == "L1-1 of 3\n# Demo project"


async def test_a_huge_line_stores_only_what_the_model_was_sent(home: Path, project: Path) -> None:
    (project / "one-line.json").write_text("[" + "1," * 2_500_000 + "1]")  # 5 MB, one line
    turn = _rounds([_call("read_file", "r", path="one-line.json", max_chars=1000)])
    async with agent_in_memory(home, turn, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "end_turn"
    [result] = tool_results(home, sid)
    assert result.startswith("L1-1 of 1 (line 1 cut)\n[1,1,") and len(result) < 1100
    assert os.path.getsize(home / "tether.db") < 1_000_000


async def test_code_mode_asks_before_a_same_round_overwrite(home: Path, project: Path) -> None:
    turn = _rounds(
        [
            _call("write_file", "w1", path="fresh.txt", content="first\n"),
            _call("write_file", "w2", path="fresh.txt", content="second\n", overwrite=True),
        ]
    )
    async with agent_in_memory(home, turn, catalog()) as client:
        client.choice = "reject"
        sid = await client.start(project)
        await client.peer.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        assert await client.prompt(sid, "go") == "end_turn"
    [asked] = client.permissions
    assert asked["toolCall"]["toolCallId"] == "w2"
    assert (project / "fresh.txt").read_text() == "first\n"
    assert tool_results(home, sid)[1] == "error [REJECTED]: user declined"


async def test_a_fifo_does_not_wedge_the_process(home: Path, project: Path, tmp_path: Path) -> None:
    os.mkfifo(project / "pipe")
    path = script(
        tmp_path / "fifo.json",
        [
            [_call("read_file", "r1", path="pipe")],
            [{"text": "first done"}],
            [_call("read_file", "r2", path="README.md")],
            [{"text": "second done"}],
        ],
    )
    async with spawn_agent(home, "--script", str(path)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        assert (await agent.prompt(sid, "go"))["result"] == {"stopReason": "end_turn"}
        assert (await agent.prompt(sid, "again"))["result"] == {"stopReason": "end_turn"}
        await agent.close_input()
        assert await agent.wait_exit(10) == 0
    assert tool_results(home, sid)[1].startswith("L1-3 of 3")


async def test_view_image_results_are_stored_with_their_picture(home: Path, project: Path) -> None:
    from tests.support.stored import stored_messages

    (project / "dot.gif").write_bytes(b"GIF89a" + b"\x01\x00" * 4)
    turn = _rounds([_call("view_image", "v", path="dot.gif")])
    turn["model"] = {"images": True}
    async with agent_in_memory(home, turn, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "look") == "end_turn"
        [model] = client.models
    [result] = [m for m in stored_messages(home, sid) if m["type"] == "tool"]
    assert result["content"].startswith("dot.gif: image/gif image, 14 bytes")
    assert result["images"] == [
        {"type": "image", "data": "R0lGODlhAQABAAEAAQA=", "mime_type": "image/gif"}
    ]
    sent = model.requests[-1].messages[-1]
    assert isinstance(sent, ToolResultMessage) and sent.images[0].mime_type == "image/gif"


async def test_additional_directories_are_roots(home: Path, project: Path, tmp_path: Path) -> None:
    other = tmp_path / "shared-lib"
    other.mkdir()
    (other / "lib.py").write_text("LIB = 1\n")
    turn = _rounds(
        [
            _call("read_file", "r1", path=str(other / "lib.py")),
            _call("read_file", "r2", path=str(tmp_path / "elsewhere.txt")),
        ]
    )
    (tmp_path / "elsewhere.txt").write_text("no\n")
    async with agent_in_memory(home, turn, catalog()) as client:
        await client.peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        params = {"cwd": str(project), "mcpServers": [], "additionalDirectories": [str(other)]}
        sid = (await client.peer.request("session/new", params))["sessionId"]
        assert await client.prompt(sid, "go") == "end_turn"
        bad = {**params, "additionalDirectories": ["relative/dir"]}
        with pytest.raises(RpcError) as e:
            await client.peer.request("session/new", bad)
        assert e.value.code == -32602
        assert "additionalDirectories[0] must be an absolute path" in e.value.message
    inside, outside = tool_results(home, sid)
    assert inside == "L1-1 of 1\nLIB = 1"
    assert outside.startswith("error [OUTSIDE_ROOTS]: ")


async def test_files_the_editor_does_not_serve_are_read_from_disk(
    home: Path, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "added"
    other.mkdir()
    (other / "x.txt").write_text("from disk\n")
    turn = _rounds([_call("read_file", "r1", path=str(other / "x.txt"))])
    async with agent_in_memory(home, turn, catalog()) as client:

        async def only_the_project(params: dict[str, Any]) -> dict[str, Any]:
            raise RpcError.not_found(params["path"])  # like Zed outside its worktrees

        client.peer.on_request("fs/read_text_file", only_the_project)
        await client.peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": FS})
        params = {"cwd": str(project), "mcpServers": [], "additionalDirectories": [str(other)]}
        sid = (await client.peer.request("session/new", params))["sessionId"]
        assert await client.prompt(sid, "go") == "end_turn"
    assert tool_results(home, sid) == ["L1-1 of 1\nfrom disk"]


async def test_every_file_tool_card(home: Path, project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("x = 1\n")
    turn = _rounds(
        [
            _call("read_file", "read", path="src/a.py", start_line=1),
            _call("list_dir", "list", path="src"),
            _call("tree", "tree"),
            _call("glob_paths", "glob", pattern="**/*.py"),
            _call("regex_files", "grep", pattern="x ="),
        ],
        [_call("write_file", "write", path="src/b.py", content="y = 2\n")],
        [_call("copy_path", "copy", src="src/b.py", dst="lib/b.py")],
        [_call("move_path", "move", src="lib/b.py", dst="lib/c.py")],
        [_call("delete_path", "delete", path="lib/c.py", permanent=True)],
    )
    async with agent_in_memory(home, turn, catalog()) as client:
        sid = await client.start(project)
        assert await client.prompt(sid, "go") == "end_turn"
    src = project / "src"
    cards = {
        u["toolCallId"]: (u["kind"], u["title"], [loc["path"] for loc in u["locations"]])
        for u in _calls(client, "tool_call")
    }
    assert cards == {
        "read": ("read", "Read src/a.py", [str(src / "a.py")]),
        "list": ("read", "List src", [str(src)]),
        "tree": ("search", "Tree of .", [str(project)]),
        "glob": ("search", "Find **/*.py in .", [str(project)]),
        "grep": ("search", "Search . for /x =/", [str(project)]),
        "write": ("edit", "Create src/b.py", [str(src / "b.py")]),
        "copy": (
            "edit",
            "Copy src/b.py to lib/b.py",
            [str(src / "b.py"), str(project / "lib/b.py")],
        ),
        "move": (
            "move",
            "Move lib/b.py to lib/c.py",
            [str(project / "lib/b.py"), str(project / "lib/c.py")],
        ),
        "delete": ("delete", "Delete lib/c.py permanently", [str(project / "lib/c.py")]),
    }
    finished = {
        u["toolCallId"]: u["status"]
        for u in _calls(client, "tool_call_update")
        if u.get("status") in ("completed", "failed")
    }
    assert finished == dict.fromkeys(cards, "completed")
    asked = [p["toolCall"]["toolCallId"] for p in client.permissions]
    assert asked == ["write", "copy", "move", "delete"]  # reads and searches never ask
    assert (src / "b.py").read_text() == "y = 2\n" and not (project / "lib" / "c.py").exists()


async def test_a_new_unsaved_buffer_is_read_from_the_editor(home: Path, project: Path) -> None:
    draft, gone = project / "draft.md", project / "gone.md"
    turn = _rounds(
        [_call("read_file", "r1", path="draft.md"), _call("read_file", "r2", path="gone.md")]
    )
    async with agent_in_memory(home, turn, catalog()) as client:
        Editor(client, {draft: "# not saved yet\n"})
        sid = await client.start(project, FS)
        assert await client.prompt(sid, "go") == "end_turn"
    assert not draft.exists() and not gone.exists()
    assert tool_results(home, sid) == [
        "L1-1 of 1\n# not saved yet",
        "error [FILE_NOT_FOUND]: no such file or directory: gone.md",
    ]


async def test_undo_reverts_edits_moves_and_deletes(
    home: Path, project: Path, tmp_path: Path
) -> None:
    (project / "a.txt").write_text("alpha\n")
    (project / "b.txt").write_text("beta\n")
    path = script(
        tmp_path / "undo.json",
        [
            [
                _call("edit_replace", "e", path="README.md", old="Hello.", new="Bye."),
                _call("move_path", "m", src="a.txt", dst="moved/a.txt"),
                _call("delete_path", "d", path="b.txt"),
            ],
            [{"text": "changed"}],
        ],
    )
    async with spawn_agent(home, "--script", str(path)) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        await agent.prompt(sid, "change things")
        assert not (project / "b.txt").exists() and (project / "moved/a.txt").exists()
        await agent.prompt(sid, "/undo")
    assert (project / "README.md").read_text() == "# Demo project\n\nHello.\n"
    assert (project / "a.txt").read_text() == "alpha\n"
    assert (project / "b.txt").read_text() == "beta\n"
    assert not (project / "moved/a.txt").exists()
