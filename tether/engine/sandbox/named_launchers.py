"""A command's one-use launcher (session_sandbox.py) under the program's own name, for a client
that starts `command` by looking the name up in the PATH of the environment it is given
(rpc/acp/client_terminal.py): the client then shows the user's command, and what it finds first
is tether's launcher, not the program.

`named` makes a new directory next to the launcher (in the session's private directory, which
no confined command may write) holding one script, named after the program, that sets PATH back
to the command environment's and execs the launcher with the program's name before its own
arguments. The caller puts that directory first on the PATH it sends, and removes it after.

`settle` says whether a launcher ran: every launcher removes itself (or, under bubblewrap with
placeholders, empties itself) as it starts, so one still whole after its command ended never
ran, whatever the client ran instead. Such a launcher is removed: it is never to run, and while
it waits its placeholders' marker counts it alive (placeholders.py).
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from pathlib import Path


def named(launcher: Path, name: str, head: list[str], path: str) -> Path:
    """A new directory holding `name`, which runs `launcher` with `head` then its arguments,
    with `path` as PATH (the launcher keeps the PATH it is given, and the program must not
    find this directory again)."""
    directory = Path(tempfile.mkdtemp(prefix="named-", dir=launcher.parent))
    script = (
        f"#!/bin/sh\nPATH={shlex.quote(path)}\nexport PATH\n"
        f'exec {shlex.join([str(launcher), *head])} "$@"\n'
    )
    fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(script)
    return directory


def forget(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)


def settle(launcher: Path) -> bool:
    """Whether the launcher began (it is gone or empty; a missing one counts as begun: the
    session's private directory may have gone with the session); one that did not goes."""
    try:
        if os.stat(launcher).st_size == 0:
            return True
        os.unlink(launcher)
    except FileNotFoundError:
        return True
    return False
