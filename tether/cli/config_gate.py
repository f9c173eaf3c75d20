"""`tether ask` / `-p` checks the configuration before it spawns its agent: each bad key a
warning on stderr (left out alone, the rest applies), and what would make the run quietly wrong
(a named config file missing, a file that is not TOML, an unknown default model, an unwritable
TETHER_HOME) one line each and exit 2."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tether.cli.exit_codes import USAGE


def gate(cwd: str, model: str | None, script: str | None) -> int | None:
    """USAGE when the run cannot go as asked, else None (the warnings printed)."""
    from tether.engine.config.layers import PROJECT_DIR_ENV, SHOWN_ENV
    from tether.engine.config.startup_check import startup_check

    folder = Path(cwd).absolute()
    os.environ[PROJECT_DIR_ENV] = str(folder)  # the agent reads this folder's project file
    found = startup_check(os.environ, folder, model=model, script=script)
    for warning in found.warnings:
        print(f"tether: warning: {warning}", file=sys.stderr)
    for problem in found.fatal:
        print(f"tether: error: {problem}", file=sys.stderr)
    if found.fatal:
        return USAGE
    os.environ[SHOWN_ENV] = "1"  # the agent logs them, without a notice saying them again
    return None
