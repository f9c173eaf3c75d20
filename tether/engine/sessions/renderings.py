"""A front's rendering of stored events, kept beside them so a replay writes bytes instead of
decoding and translating every event again (a 10,000-message session loads in about the time
its frames take to encode).

The engine treats a rendering as opaque bytes: the front that registered the `Renderer` makes
them and is the only reader. The tag names the exact translation; a rendering made under
another tag (an older tether, another front) is ignored and the event is translated afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import msgspec

from tether.engine.events import Event

# A rendering larger than this is not kept: the event itself is already stored, and keeping a
# huge diff or prompt twice would double the database for no gain worth having.
MAX_RENDERING = 64 * 1024


class Renderer:
    """`tag()`: names the exact translation (computed once, when the store first opens);
    `render`: the event as the front shows it, or None when that depends on the client (then
    the event is translated at each replay)."""

    def __init__(self, tag: Callable[[], str], render: Callable[[Event], bytes | None]) -> None:
        self._tag = tag
        self.render = render

    @cached_property
    def tag(self) -> str:
        return self._tag()

    def keep(self, event: Event) -> bytes | None:
        """The rendering to store beside the event, when it is worth keeping."""
        shown = self.render(event)
        return shown if shown is not None and worth_keeping(shown) else None


def worth_keeping(shown: bytes) -> bool:
    return len(shown) <= MAX_RENDERING


class Replay(msgspec.Struct):
    """A stored session's events in order: each one's rendering when one was kept under the
    store's renderer, else the event itself (`missing` lists their row numbers, in order)."""

    items: list[bytes | Event]
    missing: list[int]
