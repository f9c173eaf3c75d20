"""The JSON-RPC 2.0 envelope. Params and results stay raw until a handler decodes them."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

RequestId = int | str | None


class ErrorObject(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: Any = UNSET


class Envelope(msgspec.Struct, omit_defaults=True):
    """Any incoming message: request, notification or response, told apart by its fields."""

    jsonrpc: str | UnsetType = UNSET
    id: RequestId | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: ErrorObject | UnsetType = UNSET


class CancelRequestParams(msgspec.Struct, rename="camel"):
    request_id: RequestId
