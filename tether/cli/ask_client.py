"""`tether ask` / `tether -p`: a headless ACP client. It spawns `tether acp`, speaks real frames to
it over pipes, answers permission requests by policy, serves `fs/*` from disk, and reports the
run as text (the answer on standard output, the rest on standard error), one JSON object, or a
stream of JSON events (docs/cli.md).

It behaves like a command-line tool: Ctrl-C cancels the turn (`session/cancel`) and exits 130;
a closed standard output (`| head -1`) cancels it too and exits 141, quietly. Exit codes:
tether/cli/exit_codes.py.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.abc

from tether.cli import exit_codes
from tether.cli.ask_result import RunRecord
from tether.cli.ask_stream import StreamJson
from tether.cli.ask_terminal import in_daemon_thread, interactive, prompt_choice, prompt_fields
from tether.cli.ask_transcript import Sink, Transcript
from tether.cli.session_pick import NoSessionToContinue, acp_lister, pick_session
from tether.engine.local.file_system import decode_text
from tether.errors import SeamError
from tether.rpc.peer import Peer
from tether.rpc.rpc_error import INTERNAL_ERROR, ConnectionClosed, RpcError
from tether.schemas import acp
from tether.transports.framing import NdjsonFramer
from tether.transports.streams import FramedStream

Policy = Literal["yes", "no", "ask"]
OutputFormat = Literal["text", "json", "stream-json"]
T = TypeVar("T")

INTERRUPTED = exit_codes.INTERRUPTED
OUTPUT_CLOSED = 141  # 128 + SIGPIPE: what `yes | head -1` reports for `yes`
CANCEL_GRACE = 5.0  # seconds the agent has to answer `cancelled` before it is killed


@dataclass
class AskOptions:
    prompt: str
    cwd: str = "."
    policy: Policy = "ask"
    json: bool = False  # the raw ACP frames on standard output (debugging)
    output_format: OutputFormat = "text"
    mode: str | None = None
    framing: str = "auto"
    script: str | None = None
    model: str | None = None
    log_level: str | None = None
    max_rounds: int | None = None  # over [agent] max_rounds
    auto_continue: bool = False  # past the round and PTY limits without asking
    max_retry_seconds: int | None = None  # over [agent] retry_max_total
    quiet: bool = False
    continue_last: bool = False  # the newest session of this folder
    resume: str | None = None  # this session


class View(Protocol):
    """How the run is shown as it goes: the text transcript or the JSON event stream."""

    prompting: bool

    def opened(self, session_id: str, cwd: str, model: str | None, mode: str | None) -> None: ...

    def update(self, u: acp.SessionUpdate) -> None: ...

    def permission_asked(self, params: acp.RequestPermissionRequest, title: str) -> None: ...

    def permission(
        self, params: acp.RequestPermissionRequest, choice: str | None, by: str, title: str
    ) -> None: ...

    def after_echo(self) -> None: ...

    def stop(self, reason: str) -> None: ...

    def usage_line(self) -> None: ...

    def error(self, message: str) -> None: ...


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
    problem = cwd_problem(options.cwd)
    if problem is not None:
        print(f"tether: --cwd {options.cwd}: {problem}", file=sys.stderr)
        return exit_codes.USAGE
    setup_logging("ask", options.log_level)
    try:
        return anyio.run(_ask, options)
    except KeyboardInterrupt:  # Ctrl-C before the handler below was in place
        return INTERRUPTED


def cwd_problem(cwd: str) -> str | None:
    if not os.path.exists(cwd):
        return "no such directory"
    if not os.path.isdir(cwd):
        return "not a directory"
    return None


def _server_command(options: AskOptions) -> list[str]:
    cmd = [sys.executable, "-m", "tether", "acp", "--framing", "ndjson"]
    cmd += ["--script", options.script] if options.script else []
    cmd += ["--log-level", options.log_level] if options.log_level else []
    cmd += ["--max-rounds", str(options.max_rounds)] if options.max_rounds else []
    cmd += ["--auto-continue"] if options.auto_continue else []
    retry = options.max_retry_seconds
    cmd += ["--max-retry-seconds", str(retry)] if retry is not None else []
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
    view = _view(options, out)
    stream = FramedStream(ProcessStream(proc, out if options.json else None), NdjsonFramer())
    peer = Peer(stream, name="ask")
    client = _Client(peer, view, options.policy, stop)
    client.register()
    code = exit_codes.TURN_FAILED  # the agent went away before answering
    async with anyio.create_task_group() as tg:
        tg.start_soon(peer.run)
        tg.start_soon(_watch_interrupts, stop, view)
        try:
            code = await client.converse(options.cwd, options)
        finally:
            await stream.aclose()
            tg.cancel_scope.cancel()
    if options.output_format != "text" and not options.json and code != exit_codes.USAGE:
        out.write(json.dumps(client.record.result(code), ensure_ascii=False) + "\n")
    return code


def _view(options: AskOptions, out: Sink) -> View:
    if options.json or options.output_format == "json":
        return Transcript(None, options.cwd)  # nothing shown as it goes
    if options.output_format == "stream-json":
        return StreamJson(out)
    err = Sink(sys.stderr)
    return Transcript(err, options.cwd, quiet=options.quiet, answer=out)


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


async def _watch_interrupts(stop: _Stop, transcript: View) -> None:
    import signal

    try:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                transcript.after_echo()  # now: the terminal echoed ^C where the cursor is
                stop.request(INTERRUPTED)
    except NotImplementedError:  # Windows: Ctrl-C stays a KeyboardInterrupt
        return


class _Client:
    def __init__(self, peer: Peer, view: View, policy: Policy, stop: _Stop) -> None:
        self.peer = peer
        self.view = view
        self.policy = policy
        self.stop = stop
        self.record = RunRecord()

    def register(self) -> None:
        p = self.peer
        p.on_notification("session/update", self.update, acp.SessionNotification)
        p.on_request("session/request_permission", self.permission, acp.RequestPermissionRequest)
        p.on_request("fs/read_text_file", self.read_file, acp.ReadTextFileRequest)
        p.on_request("fs/write_text_file", self.write_file, acp.WriteTextFileRequest)
        p.on_request("elicitation/create", self.elicit, dict[str, Any])

    async def converse(self, cwd: str, options: AskOptions) -> int:
        try:
            session = await self._until_stopped(lambda: self._open(cwd, options))
        except (RpcError, NoSessionToContinue) as exc:
            message = exc.message if isinstance(exc, RpcError) else str(exc)
            print(f"tether: {message}", file=sys.stderr)
            # Refused to open without a terminal to ask on (another folder's session): denied.
            return exit_codes.DENIED if self.record.denials else exit_codes.USAGE
        except ConnectionClosed:
            return self._failed("the agent exited before the session opened")
        result = None
        if session is not None:
            prompt = acp.PromptRequest(
                session_id=session, prompt=[acp.TextContent(text=options.prompt)]
            )
            try:
                result = await self._prompt(prompt)
            except RpcError as exc:
                return self._failed(exc.message)
            except ConnectionClosed:
                return self._failed("the agent exited before the turn ended")
        if self.stop.requested.is_set():
            self.record.stop_reason = "cancelled"
            if self.stop.code != OUTPUT_CLOSED:  # nobody reads the rest: end quietly
                self.view.stop("cancelled")
            return self.stop.code
        assert result is not None
        self.record.stop_reason = result.stop_reason
        self.view.stop(result.stop_reason)
        self.view.usage_line()
        return _exit_code(result.stop_reason, self.record)

    def _failed(self, message: str) -> int:
        self.record.error = message
        self.view.error(message)
        return exit_codes.TURN_FAILED

    async def _open(self, cwd: str, options: AskOptions) -> str:
        caps = acp.ClientCapabilities(
            fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=True),
            elicitation=acp.ElicitationCapabilities(form={}),
        )
        init = acp.InitializeRequest(
            protocol_version=1,
            client_capabilities=caps,
            client_info=acp.Implementation(name="tether-ask", version="1"),
        )
        await self.peer.request("initialize", init, acp.InitializeResponse)
        lister = acp_lister(
            lambda r: self.peer.request("session/list", r, acp.ListSessionsResponse)
        )
        picked = await pick_session(cwd, options.continue_last, options.resume, lister)
        if picked is None:
            new = acp.NewSessionRequest(cwd=cwd, mcp_servers=[])
            opened = await self.peer.request("session/new", new, acp.NewSessionResponse)
            session_id = opened.session_id
        else:
            again = acp.ResumeSessionRequest(session_id=picked, cwd=cwd, mcp_servers=[])
            opened = await self.peer.request("session/resume", again, acp.ResumeSessionResponse)
            session_id = picked
        mode = (
            opened.modes.current_mode_id if isinstance(opened.modes, acp.SessionModeState) else None
        )
        if options.mode:
            request = acp.SetModeRequest(session_id=session_id, mode_id=options.mode)
            await self.peer.request("session/set_mode", request)
            mode = options.mode
        self.record.session_id = session_id
        self.view.opened(session_id, cwd, _model(opened.config_options), mode)
        return session_id

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
        self.record.update(params.update)
        self.view.update(params.update)

    async def permission(
        self, params: acp.RequestPermissionRequest
    ) -> acp.RequestPermissionResponse:
        card = params.tool_call
        title = self.record.title(
            card.tool_call_id, card.title if isinstance(card.title, str) else None
        )
        self.view.permission_asked(params, title)
        choice, by = await self._choose(params)
        self.view.permission(params, choice, by, title)
        if by != "user" and by != "--yes":
            self.record.denied(card.tool_call_id, title, by)
        if choice is None:
            return acp.RequestPermissionResponse(outcome=acp.CancelledOutcome())
        return acp.RequestPermissionResponse(outcome=acp.SelectedOutcome(option_id=choice))

    async def _choose(self, params: acp.RequestPermissionRequest) -> tuple[str | None, str]:
        """The option chosen, and by whom: "--yes", "--no", "no terminal" or "user"."""
        opts = params.options
        if self.policy == "yes":
            return _first(opts, "allow_once"), "--yes"
        if self.policy == "no":
            return _first(opts, "reject_once"), "--no"
        if not interactive():
            return _first(opts, "reject_once"), "no terminal"
        self.view.prompting = True
        try:
            return await in_daemon_thread(lambda: prompt_choice(params)), "user"
        finally:
            self.view.prompting = False

    async def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = params.get("requestedSchema", {}).get("properties", {})
        calls = [k for k, p in props.items() if p.get("type") == "boolean"]
        if self.policy == "yes" or (self.policy == "ask" and not interactive()):
            allow = self.policy == "yes"  # a yes/no per call; text (a note) left unsaid
            if not allow:
                self._denied_fields(props, calls, "no terminal")
            return {"action": "accept", "content": {k: allow for k in calls}}
        if self.policy == "no":
            self._denied_fields(props, calls, "--no")
            return {"action": "decline"}
        answers = await in_daemon_thread(lambda: prompt_fields(props))
        return {"action": "accept", "content": answers}

    def _denied_fields(self, props: dict[str, Any], calls: list[str], by: str) -> None:
        for key in calls:
            self.record.denied(key, str(props[key].get("title", key)), by)

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


def _exit_code(stop_reason: str, record: RunRecord) -> int:
    """A turn stopped at its round limit, or otherwise short of its answer, failed; one that
    needed a permission nobody could give was denied."""
    if stop_reason == "max_turn_requests":
        return exit_codes.TURN_FAILED
    if record.denials:
        return exit_codes.DENIED
    return exit_codes.OK if stop_reason == "end_turn" else exit_codes.TURN_FAILED


def _model(options: list[acp.SelectConfigOption] | Any) -> str | None:
    """The session's model, from its config options."""
    for o in options if isinstance(options, list) else []:
        if isinstance(o, acp.SelectConfigOption) and o.id == "model":
            return o.current_value
    return None


def _first(options: list[acp.PermissionOption], kind: str) -> str | None:
    for o in options:
        if o.kind == kind:
            return o.option_id
    return None
