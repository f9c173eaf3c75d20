"""One base for the errors tether reports in words, and every code they carry.

A `TetherError` has a stable `code` (what the model, a client and the tests key on) and a
`message` for a person. Tool errors, capability (seam) errors, path refusals, web, config,
provider and session errors derive from it; the codes are listed here, once, so a new one is a
conscious addition and a typo is a type error.
"""

from __future__ import annotations

from typing import Literal

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
