"""`tether ask`: a headless ACP client. It spawns `tether acp`, speaks real frames to it over
pipes, answers permission requests by policy, serves `fs/*` from disk, and prints a transcript."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import anyio
import anyio.abc

from tether.rpc.acp.transcript import Transcript
from tether.rpc.errors import ConnectionClosed, RpcError
from tether.rpc.peer import Peer
from tether.schemas import acp
from tether.transports.framing import NdjsonFramer
from tether.transports.streams import FramedStream

Policy = Literal["yes", "no", "ask"]


@dataclass
class AskOptions:
    prompt: str
    cwd: str = "."
    policy: Policy = "ask"
    json: bool = False
    mode: str | None = None
    framing: str = "auto"
    script: str | None = None
    model: str | None = None


class ProcessStream:
    """A child's stdin/stdout as a ByteStream; in --json mode the raw frames are echoed."""

    def __init__(self, proc: anyio.abc.Process, echo: TextIO | None) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._in = proc.stdout
        self._out = proc.stdin
        self._echo = echo

    async def receive(self) -> bytes:
        try:
            data = await self._in.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return b""
        if self._echo is not None:
            self._echo.write(data.decode("utf-8", "replace"))
            self._echo.flush()
        return data

    async def send(self, data: bytes) -> None:
        await self._out.send(data)

    async def aclose(self) -> None:
        await self._out.aclose()


def run_ask(options: AskOptions) -> int:
    options.cwd = os.path.abspath(options.cwd)
    return anyio.run(_ask, options)


def _server_command(options: AskOptions) -> list[str]:
    cmd = [sys.executable, "-m", "tether", "acp", "--framing", "ndjson"]
    cmd += ["--script", options.script] if options.script else []
    return cmd + (["--model", options.model] if options.model else [])


async def _ask(options: AskOptions) -> int:
    cwd = options.cwd
    out = sys.stdout
    transcript = Transcript(out if not options.json else None)
    async with await anyio.open_process(_server_command(options), stderr=None) as proc:
        stream = FramedStream(ProcessStream(proc, out if options.json else None), NdjsonFramer())
        peer = Peer(stream, name="ask")
        client = _Client(peer, transcript, options.policy)
        client.register()
        code = 3  # the agent went away before answering
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.run)
            try:
                code = await client.converse(cwd, options)
            finally:
                await stream.aclose()
                tg.cancel_scope.cancel()
        with anyio.move_on_after(2):
            await proc.wait()
    return code


class _Client:
    def __init__(self, peer: Peer, transcript: Transcript, policy: Policy) -> None:
        self.peer = peer
        self.transcript = transcript
        self.policy = policy

    def register(self) -> None:
        p = self.peer
        p.on_notification("session/update", self.update, acp.SessionNotification)
        p.on_request("session/request_permission", self.permission, acp.RequestPermissionRequest)
        p.on_request("fs/read_text_file", self.read_file, acp.ReadTextFileRequest)
        p.on_request("fs/write_text_file", self.write_file, acp.WriteTextFileRequest)
        p.on_request("elicitation/create", self.elicit, dict[str, Any])

    async def converse(self, cwd: str, options: AskOptions) -> int:
        caps = acp.ClientCapabilities(
            fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=True),
            elicitation=acp.ElicitationCapabilities(form={}),
        )
        init = acp.InitializeRequest(
            protocol_version=1,
            client_capabilities=caps,
            client_info=acp.Implementation(name="tether-ask", version="1"),
        )
        try:
            await self.peer.request("initialize", init, acp.InitializeResponse)
            new = acp.NewSessionRequest(cwd=cwd, mcp_servers=[])
            session = await self.peer.request("session/new", new, acp.NewSessionResponse)
            if options.mode:
                mode = acp.SetModeRequest(session_id=session.session_id, mode_id=options.mode)
                await self.peer.request("session/set_mode", mode)
            prompt = acp.PromptRequest(
                session_id=session.session_id, prompt=[acp.TextContent(text=options.prompt)]
            )
            result = await self._prompt(prompt)
        except RpcError as exc:
            self.transcript.error(f"error {exc.code}: {exc.message}")
            return 2
        except ConnectionClosed:
            self.transcript.error("the agent exited before the turn ended")
            return 3
        self.transcript.stop(result.stop_reason)
        return 0 if result.stop_reason == "end_turn" else 1

    async def _prompt(self, prompt: acp.PromptRequest) -> acp.PromptResponse:
        try:
            return await self.peer.request("session/prompt", prompt, acp.PromptResponse)
        except KeyboardInterrupt:  # pragma: no cover - interactive only
            await self.peer.notify("session/cancel", {"sessionId": prompt.session_id})
            raise

    async def update(self, params: acp.SessionNotification) -> None:
        self.transcript.update(params.update)

    async def permission(
        self, params: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionResponse:
        choice = await self._choose(params)
        self.transcript.permission(params, choice)
        if choice is None:
            return acp.RequestPermissionResponse(outcome=acp.CancelledOutcome())
        return acp.RequestPermissionResponse(outcome=acp.SelectedOutcome(option_id=choice))

    async def _choose(self, params: acp.RequestPermissionRequest) -> str | None:
        opts = params.options
        if self.policy == "yes":
            return _first(opts, "allow_once")
        if self.policy == "no" or not _interactive():
            return _first(opts, "reject_once")
        return await anyio.to_thread.run_sync(_prompt_choice, params)

    async def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        props = params.get("requestedSchema", {}).get("properties", {})
        if self.policy == "no":
            return {"action": "decline"}
        if self.policy == "yes" or not _interactive():
            allow = self.policy == "yes"
            return {"action": "accept", "content": {k: allow for k in props}}
        answers = await anyio.to_thread.run_sync(_prompt_checkboxes, props)
        return {"action": "accept", "content": answers}

    async def read_file(self, params: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
        try:
            text = await anyio.Path(params.path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise RpcError.not_found(params.path, {"uri": params.path}) from None
        lines = text.splitlines(keepends=True)
        start = (params.line or 1) - 1 if isinstance(params.line, int) else 0
        end = start + params.limit if isinstance(params.limit, int) else None
        return acp.ReadTextFileResponse(content="".join(lines[start:end]))

    async def write_file(self, params: acp.WriteTextFileRequest) -> acp.Empty:
        path = anyio.Path(params.path)
        await path.parent.mkdir(parents=True, exist_ok=True)
        await path.write_text(params.content, encoding="utf-8")
        return acp.Empty()


def _first(options: list[acp.PermissionOption], kind: str) -> str | None:
    for o in options:
        if o.kind == kind:
            return o.option_id
    return None


def _interactive() -> bool:
    return sys.stdin.isatty() and os.environ.get("TETHER_NONINTERACTIVE") != "1"


def _prompt_choice(params: acp.RequestPermissionRequest) -> str | None:
    for i, o in enumerate(params.options, 1):
        print(f"    [{i}] {o.name}", file=sys.stderr)
    while True:
        try:
            answer = input("    choose: ").strip()
        except EOFError:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(params.options):
            return params.options[int(answer) - 1].option_id


def _prompt_checkboxes(props: dict[str, Any]) -> dict[str, bool]:
    answers: dict[str, bool] = {}
    for key, prop in props.items():
        try:
            answer = input(f"    allow {prop.get('title', key)}? [Y/n] ").strip().lower()
        except EOFError:
            answer = "n"
        answers[key] = answer in ("", "y", "yes")
    return answers
