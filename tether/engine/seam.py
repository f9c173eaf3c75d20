"""The capability seam: the only way a tool reaches the outside world.

Each interface has a local implementation (`engine/local/`) and, where the client offers
one, a client-backed implementation chosen per session by the protocol front. A tool's schema never
depends on which backend is present: a missing backend is a structured error at run time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

import msgspec

from tether.engine.events import Location, ToolContent
from tether.engine.file_search import FileSearch
from tether.engine.grants import Lasting
from tether.engine.providers.base import LLM
from tether.engine.read_ledger import ReadLedger
from tether.engine.sandbox.session_sandbox import Sandbox
from tether.engine.skills.skill_roots import SkillRoot
from tether.engine.vcs.repository import Repositories
from tether.engine.web.types import (
    FetchResult,
    HttpRequest,
    HttpResponse,
    SearchResults,
    Target,
)
from tether.engine.workspace import Workspace


class CommandDenylist(msgspec.Struct, frozen=True):
    """Commands refused in every mode, nobody asked: the built-in entries (unless `builtin` is
    off) and the configured ones (`program [flags] [words]`, see command_policy/denylist.py)."""

    entries: tuple[str, ...] = ()
    builtin: bool = True


BUILTIN_COMMAND_DENYLIST = CommandDenylist()  # what applies unless the config file says more


FileKind = Literal["file", "dir", "symlink", "other"]
TEXT_MAX_BYTES = 4 * 1024 * 1024  # what read_text loads whole (an edit's diff carries it twice)


class FileStat(msgspec.Struct, frozen=True):
    """What `lstat` says of a path (a symlink is not followed)."""

    kind: FileKind
    size: int
    mtime_ns: int
    links: int = 1

    @property
    def stamp(self) -> tuple[int, int]:
        return (self.mtime_ns, self.size)


class DirEntry(msgspec.Struct, frozen=True):
    name: str
    kind: FileKind
    size: int = 0
    target: FileKind | None = None  # what a symlink points at (None: dangling, or not a link)


class FileSystem(Protocol):
    """Every file access of a tool. Only regular files are read or written: a FIFO, a device or
    a socket is an error (NOT_A_REGULAR_FILE), never opened in a way that could block."""

    async def stat(self, path: Path) -> FileStat | None:
        """`lstat` of the path; None when nothing is there."""
        ...

    async def read_text(self, path: Path, *, max_bytes: int = TEXT_MAX_BYTES) -> str:
        """The file's text; the editor's unsaved buffer when the client serves `fs`.
        FILE_TOO_LARGE over `max_bytes`."""
        ...

    async def read_bytes(self, path: Path, *, offset: int = 0, max_bytes: int) -> bytes:
        """At most `max_bytes` bytes from `offset`, as stored on disk."""
        ...

    async def write_text(self, path: Path, content: str) -> None:
        """Create or replace a regular file (parents are created). Refuses a file with more than
        one hard link: the write would change the file under its other names too."""
        ...

    async def list_dir(self, path: Path) -> list[DirEntry]: ...

    async def copy(self, src: Path, dst: Path) -> None:
        """Copy a file or a directory tree to `dst`, which must not exist."""
        ...

    async def move(self, src: Path, dst: Path) -> None:
        """Rename `src` to `dst`, which must not exist."""
        ...

    async def delete(self, path: Path, *, permanent: bool) -> None:
        """Move to the system trash, or delete for good when `permanent`. A failed trashing
        raises TRASH_FAILED and leaves the path alone."""
        ...


TodoStatus = Literal["pending", "in_progress", "done", "cancelled"]


class TodoItem(msgspec.Struct, frozen=True, omit_defaults=True):
    """One task of a group on the session's todo stack (engine/todo_stack.py)."""

    title: str
    status: TodoStatus = "pending"
    notes: str = ""


class TodoGroup(msgspec.Struct, omit_defaults=True):
    """One entry of the todo stack: the sibling tasks one `todo_push` made (a stack of groups,
    not of tasks: a pop takes the whole group)."""

    items: list[TodoItem] = []


