"""Temporary workspaces (`new_temporary_workspace`): directories made in the system's temporary
directory for one session, open to its tools (read, write, run commands) for as long as this
tether runs, then removed with everything in them: when tether ends (the end of its input,
SIGTERM, SIGHUP, exit). They are never stored with the session, so a session resumed by another
tether does not get them back, and its project directory stays what it was (the seed: "cleanup
on chat exit; no session rebind"). A tether killed outright leaves its directories to the
system's temporary-file cleaning.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from functools import cache
from pathlib import Path

from tether.engine.local import reaper
from tether.engine.workspace import DirGrant, add_process_grant

PREFIX = "tether-ws-"
_made: list[Path] = []
_guard = threading.Lock()


def make(session_id: str) -> Path:
    """A new private (0700) directory, opened to the session's tools for this process."""
    _remove_at_end()
    path = Path(tempfile.mkdtemp(prefix=PREFIX)).resolve()  # macOS: /var is /private/var
    with _guard:
        _made.append(path)
    add_process_grant(session_id, DirGrant(path, "write"))
    return path


def remove_all() -> None:
    with _guard:
        made, _made[:] = list(_made), []
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


@cache
def _remove_at_end() -> None:
    """Hooked on first use, not at import: a warm server's fork inherits nothing to undo."""
    reaper.at_stop(remove_all)  # SIGTERM, SIGHUP
    atexit.register(remove_all)  # the end of input, a normal exit
