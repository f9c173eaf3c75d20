"""`tether ask`: a headless ACP client. It spawns `tether acp`, speaks real frames to it over
pipes, answers permission requests by policy, serves `fs/*` from disk, and prints a transcript.

It behaves like a command-line tool: Ctrl-C cancels the turn (`session/cancel`) and exits 130;
a closed standard output (`| head -1`) cancels it too and exits 141, quietly.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel

from tether.cli.ask_transcript import Sink, Transcript
from tether.engine.local.file_system import decode_text
from tether.errors import SeamError
from tether.rpc.peer import Peer
from tether.rpc.rpc_error import INTERNAL_ERROR, ConnectionClosed, RpcError
from tether.schemas import acp
from tether.transports.framing import NdjsonFramer
from tether.transports.streams import FramedStream

Policy = Literal["yes", "no", "ask"]
T = TypeVar("T")

INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C
OUTPUT_CLOSED = 141  # 128 + SIGPIPE: what `yes | head -1` reports for `yes`
CANCEL_GRACE = 5.0  # seconds the agent has to answer `cancelled` before it is killed


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
    log_level: str | None = None
    max_rounds: int | None = None  # over [agent] max_rounds
    auto_continue: bool = False  # past the round and PTY limits without asking
    quiet: bool = False


class ProcessStream:
    """A child's stdin/stdout as a ByteStream; in --json mode the raw frames are echoed."""

    def __init__(self, proc: anyio.abc.Process, echo: Sink | None) -> None:
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
        return data

    async def send(self, data: bytes) -> None:
        await self._out.send(data)

    async def aclose(self) -> None:
        await self._out.aclose()


def run_ask(options: AskOptions) -> int:
    from tether.logs import setup_logging

    options.cwd = os.path.abspath(options.cwd)
    setup_logging("ask", options.log_level)
    try:
        return anyio.run(_ask, options)
    except KeyboardInterrupt:  # Ctrl-C before the handler below was in place
        return INTERRUPTED


def _server_command(options: AskOptions) -> list[str]:
    cmd = [sys.executable, "-m", "tether", "acp", "--framing", "ndjson"]
    cmd += ["--script", options.script] if options.script else []
    cmd += ["--log-level", options.log_level] if options.log_level else []
    cmd += ["--max-rounds", str(options.max_rounds)] if options.max_rounds else []
    cmd += ["--auto-continue"] if options.auto_continue else []
    return cmd + (["--model", options.model] if options.model else [])


async def _ask(options: AskOptions) -> int:
    async with await anyio.open_process(_server_command(options), stderr=None) as proc:
        code = await _talk(proc, options)
        with anyio.move_on_after(CANCEL_GRACE):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
    return code


async def _talk(proc: anyio.abc.Process, options: AskOptions) -> int:
    stop = _Stop()
    out = Sink(sys.stdout, lambda: stop.request(OUTPUT_CLOSED))
    transcript = Transcript(out if not options.json else None, options.cwd, quiet=options.quiet)
    stream = FramedStream(ProcessStream(proc, out if options.json else None), NdjsonFramer())
    peer = Peer(stream, name="ask")
    client = _Client(peer, transcript, options.policy, stop)
    client.register()
    code = 3  # the agent went away before answering
    async with anyio.create_task_group() as tg:
        tg.start_soon(peer.run)
        tg.start_soon(_watch_interrupts, stop, transcript)
        try:
            code = await client.converse(options.cwd, options)
        finally:
            await stream.aclose()
            tg.cancel_scope.cancel()
    return code


class _Stop:
    """Why the run should stop early (Ctrl-C, standard output gone), as its exit code; a second
    Ctrl-C while the agent is stopping the turn gives up waiting for it."""

    def __init__(self) -> None:
        self.requested = anyio.Event()
        self.forced = anyio.Event()
        self.code = 0

    def request(self, code: int) -> None:
        if self.requested.is_set():
            self.forced.set()
            return
        self.code = code
        self.requested.set()


async def _watch_interrupts(stop: _Stop, transcript: Transcript) -> None:
    import signal

    try:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                transcript.after_echo()  # now: the terminal echoed ^C where the cursor is
                stop.request(INTERRUPTED)
    except NotImplementedError:  # Windows: Ctrl-C stays a KeyboardInterrupt
        return


