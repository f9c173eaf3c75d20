"""Reading what tether stored, straight from its SQLite file (as a later process would)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import apsw


def stored_messages(home: Path, session_id: str) -> list[dict[str, Any]]:
    db = apsw.Connection(str(home / "tether.db"))
    db.set_busy_timeout(5000)  # the agent may be closing its connection (checkpointing)
    try:
        rows = db.execute(
            "SELECT body FROM messages WHERE session_id=? ORDER BY seq", (session_id,)
        ).fetchall()
    finally:
        db.close()
    return [json.loads(cast(bytes, body)) for (body,) in rows]


def tool_results(home: Path, session_id: str) -> list[str]:
    """The text of every tool result the model was given, in order."""
    return [m["content"] for m in stored_messages(home, session_id) if m["type"] == "tool"]