class Launcher(NamedTuple):
    """The one-use launcher a command starts through (engine/sandbox/): `argv` is then
    `[path, *program]`. A client terminal may name it another way, so that the user reads
    `program` (rpc/acp/client_terminal.py); `confined`: it starts the sandbox (else only
    tether's hold on the command's lifetime)."""

    path: Path
    program: list[str]
    confined: bool


class Stage(msgspec.Struct, frozen=True):
    """One command of a pipeline: its stdout feeds the next stage's stdin (the last stage's
    goes to the output). `mix_stderr` sends stderr along with stdout (`2>&1 |`); otherwise
    stderr goes straight to the output. `launcher`: what `argv` starts through, if anything."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    mix_stderr: bool = False
    launcher: Launcher | None = None


class CommandResult(msgspec.Struct, frozen=True):
    """How a command ended. `output` is the terminal's text (stdout and stderr as they
    arrived), bounded: when `omitted` bytes were dropped, a marker line stands between the
    head and the tail; `truncated` without `omitted` means the client dropped the start."""

    exit_code: int | None
    output: str
    truncated: bool = False
    terminal_id: str | None = None  # a client terminal to embed in the tool card
    signal: str | None = None  # the signal that ended it (SIGKILL, ...)
    timed_out: bool = False  # the command outlived its timeout and was killed
    omitted: int = 0
    stage_codes: tuple[int | None, ...] = ()  # every stage's exit code, for pipelines
    # The client started something, but not the command's launcher: the command ran outside
    # the sandbox and tether's hold on it, or did not run.
    launcher_skipped: bool = False


Overflow = Callable[[], Path]  # makes the file a long command output is kept whole in


class CommandProgress(Protocol):
    """What a running command reports to its tool card."""

    def output(self, text: str) -> None:
        """Output as it arrives, decoded and sanitised (local runs)."""
        ...

    async def terminal(self, terminal_id: str) -> None:
        """The client terminal the command runs in, to embed in the card (client runs)."""
        ...


class Terminal(Protocol):
    async def run(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        timeout: float,
        output_limit: int,
        stdin: bytes | None = None,
        progress: CommandProgress | None = None,
        overflow: Overflow | None = None,
        launcher: Launcher | None = None,
    ) -> CommandResult:
        """Run one command (no shell). A timeout kills it and answers `timed_out`;
        cancellation kills it too. SeamError when it cannot start. `overflow` makes the file
        the whole output goes to once it is longer than `output_limit` (where it can be).
        `launcher`: what `argv` starts through, when it does."""
        ...

    async def run_pipeline(
        self,
        stages: Sequence[Stage],
        *,
        stdin: bytes | None,
        timeout: float,
        output_limit: int,
        progress: CommandProgress | None = None,
        overflow: Overflow | None = None,
    ) -> CommandResult:
        """Run `a | b | c`; the last stage's exit code is the result's."""
        ...


class PtyRead(msgspec.Struct, frozen=True):
    """What a read of a PTY saw: its sanitised output and whether the program still runs."""

    text: str
    alive: bool
    exit_code: int | None = None
    signal: str | None = None
    matched: bool = False  # the `until` text was seen
    omitted: int = 0  # characters dropped between head and tail
    closed: str | None = None  # why tether closed it (idle, output budget), when it did


# Asked when a PTY printed its output budget (its id, the budget): "once" (as much again),
# "always" (no limit for it), "no" (stop it).
MoreOutput = Callable[[int, int], Awaitable[Literal["once", "always", "no"]]]


class Ptys(Protocol):
    """A session's interactive programs on pseudo-terminals (`open_pty` and friends)."""

    async def open(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], confined: bool = False
    ) -> tuple[int, int]:
        """Start the program (`argv` already wrapped by the sandbox when `confined`); returns
        (pty id, pid). SeamError when it cannot start or the session has as many PTYs open as
        it may."""
        ...

    def confined(self, pty_id: int) -> bool:
        """Whether the PTY's program runs in the sandbox (its input then needs no consent).
        SeamError PTY_NOT_FOUND for an unknown id."""
        ...

    async def read(
        self,
        pty_id: int,
        *,
        until: str | None,
        timeout: float,
        max_chars: int,
        more: MoreOutput | None = None,
    ) -> PtyRead:
        """What the program printed (see read_pty); past its output budget `more` decides
        whether it goes on (without `more` it is stopped)."""
        ...

    def raise_limit(self, unlimited: bool = False) -> None:
        """Allow as many PTYs again as the session's limit (`unlimited`: no limit)."""
        ...

    async def write(self, pty_id: int, data: bytes) -> None: ...

    def hide(self, pty_id: int, secret: str) -> None:
        """Keep `secret` (an answer the user typed) out of everything the PTY prints from now
        on. SeamError PTY_NOT_FOUND."""
        ...

    def echoes(self, pty_id: int) -> bool | None:
        """Whether the terminal echoes what is typed (off at a password prompt); None where
        that cannot be known. SeamError PTY_NOT_FOUND / PTY_EXITED."""
        ...

    async def close(self, pty_id: int) -> PtyRead:
        """Stop the program (hang-up and SIGTERM, then SIGKILL) and return its last output."""
        ...

    async def close_all(self) -> None: ...


