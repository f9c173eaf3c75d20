"""JSON-RPC error codes and the exception handlers raise to answer with one."""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
SESSION_BUSY = -32001
RESOURCE_NOT_FOUND = -32002
PROVIDER_FAILED = -32010


class RpcError(Exception):
    """Raised by a handler to answer its request with this error; also raised by `Peer.request`
    when the other side answered with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def invalid_params(cls, message: str) -> RpcError:
        return cls(INVALID_PARAMS, f"Invalid params: {message}")

    @classmethod
    def not_found(cls, what: str, data: Any = None) -> RpcError:
        return cls(RESOURCE_NOT_FOUND, f"Resource not found: {what}", data)


class ConnectionClosed(Exception):
    """The other side went away before answering."""
