"""`tether doctor`'s look at the session database: whether SQLite can use it, and, on request,
moving a damaged one aside (kept, renamed) so the next start makes a new one."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StoreHealth:
    path: Path
    state: str  # "ok", "absent", "damaged"
    detail: str = ""


def check_store(path: Path) -> StoreHealth:
    """Read-only: SQLite's quick check of the file (nothing is written)."""
    if not path.exists():
        return StoreHealth(path, "absent", "no sessions yet")
    import apsw

    try:
        db = apsw.Connection(
            f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
        )
        try:
            rows = [str(r[0]) for r in db.execute("PRAGMA quick_check").fetchall()]
        finally:
            db.close()
    except apsw.Error as exc:
        return StoreHealth(path, "damaged", f"{type(exc).__name__}: {exc}")
    if rows != ["ok"]:
        return StoreHealth(path, "damaged", "; ".join(rows[:3]))
    return StoreHealth(path, "ok")


def move_aside(path: Path) -> Path:
    """Rename the database and its WAL files to `<name>.damaged-<time>`; the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    moved = path.with_name(f"{path.name}.damaged-{stamp}")
    path.rename(moved)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(moved.with_name(moved.name + suffix))
    return moved
