"""How ACP shows a stored event, kept beside it in the store
(tether/engine/sessions/renderings.py): its `session/update` payloads as encoded JSON, one per
line, made by the same translator as live turns. A `session/load` then writes these bytes
instead of decoding and translating again."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import msgspec

from tether import __version__
from tether.engine import events as ev
from tether.engine.sessions.renderings import Renderer, Replay, worth_keeping
from tether.rpc.acp import translate
from tether.schemas import acp

_encode = msgspec.json.Encoder().encode


def acp_renderer() -> Renderer:
    return Renderer(_tag, render)


def _tag() -> str:
    """The translation's identity: tether's version and the translator's and schema's source, so
    a rendering made by any other translation (even an unreleased edit) is never replayed."""
    crc = 0
    for module in (translate, acp):
        crc = zlib.crc32(Path(str(module.__file__)).read_bytes(), crc)
    return f"acp/{__version__}/{crc:08x}"


def render(event: ev.Event) -> bytes | None:
    if isinstance(event, ev.Notice):
        return None  # a notice, or a thought for a client without notices: decided per client
    return b"\n".join(_encode(u) for u in translate.to_updates(event, notices=False))


def update_params(session_id: str) -> tuple[bytes, bytes]:
    """What encloses an encoded update to make the params of its `session/update`."""
    return b'{"sessionId":' + _encode(session_id) + b',"update":', b"}"


def replay_updates(
    replay: Replay, made: list[tuple[int, bytes]], *, notices: bool
) -> Iterator[bytes]:
    """Every update a replay sends, encoded, in order, made as they are written (the client
    reads the first while the last are made). `made` receives renderings made for the events
    stored without one (row number, rendering), when worth keeping."""
    rows = iter(replay.missing)
    for item in replay.items:
        if isinstance(item, bytes):
            if b"\n" in item:
                yield from item.split(b"\n")
            elif item:
                yield item
            continue
        updates = [_encode(u) for u in translate.to_updates(item, notices=notices)]
        yield from updates
        row = next(rows)
        shown = b"\n".join(updates)
        if not isinstance(item, ev.Notice) and worth_keeping(shown):
            made.append((row, shown))