class _Client:
    def __init__(self, peer: Peer, transcript: Transcript, policy: Policy, stop: _Stop) -> None:
        self.peer = peer
        self.transcript = transcript
        self.policy = policy
        self.stop = stop

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
            session = await self._until_stopped(lambda: self._open(init, cwd, options))
            result = None
            if session is not None:
                prompt = acp.PromptRequest(
                    session_id=session, prompt=[acp.TextContent(text=options.prompt)]
                )
                result = await self._prompt(prompt)
        except RpcError as exc:
            self.transcript.error(f"error {exc.code}: {exc.message}")
            return 2
        except ConnectionClosed:
            self.transcript.error("the agent exited before the turn ended")
            return 3
        if self.stop.requested.is_set():
            self.transcript.stop("cancelled")
            return self.stop.code
        assert result is not None
        self.transcript.stop(result.stop_reason)
        self.transcript.usage_line()
        return 0 if result.stop_reason == "end_turn" else 1

    async def _open(self, init: acp.InitializeRequest, cwd: str, options: AskOptions) -> str:
        await self.peer.request("initialize", init, acp.InitializeResponse)
        new = acp.NewSessionRequest(cwd=cwd, mcp_servers=[])
        session = await self.peer.request("session/new", new, acp.NewSessionResponse)
        if options.mode:
            mode = acp.SetModeRequest(session_id=session.session_id, mode_id=options.mode)
            await self.peer.request("session/set_mode", mode)
        return session.session_id

    async def _until_stopped(self, work: Callable[[], Awaitable[T]]) -> T | None:
        """`work`'s result, or None when a stop was requested first (`work` is cancelled)."""
        return await _race(work, self.stop.requested.wait)

    async def _prompt(self, prompt: acp.PromptRequest) -> acp.PromptResponse | None:
        """The turn's answer. On a stop request the agent is asked to cancel the turn and given
        CANCEL_GRACE to answer (`cancelled`); None when it did not."""

        async def stopped() -> None:
            await self.stop.requested.wait()
            await self.peer.notify("session/cancel", {"sessionId": prompt.session_id})
            with anyio.move_on_after(CANCEL_GRACE):
                await self.stop.forced.wait()

        return await _race(
            lambda: self.peer.request("session/prompt", prompt, acp.PromptResponse), stopped
        )

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
        self.transcript.prompting = True
        try:
            return await _in_daemon_thread(lambda: _prompt_choice(params))
        finally:
            self.transcript.prompting = False

    async def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        props = params.get("requestedSchema", {}).get("properties", {})
        if self.policy == "no":
            return {"action": "decline"}
        if self.policy == "yes" or not _interactive():
            allow = self.policy == "yes"  # a yes/no per call; text (a note) left unsaid
            content = {k: allow for k, p in props.items() if p.get("type") == "boolean"}
            return {"action": "accept", "content": content}
        answers = await _in_daemon_thread(lambda: _prompt_fields(props))
        return {"action": "accept", "content": answers}

    async def read_file(self, params: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
        path = Path(params.path)
        try:
            data = await anyio.Path(path).read_bytes()
        except FileNotFoundError:
            raise RpcError.not_found(params.path, {"uri": params.path}) from None
        except IsADirectoryError:
            raise RpcError.invalid_params(f"{path} is a directory") from None
        except OSError as exc:
            raise RpcError(INTERNAL_ERROR, f"cannot read {path}: {exc.strerror}") from None
        try:
            text = decode_text(path, data)
        except SeamError as exc:
            raise RpcError.invalid_params(exc.message) from None
        lines = text.splitlines(keepends=True)
        start = (params.line or 1) - 1 if isinstance(params.line, int) else 0
        end = start + params.limit if isinstance(params.limit, int) else None
        return acp.ReadTextFileResponse(content="".join(lines[start:end]))

    async def write_file(self, params: acp.WriteTextFileRequest) -> acp.Empty:
        path = anyio.Path(params.path)
        try:
            await path.parent.mkdir(parents=True, exist_ok=True)
            await path.write_text(params.content, encoding="utf-8")
        except IsADirectoryError:
            raise RpcError.invalid_params(f"{params.path} is a directory") from None
        except OSError as exc:
            raise RpcError(INTERNAL_ERROR, f"cannot write {params.path}: {exc.strerror}") from None
        return acp.Empty()


async def _race(
    work: Callable[[], Awaitable[T]], stopper: Callable[[], Awaitable[None]]
) -> T | None:
    """Run `work` until it finishes or `stopper` returns, whichever is first; `work`'s result,
    or None when it was cancelled. Its exceptions propagate as themselves."""
    results: list[T] = []
    errors: list[Exception] = []

    async def run() -> None:
        try:
            results.append(await work())
        except Exception as exc:
            errors.append(exc)
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await stopper()
        tg.cancel_scope.cancel()
    if errors:
        raise errors[0]
    return results[0] if results else None


async def _in_daemon_thread(fn: Callable[[], T]) -> T:
    """Run a blocking terminal prompt in a daemon thread: when the turn is cancelled the prompt
    is abandoned, and a thread still waiting for a line never holds up the exit."""
    done = anyio.Event()
    box: list[T] = []
    errors: list[BaseException] = []
    token = anyio.lowlevel.current_token()

    def run() -> None:
        try:
            box.append(fn())
        except BaseException as exc:
            errors.append(exc)
        try:
            anyio.from_thread.run_sync(done.set, token=token)
        except anyio.RunFinishedError:
            pass  # nobody is waiting any more

    threading.Thread(target=run, name="tether-ask prompt", daemon=True).start()
    await done.wait()
    if errors:
        raise errors[0]
    return box[0]


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
        answer = _read_line("    choose: ")
        if answer is None:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(params.options):
            return params.options[int(answer) - 1].option_id


def _prompt_fields(props: dict[str, Any]) -> dict[str, bool | str]:
    """A yes/no per boolean field (a call to allow), a line per text field (empty: unsaid)."""
    answers: dict[str, bool | str] = {}
    for key, prop in props.items():
        title = prop.get("title", key)
        if prop.get("type") != "boolean":
            secret = (prop.get("_meta") or {}).get("writeOnly") is True
            ask = _read_secret if secret else _read_line
            text = ask(f"    {title}{'' if secret else ' (optional)'}: ")
            if text:
                answers[key] = text
            continue
        answer = _read_line(f"    allow {title}? [Y/n] ")
        answers[key] = answer is not None and answer.lower() in ("", "y", "yes")
    return answers


def _read_secret(prompt: str) -> str | None:
    """A line typed without echo (a password for a PTY): never shown, never logged."""
    import getpass

    try:
        return getpass.getpass(prompt, stream=sys.stderr)
    except EOFError:
        return None


def _read_line(prompt: str) -> str | None:
    """One line from the terminal, None at end of input. Reads the descriptor itself, not
    sys.stdin: an abandoned prompt thread must hold no lock the exiting interpreter needs."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1024)
        if not chunk:
            return None if not line else line.decode(errors="replace").strip()
        line += chunk
    return line.decode(errors="replace").strip()
