"""`tether lsp` as a real subprocess, over its pipes: raw Content-Length frames for the fast
`initialize` and for bad input of every kind (each frame the server writes is typed with
lsprotocol), and pygls's own client for a whole turn."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from lsprotocol import types
from pygls.protocol import default_converter

from tests.support.harness import REPO
from tests.support.lsp_client import lsp_subprocess, script_file, write_call
from tests.support.stored import tool_results
from tether import __version__

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONVERTER = default_converter()
Frame = dict[str, Any]


def check_frame(frame: Frame, answering: str | None) -> None:
    """Type a frame the server wrote with lsprotocol (raises when it does not fit)."""
    if "method" in frame:
        message_type = types.METHOD_TO_TYPES[frame["method"]][0]
        CONVERTER.structure(frame, message_type)
        if frame["method"] == types.PROGRESS:
            value = frame["params"]["value"]
            kind = {
                "begin": types.WorkDoneProgressBegin,
                "report": types.WorkDoneProgressReport,
                "end": types.WorkDoneProgressEnd,
            }[value["kind"]]
            CONVERTER.structure(value, kind)
    elif "error" in frame:
        CONVERTER.structure(frame, types.ResponseErrorMessage)
    else:
        assert answering is not None, frame
        CONVERTER.structure(frame, types.METHOD_TO_TYPES[answering][1])


class RawClient:
    def __init__(self, proc: anyio.abc.Process) -> None:
        self.proc = proc
        self.frames: list[Frame] = []
        self._buf = b""
        self._methods: dict[Any, str] = {}
        self._ids = 0

    async def send_raw(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.send(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def send(self, frame: Frame) -> None:
        await self.send_raw(json.dumps(frame).encode())

    async def request(self, method: str, params: Any) -> Any:
        self._ids += 1
        rid = self._ids
        self._methods[rid] = method
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def recv(self) -> Frame:
        with anyio.fail_after(15):
            while True:
                head, sep, rest = self._buf.partition(b"\r\n\r\n")
                if sep:
                    length = int(head.split(b":")[1])
                    if len(rest) >= length:
                        body, self._buf = rest[:length], rest[length:]
                        frame = json.loads(body)
                        check_frame(frame, self._methods.get(frame.get("id")))
                        self.frames.append(frame)
                        return frame
                assert self.proc.stdout is not None
                self._buf += await self.proc.stdout.receive()

    async def answer_of(self, rid: Any, serve: dict[str, Any] | None = None) -> Frame:
        """Read until the answer to `rid`, answering the server's requests from `serve`
        (method -> result, or a frame body with "error" / "raw")."""
        while True:
            frame = await self.recv()
            if "method" not in frame and frame.get("id") == rid:
                return frame
            if "method" in frame and "id" in frame:
                reply = (serve or {}).get(frame["method"])
                body = reply if isinstance(reply, dict) and ("error" in reply) else None
                out = {"jsonrpc": "2.0", "id": frame["id"], **(body or {"result": reply})}
                if isinstance(reply, dict) and "raw" in reply:
                    out = {"jsonrpc": "2.0", "id": frame["id"], **reply["raw"]}
                await self.send(out)

    async def initialize(self, root: Path, caps: dict[str, Any] | None = None) -> Frame:
        params = {"processId": None, "rootUri": root.as_uri(), "capabilities": caps or {}}
        answer = await self.answer_of(await self.request("initialize", params))
        await self.notify("initialized", {})
        await self.ready()
        return answer

    async def ready(self) -> Frame:
        """Read until the log line tether sends when it takes `initialized`."""
        while True:
            frame = await self.recv()
            if frame.get("method") == "window/logMessage" and " ready in " in str(
                frame["params"]["message"]
            ):
                return frame

    async def prompt(self, text: str, serve: dict[str, Any] | None = None) -> Frame:
        params = {"command": "tether.prompt", "arguments": [{"prompt": text}]}
        return await self.answer_of(await self.request("workspace/executeCommand", params), serve)


@asynccontextmanager
async def raw_server(home: Path, *args: str) -> AsyncIterator[RawClient]:
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "tether", "lsp", *args]
    async with await anyio.open_process(cmd, env=env) as proc:
        try:
            yield RawClient(proc)
        finally:
            if proc.returncode is None:
                proc.kill()


ASKING = {"window": {"showMessage": {}, "workDoneProgress": True}}


def _two_writes(tmp_path: Path) -> Path:
    calls = [write_call("c1", "a.txt", "A\n"), write_call("c2", "b.txt", "B\n")]
    return script_file(tmp_path / "two.json", [calls, [{"text": "done"}]])


async def test_initialize_is_answered_first_and_the_server_serves(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with raw_server(home, "--script", str(_two_writes(tmp_path))) as client:
        answer = await client.initialize(project, ASKING)
        caps = answer["result"]["capabilities"]
        commands = caps["executeCommandProvider"]["commands"]
        assert commands[:2] == ["tether.prompt", "tether.cancel"] and "tether.help" in commands
        assert caps["textDocumentSync"] == {"openClose": True, "change": 2}
        serve = {"window/showMessageRequest": {"title": "Allow all"}}
        result = await client.prompt("write", serve)
        assert result["result"]["stopReason"] == "end_turn"
        assert (project / "a.txt").read_text() == "A\n"  # no applyEdit: written on disk
        rid = await client.request("shutdown", None)
        assert (await client.answer_of(rid))["result"] is None
        await client.notify("exit", None)
        assert await client.proc.wait() == 0


async def test_initialized_without_params_is_taken(home: Path, project: Path) -> None:
    """ts-lsp-client sends `{"jsonrpc": "2.0", "method": "initialized"}`: taken like `{}`
    (tether answers it with its log line), not dropped as malformed."""
    async with raw_server(home) as client:
        params = {"processId": None, "rootUri": project.as_uri(), "capabilities": {}}
        await client.answer_of(await client.request("initialize", params))
        await client.send({"jsonrpc": "2.0", "method": "initialized"})
        cancel = {"command": "tether.cancel", "arguments": []}
        rid = await client.request("workspace/executeCommand", cancel)
        answer = await client.answer_of(rid)
        assert answer["result"] == {"cancelled": False}
        logs = [f["params"]["message"] for f in client.frames if "method" in f]
        assert logs == [f"tether {__version__} ready in {project}"]


async def test_bad_frames_get_errors_and_the_server_goes_on(home: Path, project: Path) -> None:
    async with raw_server(home, "--max-frame-bytes", "4000") as client:
        rid = await client.request("workspace/executeCommand", {"command": "tether.cancel"})
        early = await client.answer_of(rid)
        assert early["error"]["code"] == -32002  # not initialized yet
        await client.initialize(project)

        async def error_of(body: bytes) -> dict[str, Any]:
            await client.send_raw(body)
            frame = await client.recv()
            assert "error" in frame, frame
            return frame

        assert (await error_of(b"{not json"))["error"]["code"] == -32700
        assert (await error_of(b"[1, 2]"))["error"]["code"] == -32600
        assert (await error_of(b'{"jsonrpc": "2.0", "id": {}, "method": "x"}'))["error"][
            "code"
        ] == -32600
        deep = b'{"jsonrpc":"2.0","id":9,"method":"x","params":' + b"[" * 500 + b"]" * 500 + b"}"
        assert (await error_of(deep))["error"]["code"] == -32600
        assert (await error_of(b"x" * 5000))["error"]["code"] == -32600  # over the cap
        again = {"processId": None, "rootUri": None, "capabilities": {}}
        second = await client.answer_of(await client.request("initialize", again))
        assert second["error"]["code"] == -32600
        missing = await client.answer_of(
            await client.request("workspace/executeCommand", {"arguments": []})
        )
        assert missing["error"]["code"] == -32602
        assert "required field missing @ $.params.command" in missing["error"]["message"]
        unknown = await client.answer_of(await client.request("tether/nope", {}))
        assert unknown["error"]["code"] == -32601
        await client.notify("tether/nope", {})  # an unknown notification is ignored
        await client.notify("textDocument/didChange", {"textDocument": 5})  # malformed: dropped
        alive = await client.answer_of(
            await client.request(
                "workspace/executeCommand", {"command": "tether.cancel", "arguments": []}
            )
        )
        assert alive["result"] == {"cancelled": False}
        assert not any("traceback" in json.dumps(f) for f in client.frames)


async def test_odd_answers_to_our_questions_allow_nothing(
    home: Path, project: Path, tmp_path: Path
) -> None:
    calls = [write_call("c1", "a.txt", "A\n"), write_call("c2", "b.txt", "B\n")]
    rounds = [calls, [{"text": "one"}], calls, [{"text": "two"}], calls, [{"text": "three"}]]
    script = script_file(tmp_path / "odd.json", rounds)
    async with raw_server(home, "--script", str(script)) as client:
        await client.initialize(project, ASKING)
        odd: list[dict[str, Any]] = [
            {"raw": {"result": {"nope": 1}}},  # not a MessageActionItem
            {"error": {"code": -32603, "message": "the picker crashed"}},
            {"raw": {"result": {"title": "Allow everything"}}},  # never offered
        ]
        sid = None
        for answer in odd:
            result = await client.prompt("write", {"window/showMessageRequest": answer})
            assert result["result"]["stopReason"] == "end_turn"
            sid = result["result"]["sessionId"]
    assert not (project / "a.txt").exists()
    results = tool_results(home, sid or "")
    assert len(results) == 6 and all("prompt cancelled" in r for r in results)


async def test_the_end_of_input_answers_the_running_prompt(
    home: Path, project: Path, tmp_path: Path
) -> None:
    script = script_file(tmp_path / "slow.json", [[{"text": "working"}, {"delay": 60}]])
    async with raw_server(home, "--script", str(script)) as client:
        await client.initialize(project, {"window": {"workDoneProgress": True}})
        params = {"command": "tether.prompt", "arguments": [{"prompt": "slow"}]}
        rid = await client.request("workspace/executeCommand", params)
        while True:  # until the turn is under way
            frame = await client.recv()
            if "id" in frame and "method" in frame:
                await client.send({"jsonrpc": "2.0", "id": frame["id"], "result": None})
            value = frame.get("params", {}).get("value", {})
            if value.get("message") == "working":
                break
        assert client.proc.stdin is not None
        await client.proc.stdin.aclose()
        answer = await client.answer_of(rid)
        assert answer["result"]["stopReason"] == "cancelled"
        assert await client.proc.wait() == 0


async def test_pygls_client_drives_a_round_over_a_subprocess(
    home: Path, project: Path, tmp_path: Path
) -> None:
    async with lsp_subprocess(project, home, "--script", str(_two_writes(tmp_path))) as editor:
        await editor.start()
        result = await editor.prompt("write both")
        assert result["stopReason"] == "end_turn" and result["text"] == "done"
        assert len(editor.asked) == 1
        assert editor.text("a.txt") == "A\n" and editor.text("b.txt") == "B\n"
        await editor.shutdown_async(None)
        editor.exit(None)
        assert editor.errors == []
    assert all(
        r.startswith("[approval] user (round)") for r in tool_results(home, result["sessionId"])
    )