class ConfirmRequest(msgspec.Struct, frozen=True):
    """One tool call awaiting the user's decision, with what the user needs to judge it."""

    call_id: str
    tool: str
    title: str
    kind: str
    raw_input: Any
    scope: str  # what an "always" answer would cover, e.g. "write_file in /project/src"
    content: list[ToolContent] = msgspec.field(default_factory=list[ToolContent])
    locations: list[Location] = msgspec.field(default_factory=list[Location])
    target: str = ""  # the short object of the call for a round's title: a path, a command
    # What an "always" answer covers, as the card names it (default: "TOOL in SCOPE"); a
    # call that is not `grantable` (a command run outside the sandbox) asks every time.
    grant_label: str = ""
    grantable: bool = True
    lasting: Lasting = "session"  # what an "always" answer would last for
    # A change to a skill: what an "allow for this session" answer covers ("changes to the
    # skill deploy"); the request then offers once / this session / no.
    session_label: str = ""


class RoundCard(msgspec.Struct, frozen=True):
    """The tool card of a round's permission request (two or more calls, one request)."""

    id: str
    title: str
    kind: str
    content: list[ToolContent]
    locations: list[Location]
    raw_input: Any


Verdict = Literal["allow", "reject", "cancelled"]
DecidedBy = Literal["user (once)", "user (round)", "user (always)", "grant", "policy"]


class ConfirmDecision(msgspec.Struct, frozen=True):
    verdict: Verdict
    by: DecidedBy = "user (once)"
    remember: bool = False  # record a grant for the request's scope
    note: str = ""  # what the user said with a rejection: the model reads it


class Approval(Protocol):
    async def confirm(
        self, batch: list[ConfirmRequest], card: RoundCard | None
    ) -> list[ConfirmDecision]:
        """Decide a round's calls, in order: in one request on `card` when given (the card is
        already shown), else call by call. A cancelled turn answers `cancelled` for each."""
        ...


class AskField(msgspec.Struct, frozen=True):
    """One field of a question's form."""

    name: str
    label: str
    kind: Literal["text", "number", "integer", "boolean"] = "text"
    required: bool = True
    # A password: the client is asked to mask it (a text field only), and the answer is for a
    # program, never for the model.
    secret: bool = False


class AskAnswer(msgspec.Struct, frozen=True):
    """What the user said: `values` by field name (a choice is the field "choice"); an answer
    that is not `accepted` was declined or dismissed (`dismissed`: cancelled, not a no)."""

    accepted: bool
    values: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    dismissed: bool = False


class Ask(Protocol):
    async def ask(
        self, question: str, options: list[str], fields: list[AskField], call_id: str | None
    ) -> AskAnswer:
        """Put a question to the user (choices, a form, or both); SeamError ASK_UNAVAILABLE
        when this client has no way to take the answer."""
        ...


