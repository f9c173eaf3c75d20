"""The session as a Markdown document the editor can open: `transcript.md` in the session's
private spill directory, rewritten after every turn with everything the session showed (the
same Markdown as `tether sessions show`)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from tether.engine.local.private_files import private_dir
from tether.engine.sessions.export import to_markdown
from tether.engine.sessions.state import Session
from tether.engine.sessions.store import Store

NAME = "transcript.md"


async def write_transcript(store: Store, spill_root: Path, s: Session) -> Path:
    events = await store.events(s.id, s)
    text = to_markdown(s, events)
    path = spill_root / s.id / NAME
    await anyio.to_thread.run_sync(replace_private, path, text)
    return path


def replace_private(path: Path, text: str) -> None:
    """Write `path` (owner-only, in an owner-only session directory) as one replace."""
    private_dir(path.parent.parent)  # the spill root: other sessions' files are there
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)  # an editor reloading it never sees half a file
