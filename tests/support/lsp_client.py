"""An editor for `tether lsp` tests, built on pygls's own `LanguageClient`.

It behaves like a real LSP client: buffers (pygls `TextDocument`s) opened to the server with
`didOpen` and kept in sync with `didChange`; `workspace/applyEdit` applied to them (a versioned
edit of a stale buffer is refused, as VS Code does; a `create` makes an empty file on disk and a
buffer the server is not told about, as Neovim does); `window/showMessageRequest` answered by a
chooser; progress, messages and documents shown recorded. pygls types every frame the server
sends with lsprotocol: a frame that does not fit is recorded in `errors` (tests assert none).

`lsp_in_process` serves `tether lsp` in this process over real pipes; `lsp_subprocess` spawns it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Union, cast

import anyio
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcMethodNotFound
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter
from pygls.workspace import TextDocument

from tests.support.harness import REPO

Chooser = Callable[[types.ShowMessageRequestParams], str | None]

FULL_CAPS = types.ClientCapabilities(
    window=types.WindowClientCapabilities(
        work_done_progress=True,
        show_message=types.ShowMessageRequestClientCapabilities(),
        show_document=types.ShowDocumentClientCapabilities(support=True),
    ),
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True,
        workspace_edit=types.WorkspaceEditClientCapabilities(
            document_changes=True,
            resource_operations=[types.ResourceOperationKind.Create],
        ),
    ),
    text_document=types.TextDocumentClientCapabilities(
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(value_set=["quickfix"])
            )
        )
    ),
)


def first_action(params: types.ShowMessageRequestParams) -> str | None:
    """What a bare RET picks in a client that pre-selects the first action (eglot)."""
    return params.actions[0].title if params.actions else None


def allow(params: types.ShowMessageRequestParams) -> str | None:
    """Approve: the first action titled "Allow..." (approval questions list Reject first); any
    other question, its first action."""
    titles = [a.title for a in params.actions or []]
    return next((t for t in titles if t.startswith("Allow")), titles[0] if titles else None)


def _converter() -> cattrs.Converter:
    """pygls's converter, with lsprotocol's `Command | CodeAction` hook fixed: it takes any
    object with a `command` field for a Command, where a CodeAction's is an object (clients tell
    them apart by whether `command` is a string)."""
    converter = default_converter()

    def action(obj: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], action)  # noqa: UP007
    return converter


class Editor(LanguageClient):
    def __init__(self, root: Path, choose: Chooser | None = allow) -> None:
        """`choose` None: the editor has no showMessageRequest at all (like Helix: the request
        is answered "method not found"; each one is still recorded in `asked`)."""
        super().__init__("tether-tests", "1", converter_factory=_converter)
        self.root = root
        self.choose = choose
        self.buffers: dict[str, TextDocument] = {}  # uri -> buffer
        self.synced: set[str] = set()  # buffers the server was told about (didOpen)
        self.asked: list[types.ShowMessageRequestParams] = []
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.progress_log: list[tuple[int | str, dict[str, Any]]] = []
        self.created_tokens: list[int | str] = []
        self.messages: list[types.ShowMessageParams] = []
        self.logs: list[types.LogMessageParams] = []
        self.shown: list[types.ShowDocumentParams] = []
        self.errors: list[Exception] = []
        self.report_edits = True  # False: say an edit applied but never report it (Neovim's drop)
        self.refuse_edits = False
        self.on_progress: Callable[[int | str, dict[str, Any]], None] | None = None
        self._tick = anyio.Event()  # set whenever the server made us record something
        self._register()

    def report_server_error(self, error: Exception, source: Any) -> None:
        if self.choose is None and isinstance(error, JsonRpcMethodNotFound):
            return  # our own "method not found" answer to showMessageRequest
        self.errors.append(error)
        self._note()

    def _note(self) -> None:
        self._tick.set()
        self._tick = anyio.Event()

    async def wait_for(self, cond: Callable[[], bool], timeout: float = 15) -> None:
        """Until `cond` holds, re-checked whenever the server sends us something."""
        with anyio.fail_after(timeout):
            while not cond():
                await self._tick.wait()

    # --- what the server asks of us -------------------------------------------------------

    def _register(self) -> None:
        @self.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
            self.asked.append(params)
            self._note()
            choose = self.choose  # as it is now: a test may wrap it
            if choose is None:
                raise JsonRpcMethodNotFound.of(types.WINDOW_SHOW_MESSAGE_REQUEST)
            title = choose(params)
            return None if title is None else types.MessageActionItem(title=title)

        @self.feature(types.WORKSPACE_APPLY_EDIT)
        def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            self.edits.append(params)
            self._note()
            if self.refuse_edits:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="read-only")
            return self._apply(params.edit)

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: types.WorkDoneProgressCreateParams) -> None:
            self.created_tokens.append(params.token)
            self._note()

        @self.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            value = cast(dict[str, Any], params.value)  # LSPAny: a plain dict
            self.progress_log.append((params.token, value))
            if self.on_progress is not None:
                self.on_progress(params.token, value)
            self._note()

        @self.feature(types.WINDOW_SHOW_MESSAGE)
        def show(params: types.ShowMessageParams) -> None:
            self.messages.append(params)
            self._note()

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def log(params: types.LogMessageParams) -> None:
            self.logs.append(params)
            self._note()

        @self.feature(types.WINDOW_SHOW_DOCUMENT)
        def show_document(params: types.ShowDocumentParams) -> types.ShowDocumentResult:
            self.shown.append(params)
            self._note()
            return types.ShowDocumentResult(success=True)

    def _apply(self, edit: types.WorkspaceEdit) -> types.ApplyWorkspaceEditResult:
        for change in edit.document_changes or []:
            if isinstance(change, types.CreateFile):
                path = Path(change.uri.removeprefix("file://"))
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("")
                self.buffers[change.uri] = TextDocument(change.uri, source="", version=0)
            elif isinstance(change, types.TextDocumentEdit):
                doc = self._buffer(change.text_document.uri)
                wanted = change.text_document.version
                if wanted is not None and wanted != doc.version:
                    return types.ApplyWorkspaceEditResult(applied=False, failure_reason="stale")
                self._edit(doc, [e for e in change.edits if isinstance(e, types.TextEdit)])
            else:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="unsupported")
        for uri, edits in (edit.changes or {}).items():
            self._edit(self._buffer(uri), list(edits))
        return types.ApplyWorkspaceEditResult(applied=True)

    def _buffer(self, uri: str) -> TextDocument:
        if uri not in self.buffers:  # loaded from disk, as an editor opens a file to edit it
            text = Path(uri.removeprefix("file://")).read_text()
            self.buffers[uri] = TextDocument(uri, source=text, version=0)
        return self.buffers[uri]

    def _edit(self, doc: TextDocument, edits: list[types.TextEdit]) -> None:
        order = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))
        changes = [
            types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
            for e in reversed(order)
        ]
        for change in changes:
            doc.apply_change(change)
        doc.version = (doc.version or 0) + 1
        if doc.uri in self.synced and self.report_edits:
            ident = types.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version)
            params = types.DidChangeTextDocumentParams(text_document=ident, content_changes=changes)
            self.text_document_did_change(params)

    # --- what we do ------------------------------------------------------------------------

    async def start(
        self,
        caps: types.ClientCapabilities = FULL_CAPS,
        options: Any = None,
        name: str | None = None,
    ) -> types.InitializeResult:
        """initialize (`name`: the clientInfo name), then initialized."""
        params = types.InitializeParams(
            capabilities=caps,
            initialization_options=options,
            client_info=types.ClientInfo(name=name) if name is not None else None,
            root_uri=self.root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name="project")],
        )
        result = await self.initialize_async(params)
        self.initialized(types.InitializedParams())
        return result

    def open(self, name: str, text: str) -> str:
        """Open a buffer with `text` (unsaved: the file on disk may differ)."""
        uri = (self.root / name).as_uri()
        self.buffers[uri] = TextDocument(uri, source=text, version=1)
        self.synced.add(uri)
        item = types.TextDocumentItem(uri=uri, language_id="text", version=1, text=text)
        self.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        return uri

    def type_text(self, uri: str, rng: types.Range, text: str) -> None:
        """An incremental change, as a user's typing is reported."""
        doc = self.buffers[uri]
        change = types.TextDocumentContentChangePartial(range=rng, text=text)
        doc.apply_change(change)
        doc.version = (doc.version or 0) + 1
        ident = types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version)
        params = types.DidChangeTextDocumentParams(text_document=ident, content_changes=[change])
        self.text_document_did_change(params)

    def text(self, name: str) -> str:
        return self.buffers[(self.root / name).as_uri()].source

    def prompt_request(self, prompt: str, msg_id: str, **extra: Any) -> asyncio.Future[Any]:
        params = types.ExecuteCommandParams(
            command="tether.prompt", arguments=[{"prompt": prompt, **extra}]
        )
        return self.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=msg_id
        )

    async def prompt(self, prompt: str, **extra: Any) -> dict[str, Any]:
        params = types.ExecuteCommandParams(
            command="tether.prompt", arguments=[{"prompt": prompt, **extra}]
        )
        result = await self.workspace_execute_command_async(params)
        assert isinstance(result, dict), result
        return result

    async def command(self, command: str, *arguments: Any) -> Any:
        params = types.ExecuteCommandParams(command=command, arguments=list(arguments))
        return await self.workspace_execute_command_async(params)

    def values(self, kind: str) -> list[dict[str, Any]]:
        return [v for _, v in self.progress_log if v.get("kind") == kind]