class Spill(Protocol):
    async def save(self, name: str, text: str) -> Path:
        """Keep an oversized result in a private session directory; returns its path."""
        ...

    def reserve(self, name: str) -> Path:
        """A new, empty, owner-only file in that directory, for output written as it comes."""
        ...


class Web(Protocol):
    """Search and fetch, with provider selection inside the seam. Every method raises WebError;
    aborting is anyio cancellation, which reaches the network read and closes the connection."""

    async def search(self, query: str, *, max_results: int) -> SearchResults:
        """At most `max_results` hits; `capped` says the provider had more."""
        ...

    async def fetch(self, url: str, *, target: Target | None = None) -> FetchResult:
        """The page at `url`, HTML rendered to Markdown. `target` is the destination a caller
        checked (and, when it is not public, had the user approve); without one, only public
        destinations are fetched."""
        ...

    async def fetch_target(self, url: str) -> Target | None:
        """Where `fetch(url)` would connect from this host, checked; None when the selected
        provider fetches from elsewhere (or none is selected: `fetch` reports that)."""
        ...

    async def http_target(self, url: str) -> Target:
        """Where a raw `http` request to `url` connects from this host, checked."""
        ...

    async def http(self, request: HttpRequest, *, target: Target | None = None) -> HttpResponse:
        """One raw HTTP exchange from this host (GET follows redirects, re-checking each hop)."""
        ...


class Capabilities(msgspec.Struct):
    """What a tool call may use. Built per session by the protocol front (the `ctx`)."""

    session_id: str
    cwd: Path
    roots: list[Path]
    fs: FileSystem
    terminal: Terminal
    approval: Approval
    ask: Ask
    spill: Spill
    web: Web
    llm: LLM | None = None
    call_id: str | None = None  # set per call by the pipeline: the tool call being run
    pty: Ptys | None = None  # the session's PTYs; None where the front offers none
    # Shows progress on the running call's card (set per call by the pipeline).
    report: Callable[[list[ToolContent]], Awaitable[None]] | None = None
    command_denylist: CommandDenylist = BUILTIN_COMMAND_DENYLIST
    # The path policy; built from `roots` with the default denylist when not given.
    workspace: Workspace | None = None
    reads: ReadLedger = msgspec.field(
        default_factory=ReadLedger
    )  # per turn: see engine/read_ledger.py
    # What confines the session's commands (engine/sandbox/); None: nothing does.
    sandbox: Sandbox | None = None
    # Where this turn looks for Agent Skills, first wins (set by the turn: engine/skills/).
    skills: tuple[SkillRoot, ...] = ()
    # Changes inside a skill (engine/skills/skill_writes.py): the skill directories the user
    # allowed for this session (the session's own list: an answer joins it) and
    # `[skills] allow_write`.
    skill_writes: list[str] = msgspec.field(default_factory=list[str])
    skill_allow_write: bool = False
    # Lists and searches trees (engine/file_search.py); this machine's unless given.
    search: FileSearch | None = None
    # The session's repositories as found when it opened (engine/vcs/): the vcs tools' git runs
    # on those, hardened. Fronts pass the session's; a context made without gets its own.
    repositories: Repositories = msgspec.field(default_factory=Repositories)
    # `[trash] enabled`: delete_path moves to the system trash; False deletes for good.
    trash: bool = True
    # The session's todo stack, bottom group first (the turn hands its session's; the todo
    # tools change it in place, and it is stored with the session). None: no session's.
    todos: list[TodoGroup] | None = None

    def __post_init__(self) -> None:
        if self.workspace is None:
            self.workspace = Workspace(list(self.roots))

    @property
    def policy(self) -> Workspace:
        assert self.workspace is not None
        return self.workspace

    @property
    def searcher(self) -> FileSearch:
        if self.search is None:
            from tether.engine.local.local_search import LocalSearch  # when a search runs

            self.search = LocalSearch()
        return self.search
