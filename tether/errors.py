"""Every error tether reports in words, and every code they carry: the whole tree, here.

A `TetherError` has a stable `code` (what the model, a client and the tests key on) and a
`message` for a person. Each class below is typed by the family of codes it may carry, so a new
code is a conscious addition and a typo is a type error. The modules that raise them import
them from here.

    TetherError
    ├── ToolError ............. a tool call failed: any code; what the model reads
    ├── SeamError ............. a capability (files, commands, web, ...) failed
    │   └── WebError .......... a web search or fetch failed (WebCode)
    ├── PathRefused ........... the workspace policy refused a path (PathCode)
    ├── CommandDenied ......... the command denylist refused a command line (DENIED)
    ├── SandboxUnavailable .... a command cannot be confined as promised
    ├── VcsError .............. tether's own git (VCS_FAILED)
    │   ├── GitRefused ........ a git run the hardened runner does not do
    │   └── RepositoryChanged . the repository is not the one the session started with
    ├── ProviderError ......... the model provider could not serve a request
    │   └── ProviderHTTPError . an HTTP error status, with the server's retry hints
    ├── TurnFailed ............ a turn could not go on
    ├── ConfigError ........... the config file cannot be used (each problem with its line)
    ├── SessionBusy ........... a turn already runs in the session
    │   └── HeldElsewhere ..... ... in another tether process (another window)
    └── McpError .............. an MCP server failed
        ├── McpServerFailed ... it could not start, or stopped while in use
        └── McpMessageTooLarge  a message of it over the size cap

    Stopped ................... not reported: work given up because its caller went away
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

FileCode = Literal[
    "FILE_NOT_FOUND",
    "FILE_EXISTS",
    "FILE_CHANGED",
    "FILE_TOO_LARGE",
    "BINARY_FILE",
    "NOT_A_REGULAR_FILE",
    "NOT_A_DIRECTORY",
    "IS_A_DIRECTORY",
    "HARD_LINK",
    "SYMLINK_IN_PATH",
    "PERMISSION_DENIED",
    "DISK_FULL",
    "IO_ERROR",
    "TRASH_FAILED",
    "SPILL_FAILED",
    "NOT_AN_IMAGE",
    "IMAGES_UNSUPPORTED",
    "NOT_READ",
    "CLIENT_FS_ERROR",  # the editor failed a read or a write it was asked for
    "EDIT_NOT_FOUND",
    "EDIT_AMBIGUOUS",
]
PathCode = Literal["INVALID_PATH", "OUTSIDE_ROOTS", "PATH_DENIED", "TOO_BROAD"]
CommandCode = Literal[
    "COMMAND_FAILED",
    "COMMAND_NOT_FOUND",
    "COMMAND_NOT_EXECUTABLE",
    "SANDBOX_UNAVAILABLE",
    "PTY_UNAVAILABLE",
    "PTY_NOT_FOUND",
    "PTY_EXITED",
    "PTY_LIMIT",
    "PTY_WRITE_BLOCKED",
    "PTY_ECHOES",  # a secret for a terminal that shows what is typed (not at a password prompt)
    "UNKNOWN_KEY",
    "CLIENT_TERMINAL_ERROR",  # the editor failed to run a command in its terminal
    "VCS_FAILED",
    "VCS_UNAVAILABLE",
    "NOT_A_REPOSITORY",
]
WebCode = Literal[
    "WEB_PROVIDER_UNAVAILABLE",  # no provider is configured for this operation
    "WEB_PROVIDER_AMBIGUOUS",  # several are registered and none is selected by name
    "WEB_PROVIDER_CONFIGURED_MISSING",  # the configured provider is not registered
    "WEB_ABORTED",  # the capability was shut down under a running request
    "WEB_PROVIDER_ERROR",  # the provider failed (HTTP error, malformed answer, network)
    "WEB_INVALID_URL",  # not an absolute http(s) URL, or longer than the cap
    "WEB_INVALID_QUERY",  # a search query the provider refuses (too long)
    "WEB_BLOCKED_URL",  # credentials in the URL, or a destination that is never fetched
    "WEB_REDIRECT_BLOCKED",  # a cross-origin or unsafe redirect, or too many hops
    "WEB_FETCH_TOO_LARGE",  # the response is over the byte cap
    "WEB_FETCH_TIMEOUT",  # the provider's own backstop elapsed
    "WEB_UNSUPPORTED_CONTENT_TYPE",  # binary or missing content type
]
ToolCode = Literal[
    "INVALID_ARGS",
    "UNKNOWN_TOOL",
    "TOOL_FAILED",
    "TOOL_TIMEOUT",
    "ABORTED",
    "DENIED",
    "REJECTED",
    "READ_ONLY_MODE",
    "ASK_UNAVAILABLE",
    "ASK_FAILED",
    "MCP_ERROR",
    "MCP_SERVER_GONE",
    "SKILL_NOT_FOUND",  # no skill of that name in the session's skills roots
]
EngineCode = Literal[
    "CONFIG_INVALID",  # the config file cannot be used (each problem with its key and line)
    "PROVIDER_FAILED",  # the model provider could not serve a request
    "TURN_FAILED",  # a turn could not go on (the provider failed, compaction failed)
    "SESSION_UNKNOWN",  # no such session
    "SESSION_BUSY",  # a turn already runs in the session (this process or another)
    "SETTING_INVALID",  # a setting's value is not one of its choices
    "IMAGE_REFUSED",  # a prompt image no model of the session can take
    "SCHEMA_TOO_LARGE",  # a tool schema whose `$ref`s expand past the bound
    "MCP_SERVER_FAILED",  # an MCP server could not start or answered nonsense
    "MCP_MESSAGE_TOO_LARGE",  # an MCP server's message over the size cap
]
ErrorCode = FileCode | PathCode | CommandCode | WebCode | ToolCode | EngineCode


class TetherError(Exception):
    """An error tether reports in words: a stable code and a message for a person."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message


