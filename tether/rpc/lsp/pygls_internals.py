"""The one place tether reaches into pygls's private bookkeeping.

pygls offers no public way to drop a request we stopped waiting for, nor to ask whether a
request it is handling has been answered yet; `wire.py` needs both (a cancelled or
unanswerable request of ours must not leak, and the end of input waits for the answers to the
requests already read). pygls keeps them in two dicts on its `JsonRPCProtocol`, set in its
`__init__`:

- `_request_futures`: message id -> future, for our requests until their answer is read and for
  the client's requests until their handler's answer is sent;
- `_result_types`: message id -> the lsprotocol type our request's answer is typed as, until the
  answer is read.

`tests/test_lsp_pygls_internals.py` checks those meanings on the installed pygls and names the
field that changed, so an upgrade that moves them fails there and not in a hung client.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pygls.protocol import JsonRPCProtocol

MsgId = int | str

# the fields reached, each with what it holds (the test checks them by these names)
FIELDS = ("_request_futures", "_result_types")


def _futures(protocol: JsonRPCProtocol) -> dict[MsgId, Future[Any]]:
    return protocol._request_futures


def _result_types(protocol: JsonRPCProtocol) -> dict[MsgId, Any]:
    return protocol._result_types


def forget_request(protocol: JsonRPCProtocol, msg_id: MsgId) -> None:
    """pygls's bookkeeping of a request of ours that we stopped waiting for, dropped."""
    _futures(protocol).pop(msg_id, None)
    _result_types(protocol).pop(msg_id, None)


def is_pending(protocol: JsonRPCProtocol, msg_id: MsgId) -> bool:
    """Whether pygls still holds the request: ours unanswered, or the client's unanswered."""
    return msg_id in _futures(protocol)


def still_pending(protocol: JsonRPCProtocol, msg_ids: Iterable[MsgId]) -> set[MsgId]:
    """Those of `msg_ids` pygls still holds."""
    pending = _futures(protocol)
    return {rid for rid in msg_ids if rid in pending}
