"""The `project_grants` rows: "always" answers kept for a project (keyed by its real path), so
they hold in every later session there until `/grants revoke` takes them back."""

from __future__ import annotations

from typing import Any

from tether.engine.grants import Grant
from tether.engine.sessions.state import now_iso


def listed(db: Any, project: str) -> list[Grant]:
    """The project's grants, oldest first."""
    rows = db.execute(
        "SELECT tool, scope, verdict, label FROM project_grants WHERE project=? "
        "ORDER BY created_at, tool, scope",
        (project,),
    ).fetchall()
    return [Grant(tool, scope, verdict, label) for tool, scope, verdict, label in rows]


def put(db: Any, project: str, grant: Grant) -> None:
    db.execute(
        "INSERT OR REPLACE INTO project_grants(project, tool, scope, verdict, label, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (project, grant.tool, grant.scope, grant.verdict, grant.label, now_iso()),
    )


def remove(db: Any, project: str, grants: list[Grant]) -> int:
    """Take back the given grants of the project; how many there were."""
    gone = 0
    for g in grants:
        db.execute(
            "DELETE FROM project_grants WHERE project=? AND tool=? AND scope=?",
            (project, g.tool, g.scope),
        )
        gone += db.changes()
    return gone
