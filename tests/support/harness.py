"""A raw-frame test client: spawns `tether acp` as a real subprocess and speaks JSON-RPC frames
to it over its pipes. Every frame the agent writes is validated against the ACP v1 schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from tests.support.acp_schema import validate_agent_frame

REPO = Path(__file__).resolve().parents[2]
Frame = dict[str, Any]
AgentRequestHandler = Callable[[str, Any], Awaitable[Any]]


class AgentProcess:
    def __init__(self, proc: anyio.abc.Process, framing: str) -> None:
        self.proc = proc
        self.framing = framing
        self.frames: list[Frame] = []  # every frame received, in order
        self.sent: list[Frame] = []
        self._buf = b""
        self._next_id = 0
        self._methods: dict[Any, str] = {}  # our request id -> method, to validate its result
        self.handler: AgentRequestHandler = self._default_handler
        self.permission_choice = "allow_once"  # the option kind picked for permission requests
        self._passed: dict[Any, Frame] = {}  # responses read while waiting for another

    # --- sending ---------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.send(data)

    async def send(self, obj: Frame) -> None:
        await self.send_raw(self._framed(obj))

    def _framed(self, obj: Frame) -> bytes:
        self.sent.append(obj)
        body = json.dumps(obj).encode()
        if self.framing == "content-length":
            return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        return body + b"\n"

    async def start_requests(self, *calls: tuple[str, Any]) -> list[int]:
        """Requests written in one write: they arrive together, however loaded the machine."""
        ids = list(range(self._next_id, self._next_id + len(calls)))
        self._next_id += len(calls)
        frames = b""
        for rid, (method, params) in zip(ids, calls, strict=True):
            self._methods[rid] = method
            frames += self._framed(
                {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
            )
        await self.send_raw(frames)
        return ids

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def start_request(self, method: str, params: Any) -> int:
        rid = self._next_id
        self._next_id += 1
        self._methods[rid] = method
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    # --- receiving -------------------------------------------------------------------------

    async def recv(self, timeout: float = 15) -> Frame:
        with anyio.fail_after(timeout):
            while True:
                frame = self._take()
                if frame is not None:
                    return frame
                assert self.proc.stdout is not None
                try:
                    chunk = await self.proc.stdout.receive()
                except anyio.EndOfStream:
                    raise EOFError("the agent closed its output") from None
                self._buf += chunk

    def _take(self) -> Frame | None:
        if self.framing == "content-length":
            head, sep, rest = self._buf.partition(b"\r\n\r\n")
            if not sep:
                return None
            length = int(head.split(b":")[1])
            if len(rest) < length:
                return None
            body, self._buf = rest[:length], rest[length:]
        else:
            line, sep, rest = self._buf.partition(b"\n")
            if not sep:
                return None
            body, self._buf = line, rest
        frame = json.loads(body)
        method = self._methods.get(frame.get("id")) if "method" not in frame else None
        validate_agent_frame(frame, method=method)
        self.frames.append(frame)
        return frame

    async def request(self, method: str, params: Any, timeout: float = 15) -> Frame:
        """Send a request and serve the agent (its requests, notifications) until the response
        to ours arrives; returns that response frame (result or error)."""
        rid = await self.start_request(method, params)
        return await self.until_response(rid, timeout)

    async def until_response(self, rid: int, timeout: float = 15) -> Frame:
        """The response to request `rid`, whichever order responses come in (one read past
        while waiting for another is kept for its own wait)."""
        if rid in self._passed:
            return self._passed.pop(rid)
        with anyio.fail_after(timeout):
            while True:
                frame = await self.recv()
                if "method" in frame and "id" in frame:
                    await self._answer(frame)
                elif "method" not in frame and frame.get("id") == rid:
                    return frame
                elif "method" not in frame and "id" in frame:
                    self._passed[frame["id"]] = frame

    async def _answer(self, frame: Frame) -> None:
        try:
            result = await self.handler(frame["method"], frame.get("params"))
            await self.send({"jsonrpc": "2.0", "id": frame["id"], "result": result})
        except LookupError as exc:
            await self.send(
                {
                    "jsonrpc": "2.0",
                    "id": frame["id"],
                    "error": {"code": -32002, "message": str(exc)},
                }
            )

    async def _default_handler(self, method: str, params: Any) -> Any:
        if method == "session/request_permission":
            for option in params["options"]:
                if option["kind"] == self.permission_choice:
                    return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
            return {"outcome": {"outcome": "cancelled"}}
        if method == "fs/read_text_file":
            path = Path(params["path"])
            if not path.exists():
                raise LookupError(f"no file {path}")
            return {"content": path.read_text()}
        if method == "fs/write_text_file":
            Path(params["path"]).write_text(params["content"])
            return {}
        raise LookupError(f"unexpected agent request {method}")

    def updates(self, session_id: str | None = None) -> list[Frame]:
        """The `update` of every session/update received so far."""
        return [
            f["params"]["update"]
            for f in self.frames
            if f.get("method") == "session/update"
            and (session_id is None or f["params"]["sessionId"] == session_id)
        ]

    # --- conveniences ----------------------------------------------------------------------

    async def initialize(self, **caps: Any) -> Frame:
        client_caps = {"fs": {"readTextFile": True, "writeTextFile": True}, **caps}
        params = {
            "protocolVersion": 1,
            "clientCapabilities": client_caps,
            "clientInfo": {"name": "harness", "version": "1"},
        }
        return await self.request("initialize", params)

    async def new_session(self, cwd: Path) -> str:
        resp = await self.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        return resp["result"]["sessionId"]

    async def prompt(self, session_id: str, text: str, timeout: float = 15) -> Frame:
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        return await self.request("session/prompt", params, timeout)

    async def start_turn(self, session_id: str, text: str = "go") -> int:
        """Start a prompt and read until its first message chunk; returns the request id."""
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        rid = await self.start_request("session/prompt", params)
        while not any(
            u["sessionUpdate"] == "agent_message_chunk" for u in self.updates(session_id)
        ):
            await self.recv()
        return rid

    async def close_input(self) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.aclose()

    async def wait_exit(self, timeout: float = 5) -> int:
        with anyio.fail_after(timeout):
            return await self.proc.wait()

    async def stderr_text(self, timeout: float = 5) -> str:
        """Everything the agent wrote to stderr (spawned with `capture_stderr`), to its end."""
        assert self.proc.stderr is not None
        chunks: list[bytes] = []
        with anyio.fail_after(timeout):
            while True:
                try:
                    chunks.append(await self.proc.stderr.receive())
                except anyio.EndOfStream:
                    return b"".join(chunks).decode("utf-8", "replace")

    async def drain(self, timeout: float = 5) -> None:
        """Read (and validate) every frame until the agent closes its output."""
        try:
            while True:
                await self.recv(timeout)
        except EOFError:
            return


def agent_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tether", "acp", *args]


@asynccontextmanager
async def spawn_agent(
    home: Path,
    *args: str,
    framing: str = "ndjson",
    env: dict[str, str] | None = None,
    capture_stderr: bool = False,
) -> AsyncIterator[AgentProcess]:
    """`capture_stderr`: keep the agent's stderr for `stderr_text()` (a test must then read it
    after the agent exits; the pipe holds 64 KiB)."""
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO), **(env or {})}
    stderr = subprocess.PIPE if capture_stderr else None
    proc = await anyio.open_process(agent_command(*args), env=env, cwd=REPO, stderr=stderr)
    agent = AgentProcess(proc, framing)
    try:
        yield agent
    finally:
        if proc.returncode is None:
            proc.kill()
        with anyio.move_on_after(5):
            await proc.wait()
        await proc.aclose()


def script(path: Path, rounds: list[list[dict[str, Any]]], **model: Any) -> Path:
    """Write a scripted-provider file and return its path."""
    doc: dict[str, Any] = {"rounds": [{"events": r} for r in rounds]}
    if model:
        doc["model"] = model
    path.write_text(json.dumps(doc))
    return path


async def configured_turn(
    home: Path, project: Path, config: str, calls: list[dict[str, Any]]
) -> tuple[str, list[Frame]]:
    """One turn of `tether acp` under a config file (text), the scripted model making `calls`
    (name, arguments) in one round, then saying "done": the session id and every frame."""
    (home / "config.toml").write_text(config)
    events = [
        {"tool_call": {"id": f"r{i}", "name": c["name"], "arguments": c["arguments"]}}
        for i, c in enumerate(calls)
    ]
    turn = script(home / "turn.json", [events, [{"text": "done"}]])
    env = {"TETHER_CONFIG": str(home / "config.toml")}
    async with spawn_agent(home, "--script", str(turn), env=env) as agent:
        await agent.initialize()
        sid = await agent.new_session(project)
        assert (await agent.prompt(sid, "go"))["result"] == {"stopReason": "end_turn"}
        return sid, agent.frames


def slow_script(path: Path) -> Path:
    """A model that says one thing, then takes a minute: a turn to cancel or abandon."""
    return script(path, [[{"text": "working"}, {"delay": 60}]])
