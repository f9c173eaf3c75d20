"""The store's schema, versioned by `PRAGMA user_version`, and the housekeeping done when the
file is opened. A step is SQL, or Python where it needs the file system."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tether.engine.sessions.folders import folder

Migration = str | Callable[[Any], None]

MIGRATIONS: list[Migration] = [
    """
    CREATE TABLE sessions(
        id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        title TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        state BLOB NOT NULL
    );
    CREATE INDEX sessions_by_cwd ON sessions(cwd, updated_at);
    CREATE INDEX sessions_by_time ON sessions(updated_at);
    CREATE TABLE messages(
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY(session_id, seq)
    );
    """,
    """
    CREATE TABLE events(
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY(session_id, seq)
    );
    """,
    # An event's rendering by a front (engine/sessions/renderings.py), and its renderer.
    """
    CREATE TABLE renderers(id INTEGER PRIMARY KEY, tag TEXT NOT NULL UNIQUE);
    ALTER TABLE events ADD COLUMN shown BLOB;
    ALTER TABLE events ADD COLUMN shown_by INTEGER;
    """,
    # Who writes the session's turns now, until when (engine/sessions/lease.py).
    """
    ALTER TABLE sessions ADD COLUMN lease_holder TEXT;
    ALTER TABLE sessions ADD COLUMN lease_until REAL;
    """,
    # A folder is known by its real path: rows stored under a symlink or an unnormalised
    # spelling move to it.
    lambda db: _real_cwds(db),
    # "Always" answers kept for a project (engine/sessions/grant_rows.py).
    """
    CREATE TABLE project_grants(
        project TEXT NOT NULL,
        tool TEXT NOT NULL,
        scope TEXT NOT NULL,
        verdict TEXT NOT NULL,
        label TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        PRIMARY KEY(project, tool, scope)
    );
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
UNPROMPTED_DAYS = 1  # a session never prompted is deleted after this (editors open one per start)


def migrate(db: Any, upto: int = SCHEMA_VERSION) -> None:
    """Bring a database to schema version `upto` (this tether's), step by step from its
    `user_version`."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise RuntimeError(f"the session store is from a newer tether (schema {version})")
    for v in range(version, upto):
        step = MIGRATIONS[v]
        with db:
            if isinstance(step, str):
                db.execute(step)
            else:
                step(db)
            db.execute(f"PRAGMA user_version={v + 1}")


def _real_cwds(db: Any) -> None:
    rows = db.execute("SELECT id, cwd FROM sessions").fetchall()
    db.executemany(
        "UPDATE sessions SET cwd=? WHERE id=?",
        [(folder(cwd), sid) for sid, cwd in rows if folder(cwd) != cwd],
    )


def forget_unprompted(db: Any) -> None:
    """Delete sessions never prompted (an editor opens one at every start) once a day old:
    nobody's conversation, listed nowhere."""
    cutoff = time.strftime(
        "%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - UNPROMPTED_DAYS * 86_400)
    )
    with db:
        db.execute(
            "DELETE FROM sessions WHERE updated_at < ? AND NOT EXISTS "
            "(SELECT 1 FROM messages m WHERE m.session_id = sessions.id)",
            (cutoff,),
        )
