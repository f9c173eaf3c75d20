"""`tether config show [--json]`: the settings in effect, each with where it came from (a flag,
an environment variable, the project's file or the user's with its line, or the default), and
the problems found, each left out alone."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TextIO

import msgspec


def show_config(cwd: str, model: str | None, as_json: bool, out: TextIO = sys.stdout) -> int:
    """0; 2 when a run would stop (the reasons on stderr, the settings still printed)."""
    from tether.cli.exit_codes import USAGE
    from tether.engine.config.effective import effective_settings, files_read
    from tether.engine.config.startup_check import startup_check

    found = startup_check(os.environ, Path(cwd).absolute(), model=model)
    settings = effective_settings(found.setup, found.catalog, os.environ)
    if as_json:
        data = {
            "files": files_read(found.setup),
            "settings": msgspec.to_builtins(settings),
            "warnings": found.warnings,
            "errors": found.fatal,
        }
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        files = files_read(found.setup)
        out.write(f"# user file:    {files['user'] or '(none)'}\n")
        out.write(f"# project file: {files['project'] or '(none)'}\n")
        width = max(len(s.key) for s in settings)
        for s in settings:
            value = json.dumps(s.value, ensure_ascii=False)
            out.write(f"{s.key.ljust(width)} = {value}  # {s.origin.text()}\n")
        for warning in found.warnings:
            print(f"tether: warning: {warning}", file=sys.stderr)
    for problem in found.fatal:
        print(f"tether: error: {problem}", file=sys.stderr)
    return USAGE if found.fatal else 0