class _FdWriter:
    """The client's output: a blocking pipe write (frames are small; the server reads)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def close(self) -> None:
        os.close(self.fd)


@asynccontextmanager
async def lsp_in_process(
    root: Path, script: Path, choose: Chooser | None = allow
) -> AsyncIterator[tuple[Editor, list[int]]]:
    """`tether lsp --script SCRIPT` served in this process (the real composition: config,
    tools, store under $TETHER_HOME) over two real pipes; yields the editor and, once the block
    ends (the editor closes its output), the server's exit code in the list."""
    from tether.rpc.lsp.lsp_handshake import LspHandshake
    from tether.rpc.lsp.lsp_stream import serve_stream
    from tether.rpc.startup import ServeOptions
    from tether.transports.framing import ContentLengthFramer
    from tether.transports.stdio import StdioStream
    from tether.transports.streams import FramedStream

    to_server_r, to_server_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    stream = FramedStream(StdioStream(to_server_r, to_client_w), ContentLengthFramer())
    editor = Editor(root, choose)
    editor.protocol.set_writer(_FdWriter(to_server_w))
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    pipe = os.fdopen(to_client_r, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    codes: list[int] = []
    served = anyio.Event()

    async def serve() -> None:
        codes.append(await serve_stream(stream, LspHandshake(), ServeOptions(script=str(script))))
        await stream.aclose()
        served.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        tg.start_soon(
            run_async,
            editor._stop_event,
            reader,
            editor.protocol,
            None,
            editor._report_server_error,
        )
        try:
            yield editor, codes
        finally:
            os.close(to_server_w)  # the server reads the end of its input
            with anyio.fail_after(15):
                await served.wait()
            editor._stop_event.set()
            transport.close()
            tg.cancel_scope.cancel()


@asynccontextmanager
async def lsp_subprocess(
    root: Path, home: Path, *args: str, choose: Chooser | None = allow
) -> AsyncIterator[Editor]:
    """`tether lsp ARGS` as a real subprocess driven by pygls's client over its stdio."""
    editor = Editor(root, choose)
    env = {**os.environ, "TETHER_HOME": str(home), "PYTHONPATH": str(REPO)}
    await editor.start_io(sys.executable, "-m", "tether", "lsp", *args, env=env, cwd=str(root))
    try:
        yield editor
    finally:
        await editor.stop()


def script_file(path: Path, rounds: list[list[dict[str, Any]]]) -> Path:
    path.write_text(json.dumps({"rounds": [{"events": r} for r in rounds]}))
    return path


def write_call(call_id: str, name: str, content: str, **extra: Any) -> dict[str, Any]:
    arguments = {"path": name, "content": content, **extra}
    return {"tool_call": {"id": call_id, "name": "write_file", "arguments": arguments}}