class Stopped(Exception):
    """Work given up because its caller went away (a search, an HTML conversion)."""


# --- tools and capabilities --------------------------------------------------------------------


class ToolError(TetherError):
    """A failure the model should read: `code` is stable (INVALID_ARGS, FILE_EXISTS, ...)."""


class SeamError(TetherError):
    """A capability failed in a way the model should read: `code` is stable, message is prose."""


class WebError(SeamError):
    """A web operation failed; `code` is one of the WebCode taxonomy, routable by hooks and UI."""

    def __init__(self, code: WebCode, message: str) -> None:
        super().__init__(code, message)


class PathRefused(TetherError):
    """A path the policy refuses: `code` is INVALID_PATH, OUTSIDE_ROOTS or PATH_DENIED."""

    def __init__(self, code: PathCode, message: str) -> None:
        super().__init__(code, message)


# --- commands ----------------------------------------------------------------------------------


class CommandDenied(TetherError):
    """A command line the denylist refuses in every mode; nobody is asked."""

    def __init__(self, message: str) -> None:
        super().__init__("DENIED", message)


class SandboxUnavailable(TetherError):
    """A command cannot be confined as promised; it must not run confined-but-leaky."""

    def __init__(self, message: str) -> None:
        super().__init__("SANDBOX_UNAVAILABLE", message)


class VcsError(TetherError):
    """tether's own git could not say what was asked (engine/vcs/)."""

    def __init__(self, message: str) -> None:
        super().__init__("VCS_FAILED", message)


class GitRefused(VcsError):
    """A git run the runner does not do (a subcommand that is not read-only, too many
    drivers to turn off)."""


class RepositoryChanged(VcsError):
    """The work tree or git dir is no longer the one the session started with."""


# --- the model provider, turns, config, sessions -----------------------------------------------


class ProviderError(TetherError):
    """A request the provider could not serve. `retryable` says whether backoff may help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__("PROVIDER_FAILED", message)
        self.status = status
        self.retryable = retryable


class ProviderHTTPError(ProviderError):
    """An HTTP error status, with the server's Retry-After hint when it sent one."""

    def __init__(
        self, message: str, *, status: int, retryable: bool, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status, retryable=retryable)
        self.retry_after = retry_after


class TurnFailed(TetherError):
    """The provider could not serve the turn; the message is fit to show the user."""

    def __init__(self, message: str) -> None:
        super().__init__("TURN_FAILED", message)


class ConfigIssue(NamedTuple):
    """One problem of a config file: its line, its key (dotted, quoted where TOML would quote;
    "" for a file-level problem) and what is wrong."""

    line: int | None
    key: str
    message: str
    path: Path | None = None  # the file it is in, where several files are read together

    def render(self, path: Path | None = None) -> str:
        path = self.path or path
        where = str(path) if path is not None else "<config>"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class ConfigError(TetherError):
    """The file cannot be used; `issues` lists every problem found, each with key and line."""

    def __init__(self, path: Path | None, issues: Sequence[ConfigIssue]) -> None:
        super().__init__("CONFIG_INVALID", "\n".join(i.render(path) for i in issues))
        self.path = path
        self.issues = list(issues)


class SessionBusy(TetherError):
    """A turn already runs in this session."""

    def __init__(self, session_id: str, message: str | None = None) -> None:
        text = f"session {session_id} is already running a turn; cancel it first"
        super().__init__("SESSION_BUSY", message or text)
        self.session_id = session_id


class HeldElsewhere(SessionBusy):
    """The session's turn runs in another tether process (another editor window): `where`
    names it, `left` is how many seconds the hold lasts if that process died."""

    def __init__(self, session_id: str, where: str, left: int) -> None:
        super().__init__(
            session_id,
            f"session {session_id} is running a turn in another window ({where}); wait for "
            f"that turn to end or cancel it there (if that process died, the session is free "
            f"within {left} s)",
        )


# --- MCP servers -------------------------------------------------------------------------------


class McpError(TetherError):
    """An MCP server failed (engine/mcp/)."""


class McpServerFailed(McpError):
    """A server could not start, or stopped while the session still used it."""

    def __init__(self, started: bool, reason: str, output: str = "") -> None:
        super().__init__("MCP_SERVER_FAILED", reason)
        self.started = started  # False: it never became ready
        self.reason = reason
        self.output = output  # the end of what it wrote to stderr, when known


class McpMessageTooLarge(McpError):
    """A server's message over the size cap: the server is stopped."""

    def __init__(self, message: str) -> None:
        super().__init__("MCP_MESSAGE_TOO_LARGE", message)
